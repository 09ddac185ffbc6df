"""One batch of a dump's rows, as every reader yields it and every kernel takes it.

A plain record of the core layer: the readers (:mod:`tieeval.io`) build it, the kernels
read it, and neither has to import the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator

import numpy as np


@dataclass
class Batch:
    """Consecutive rows of a dump.

    Dense: ``scores`` is 2-D and ``offsets`` is None. Ragged: ``scores`` is the flat values
    and row i is ``scores[offsets[i]:offsets[i+1]]``. ``positive`` holds each row's positive
    column (int64, already range-checked); ``start`` is the dump row of the first row.
    ``labels``, when the dump carries relevance labels, has the same layout as ``scores``
    (graded gains > 0, 0 unobserved, < 0 explicit negatives); ``positive`` is then unused.
    ``ids`` (long layout) holds each row's instance id, for messages; ``nbytes`` is the
    share of the input this batch accounts for (for progress reports). ``items``, when the
    dump carries candidate ids, has the scores' layout too (see :mod:`tieeval.io.relevance`).
    ``ranking``, when the dump has a ``ranking`` field, holds each row's candidate indices
    in the order the codebase ranked them, top first (:class:`RankLists`). ``judged``,
    when the dump knows which candidates are judged (TREC: in the qrels with relevance
    >= 0), is a bool array in the scores' layout; None means ``labels != 0``.
    """

    scores: np.ndarray
    positive: np.ndarray
    start: int
    offsets: np.ndarray | None = None
    labels: np.ndarray | None = None
    ids: np.ndarray | None = None
    nbytes: int = 0
    items: np.ndarray | None = None
    ranking: "RankLists | None" = None
    # True when no positive field or --positive-index gave the positive (column 0)
    positive_defaulted: bool = False
    judged: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.positive)

    def lengths(self) -> np.ndarray:
        if self.offsets is None:
            return np.full(self.rows, self.scores.shape[1], dtype=np.int64)
        return np.diff(self.offsets).astype(np.int64)

    @property
    def lazy(self) -> bool:
        """Whether the scores are still to be read: :meth:`blocks` then reads each block
        as it yields it (:class:`tieeval.io.npy.LazyBatch`), else :attr:`scores` is in
        memory."""
        return False

    def blocks(self, scores: int, kept: Callable[[int, int], np.ndarray] | None = None
               ) -> Generator[tuple[int, np.ndarray], None, None]:
        """A dense batch's rows in order, about ``scores`` scores at a time (at least one
        row): ``(first row, block of rows)``. Here views of :attr:`scores`; a
        :attr:`lazy` batch reads each block just before it yields it, so that the block
        is used while it is still in the cache. ``kept(lo, hi)``, when given, is called
        once rows ``lo..hi`` were used and names those of them (indices from ``lo``)
        still to be looked at in :attr:`scores`: once the blocks are all used,
        :attr:`scores` holds those rows, and of a lazy batch maybe no other."""
        step = max(1, scores // max(1, self.scores.shape[1]))
        for lo in range(0, self.rows, step):
            yield lo, self.scores[lo:lo + step]

    def take(self, lo: int, hi: int) -> "Batch":
        """Rows ``lo..hi`` of this batch as a batch of their own (views, no copy): what a
        reader would have yielded for them. ``nbytes`` is their share of the scores."""
        if self.offsets is None:
            cut = slice(lo, hi)
            offsets = None
        else:
            cut = slice(int(self.offsets[lo]), int(self.offsets[hi]))
            offsets = self.offsets[lo:hi + 1] - self.offsets[lo]

        def part(values: np.ndarray[Any, Any] | None) -> np.ndarray[Any, Any] | None:
            return None if values is None else values[cut]
        ranking = self.ranking
        if ranking is not None:
            first, last = int(ranking.offsets[lo]), int(ranking.offsets[hi])
            ranking = RankLists(ranking.values[first:last],
                                ranking.offsets[lo:hi + 1] - first)
        scores = self.scores[cut]
        return Batch(scores, self.positive[lo:hi], self.start + lo, offsets,
                     part(self.labels), None if self.ids is None else self.ids[lo:hi],
                     int(scores.nbytes), part(self.items), ranking, self.positive_defaulted,
                     part(self.judged))

    def where(self, i: int) -> str:
        """How messages name batch row ``i``: the dump row, or the long layout's instance."""
        if self.ids is not None:
            return f"instance {instance_name(self.ids[i])}"
        return f"row {self.start + i}"


@dataclass
class RankLists:
    """Per-row candidate indices in rank order, top first: row i is
    ``values[offsets[i]:offsets[i + 1]]`` (rows may list fewer indices than candidates)."""

    values: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_rows(cls, values: np.ndarray, offsets: np.ndarray | None) -> "RankLists":
        """From flat values with offsets, or a 2-D ``(rows, K)`` array (offsets None)."""
        values = np.asarray(values)
        if offsets is None:
            rows = values.shape[0]
            width = values.shape[1] if values.ndim == 2 else 1
            return cls(values.reshape(-1), np.arange(rows + 1, dtype=np.int64) * width)
        return cls(values.reshape(-1), np.asarray(offsets, dtype=np.int64))

    @property
    def rows(self) -> int:
        return self.offsets.size - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def instance_name(value: object) -> str:
    """An instance id as messages show it: integers plain, strings quoted."""
    return repr(value) if isinstance(value, (str, bytes)) else str(value)
