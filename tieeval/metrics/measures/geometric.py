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


#: Values of the rows' distributions built at once (:func:`spread` takes its rows in
#: groups whose bounds, the products of their blocks' numbers of orders, add up to about
#: this many).
_SPREAD_CHUNK = 1 << 20

#: Values a block term is computed for at once (the blocks of one make-up, times their
#: sequences, times the places).
_TERM_CHUNK = 1 << 20


def spread(b: BlockTable, m_t: Ints, cls: Ints, classes: int,
           block_value: Callable[[Ints, np.ndarray], np.ndarray], base: Floats,
           norm: Floats, random_t: Bools, droppable: int | None = None) -> Spread:
    """The exact distribution of each row whose value ties decide.

    ``cls`` each position's kind in the 'first' ordering (0..classes-1); ``random_t`` the
    blocks whose order can change the value; ``block_value(ts, seqs)`` the term of block
    ``ts[i]`` when the kinds on its first places are ``seqs[i]`` (kinds past its ``m_t``
    places, or past its items, are :data:`_PAD`, which adds nothing; shape (N,) and
    (N, places) give N terms); ``base`` each row's value in the 'first' ordering and
    ``norm`` its divisor: a row's value is ``base + sum_t (term_t -
    term_t(first)) / norm``. Items of kind ``droppable`` take no part in the term of a
    block wholly inside the cutoff (only their places would, and those do not count
    there): such a block's sequences leave them out.

    A row whose blocks' numbers of distinct orders (``n! / prod_l K_l!``, of the kinds
    left) multiply to more than
    :data:`GEO_WORK_LIMIT` is not enumerated (``over``); nor is any row once the batch's
    rows hold more than :data:`GEO_STORE_LIMIT` values (the run's figure is then null
    anyway), so the work of a batch stays bounded.

    The blocks of one make-up (their kinds in the 'first' ordering and their places
    inside the cutoff) share their sequences; every block's sequences are valued at
    once, and the rows' distributions are then convolved block after block, every row of
    a group at once, equal values of a row merged after each step.
    """
    over = np.zeros(b.rows, dtype=bool)
    blocks = np.flatnonzero(random_t)
    if blocks.size == 0:
        return Spread(np.zeros(0, dtype=np.int64), [], [], over)
    brow = b.brow[blocks]
    starts = np.flatnonzero(np.concatenate(([True], brow[1:] != brow[:-1])))
    ends = np.append(starts[1:], blocks.size)
    work = _row_work(b, blocks, starts, m_t, cls, classes, droppable)
    limit = math.log(GEO_WORK_LIMIT)
    cls_list = np.asarray(cls).tolist()
    bst, bsz, m_list = b.bst.tolist(), b.bsz.tolist(), np.asarray(m_t).tolist()

    def key_of(t: int) -> tuple[tuple[int, ...], int]:
        first = cls_list[bst[t]:bst[t] + bsz[t]]
        m = m_list[t]
        if droppable is not None and m == len(first):
            first = [k for k in first if k != droppable]
            m = len(first)
        return tuple(first), m

    for i in np.flatnonzero(np.abs(work - limit) <= _SURE_MARGIN).tolist():
        # near the limit: the per-block sum, in block order, decides (as it always has)
        exact = 0.0
        for t in blocks[starts[i]:ends[i]].tolist():
            first, _ = key_of(t)
            exact += log_orders(np.bincount(np.asarray(first, dtype=np.int64),
                                            minlength=classes))
        work[i] = exact
    beyond = work > limit
    over[brow[starts[beyond]]] = True
    rows_out: list[int] = []
    values_out: list[np.ndarray] = []
    probs_out: list[np.ndarray] = []
    kept = 0
    todo = np.flatnonzero(~beyond)
    bound = np.exp(np.minimum(work[todo], limit))
    lo = 0
    while lo < todo.size:
        if kept > GEO_STORE_LIMIT:
            over[brow[starts[todo[lo:]]]] = True
            break
        hi = lo + max(1, int(np.searchsorted(np.cumsum(bound[lo:]), _SPREAD_CHUNK)))
        group = todo[lo:hi]
        lo = hi
        rows, values, probs = _convolved(b, blocks, starts[group], ends[group], key_of,
                                         block_value, classes)
        for row, v, pr in zip(rows.tolist(), values, probs):
            if kept > GEO_STORE_LIMIT:
                over[row] = True
                continue
            kept += v.size
            rows_out.append(row)
            values_out.append(base[row] + v / norm[row])
            probs_out.append(pr)
    return Spread(np.asarray(rows_out, dtype=np.int64), values_out, probs_out, over)


#: The sequences of the block make-ups met so far (small ones only; every batch meets
#: the same few make-ups again): (kinds in the 'first' ordering, m, kinds) -> prefixes().
_MADE: dict[tuple[tuple[int, ...], int, int], tuple[npt.NDArray[np.int8], Floats]] = {}
_MADE_ENTRIES = 4096  # make-ups kept at most
_MADE_SIZE = 1 << 12  # the largest sequences array kept (items)


def _prefixes_of(first: tuple[int, ...], m: int, classes: int
                 ) -> tuple[npt.NDArray[np.int8], Floats]:
    """:func:`prefixes` of a block whose kinds in the 'first' ordering are ``first``,
    kept for the next batches when small (read-only arrays)."""
    key = (first, m, classes)
    made = _MADE.get(key)
    if made is not None:
        return made
    seqs, prob = prefixes(np.bincount(np.asarray(first, dtype=np.int64), minlength=classes), m)
    if seqs.size <= _MADE_SIZE and len(_MADE) < _MADE_ENTRIES:
        seqs.flags.writeable = False
        prob.flags.writeable = False
        _MADE[key] = (seqs, prob)
    return seqs, prob


#: The kind that pads a shorter block's sequences to the longest one's places: neither
#: relevant (0) nor counted above (1), so its places add exact zeros to a block's term.
_PAD = 127


def _block_terms(b: BlockTable, blocks: Ints, key_of: Callable[[int], tuple[
        tuple[int, ...], int]], block_value: Callable[[Ints, np.ndarray], np.ndarray],
        classes: int) -> tuple[np.ndarray, np.ndarray, Ints]:
    """Each block's distinct term changes ``term - term(first)`` and their probabilities,
    ascending, flat, block after block: ``(values, probs, counts per block)``.

    Every block is paired with each sequence of its make-up (the make-ups' sequences
    stacked, padded with :data:`_PAD`), and all pairs are valued at once."""
    index: dict[tuple[tuple[int, ...], int], int] = {}
    made: list[tuple[tuple[int, ...], int]] = []
    gid = np.empty(blocks.size, dtype=np.int64)
    for i, t in enumerate(blocks.tolist()):
        key = key_of(t)
        g = index.get(key)
        if g is None:
            g = index[key] = len(made)
            made.append(key)
        gid[i] = g
    tables = [_prefixes_of(first, m, classes) for first, m in made]
    width = max(m for _, m in made)
    sizes = np.array([seqs.shape[0] for seqs, _ in tables], dtype=np.int64)
    total = int(sizes.sum())
    stacked = np.full((total + len(made), width), _PAD, dtype=np.int8)
    probs = np.empty(total)
    at = 0
    for g, ((first, m), (seqs, prob)) in enumerate(zip(made, tables)):
        stacked[at:at + seqs.shape[0], :m] = seqs
        probs[at:at + seqs.shape[0]] = prob
        stacked[total + g, :m] = first[:m]  # the make-up's 'first' sequence
        at += seqs.shape[0]
    checkpoint()
    own = block_value(blocks, stacked[total + gid])
    pairs = sizes[gid]
    idx, pair_block = expand(np.zeros(blocks.size, dtype=np.int64), pairs)
    seq_row = (np.cumsum(sizes) - sizes)[gid[pair_block]] + idx
    y = np.empty(idx.size)
    step = max(1, _TERM_CHUNK // width)
    for lo in range(0, idx.size, step):
        checkpoint()
        part = slice(lo, lo + step)
        y[part] = block_value(blocks[pair_block[part]], stacked[seq_row[part]])
    y -= own[pair_block]
    y, pr, pair_block = _merged(y, probs[seq_row], pair_block)
    return y, pr, np.bincount(pair_block, minlength=blocks.size)


def _merged(v: np.ndarray, p: np.ndarray, owner: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values ``v`` with probabilities ``p`` sorted by ``owner``, then value, each owner's
    equal values merged into one with their probabilities summed."""
    order = np.lexsort((v, owner))
    v, p, owner = v[order], p[order], owner[order]
    new = np.ones(v.size, dtype=bool)
    new[1:] = (v[1:] != v[:-1]) | (owner[1:] != owner[:-1])
    heads = np.flatnonzero(new)
    return v[heads], np.add.reduceat(p, heads), owner[heads]


def _convolved(b: BlockTable, blocks: Ints, starts: Ints, ends: Ints,
               key_of: Callable[[int], tuple[tuple[int, ...], int]],
               block_value: Callable[[Ints, np.ndarray], np.ndarray], classes: int
               ) -> tuple[Ints, list[np.ndarray], list[np.ndarray]]:
    """The rows whose random blocks are ``blocks[starts[i]:ends[i]]``: their rows and the
    distributions of ``sum_t (term_t - term_t(first))`` (distinct values ascending, and
    their probabilities)."""
    pos, _ = expand(starts, ends - starts)
    bv, bp, bcount = _block_terms(b, blocks[pos], key_of, block_value, classes)
    boff = np.concatenate(([0], np.cumsum(bcount)))
    nblocks = ends - starts
    first_block = np.concatenate(([0], np.cumsum(nblocks)))[:-1]  # into blocks[own]
    rows = starts.size
    done_v: list[np.ndarray] = [np.zeros(0)] * rows
    done_p: list[np.ndarray] = [np.zeros(0)] * rows
    active = np.arange(rows)  # the rows with blocks left, each row's values together
    values, probs = np.zeros(rows), np.ones(rows)
    count = np.ones(rows, dtype=np.int64)
    for k in range(int(nblocks.max())):
        checkpoint()
        # every active row's current values against its k-th block's
        at = first_block[active] + k
        u, start_u = bcount[at], boff[at]
        cur_off = np.concatenate(([0], np.cumsum(count)))
        idx, owner = expand(np.zeros(active.size, dtype=np.int64), count * u)
        i_cur = cur_off[owner] + idx // u[owner]
        j = start_u[owner] + idx % u[owner]
        values, probs, owner = _merged(values[i_cur] + bv[j], probs[i_cur] * bp[j], owner)
        count = np.bincount(owner, minlength=active.size)
        finished = nblocks[active] == k + 1
        if finished.any():  # rows whose last block this was leave the active ones
            off = np.concatenate(([0], np.cumsum(count))).tolist()
            for a, i in zip(np.flatnonzero(finished).tolist(), active[finished].tolist()):
                done_v[i], done_p[i] = values[off[a]:off[a + 1]], probs[off[a]:off[a + 1]]
            stay = ~finished[owner]
            values, probs = values[stay], probs[stay]
            count, active = count[~finished], active[~finished]
    return b.brow[blocks[starts]], done_v, done_p


#: How far above the work limit (in logarithms) the vectorised estimate of a row's work
#: must be for the row to be left out without the exact per-block sum: the estimate adds
#: the same terms in another order, which moves it by far less.
_SURE_MARGIN = 1e-6


def _row_work(b: BlockTable, blocks: Ints, starts: Ints, m_t: Ints, cls: Ints,
              classes: int, droppable: int | None) -> Floats:
    """Per row (``starts`` into ``blocks``) an estimate of its work in logarithms: the sum
    of :func:`log_orders` of its blocks, computed for every block at once (in another
    order than the per-block sum, which moves it by far less than :data:`_SURE_MARGIN`;
    a row that close to the limit is decided by the per-block sum)."""
    size = b.bsz[blocks].astype(np.int64)
    first = b.bst[blocks].astype(np.int64)
    pos, owner = expand(first, size)
    counts = np.bincount(owner * classes + np.asarray(cls)[pos].astype(np.int64),
                         minlength=blocks.size * classes).reshape(blocks.size, classes)
    if droppable is not None:  # whole blocks inside the cutoff leave these items out
        counts[np.asarray(m_t)[blocks] == size, droppable] = 0
    table = np.array([math.lgamma(k + 1.0) for k in range(int(size.max()) + 1)])
    work = table[counts.sum(axis=1)] - table[counts].sum(axis=1)
    rows: np.ndarray = np.add.reduceat(work, starts)
    return rows


def log_root_mean(values: np.ndarray, probs: np.ndarray, count: int, floor: float) -> float:
    """``log E[max(x, floor)^(1/count)]`` for one row's distribution."""
    logs = np.log(np.maximum(values, floor)) / count
    top = float(logs.max())
    return top + math.log(math.fsum((probs * np.exp(logs - top)).tolist()))
