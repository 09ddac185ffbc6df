"""The exact tie-aware geometric mean over rows (trec_eval's gm_map, gm_bpref).

Rows break their ties independently, so with Q rows and ``x_q`` a row's value floored at
``MIN_GEO_MEAN`` (1e-5, trec_eval's),

    E[exp((1/Q) sum_q log x_q)] = prod_q E[x_q^(1/Q)]

which is not the geometric mean of the rows' expectations. A row whose value no tie can
change contributes ``x_q^(1/Q)``; any other row needs the distribution of its value over
its tie orders. AP and bpref are sums of one term per tie block, each depending on that
block's order only, so a row's distribution is the convolution of its blocks'
distributions, and a block's is an enumeration of the distinct orders of its first m
places by kind of item (relevant or not; for bpref also judged or not), each with its
exact probability ``prod_l K_l (K_l - 1) ... / (n (n - 1) ... (n - m + 1))``.

Work limits (a row beyond one has no exact value, and the dataset's tie-aware figure is
null with :func:`geometric_reason`; nothing is sampled): :data:`GEO_WORK_LIMIT`, the
product over a row's tie blocks of the numbers of distinct orders of each block's kinds
(counted before anything is enumerated), and :data:`GEO_STORE_LIMIT` values kept over
the whole run (they are kept until the number of rows Q is known, at the end of the pass).

Reference: S. Robertson, On GMAP, CIKM 2006; trec_eval m_gm_map.c, m_gm_bpref.c;
F. McSherry & M. Najork, ECIR 2008 (the tie model).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tieeval.metrics.measures.protocol import BlockTable, Bools, Floats, Ints
from tieeval.util.ranges import expand
from tieeval.util.stopping import checkpoint

#: Work limit of one row: the product over its tie blocks of the number of distinct
#: orders of each block's kinds of items, ``n! / prod_l K_l!`` (a bound on the values its
#: distribution is built from).
GEO_WORK_LIMIT = 250_000

#: Values kept over a whole run for the rows whose value ties decide.
GEO_STORE_LIMIT = 4_000_000


@dataclass
class Spread:
    """The exact distributions over tie orders of the rows whose value ties decide:
    ``values[i]`` with ``probs[i]`` for row ``rows[i]``; ``over`` marks the rows beyond
    the work limit (no exact distribution)."""

    rows: np.ndarray
    values: list[np.ndarray]
    probs: list[np.ndarray]
    over: np.ndarray


def geometric_reason(name: str) -> str:
    """Why the exact tie-aware geometric mean is null."""
    return (f"the exact distribution over tie orders of some rows' {name} is built from "
            f"more than {GEO_WORK_LIMIT:,} block orders, or the rows whose value ties decide "
            f"hold more "
            f"than {GEO_STORE_LIMIT:,} values in all; the expected geometric mean is not "
            "estimated by sampling")


def log_orders(counts: Ints) -> float:
    """``log(n! / prod_l K_l!)``: the number of distinct orders of a block's kinds (an
    upper bound on the distinct sequences of its first m places), in logarithms."""
    n = float(sum(int(k) for k in counts))
    return math.lgamma(n + 1.0) - sum(math.lgamma(float(k) + 1.0) for k in counts)


def prefixes(counts: Ints, m: int) -> tuple[npt.NDArray[np.int8], Floats]:
    """Every distinct sequence of kinds on the first ``m`` places of a uniformly random
    order of a block holding ``counts[l]`` items of kind l, and its probability:
    ``(sequences (P, m) int8, probabilities (P,))``."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    seqs = np.zeros((1, 0), dtype=np.int8)
    rem = counts[None, :].copy()
    prob = np.ones(1)
    for step in range(m):
        checkpoint()
        parts = []
        for kind in np.flatnonzero(counts):
            sel = np.flatnonzero(rem[:, kind] > 0)
            if sel.size == 0:
                continue
            r = rem[sel].copy()
            p = prob[sel] * r[:, kind] / (n - step)
            r[:, kind] -= 1
            s = np.concatenate((seqs[sel], np.full((sel.size, 1), kind, dtype=np.int8)),
                               axis=1)
            parts.append((s, r, p))
        seqs = np.concatenate([x[0] for x in parts])
        rem = np.concatenate([x[1] for x in parts])
        prob = np.concatenate([x[2] for x in parts])
    return seqs, prob


def _merged(values: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal values merged (their probabilities added), ascending."""
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, np.bincount(inv.reshape(-1), weights=probs, minlength=uniq.size)


def spread(b: BlockTable, m_t: Ints, cls: Ints, classes: int,
           block_value: Callable[[int, np.ndarray], np.ndarray], base: Floats,
           norm: Floats, random_t: Bools, droppable: int | None = None) -> Spread:
    """The exact distribution of each row whose value ties decide.

    ``cls`` each position's kind in the 'first' ordering (0..classes-1); ``random_t`` the
    blocks whose order can change the value; ``block_value(t, seqs)`` the block's term for
    each sequence of kinds on its first ``m_t`` places (the 'first' sequence included);
    ``base`` each row's value in the 'first' ordering and ``norm`` its divisor: a row's
    value is ``base + sum_t (term_t - term_t(first)) / norm``. Items of kind
    ``droppable`` take no part in the term of a block wholly inside the cutoff (only
    their places would, and those do not count there): such a block's sequences leave
    them out.

    A row whose blocks' numbers of distinct orders (``n! / prod_l K_l!``, of the kinds
    left) multiply to more than
    :data:`GEO_WORK_LIMIT` is not enumerated (``over``); nor is any row once the batch's
    rows hold more than :data:`GEO_STORE_LIMIT` values (the run's figure is then null
    anyway), so the work of a batch stays bounded.
    """
    rows_out, values_out, probs_out = [], [], []
    over = np.zeros(b.rows, dtype=bool)
    blocks = np.flatnonzero(random_t)
    if blocks.size == 0:
        return Spread(np.zeros(0, dtype=np.int64), [], [], over)
    brow = b.brow[blocks]
    starts = np.flatnonzero(np.concatenate(([True], brow[1:] != brow[:-1])))
    ends = np.append(starts[1:], blocks.size)
    surely_over = _surely_over(b, blocks, starts, m_t, cls, classes, droppable)
    over[brow[starts[surely_over]]] = True
    kept = 0
    for lo, hi in zip(starts[~surely_over], ends[~surely_over]):
        checkpoint()
        row = int(brow[lo])
        plan, work = [], 0.0
        for t in blocks[lo:hi]:
            first = cls[b.bst[t]:b.bst[t] + b.bsz[t]]
            m = int(m_t[t])
            if droppable is not None and m == first.size:
                first = first[first != droppable]
                m = first.size
            counts = np.bincount(first, minlength=classes)
            work += log_orders(counts)
            plan.append((t, first, m, counts))
        if work > math.log(GEO_WORK_LIMIT) or kept > GEO_STORE_LIMIT:
            over[row] = True
            continue
        values, probs = np.array([0.0]), np.array([1.0])
        for t, first, m, counts in plan:
            checkpoint()
            seqs, prob = prefixes(counts, m)
            y = block_value(t, seqs) - block_value(t, first[None, :m])[0]
            y, prob = _merged(y, prob)
            values, probs = _merged((values[:, None] + y[None, :]).ravel(),
                                    (probs[:, None] * prob[None, :]).ravel())
        kept += values.size
        rows_out.append(row)
        values_out.append(base[row] + values / norm[row])
        probs_out.append(probs)
    return Spread(np.asarray(rows_out, dtype=np.int64), values_out, probs_out, over)


#: How far above the work limit (in logarithms) the vectorised estimate of a row's work
#: must be for the row to be left out without the exact per-block sum: the estimate adds
#: the same terms in another order, which moves it by far less.
_SURE_MARGIN = 1e-6


def _surely_over(b: BlockTable, blocks: Ints, starts: Ints, m_t: Ints, cls: Ints,
                 classes: int, droppable: int | None) -> Bools:
    """Per row (``starts`` into ``blocks``), whether its work is surely beyond
    :data:`GEO_WORK_LIMIT`: the sum of :func:`log_orders` of its blocks, computed for
    every block at once. A row within :data:`_SURE_MARGIN` of the limit is left to the
    exact per-block sum of :func:`spread`, so which rows are enumerated never changes."""
    size = b.bsz[blocks].astype(np.int64)
    first = b.bst[blocks].astype(np.int64)
    pos, owner = expand(first, size)
    counts = np.bincount(owner * classes + np.asarray(cls)[pos].astype(np.int64),
                         minlength=blocks.size * classes).reshape(blocks.size, classes)
    if droppable is not None:  # whole blocks inside the cutoff leave these items out
        counts[np.asarray(m_t)[blocks] == size, droppable] = 0
    table = np.array([math.lgamma(k + 1.0) for k in range(int(size.max()) + 1)])
    work = table[counts.sum(axis=1)] - table[counts].sum(axis=1)
    rows = np.add.reduceat(work, starts)
    return rows > math.log(GEO_WORK_LIMIT) + _SURE_MARGIN


def log_root_mean(values: np.ndarray, probs: np.ndarray, count: int, floor: float) -> float:
    """``log E[max(x, floor)^(1/count)]`` for one row's distribution."""
    logs = np.log(np.maximum(values, floor)) / count
    top = float(logs.max())
    return top + math.log(math.fsum((probs * np.exp(logs - top)).tolist()))
