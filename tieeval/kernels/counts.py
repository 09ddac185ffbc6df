"""Per-row tie kernels for the single-positive protocol.

Everything here compares scores in their stored dtype (``>`` and ``==`` on the array as
read, never after a cast) and returns int64 counts. No function sorts a row unless it must
reproduce the original codebase's ``np.argsort``, and then only rows whose positive is tied.

A *batch* is either dense, a 2-D array ``(rows, candidates)``, or ragged, a flat array of
scores with ``offsets`` (``rows + 1`` increasing integers, every row non-empty).
"""

from __future__ import annotations

import threading
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from tieeval.errors import InputError, ParameterError
from tieeval.kernels.threads import map_blocks, threads
from tieeval.records.batch import Batch

NAN_POLICIES = ("raise", "worst")


@dataclass
class RowCounts:
    """Per-row counts for one batch (all arrays have one entry per row, dtype int64).

    ``a``: candidates scored strictly above the positive; ``b``: candidates tied with the
    positive, itself included (b >= 1); ``n``: candidates in the row; ``top``: candidates
    sharing the row's maximum score (the paper's top-score tie size m_x); ``original``: the
    positive's 1-based rank in ``np.argsort(scores * -1)``.
    """

    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    top: np.ndarray
    original: np.ndarray
    # per metric, the rows a saved ranking (--original given) does not answer, or None
    # (tieeval.kernels.original.Short); None: every metric answered
    short: list[Any] | None = None


class NanScoreError(InputError):
    """A score is NaN under ``nan_policy='raise'``; ``row`` is the batch-relative row."""

    def __init__(self, row: int, count: int):
        super().__init__(f"NaN score in row {row} ({count} row(s) in this batch hold NaN); "
                         "pass --nan-policy worst to rank NaN below every score")
        self.row = row
        self.count = count


def _check_nan(row_max: np.ndarray, nan_policy: str) -> None:
    # np.max / np.maximum.reduceat propagate NaN, so a NaN row maximum flags the row
    # without a separate isnan pass over the scores.
    if nan_policy == "raise" and row_max.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(row_max))
        if bad.size:
            raise NanScoreError(int(bad[0]), int(bad.size))


def sort_key(scores: np.ndarray, scratch: bool = False) -> np.ndarray:
    """``scores * -1``, the codebases' sort key, wherever that reverses the order.

    For integer dumps ``* -1`` is not order-reversing everywhere: it overflows the signed
    minimum (which stays the minimum, so the original rank could leave the tie block) and
    raises OverflowError for unsigned dtypes under numpy >= 2. There ``~scores`` (``-x - 1``
    for signed, ``MAX - x`` for unsigned) gives the same descending order without overflow.
    ``scratch``: ``scores`` is the caller's own copy, turned into the key in place (the
    same values, one pass less).
    """
    kind = scores.dtype.kind
    if kind == "f" or (kind == "i" and not (scores == np.iinfo(scores.dtype).min).any()):
        return np.multiply(scores, -1, out=scores) if scratch else scores * -1
    return np.invert(scores, out=scores) if scratch else ~scores


# Rows are processed in blocks of about this many scores (2 MB of float32), so the few
# passes of the kernel over a block (row max, > and == the positive, == the max) hit cache
# instead of memory: one trip through memory per batch. Each block costs some 50 us of
# calls besides: 1 MB blocks took 1.03-1.17x the time of 2 MB ones end to end, 4 MB ones
# up to 1.28x on 101-wide rows, whose transposed copy leaves the cache
# (benchmarks/bench_blocks.py).
BLOCK_SCORES = 1 << 19
# Comparisons are written as booleans (a comparison into a float array costs several times
# more: a cast per value) and summed per row as 0/1 bytes into uint16, exact while a row
# has at most this many candidates; longer rows sum into int64.
_UINT16_EXACT = (1 << 16) - 1
# Rows of fewer candidates than this are counted column-wise (a transposed copy of the
# block): numpy's loops along a row of 100 scores cost more per score than the copy.
COLUMNWISE_BELOW = 160
_BUFFERS = threading.local()


def _buffer(size: int, dtype: npt.DTypeLike, use: str = "") -> np.ndarray:
    """A reusable flat work array of at least ``size`` elements, one per thread and
    ``use``: a fresh array per block would cost its page faults every time."""
    key = use + np.dtype(dtype).char
    buf = getattr(_BUFFERS, key, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_BUFFERS, key, buf)
    return buf[:size]


def dense_counts(scores: np.ndarray, positive: np.ndarray, nan_policy: str = "raise",
                 rule: str = "argsort") -> RowCounts:
    """Counts for a dense batch ``scores[rows, candidates]`` with the positive at
    ``positive``, NaN under ``nan_policy`` (:class:`~tieeval.kernels.tie_blocks.TableOptions`)
    and the ``original`` ranks under ``rule`` (:func:`original_ranks`)."""
    rows, cols = scores.shape
    from tieeval.kernels.fused import dense_abt
    fused = dense_abt(scores, positive)
    if fused is not None:
        return _row_counts(scores, positive, fused, rule)
    # a, b and the top tie in cache-sized blocks; the tied rows' sorts over the whole batch
    # at once, so that they can be spread over threads
    step = max(1, BLOCK_SCORES // max(1, cols))
    out = np.empty((3, rows), dtype=np.int64)
    starts = list(range(0, rows, step))
    column = _one_column(positive)

    def count(lo: int) -> None:
        hi = min(lo + step, rows)
        _dense_block(scores[lo:hi], positive[lo:hi], nan_policy, lo, out[:, lo:hi], column)
    map_blocks(count, starts, [min(step, rows - lo) * cols for lo in starts])
    return _row_counts(scores, positive, out, rule)


def block_counts(batch: Batch, nan_policy: str = "raise", rule: str = "argsort",
                 keep: bool = True) -> RowCounts:
    """:func:`dense_counts` of a dense batch whose scores are still to be read
    (:attr:`Batch.lazy`): each cache-sized block counted as the batch yields it, in this
    thread, while it is still in the cache; every row is there before the tied rows are
    sorted. ``keep=False``: nothing but the counts looks at the scores afterwards, so only
    the rows whose positive is tied (the ones sorted) need stay in ``batch.scores``."""
    positive = batch.positive
    out = np.empty((3, batch.rows), dtype=np.int64)
    column = _one_column(positive)

    def tied(lo: int, hi: int) -> np.ndarray:
        return np.flatnonzero(out[1, lo:hi] > 1)
    with closing(batch.blocks(BLOCK_SCORES, None if keep else tied)) as blocks:
        for lo, block in blocks:
            hi = lo + len(block)
            _dense_block(block, positive[lo:hi], nan_policy, lo, out[:, lo:hi], column)
    return _row_counts(batch.scores, positive, out, rule)


def _one_column(positive: np.ndarray) -> int | None:
    """The positive's column where every row has it there (a dump's default, column 0):
    its scores are that column, with no gather."""
    return int(positive[0]) if positive.size and (positive == positive[0]).all() else None


def _row_counts(scores: np.ndarray, positive: np.ndarray,
                abt: tuple[np.ndarray, ...] | np.ndarray, rule: str) -> RowCounts:
    a, b, top = abt
    n = np.full(len(a), scores.shape[1], dtype=np.int64)
    return RowCounts(a=a, b=b, n=n, top=top, original=original_ranks(scores, positive, a, b,
                                                                      rule))


def _dense_block(scores: np.ndarray, positive: np.ndarray, nan_policy: str, row0: int,
                 out: np.ndarray, column: int | None = None) -> None:
    """``a``, ``b`` and the top tie of a block, into the rows of ``out`` (3 x rows);
    ``column``: the positive's column when every row has it there.

    One pass for the row maximum, then each of the three comparisons (``>`` and ``==``
    the positive, ``==`` the maximum) written into one reused boolean work array and
    summed per row as 0/1 bytes (exact whole-number sums: the counts
    ``np.count_nonzero`` gives). Short rows are first copied column by column
    (:data:`COLUMNWISE_BELOW`): numpy's per-row loops are then long ones.
    """
    rows, cols = scores.shape
    worst = nan_policy == "worst" and scores.dtype.kind == "f"
    flags = _buffer(rows * cols, np.bool_)
    total = np.uint16 if cols <= _UINT16_EXACT else np.int64
    columnwise = cols < COLUMNWISE_BELOW and not worst
    if column is None:
        p = scores[np.arange(rows), positive]
    elif not columnwise:
        p = scores[:, column]
    if columnwise:
        # a row's candidates down a column: the max, the comparisons and their sums run
        # along all the block's rows at once, the same values compared in the same dtype
        view = _buffer(rows * cols, scores.dtype).reshape(cols, rows)
        np.copyto(view, scores.T)
        if column is not None:
            p = view[column]
        row_max = view.max(axis=0)
        against_p, against_max, axis = p, row_max, 0
        flags = flags.reshape(cols, rows)
    else:
        view = scores
        row_max = (np.fmax.reduce(scores, axis=1) if worst  # NaN only if the row is all NaN
                   else scores.max(axis=1))
        against_p, against_max, axis = p[:, None], row_max[:, None], 1
        flags = flags.reshape(rows, cols)
    if not worst:
        try:
            _check_nan(row_max, nan_policy)
        except NanScoreError as exc:
            raise NanScoreError(row0 + exc.row, exc.count) from None
    ones = flags.view(np.uint8)
    # the top tie: where the positive holds the row maximum (a == 0) that is its own tie
    # block, so one count of == max serves every row
    for i, (compare, against) in enumerate(((np.greater, against_p), (np.equal, against_p),
                                            (np.equal, against_max))):
        compare(view, against, out=flags)
        out[i] = ones.sum(axis=axis, dtype=total)
    a, b, top = out
    if worst:
        nan_pos = np.isnan(p)
        if nan_pos.any():
            nans = np.count_nonzero(np.isnan(scores[nan_pos]), axis=1)
            a[nan_pos] = cols - nans
            b[nan_pos] = nans
        all_nan = np.isnan(row_max)
        top[all_nan] = cols


def _tied_with(values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``values == p``, NaN tied with NaN (as ``nan_policy='worst'`` ranks them)."""
    eq = values == p
    if values.dtype.kind == "f":
        eq |= np.isnan(values) & np.isnan(p)
    tied: np.ndarray = eq
    return tied


def original_ranks(scores: np.ndarray, positive: np.ndarray, a: np.ndarray, b: np.ndarray,
                   rule: str = "argsort") -> np.ndarray:
    """The positive's 1-based rank under ``rule`` (dense batch).

    ``argsort``: its place in ``np.argsort(scores * -1, axis=1)``; ``stable``: ties by
    ascending position (``np.argsort(-scores, kind="stable")``), ``reverse-stable``: ties
    by descending position, both counted without a sort. Any other rule (a ranking the
    dump carries, ``torch.topk``) is filled in by the kernel: ``a + 1`` here.

    An untied positive sits at ``a + 1`` whatever the sort does; only rows whose positive
    is tied are sorted (or counted), in blocks, so the work arrays stay in cache.
    """
    original = a + 1
    if rule not in ("argsort", "stable", "reverse-stable"):
        return original
    tied = np.flatnonzero(b > 1)
    step = max(1, BLOCK_SCORES // max(1, scores.shape[1]))
    if rule == "argsort":
        # Exactly the released codebases' call: np.argsort(pred_score * -1, axis=1), default
        # kind, stored dtype. Each row is sorted independently, so sorting only the tied
        # rows, in blocks and on several threads, gives the same per-row order as sorting
        # the whole matrix at once.
        blocks = sort_blocks(tied, step)

        def ranks(rows: np.ndarray) -> np.ndarray:
            # one copy of the rows, negated in place: the same values as ``scores[rows] * -1``
            order = np.argsort(sort_key(scores[rows], scratch=True), axis=1)
            # the positive sits among its tie block, at places a .. a + b - 1 of its row:
            # only that window of the order is searched
            lo = int(a[rows].min())
            hi = int((a[rows] + b[rows]).max())
            place: np.ndarray = np.argmax(order[:, lo:hi] == positive[rows][:, None],
                                          axis=1) + (lo + 1)
            return place
        for rows, got in zip(blocks, map_blocks(ranks, blocks,
                                                [r.size * scores.shape[1] for r in blocks])):
            original[rows] = got
        return original
    for lo in range(0, tied.size, step):  # stable / reverse-stable: counted, no sort
        rows = tied[lo:lo + step]
        sub = scores[rows]
        pos = positive[rows][:, None]
        eq = _tied_with(sub, scores[rows, positive[rows]][:, None])
        cols = np.arange(sub.shape[1])
        side = cols < pos if rule == "stable" else cols > pos
        original[rows] += np.count_nonzero(eq & side, axis=1)
    return original


def sort_blocks(tied: np.ndarray, step: int) -> list[np.ndarray]:
    """``tied`` cut into blocks of at most ``step`` rows, and into at least as many
    blocks as there are sort threads (equal sizes), so that every core gets a share."""
    if tied.size == 0:
        return []
    count = max(-(-tied.size // step), min(threads(), tied.size))
    return [tied] if count == 1 else np.array_split(tied, count)


def ragged_counts(values: np.ndarray, offsets: np.ndarray, positive: np.ndarray,
                  nan_policy: str = "raise", rule: str = "argsort") -> RowCounts:
    """Counts for a ragged batch: row i is ``values[offsets[i]:offsets[i+1]]``."""
    a, b, top, rep = ragged_abt(values, offsets, positive, nan_policy)
    starts = offsets[:-1]
    n = np.diff(offsets).astype(np.int64)
    original = a + 1
    if rule in ("stable", "reverse-stable") and (b > 1).any():
        # tied candidates before (stable) or after (reverse-stable) the positive's position
        col = np.arange(values.size) - np.repeat(starts, n)
        pos = np.repeat(positive, n)
        side = col < pos if rule == "stable" else col > pos
        original += np.add.reduceat(_tied_with(values, rep) & side, starts, dtype=np.int64)
    elif rule == "argsort":
        for i in np.flatnonzero(b > 1):
            row = values[offsets[i]:offsets[i + 1]]
            order = np.argsort(sort_key(row))
            original[i] = int(np.flatnonzero(order == positive[i])[0]) + 1
    return RowCounts(a=a, b=b, n=n, top=top, original=original)


def tolerance_tied(values: np.ndarray, ref: np.ndarray, atol: float) -> np.ndarray:
    """``values == ref or |values - ref| <= atol`` (differences in float64; NaN never tied)."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(values.astype(np.float64) - ref.astype(np.float64))
    value: np.ndarray = (values == ref) | (diff <= atol)
    return value


def ragged_abt(values: np.ndarray, offsets: np.ndarray, positive: np.ndarray,
               nan_policy: str = "raise", atol: float | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``a``, ``b`` and the top tie of a ragged batch, and the positive's score at every
    position; with ``atol`` (the what-if's tolerance) scores within it of the positive
    (of the row maximum, for the top tie) count as tied, not above
    (:mod:`tieeval.kernels.whatif`)."""
    starts = offsets[:-1]
    n = np.diff(offsets)
    worst = nan_policy == "worst" and values.dtype.kind == "f"
    row_max = (np.fmax if worst else np.maximum).reduceat(values, starts)
    if not worst:
        _check_nan(row_max, nan_policy)
    p = values[starts + positive]
    rep = np.repeat(p, n)
    tied: Any = np.equal if atol is None else partial(tolerance_tied, atol=atol)
    near = tied(values, rep)
    above = values > rep
    if atol is not None:
        above &= ~near
    a = np.add.reduceat(above, starts, dtype=np.int64)
    b = np.add.reduceat(near, starts, dtype=np.int64)
    top = np.add.reduceat(tied(values, np.repeat(row_max, n)), starts, dtype=np.int64)
    if worst:
        isnan = np.isnan(values)
        nans = np.add.reduceat(isnan, starts, dtype=np.int64)
        nan_pos = np.isnan(p)
        a[nan_pos] = n[nan_pos] - nans[nan_pos]
        b[nan_pos] = nans[nan_pos]
        all_nan = np.isnan(row_max)
        top[all_nan] = n[all_nan]
    return a, b, top, rep


def check_nan_policy(nan_policy: str) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                             f"got {nan_policy!r}")
    return nan_policy
