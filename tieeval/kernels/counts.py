"""Per-row tie kernels for the single-positive protocol.

Everything here compares scores in their stored dtype (``>`` and ``==`` on the array as
read, never after a cast) and returns int64 counts. No function sorts a row unless it must
reproduce the original codebase's ``np.argsort``, and then only rows whose positive is tied.

A *batch* is either dense, a 2-D array ``(rows, candidates)``, or ragged, a flat array of
scores with ``offsets`` (``rows + 1`` increasing integers, every row non-empty).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.kernels.threads import map_blocks

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


def _negated(scores: np.ndarray) -> np.ndarray:
    """``scores * -1``, the codebases' sort key, wherever that reverses the order.

    For integer dumps ``* -1`` is not order-reversing everywhere: it overflows the signed
    minimum (which stays the minimum, so the original rank could leave the tie block) and
    raises OverflowError for unsigned dtypes under numpy >= 2. There ``~scores`` (``-x - 1``
    for signed, ``MAX - x`` for unsigned) gives the same descending order without overflow.
    """
    kind = scores.dtype.kind
    if kind == "f" or (kind == "i" and not (scores == np.iinfo(scores.dtype).min).any()):
        return scores * -1
    return ~scores


# Rows are processed in blocks of about this many scores (1 MB of float32), so the few
# passes of the kernel over a block (row max, > and == the positive, == the max) hit cache
# instead of memory: one trip through memory per batch.
BLOCK_SCORES = 1 << 18


def dense_counts(scores: np.ndarray, positive: np.ndarray, nan_policy: str = "raise",
                 rule: str = "argsort") -> RowCounts:
    """Counts for a dense batch ``scores[rows, candidates]`` with the positive at ``positive``.

    With ``nan_policy='raise'`` a NaN raises :class:`NanScoreError`; with ``'worst'`` NaN
    ranks below every number and all NaNs of a row tie with each other. ``rule``: the
    ranking rule of the ``original`` ranks (see :func:`original_ranks`).
    """
    rows, cols = scores.shape
    from tieeval.kernels.fused import dense_abt
    fused = dense_abt(scores, positive)
    if fused is not None:
        a, b, top = fused
        return RowCounts(a=a, b=b, n=np.full(rows, cols, dtype=np.int64), top=top,
                         original=original_ranks(scores, positive, a, b, rule))
    step = max(1, BLOCK_SCORES // max(1, cols))
    # a, b and the top tie in cache-sized blocks; the tied rows' sorts over the whole batch
    # at once, so that they can be spread over threads
    if rows <= step:
        counts = _dense_block(scores, positive, nan_policy, 0)
    else:
        parts = [_dense_block(scores[lo:lo + step], positive[lo:lo + step], nan_policy, lo)
                 for lo in range(0, rows, step)]
        counts = RowCounts(*(np.concatenate([getattr(p, f) for p in parts])
                             for f in ("a", "b", "n", "top", "original")))
    counts.original = original_ranks(scores, positive, counts.a, counts.b, rule)
    return counts


def _dense_block(scores, positive, nan_policy, row0) -> RowCounts:
    """``a``, ``b``, ``n`` and the top tie of a block; ``original`` is left at ``a + 1``."""
    rows, cols = scores.shape
    worst = nan_policy == "worst" and scores.dtype.kind == "f"
    if worst:
        row_max = np.fmax.reduce(scores, axis=1)  # ignores NaN unless the whole row is NaN
    else:
        row_max = scores.max(axis=1)
        try:
            _check_nan(row_max, nan_policy)
        except NanScoreError as exc:
            raise NanScoreError(row0 + exc.row, exc.count) from None
    idx = np.arange(rows)
    p = scores[idx, positive][:, None]
    a = np.count_nonzero(scores > p, axis=1).astype(np.int64)
    b = np.count_nonzero(scores == p, axis=1).astype(np.int64)
    n = np.full(rows, cols, dtype=np.int64)
    # where the positive holds the row maximum (a == 0) the top tie is its own tie block
    top = b.copy()
    need = a > 0
    if worst:
        need |= np.isnan(p[:, 0])  # a NaN positive counts nothing above it
    above = np.flatnonzero(need)
    if above.size:
        sub = scores[above] if above.size < rows else scores
        top[above] = np.count_nonzero(sub == row_max[above][:, None], axis=1)
    if worst:
        nan_pos = np.isnan(p[:, 0])
        if nan_pos.any():
            nans = np.count_nonzero(np.isnan(scores[nan_pos]), axis=1)
            a[nan_pos] = cols - nans
            b[nan_pos] = nans
        all_nan = np.isnan(row_max)
        top[all_nan] = cols
    return RowCounts(a=a, b=b, n=n, top=top, original=a + 1)


def _tied_with(values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``values == p``, NaN tied with NaN (as ``nan_policy='worst'`` ranks them)."""
    eq = values == p
    if values.dtype.kind == "f":
        eq |= np.isnan(values) & np.isnan(p)
    return eq


def original_ranks(scores, positive, a, b, rule: str = "argsort") -> np.ndarray:
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
        blocks = [tied[lo:lo + step] for lo in range(0, tied.size, step)]

        def ranks(rows):
            order = np.argsort(_negated(scores[rows]), axis=1)
            return np.argmax(order == positive[rows][:, None], axis=1) + 1
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


def ragged_counts(values: np.ndarray, offsets: np.ndarray, positive: np.ndarray,
                  nan_policy: str = "raise", rule: str = "argsort") -> RowCounts:
    """Counts for a ragged batch: row i is ``values[offsets[i]:offsets[i+1]]``."""
    starts = offsets[:-1]
    n = np.diff(offsets).astype(np.int64)
    worst = nan_policy == "worst" and values.dtype.kind == "f"
    row_max = (np.fmax if worst else np.maximum).reduceat(values, starts)
    if not worst:
        _check_nan(row_max, nan_policy)
    p = values[starts + positive]
    rep = np.repeat(p, n)
    a = np.add.reduceat(values > rep, starts, dtype=np.int64)
    b = np.add.reduceat(values == rep, starts, dtype=np.int64)
    top = np.add.reduceat(values == np.repeat(row_max, n), starts, dtype=np.int64)
    if worst:
        isnan = np.isnan(values)
        nans = np.add.reduceat(isnan, starts, dtype=np.int64)
        nan_pos = np.isnan(p)
        a[nan_pos] = n[nan_pos] - nans[nan_pos]
        b[nan_pos] = nans[nan_pos]
        all_nan = np.isnan(row_max)
        top[all_nan] = n[all_nan]
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
            order = np.argsort(_negated(row))
            original[i] = int(np.flatnonzero(order == positive[i])[0]) + 1
    return RowCounts(a=a, b=b, n=n, top=top, original=original)


def check_nan_policy(nan_policy: str) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                             f"got {nan_policy!r}")
    return nan_policy
