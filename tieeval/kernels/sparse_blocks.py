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
its row sorted ascending (``np.sort``, no permutation), on all marked items at once. The
positions of a block's marked items in the 'first' ordering (labels descending inside the
block, judged before unjudged among equal labels, unmarked items between the items with a
label >= 0 and the negatives) and the 'last' ordering (its reverse) follow from ``a`` and
the item's rank among the block's marked items. Only the 'original' ordering needs the
codebases' ``np.argsort(row * -1)``, and only for rows where a marked item is tied: a
score held once in its row sits at position ``a`` in every ordering.
"""

from __future__ import annotations

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.threads import map_blocks

_SORT_CHUNK = 1 << 19  # elements per block of rows sorted together (one thread each)


def _groups(n: np.ndarray, offsets: np.ndarray, rows: np.ndarray):
    """2-D flat index arrays of ``rows``, one per run of rows of one length (in blocks)."""
    lens = n[rows]
    for length in np.unique(lens):
        if length == 0:
            continue
        group = rows[lens == length]
        for part in np.array_split(group, group.size * int(length) // _SORT_CHUNK + 1):
            if part.size:
                yield offsets[part][:, None] + np.arange(length)


def _sorted_rows(s: np.ndarray, n: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every row of the flat ``s`` sorted ascending in place of the row (threads)."""
    rows = n.size
    if rows and s.size and (n == n[0]).all():
        dense = s.reshape(rows, int(n[0]))
        step = max(1, _SORT_CHUNK // int(n[0]))
        parts = [dense[i:i + step] for i in range(0, rows, step)]
        return np.concatenate([p.ravel() for p in map_blocks(
            lambda p: np.sort(p, axis=1), parts, [p.size for p in parts])]) if parts else s
    out = np.empty_like(s)
    groups = list(_groups(n, offsets, np.arange(rows)))
    for idx, got in zip(groups, map_blocks(lambda idx: np.sort(s[idx], axis=1), groups,
                                           [g.size for g in groups])):
        out[idx] = got
    return out


def _search(ss: np.ndarray, lo: np.ndarray, hi: np.ndarray, v: np.ndarray, steps: int,
            right: bool) -> np.ndarray:
    """Per query, the first index of ``ss[lo:hi]`` (ascending) holding a value > ``v``
    (``right``) or >= ``v``: a binary search on all queries at once, ``steps`` rounds."""
    lo, hi = lo.copy(), hi.copy()
    last = max(ss.size - 1, 0)
    for _ in range(steps):
        mid = (lo + hi) >> 1
        val = ss[np.minimum(mid, last)]
        go = (val <= v) if right else (val < v)
        go &= lo < hi
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return lo


def build(b, s: np.ndarray, lab: np.ndarray, judged, argsort_rows) -> None:
    """Fill the compact block table of ``b`` (a RelBatch with ``rows``, ``n``, ``offsets``,
    ``original`` and ``level`` set) from flat scores ``s`` and labels ``lab``.

    ``judged`` is the bool mask of judged candidates or None (``label != 0``);
    ``argsort_rows(s, rows)`` yields ``(idx, order)`` of the 'original' ordering.
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
    if not np.isfinite(ml).all():
        raise InputError("labels must be finite (no NaN or inf)")
    rel = b.relevant(ml)
    mjd = np.ones(mi.size, dtype=bool) if judged is None else judged[mi] | rel
    # a (scores above) and t (scores tied) of every marked item, and each row's top tie
    ss = _sorted_rows(s, n, offsets)
    steps = int(n.max(initial=0)).bit_length() + 1
    lo, hi = offsets[:-1], offsets[1:]
    v = s[mi]
    left = _search(ss, lo[mrow], hi[mrow], v, steps, right=False)
    right = _search(ss, lo[mrow], hi[mrow], v, steps, right=True)
    a = hi[mrow] - right
    t = right - left
    full_rows = np.flatnonzero(n > 0)
    top = ss[hi[full_rows] - 1]
    b._top_ties = (full_rows, hi[full_rows] - _search(ss, lo[full_rows], hi[full_rows], top,
                                                      steps, right=False))
    # position of every marked item in the 'original' ordering
    opos = a.copy()
    if b.original == "given":
        opos = mi - offsets[mrow]
    else:
        tied = np.flatnonzero(t > 1)
        if tied.size:
            opos[tied] = _original_positions(s, offsets, mi[tied], mrow[tied], a[tied],
                                             t[tied], argsort_rows)
    # marked items by block (row, then a), inside a block 'first': label descending,
    # judged first among equal labels
    gkey = offsets[mrow] + a
    if not (np.diff(gkey) > 0).all():  # else each marked item is alone, in order
        o = np.lexsort((~mjd, -ml, gkey))
        mrow, ml, mjd, rel = mrow[o], ml[o], mjd[o], rel[o]
        a, t, opos, gkey = a[o], t[o], opos[o], gkey[o]
    new = np.ones(mi.size, dtype=bool)
    new[1:] = gkey[1:] != gkey[:-1]
    first_item = np.flatnonzero(new)
    ib = np.cumsum(new) - 1  # block of each marked item
    nblocks = first_item.size
    bsz = t[first_item]
    ba = a[first_item]
    brow = mrow[first_item]
    bst = np.cumsum(bsz) - bsz  # block starts in the compact layout
    csize = int(bsz.sum())
    # rank among the block's marked items; negatives go after the unmarked items
    rank = np.arange(mi.size) - first_item[ib]
    marked_in_block = np.diff(np.append(first_item, mi.size))
    off_first = np.where(ml < 0, rank + (bsz - marked_in_block)[ib], rank)
    bid = np.repeat(np.arange(nblocks), bsz)
    cpos = np.arange(csize, dtype=np.int64)
    b.size = csize
    b.row = brow[bid]
    b.pos = cpos - (bst - ba)[bid]
    b.bst, b.bsz, b.bid, b.brow, b.ba = bst, bsz, bid, brow, ba
    b.bend = bst + bsz - 1
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
    newrow = np.ones(nblocks, dtype=bool)
    newrow[1:] = brow[1:] != brow[:-1]
    b._row_first_block = np.maximum.accumulate(np.where(newrow, np.arange(nblocks), 0))
    b.n_pos = np.bincount(mrow[rel], minlength=rows)
    b.n_neg = np.bincount(mrow[ml < 0], minlength=rows)
    b.n_pos_ranked = b.n_pos
    b.n_judged_nonrel = np.bincount(mrow[mjd & ~rel], minlength=rows)
    # the marked items' rows and labels (the ideal DCG and the largest label read them)
    b._marked = (mrow, ml)
    b._row_length = n
    b.compact = True


def _original_positions(s, offsets, mi, mrow, a, t, argsort_rows) -> np.ndarray:
    """Positions in the 'original' ordering of tied marked items (flat ``mi`` in row
    ``mrow``, ``a`` above, ``t`` tied): the rows holding them are sorted by the codebases'
    call, and only the members of their tie blocks are looked up."""
    need = np.unique(mrow)
    where = np.full(offsets.size - 1, -1, dtype=np.int64)  # row -> start in 'flat'
    parts, total = [], 0
    for idx, got in argsort_rows(s, need):
        r = np.searchsorted(offsets, idx[:, 0], side="right") - 1
        where[r] = total + np.arange(r.size) * idx.shape[1]
        parts.append(got.ravel())
        total += got.size
    flat = np.concatenate(parts)
    # each tie block once: its members' flat indices at positions a .. a + t - 1
    key = offsets[mrow] + a
    uniq, first = np.unique(key, return_index=True)
    bl_row, bl_a, bl_t = mrow[first], a[first], t[first]
    member_block = np.repeat(np.arange(uniq.size), bl_t)
    j = np.arange(member_block.size) - np.repeat(np.cumsum(bl_t) - bl_t, bl_t)
    member_pos = bl_a[member_block] + j
    members = flat[where[bl_row][member_block] + member_pos]
    posmap = np.empty(s.size, dtype=np.int64)
    posmap[members] = member_pos
    return posmap[mi]


def row_max_label(b) -> np.ndarray:
    """Each row's largest ranked label from a sparse table: 0 when the row has an unmarked
    item (label 0), -inf for an empty row."""
    mrow, ml = b._marked
    counts = np.bincount(mrow, minlength=b.rows)
    out = np.where(b._row_length > counts, 0.0, -np.inf)
    np.maximum.at(out, mrow, ml)
    return out
