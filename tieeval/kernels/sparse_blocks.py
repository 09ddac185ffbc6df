"""The sparse block table of :class:`tieeval.kernels.tie_blocks.RelBatch` (``sparse=True``).

Most metrics read a ranking only where its labels are: a position whose label is 0 (and,
for Judged@K and bpref, which is unjudged) adds an exact zero to every sum of DCG, hits,
reciprocal rank, average precision, bpref, V-AUC and their tie-aware forms, and a tie
block holding no such *marked* item adds zero to every expectation and variance. So the
table keeps only the tie blocks that hold a marked item, each whole (every position of
the block, in the same layout as the full table), in row order and, inside a row, in
score order: a *compact* layout on which the metrics of :mod:`tieeval.kernels.tie_blocks`
run unchanged, and whose sums are the full table's sums with exact zeros left out (the
same floating-point values, bit for bit: adding +0.0 changes no partial sum, and no sum
is reordered).

Per marked item the table needs ``a`` (scores above it in its row) and ``t`` (scores
tied with it, itself included): both come from a binary search of the item's score in
its row sorted ascending (``np.sort``, no permutation), on all marked items at once (long
rows of a table cut at a depth are sorted only above their depth-th largest score, after
``np.partition``: an item at or above it is searched there, one below it counted in its
row). The
positions of a block's marked items in the 'first' ordering (labels descending inside the
block, judged before unjudged among equal labels, unmarked items between the items with a
label >= 0 and the negatives) and the 'last' ordering (its reverse) follow from ``a`` and
the item's rank among the block's marked items. Only the 'original' ordering needs the
codebases' ``np.argsort(row * -1)``, and only for rows where a marked item is tied: a
score held once in its row sits at position ``a`` in every ordering. Under a rank depth
(every metric has a cutoff) only the first places of each sorted row are read, and a
table cut at a prune depth keeps only the items scored at or above their row's
depth-th largest score (and each row's first relevant block).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.threads import MIN_BLOCK_SCORES, map_blocks, threads
from tieeval.util.ranges import expand
from tieeval.util.stopping import checkpoint

SORT_CHUNK = 1 << 19  # at most this many elements per block of rows sorted together
_QUERIES = 1 << 15  # binary searches run together (their rows stay in cache)
# rows at least this long, in a table cut at a depth, are partitioned at their depth-th
# largest score and sorted above it only (np.partition and a sort of the depth), not
# sorted whole: faster from rows of about 1,600 scores up (1.8-1.9x at 5,000), slower below
# about 1,000, where numpy's sort of a short row is cheap (benchmarks/bench_partial.py)
_PARTIAL_WIDTH = 1500


def _chunk(total: int) -> int:
    """Elements per block of rows sorted on one thread: every thread gets work once a batch
    is large enough, and no block exceeds SORT_CHUNK."""
    return min(SORT_CHUNK, max(MIN_BLOCK_SCORES, -(-total // threads())))


def _sorted_rows(s: np.ndarray, n: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every row of the flat ``s`` sorted ascending in place of the row (threads)."""
    rows = n.size
    if rows and s.size and (n == n[0]).all():
        out = s.reshape(rows, int(n[0])).copy()
        step = max(1, _chunk(out.size) // int(n[0]))
        parts = [out[i:i + step] for i in range(0, rows, step)]
        map_blocks(lambda p: p.sort(axis=1), parts, [p.size for p in parts])
        value: np.ndarray = out.ravel()
        return value
    out = np.empty_like(s)
    groups = [offsets[part][:, None] + np.arange(int(n[part[0]]))
              for part in row_groups(n, np.arange(rows))]
    for idx, got in zip(groups, map_blocks(lambda idx: np.sort(s[idx], axis=1), groups,
                                           [g.size for g in groups])):
        out[idx] = got
    return out


def _top_sorted_rows(s: np.ndarray, rows: int, width: int,
                     depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row of the flat ``s`` (``rows`` of one ``width`` > ``depth``) sorted ascending
    in its last ``depth`` places only, and each row's count of its ``depth``-th largest
    score (threads). The other places hold the row's other scores, each at or below that
    one, in no order: every score above it is among the sorted places (``np.partition``
    and a sort of ``depth`` scores cost about half a sort of the row, where a table cut at
    ``depth`` searches no further than them; :func:`_top_counts`)."""
    out = s.reshape(rows, width).copy()
    cut = width - depth
    step = max(1, _chunk(out.size) // width)
    parts = [out[i:i + step] for i in range(0, rows, step)]

    def part(p: np.ndarray) -> np.ndarray:
        p.partition(cut, axis=1)
        p[:, cut:].sort(axis=1)
        value: np.ndarray = np.count_nonzero(p == p[:, cut:cut + 1], axis=1)
        return value
    eq = map_blocks(part, parts, [p.size for p in parts])
    return out.ravel(), np.concatenate(eq).astype(np.int64)


def _top_counts(ss: np.ndarray, eq: np.ndarray, deep: tuple[np.ndarray, np.ndarray, np.ndarray],
                lo: np.ndarray,
                mrow: np.ndarray, v: np.ndarray, width: int,
                depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a`` (scores above) and ``t`` (scores tied) of each item (row ``mrow``, score
    ``v``) and each row's top tie, from rows sorted in their last ``depth`` places only
    (:func:`_top_sorted_rows`: ``ss`` and ``eq``, each row's count of its ``depth``-th
    largest score, kth). An item scored above kth, and a row's maximum above it, is searched
    among the sorted places, which hold every score at or above its own; one scored at kth
    is tied with ``eq`` scores. One below it belongs to its row's first relevant block
    below the depth, whose counts :func:`_within_depth_dense` took (``deep``: the rows, the
    scores above and tied with that block)."""
    start = lo + (width - depth)
    kth = ss[start]
    kv = kth[mrow]
    a = np.empty(v.size, dtype=np.int64)
    t = np.empty(v.size, dtype=np.int64)
    near = np.flatnonzero(v >= kv)
    if near.size:
        base, vn = start[mrow[near]], v[near]
        right = _bound(ss, base, depth, vn, True)
        a[near] = base + depth - right
        t[near] = eq[mrow[near]]
        above = np.flatnonzero(vn != kv[near])
        if above.size:
            t[near[above]] = right[above] - _bound(ss, base[above], depth, vn[above], False)
    far = np.flatnonzero(v < kv)
    if far.size:
        rows, above_deep, tied_deep = deep
        at = np.searchsorted(rows, mrow[far])
        a[far], t[far] = above_deep[at], tied_deep[at]
    top = eq.copy()
    mx = ss[lo + (width - 1)]
    higher = np.flatnonzero(mx > kth)
    if higher.size:
        top[higher] = (start[higher] + depth
                       - _bound(ss, start[higher], depth, mx[higher], False))
    return a, t, top


def _reversed_rows(s: np.ndarray, n: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every row of the flat ``s`` reversed in place of the row: rows listed best first
    (non-increasing, no NaN) sorted ascending, equal for every comparison to
    :func:`_sorted_rows` (which may order -0.0 and 0.0 otherwise), without a sort."""
    row = np.repeat(np.arange(n.size), n)
    value: np.ndarray = s[(offsets[:-1] + offsets[1:] - 1)[row] - np.arange(s.size)]
    return value


def run_starts(key: np.ndarray) -> np.ndarray:
    """Where a run of equal neighbours of ``key`` starts (the first entry always does)."""
    new = np.ones(key.size, dtype=bool)
    np.not_equal(key[1:], key[:-1], out=new[1:])
    return new


def run_first(new: np.ndarray) -> np.ndarray:
    """Per entry, the index of its run's first entry (``new``: :func:`run_starts`)."""
    first: np.ndarray = np.maximum.accumulate(np.where(new, np.arange(new.size), 0))
    return first


def _listed_blocks(s: np.ndarray, n: np.ndarray, offsets: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tie blocks of rows listed best first (non-increasing, no NaN): each block's
    first position and size (int64), and the block of every position."""
    new = run_starts(s)
    new[offsets[:-1][n > 0]] = True  # a row starts a block
    start = np.flatnonzero(new)
    size = np.diff(np.append(start, s.size))
    return start, size, np.cumsum(new.astype(np.int64)) - 1


def _bound(ss: np.ndarray, lo: np.ndarray, width: int | np.ndarray, v: np.ndarray,
           right: bool) -> np.ndarray:
    """Per query, the first index of ``ss[lo:lo + width]`` (ascending; ``width`` >= 1, one
    for every range or one per query) holding a value > ``v`` (``right``) or >= ``v``: a
    branchless binary search on all queries at once (a probe, a comparison and a masked
    add per round)."""
    top = width if isinstance(width, int) else int(width.max(initial=1))
    if lo.size > _QUERIES:  # in blocks on several threads: the rows stay in cache
        starts = list(range(0, lo.size, _QUERIES))
        return np.concatenate(map_blocks(
            lambda i: _bound(ss, lo[i:i + _QUERIES],
                             width if isinstance(width, int) else width[i:i + _QUERIES],
                             v[i:i + _QUERIES], right), starts, [top * _QUERIES] * len(starts)))
    base = lo.copy()
    n = width
    while top > 1:
        half = n >> 1
        probe = ss[base + half]
        np.add(base, half, out=base, where=(probe <= v) if right else (probe < v))
        n = n - half
        top -= top >> 1
    last = ss[base]
    value: np.ndarray = base + ((last <= v) if right else (last < v))
    return value


def _bound_top(ss: np.ndarray, lo: np.ndarray, width: int, v: np.ndarray, right: bool,
               depth: int | None) -> np.ndarray:
    """:func:`_bound` over rows of one ``width``, each query scored above its row's
    ``depth``-th largest score (at or above it, for ``right``) searched among the row's
    last ``depth`` places only: every place before them holds a score at or below that
    one, so the bound lies among them (half the rounds for a cutoff of 10 in 200)."""
    if depth is None or depth >= width or v.size == 0:
        return _bound(ss, lo, width, v, right)
    start = lo + (width - depth)  # the depth-th largest score of each row
    kth = ss[start]
    top = v >= kth if right else v > kth
    if top.all():
        return _bound(ss, start, depth, v, right)
    out = np.empty(v.size, dtype=np.result_type(lo, np.int8))
    near = np.flatnonzero(top)
    far = np.flatnonzero(~top)
    out[near] = _bound(ss, start[near], depth, v[near], right)
    out[far] = _bound(ss, lo[far], width, v[far], right)
    return out


def _tied(ss: np.ndarray, lo: np.ndarray, right: np.ndarray, v: np.ndarray,
          width: int | None, depth: int | None = None) -> np.ndarray:
    """How many of ``ss[lo:right]`` (ascending, ending in ``v``) equal ``v``: 1 unless
    the value before is ``v`` too, else from a search of the rest (int64). ``width``:
    the rows' common length, if they have one; ``depth``: :func:`_bound_top`'s."""
    t = np.ones(v.size, dtype=np.int64)
    prev = right - 2
    more = np.flatnonzero((prev >= lo) & (ss[np.maximum(prev, 0)] == v))
    if more.size:
        end = right[more]
        if width is not None:
            t[more] = end - _bound_top(ss, lo[more], width, v[more], False, depth)
        else:
            t[more] = end - _bound(ss, lo[more], end - 1 - lo[more], v[more], False)
    return t


def label_span(ml: np.ndarray, whole: bool = False) -> int | None:
    """``max - min + 1`` of whole-number labels when a key ``row * span + label`` fits in
    int64 beside any batch (span < 2**24), else None. ``whole``: the labels are known to
    be whole numbers (read from an integer or bool array)."""
    if ml.size == 0:
        return None
    top, bottom = float(ml.max()), float(ml.min())
    if top - bottom >= 1 << 24 or not (whole or (ml == np.floor(ml)).all()):
        return None
    return int(top - bottom) + 1


def _order_by(gkey: np.ndarray, ml: np.ndarray, mjd: np.ndarray,
              whole: bool = False) -> np.ndarray:
    """The permutation sorting by ``gkey``, then label descending, then judged first
    (equal keys in any order: their items are alike for every metric). One stable sort of
    an int64 key for whole-number labels, else ``np.lexsort``."""
    span = label_span(ml, whole)
    if span is None or gkey.size == 0 or int(gkey.max()) >= 1 << 37:
        return np.lexsort((~mjd, -ml, gkey))
    rank = (float(ml.max()) - ml).astype(np.int64)  # 0 for the largest label
    return np.argsort((gkey * span + rank) * 2 + ~mjd, kind="stable")


def build(b: Any, s: np.ndarray, lab: np.ndarray, judged: np.ndarray | None,
          row_orders: Callable[..., np.ndarray],
          rank_depth: int | None = None, prune_depth: int | None = None) -> None:
    """Fill the compact block table of ``b`` (a RelBatch with ``rows``, ``n``, ``offsets``,
    ``original`` and ``level`` set) from flat scores ``s`` and labels ``lab``.

    ``judged`` is the bool mask of judged candidates or None (``label != 0``);
    ``row_orders(vals)`` gives the columns of each row of a 2-D block of rows of one
    length in the 'original' ordering. ``rank_depth``: when set, no metric reads a place
    at or below it in the 'original' ordering, so a tie block starting there is not sorted
    (its items take their 'first' places; every metric value is unchanged).
    ``prune_depth``: when set, every metric to be read has a cutoff K <= prune_depth, so
    a tie block starting at or below it adds exact zeros to every sum and is left out of
    the table, except each row's first block holding a relevant item (the positive-tie
    statistics read it); the per-row counts (R, negatives, judged) and the ideal DCG still
    come from every marked item. Such items are found without a search: their score is
    below the row's ``prune_depth``-th largest.
    """
    rows, n, offsets = b.rows, b.n, b.offsets
    dense = bool(rows) and bool((n == n[0]).all())
    mark = lab != 0
    if judged is not None:
        mark = mark | judged
    mi = np.flatnonzero(mark)
    if dense:
        mrow = mi // max(int(n[0]), 1)
    else:
        mrow = np.searchsorted(offsets, mi, side="right") - 1
    ml = lab[mi].astype(np.float64)
    whole = lab.dtype.kind in "biu"  # integer labels: finite whole numbers
    if not whole and not np.isfinite(ml).all():
        raise InputError("labels must be finite (no NaN or inf)")
    rel = b.relevant(ml)
    mjd = np.ones(mi.size, dtype=bool) if judged is None else judged[mi] | rel
    # per-row counts over every marked item, before a prune_depth leaves some out
    row_counts(b, mrow, ml, mjd, rel)
    # the marked items' rows and labels (the ideal DCG and the largest label read them)
    b.marked = (mrow, ml)
    # a (scores above) and t (scores tied) of every marked item, and each row's top tie
    listed = b.original == "given"  # rows listed best first (checked): no sort, no search
    width = int(n[0]) if dense and n[0] > 0 else None
    ss = s[:0]  # the rows sorted ascending, where they are read: searches, a depth
    eq = None  # rows of one length cut at a depth: each sorted in its last places only
    none = np.zeros(0, dtype=np.int64)
    # their first relevant blocks below the depth
    deep: tuple[np.ndarray, np.ndarray, np.ndarray] = (none, none, none)
    if not listed:
        if (width is not None and prune_depth is not None
                and width >= max(_PARTIAL_WIDTH, prune_depth + 1)):
            ss, eq = _top_sorted_rows(s, rows, width, prune_depth)
        else:
            ss = _sorted_rows(s, n, offsets)
    elif prune_depth is not None:
        ss = _reversed_rows(s, n, offsets)
    # int32 indices where they cannot overflow (lo + hi < 2**31): half the memory traffic
    index = np.int32 if s.size < 1 << 30 else np.int64
    lo, hi = offsets[:-1].astype(index), offsets[1:].astype(index)
    v = s[mi]
    if prune_depth is not None and mi.size:
        if width is not None:
            # rows of one length: the items kept are found by one comparison of every
            # score with its row's depth-th largest, not by a look-up per marked item
            keep, deep = _within_depth_dense(s, ss, width, mi, rel, lab, b.relevant, b.n_pos,
                                             prune_depth, counts=eq is not None)
        else:
            keep = _within_depth(ss, lo, hi, mrow, v, rel, prune_depth)
        if not keep.all():
            mi, mrow, ml, rel, mjd, v = (x[keep] for x in (mi, mrow, ml, rel, mjd, v))
    full_rows = np.flatnonzero(n > 0)
    if listed:
        # equal neighbours of a row listed best first are its tie blocks: an item's a is
        # its block's first place, t the block's size; the top tie is each row's first
        start, size, block_of = _listed_blocks(s, n, offsets)
        of = block_of[mi]
        a = start[of] - offsets[mrow]
        t = size[of]
        b._top_ties = (full_rows, size[block_of[offsets[full_rows]]])
    elif eq is not None and width is not None and prune_depth is not None:
        a, t, top = _top_counts(ss, eq, deep, lo, mrow, v, width, prune_depth)
        b._top_ties = (full_rows, top)
    else:
        if width is not None:
            right = _bound_top(ss, lo[mrow], width, v, True, prune_depth)
        else:
            right = _bound(ss, lo[mrow], (hi - lo)[mrow], v, True)
        a = (hi[mrow] - right).astype(np.int64)
        t = _tied(ss, lo[mrow], right, v, width, prune_depth)
        # each row's top tie: known where a marked item is at the top, else searched
        top = np.zeros(rows, dtype=np.int64)
        at_top = a == 0
        top[mrow[at_top]] = t[at_top]
        rest = full_rows[top[full_rows] == 0]
        top[rest] = _tied(ss, lo[rest], hi[rest], ss[hi[rest] - 1], width, prune_depth)
        b._top_ties = (full_rows, top[full_rows])
    # position of every marked item in the 'original' ordering
    opos = a.copy()
    unsorted = None  # tied items below rank_depth: no metric reads their place
    if b.original == "given":
        opos = mi - offsets[mrow]
    else:
        tied_mask = t > 1
        if rank_depth is not None:
            unsorted = tied_mask & (a >= rank_depth)
            tied_mask &= ~unsorted
        tied = np.flatnonzero(tied_mask)
        if tied.size:
            opos[tied] = _original_positions(s, n, offsets, mi[tied], mrow[tied], a[tied],
                                             t[tied], row_orders, rank_depth)
    fill(b, mrow, ml, mjd, rel, a, t, opos, unsorted, whole)


def row_counts(b: Any, row: np.ndarray, lab: np.ndarray, judged: np.ndarray,
               rel: np.ndarray) -> None:
    """Per row of ``b`` R (``n_pos``, also ``n_pos_ranked``), |N| and the judged
    non-relevant items, from its items' rows, labels, judged mask and relevance."""
    b.n_pos = b.n_pos_ranked = np.bincount(row[rel], minlength=b.rows)
    b.n_neg = np.bincount(row[lab < 0], minlength=b.rows)
    b.n_judged_nonrel = np.bincount(row[judged & ~rel], minlength=b.rows)


def fill(b: Any, mrow: np.ndarray, ml: np.ndarray, mjd: np.ndarray, rel: np.ndarray,
          a: np.ndarray, t: np.ndarray, opos: np.ndarray, unsorted: np.ndarray | None,
          whole: bool) -> None:
    """The block table of :func:`build` from its marked items (in flat order): row,
    label, judged, relevant, scores above and tied, place in the 'original' ordering, and
    which tied items were left unsorted below the rank depth (``whole``: whole-number
    labels)."""
    rows, offsets = b.rows, b.offsets
    # marked items by block (row, then a), inside a block 'first': label descending,
    # judged first among equal labels
    gkey = offsets[mrow] + a
    if not (np.diff(gkey) > 0).all():  # else each marked item is alone, in order
        o = _order_by(gkey, ml, mjd, whole)
        mrow, ml, mjd, rel = mrow[o], ml[o], mjd[o], rel[o]
        a, t, opos, gkey = a[o], t[o], opos[o], gkey[o]
        if unsorted is not None:
            unsorted = unsorted[o]
    new = run_starts(gkey)
    first_item = np.flatnonzero(new)
    ib = np.cumsum(new.astype(np.int64)) - 1  # block of each marked item (numpy's
    # cumulative sum of a bool array is several times slower than of its int64 copy)
    nblocks = first_item.size
    bsz = t[first_item]
    ba = a[first_item]
    brow = mrow[first_item]
    bst = np.cumsum(bsz) - bsz  # block starts in the compact layout
    csize = int(bsz.sum())
    # rank among the block's marked items; negatives go after the unmarked items
    rank = np.arange(mrow.size) - first_item[ib]
    marked_in_block = np.diff(np.append(first_item, mrow.size))
    off_first = np.where(ml < 0, rank + (bsz - marked_in_block)[ib], rank)
    if unsorted is not None and unsorted.any():
        # whole blocks (a >= rank_depth holds for every item of a block): the 'first' places
        opos[unsorted] = a[unsorted] + off_first[unsorted]
    bid = np.repeat(np.arange(nblocks), bsz)
    cpos = np.arange(csize, dtype=np.int64)
    b.size = csize
    b.row = brow[bid]
    b.pos = cpos - (bst - ba)[bid]
    b.bst, b.bsz, b.bid, b.brow, b.ba = bst, bsz, bid, brow, ba
    at = bst[ib]
    lab_first = np.zeros(csize)
    lab_first[at + off_first] = ml
    judged_first = np.zeros(csize, dtype=bool)
    judged_first[at + off_first] = mjd
    back = 2 * bst[bid] + bsz[bid] - 1 - cpos
    b.lab_first, b.judged_first = lab_first, judged_first
    b.lab_last, b.judged_last = lab_first[back], judged_first[back]
    lab_original = np.zeros(csize)
    lab_original[at + (opos - a)] = ml
    judged_original = np.zeros(csize, dtype=bool)
    judged_original[at + (opos - a)] = mjd
    b._lab_original, b._judged_original = lab_original, judged_original
    b.offsets = np.concatenate(([0], np.cumsum(np.bincount(brow, weights=bsz,
                                                           minlength=rows)))).astype(np.int64)
    b.p_t = np.bincount(ib[rel], minlength=nblocks)
    b.j_t = np.bincount(ib[mjd & ~rel], minlength=nblocks)
    b.jd_t = np.bincount(ib[mjd], minlength=nblocks)
    b.q_t = np.bincount(ib[ml < 0], minlength=nblocks)
    b._row_first_block = run_first(run_starts(brow))
    b.compact = True


def _within_depth(ss: np.ndarray, lo: np.ndarray, hi: np.ndarray, mrow: np.ndarray, v: np.ndarray,
                  rel: np.ndarray, depth: int) -> np.ndarray:
    """Which marked items (row ``mrow``, score ``v``) a table cut at ``depth`` keeps: those
    scored at or above their row's ``depth``-th largest score (fewer than ``depth`` scores
    above them: a score below it has at least ``depth`` above), and, in a row where no
    relevant item is, those tied with the row's highest-scored relevant item. ``ss``: the
    rows sorted ascending, row i at ``ss[lo[i]:hi[i]]``."""
    kth = ss[np.maximum(hi - depth, lo)[mrow]]
    keep = v >= kth
    rows_with = np.zeros(lo.size, dtype=bool)
    rows_with[mrow[rel & keep]] = True
    deep = np.flatnonzero(rel & ~rows_with[mrow])
    if deep.size:  # the first relevant block below the depth: kept for the tie figures
        # each such row's highest-scored relevant item (ordered in the stored dtype)
        by = deep[np.lexsort((v[deep], mrow[deep]))]
        last = np.ones(by.size, dtype=bool)
        last[:-1] = mrow[by][1:] != mrow[by][:-1]
        best = by[last]
        item = np.full(lo.size, -1, dtype=np.int64)
        item[mrow[best]] = best
        owner = item[mrow]
        keep |= (owner >= 0) & (v == v[np.maximum(owner, 0)])
    value: np.ndarray = keep
    return value


def _within_depth_dense(s: np.ndarray, ss: np.ndarray, width: int, mi: np.ndarray,
                        rel: np.ndarray, lab: np.ndarray,
                        relevant: Callable[[np.ndarray], np.ndarray], n_pos: np.ndarray,
                        depth: int, counts: bool = False
                        ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`_within_depth` for rows of one ``width``: which of the marked items (flat
    ``mi``, relevant where ``rel``) a table cut at ``depth`` keeps, and, with ``counts``,
    ``(rows, above, tied)`` of the rows whose first relevant block lies below the depth
    (ascending; the scores above and tied with that block, from the same pass; else
    empty). ``ss``: the rows sorted ascending, or sorted in their last ``depth`` places
    (:func:`_top_sorted_rows`); ``n_pos``: each row's relevant items."""
    rows = n_pos.size
    s2 = s.reshape(rows, width)
    kth = ss.reshape(rows, width)[:, max(width - depth, 0)]
    above = (s2 >= kth[:, None]).ravel()
    keep = above[mi]
    rows_with = np.zeros(rows, dtype=bool)
    rows_with[mi[rel & keep] // width] = True
    deep = np.flatnonzero((n_pos > 0) & ~rows_with)
    none = np.zeros(0, dtype=np.int64)
    found: tuple[np.ndarray, np.ndarray, np.ndarray] = (none, none, none)
    if deep.size:  # the first relevant block below the depth: kept for the tie figures
        sub = s2[deep]
        low = -np.inf if s.dtype.kind == "f" else np.iinfo(s.dtype).min
        best = np.where(relevant(lab.reshape(rows, width)[deep]), sub, low).max(axis=1)
        tied = sub == best[:, None]  # a relevant item holds the best
        r, c = np.nonzero(tied)
        # below every kept score of its row (else the row would have a relevant item kept)
        above[deep[r] * width + c] = True
        keep = above[mi]
        if counts:
            found = (deep, np.count_nonzero(sub > best[:, None], axis=1).astype(np.int64),
                     np.count_nonzero(tied, axis=1).astype(np.int64))
    return keep, found


def _original_positions(s: np.ndarray, n: np.ndarray, offsets: np.ndarray, mi: np.ndarray,
                        mrow: np.ndarray, a: np.ndarray, t: np.ndarray,
                        row_orders: Callable[..., np.ndarray],
                        depth: int | None = None) -> np.ndarray:
    """Positions in the 'original' ordering of tied marked items (flat ``mi`` in row
    ``mrow``, non-decreasing; ``a`` above, ``t`` tied): the rows holding them are sorted
    by the codebases' call (``row_orders`` of a 2-D block of rows of one length), block
    by block on several threads, and each item is found among its tie block's members.

    ``depth`` (the rank depth; every item's block starts above it): no metric reads a
    place at or below it, so only the first ``depth`` places of each sorted row are
    looked at, and an item not among them takes a free place of its block at or below
    the depth (:func:`_places_below`)."""
    need = mrow[run_starts(mrow)]
    chunks = list(row_groups(n, need))
    length0 = int(n[need[0]])
    dense = s.reshape(n.size, length0) if (n == length0).all() else None
    col = mi - offsets[mrow]
    # the items of each block of rows
    chunk_of_row = np.zeros(n.size, dtype=np.int64)
    for i, rows in enumerate(chunks):
        checkpoint()
        chunk_of_row[rows] = i
    by_chunk = np.argsort(chunk_of_row[mrow], kind="stable")
    counts = np.bincount(chunk_of_row[mrow], minlength=len(chunks))
    work = list(zip(chunks, np.split(by_chunk, np.cumsum(counts)[:-1])))

    def positions(job: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, items = job
        length = int(n[rows[0]])
        if dense is not None:
            vals = dense.take(rows, axis=0)
        else:
            vals = s[offsets[rows][:, None] + np.arange(length)]
        order = row_orders(vals, True)  # vals is this block's own copy
        if depth is not None:
            # the items among the first `depth` places: their (row, column) keys, which
            # ascend with the items (flat order), looked up for each place of the window
            window = order[:, :depth]
            keys = np.searchsorted(rows, mrow[items]) * length + col[items]
            want = np.arange(rows.size)[:, None] * length + window
            at = np.searchsorted(keys, want)
            hit = np.flatnonzero(keys[np.minimum(at, keys.size - 1)] == want)
            found = np.full(items.size, -1, dtype=np.int64)
            found[at.ravel()[hit]] = hit % window.shape[1]
            return items, found
        rix = np.searchsorted(rows, mrow[items])
        ti, ai = t[items], a[items]
        if int(ti.sum()) > order.size:
            # large tie blocks: the items' places lie in the window a .. a + t - 1 of the
            # order, so each row's items are looked up there (one gather of the window)
            # instead of inverting whole rows
            lo = int(ai.min())
            hi = int((ai + ti).max())
            slot = np.zeros(order.shape, dtype=np.int32 if items.size < 1 << 31 else np.int64)
            slot[rix, col[items]] = np.arange(1, items.size + 1)
            got = np.take_along_axis(slot, order[:, lo:hi], axis=1)
            r, place = np.nonzero(got)
            return items[got[r, place] - 1], place + lo
        # compare each item's column with its tie block's members, a .. a + t - 1
        member, owner = expand(ai, ti)
        hit = np.flatnonzero(order[rix[owner], member] == col[items][owner])
        return items, member[hit]

    out = np.empty(mi.size, dtype=np.int64)
    for items, pos in map_blocks(positions, work, [c.size * int(n[c[0]]) for c in chunks]):
        out[items] = pos
    if depth is not None:
        below = np.flatnonzero(out < 0)
        if below.size:
            out[below] = _places_below(offsets[mrow[below]] + a[below],
                                       np.maximum(a[below], depth))
    return out


def _places_below(block: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Distinct places for the tied items not found above the depth: ``start`` (the
    depth, or the block's first place if lower) plus the item's rank among those items of
    its ``block`` (a key per tie block). The block's places from ``start`` on belong to
    members not found above the depth, these items among them, so the places fit inside
    the block; none of them is read by a metric."""
    o = np.argsort(block, kind="stable")
    key = block[o]
    first = run_first(run_starts(key))
    out = np.empty(key.size, dtype=np.int64)
    out[o] = start[o] + np.arange(key.size) - first
    return out


def row_groups(n: np.ndarray, rows: np.ndarray, chunk: int | None = None
               ) -> Iterator[np.ndarray]:
    """``rows`` split into runs of one length, in non-empty blocks of ``chunk`` scores (by
    default :func:`_chunk`'s)."""
    lens = n[rows]
    if chunk is None:
        chunk = _chunk(int(lens.sum()))
    for length in np.unique(lens):
        if length == 0:
            continue
        group = rows[lens == length]
        yield from np.array_split(group, min(group.size, group.size * int(length) // chunk + 1))


def row_max_label(b: Any) -> np.ndarray:
    """Each row's largest ranked label from its marked items (every item of a full table):
    0 when the row has an unmarked item (label 0), -inf for an empty row."""
    mrow, ml = b.marked
    counts = np.bincount(mrow, minlength=b.rows)
    out = np.where(b.n > counts, 0.0, -np.inf)
    np.maximum.at(out, mrow, ml)
    return out
