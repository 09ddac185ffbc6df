"""Shared pieces of trec_eval's experimental measures (rbp, binG, G, ndcg_rel, Rndcg,
infAP): the judgements' ideal gains per row, the moments of a statistic linear in the
items' gains, and exact per-item expectations over an item's place in its tie block.

Under uniform random tie-breaking every tie block is in uniformly random order, blocks
independent (McSherry & Najork's model). Three exact tools follow from it:

* A statistic ``sum_r g(item at r) w(r)`` linear in per-item values ``g`` with position
  weights ``w`` has, per block t, ``E_t = G_t W_t / n_t`` and
  ``Var_t = SS_g SS_w / (n_t - 1)`` (docs/METRICS.md 3-4; :func:`linear_moments`).
* A sum over items of a function of the item's absolute place and of how many items of
  each class lie above it: an item of block t, with the other ``n_t - 1`` items of the
  block in classes of sizes ``K_1..K_L``, lies below a uniform set of them, so the chance
  that exactly ``a_l`` of each class lie above it (``x = sum a_l`` places down the block) is
  ``prod_l C(K_l, a_l) / C(n_t - 1, x) / n_t``. :func:`item_expectation` sums that exactly
  over every composition ``a`` — ``prod_l (K_l + 1)`` of them per class of item per block,
  the work :data:`ITEM_WORK_LIMIT` bounds per row (a row above it is NaN, and the
  dataset's tie-aware figure is null with :func:`item_reason`; nothing is sampled).
* trec_eval's ideal gains of a row: every judged gain of the query, retrieved or not,
  best first (:func:`ideal_gains`).

Reference: F. McSherry & M. Najork, Computing information retrieval performance measures
efficiently in the presence of tied scores, ECIR 2008 (the tie model); trec_eval
gain_init.c (gains are the relevance levels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tieeval.metrics.measures.protocol import BlockTable, Floats, Ints
from tieeval.util.stopping import checkpoint

#: Work limit of one row of :func:`item_expectation`: the number of (block, class of item,
#: composition of the items above it) terms summed for the row, ``sum over its tie blocks
#: and item classes of prod_l (K_l + 1)``. A row above it is NaN.
ITEM_WORK_LIMIT = 2_000_000

#: ``f(rows, pos, above, c)`` of :func:`item_expectation`: the value of an item of class
#: ``c`` of row ``rows`` at 0-based place ``pos`` with ``above[l]`` items of class l above
#: it (arrays, one entry per case)
ItemTerm = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]
_GRID_SLICE = 1 << 17  # compositions of a block computed at once (item_expectation)


def item_reason(name: str) -> str:
    """Why a row of a per-item expectation has no tie-aware value."""
    return (f"the exact tie-aware {name} of some rows needs more than {ITEM_WORK_LIMIT:,} "
            "terms (a tie block holding many items of several kinds: the work grows as the "
            "product of their counts); it is not estimated by sampling")


def segment_cumsum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The running sum of ``x`` along each segment ``offsets[i]:offsets[i+1]``, each
    segment summed on its own (segments of one length as the rows of a 2-D array), so a
    row's sums never depend on the rows batched with it."""
    lengths = np.diff(offsets)
    if (lengths.size and offsets[0] == 0 and offsets[-1] == x.size
            and np.all(lengths == lengths[0]) and lengths[0] > 0):
        # rows of one length (a TREC run of 1,000 documents a query): one 2-D array
        whole: np.ndarray = np.cumsum(np.reshape(x, (lengths.size, int(lengths[0]))), axis=1)
        return whole.astype(np.float64, copy=False).reshape(-1)
    out = np.zeros(x.size)
    for length in np.unique(lengths):
        if length == 0:
            continue
        idx = offsets[:-1][lengths == length][:, None] + np.arange(length)
        out[idx] = np.cumsum(x[idx], axis=1)
    return out


def row_cumsum(b: BlockTable, x: np.ndarray, inclusive: bool = True) -> np.ndarray:
    """Per position the sum of ``x`` over its row up to it (``inclusive``) or above it."""
    out = segment_cumsum(np.asarray(x, dtype=np.float64), b.offsets)
    return out if inclusive else out - x


def ideal_gains(b: BlockTable) -> tuple[Floats, Ints]:
    """Every positive gain of each row's judgements, best first: ``(gains, offsets)``.

    The gains are the labels > 0 of the ranked items and of the unranked judged items
    (trec_eval's ``rel_levels``: the gain of a level is the level, whatever ``-l`` says).
    Computed once per batch (shared by binG, G, ndcg_rel and Rndcg at every option).
    """
    kept: tuple[Floats, Ints] | None = b.shared.get(_IDEAL_GAINS)
    if kept is None:
        keep = b.lab_first > 0
        gains, grow = b.lab_first[keep], b.row[keep]
        if b.unranked is not None:
            ulab, uoff = b.unranked
            urow = np.repeat(np.arange(b.rows, dtype=np.int64), np.diff(uoff))
            sel = ulab > 0
            gains = np.concatenate((gains, ulab[sel]))
            grow = np.concatenate((grow, urow[sel]))
        order = np.lexsort((-gains, grow))
        count = np.bincount(grow, minlength=b.rows)
        kept = b.shared[_IDEAL_GAINS] = (
            gains[order], np.concatenate(([0], np.cumsum(count))).astype(np.int64))
    return kept


_IDEAL_GAINS = "placement.ideal_gains"  # the key of ideal_gains() in BlockTable.shared


def ideal_prefix(gains: Floats, offsets: Ints, term: Callable[[Floats, Ints], Floats]
                 ) -> tuple[Floats, Ints]:
    """Per row the sums of ``term(gain, place)`` over its first 0..T ideal gains (places
    0-based; :func:`ideal_gains`): ``(prefix, starts)``, row i's sum over its first j at
    ``prefix[starts[i] + j]``."""
    rows = offsets.size - 1
    count = np.diff(offsets)
    grow = np.repeat(np.arange(rows, dtype=np.int64), count)
    gpos = np.arange(gains.size, dtype=np.int64) - offsets[:-1][grow]
    starts = offsets[:-1] + np.arange(rows, dtype=np.int64)  # T + 1 entries per row
    prefix = np.zeros(gains.size + rows)
    prefix[gpos + 1 + starts[grow]] = segment_cumsum(term(gains, gpos), offsets)
    return prefix, starts


def linear_moments(b: BlockTable, g: np.ndarray, w: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``E`` and ``Var`` of ``sum_r g(item at r) w(r)``: ``g`` by position in any
    ordering of the batch (each block holds the same items in every ordering), ``w`` the
    weight of each position (docs/METRICS.md 3-4)."""
    n = b.bsz.astype(np.float64)
    gsum, wsum = b.block_sum(g), b.block_sum(w)
    e = np.bincount(b.brow, weights=gsum * wsum / n, minlength=b.rows)
    ssg = b.block_sum((g - (gsum / n)[b.bid]) ** 2)
    ssw = b.block_sum((w - (wsum / n)[b.bid]) ** 2)
    var_t = np.where(b.bsz > 1, ssg * ssw / np.maximum(n - 1.0, 1.0), 0.0)
    return e, np.bincount(b.brow, weights=var_t, minlength=b.rows)


def _log_factorials(top: int) -> np.ndarray:
    """``log(i!)`` for i = 0..top (``gammaln(i + 1)``, as :func:`_log_comb` takes them)."""
    from scipy.special import gammaln  # scipy only for a tie block of over EXACT_BLOCK

    out: np.ndarray = gammaln(np.arange(top + 1, dtype=np.float64) + 1.0)
    return out


def _log_comb(lf: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` from the table ``lf`` of :func:`_log_factorials`."""
    out: np.ndarray = lf[n] - lf[k] - lf[n - k]
    return out


#: The largest tie block whose chances :func:`item_expectation` takes from exact binomial
#: coefficients (every ``C(n, k)`` with n < 57 is an integer below 2**53, so Pascal's
#: rule builds them exactly in float64); larger blocks take them from logarithms.
EXACT_BLOCK = 57


def _binomials(top: int) -> np.ndarray:
    """``C(n, k)`` for 0 <= k <= n <= top (0 for k > n), exact: Pascal's rule."""
    out = np.zeros((top + 1, top + 1))
    out[:, 0] = 1.0
    for n in range(1, top + 1):
        out[n, 1:n + 1] = out[n - 1, :n] + out[n - 1, 1:n + 1]
    return out


def _mixed_radix(flat: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The digits (shape (L, len(flat))) of each ``flat[i]`` in the mixed radix
    ``sizes[:, i]``, the last digit the fastest (``np.unravel_index``'s order)."""
    digits = np.empty(sizes.shape, dtype=np.int64)
    rest = flat.copy()
    for level in range(sizes.shape[0] - 1, -1, -1):
        rest, digits[level] = np.divmod(rest, sizes[level])
    return digits


def item_expectation(b: BlockTable, cls: np.ndarray, classes: int, wanted: tuple[int, ...],
                     f: ItemTerm, retrieved: np.ndarray) -> np.ndarray:
    """Per row the exact ``E[sum over retrieved items i of class in wanted of f]`` under
    uniform random tie-breaking, NaN where the work exceeds :data:`ITEM_WORK_LIMIT`.

    ``cls`` is each position's class (0..classes-1) in any ordering of the batch;
    ``retrieved`` the number of places of each row that count (the depth); ``f(rows, pos,
    above, c)`` gives the value of an item of class ``c`` of row ``rows`` at 0-based place
    ``pos`` with ``above[l]`` items of class l above it (arrays, one entry per case).

    Every (tie block, class of item, composition of the items above it) term of every
    block is laid end to end and summed in slices of :data:`_GRID_SLICE` terms, the
    blocks of the whole batch at once (a stop is noticed between slices).
    """
    rows = b.rows
    onehot = np.zeros((classes, cls.size))
    onehot[cls, np.arange(cls.size)] = 1.0
    k_t = np.stack([b.block_sum(onehot[c]) for c in range(classes)]) if cls.size else \
        np.zeros((classes, 0))
    before = np.stack([b.within_row_exclusive(k_t[c]) for c in range(classes)]) \
        if cls.size else np.zeros((classes, 0))
    out = np.zeros(rows)
    m_t = np.clip(retrieved[b.brow] - b.ba, 0, b.bsz)
    # untied blocks: the one item at its one place
    single = np.flatnonzero((b.bsz == 1) & (m_t > 0))
    if single.size:
        c_single = cls[b.bst[single]]
        for c in wanted:
            sel = single[c_single == c]
            if sel.size:
                v = f(b.brow[sel], b.ba[sel], before[:, sel], c)
                out += np.bincount(b.brow[sel], weights=v, minlength=rows)
    tied = np.flatnonzero((b.bsz > 1) & (m_t > 0))
    if tied.size == 0:
        return out
    work = np.zeros(rows)
    for c in wanted:
        has = k_t[c, tied] > 0
        sizes = k_t[:, tied] + 1.0
        sizes[c] -= 1.0
        work += np.bincount(b.brow[tied[has]], weights=np.prod(sizes[:, has], axis=0),
                            minlength=rows)
    over = work > ITEM_WORK_LIMIT
    tied = tied[~over[b.brow[tied]]]
    small = b.bsz[tied] <= EXACT_BLOCK
    for c in wanted:
        checkpoint()
        for exact in (True, False):
            blocks = tied[(k_t[c, tied] > 0) & (small if exact else ~small)]
            if blocks.size:
                out += _block_sums(b, blocks, k_t, before, m_t, c, classes, f, exact)
    out[over] = np.nan
    return out


def _block_sums(b: BlockTable, blocks: np.ndarray, k_t: np.ndarray, before: np.ndarray,
                m_t: np.ndarray, c: int, classes: int, f: ItemTerm, exact: bool
                ) -> np.ndarray:
    """Per row the sum over the items of class ``c`` of tie blocks ``blocks`` of their
    expected ``f`` (:func:`item_expectation`): every (block, composition of the items above
    the item) term laid end to end, summed :data:`_GRID_SLICE` terms at a time. The
    chance of a composition is ``prod_l C(K_l, a_l) / C(n - 1, x) / n``, from exact
    binomial coefficients (``exact``, blocks of at most :data:`EXACT_BLOCK` items) or
    from logarithms."""
    out = np.zeros(b.rows)
    top = int(b.bsz[blocks].max())
    table = _binomials(top) if exact else _log_factorials(top)
    # per block the counts of the other items of each class, and the compositions of the
    # ones above the item: prod_l (others_l + 1)
    others = k_t[:, blocks].astype(np.int64)
    others[c] -= 1
    radix = others + 1
    count = np.prod(radix, axis=0)
    ends = np.cumsum(count)
    weight = k_t[c, blocks]
    for lo in range(0, int(ends[-1]), _GRID_SLICE):
        checkpoint()
        flat = np.arange(lo, min(lo + _GRID_SLICE, int(ends[-1])), dtype=np.int64)
        case = np.searchsorted(ends, flat, side="right")
        grids = _mixed_radix(flat - (ends - count)[case], radix[:, case])
        x = grids.sum(axis=0)
        t = blocks[case]
        keep = x < m_t[t]
        if not keep.all():
            grids, x, t, case = grids[:, keep], x[keep], t[keep], case[keep]
        if x.size == 0:
            continue
        n = b.bsz[t]
        if exact:
            p = table[others[0, case], grids[0]]
            for kind in range(1, classes):
                p = p * table[others[kind, case], grids[kind]]
            p = p / table[n - 1, x] / n
        else:
            logp = -_log_comb(table, n - 1, x) - np.log(n.astype(np.float64))
            for kind in range(classes):
                logp = logp + _log_comb(table, others[kind, case], grids[kind])
            p = np.exp(logp)
        above = before[:, t] + grids
        row = b.brow[t]
        v = f(row, b.ba[t] + x, above, c)
        out += np.bincount(row, weights=weight[case] * (p * v), minlength=b.rows)
    return out
