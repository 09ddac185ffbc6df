"""One mergeable accumulator for every kernel: exact sums of one run, nothing per row.

Whichever kernel fills it (:mod:`~tieeval.kernels.single` or :mod:`~tieeval.kernels.general`),
an :class:`Accumulator` holds integer counts and :class:`~tieeval.kernels.summation.ExactSum`
totals only, so batches can be added in any order, on any number of workers or Spark
executors, and merged: the result does not depend on the split, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tieeval.kernels.duplicates import DuplicateCheck
from tieeval.kernels.summation import ExactSum
from tieeval.metrics.metric import COLUMNS

PAIR_MAX = 512
"""Pairs of counts (a tied positive's ``(a, b)``, a row's ``(top, n)``) are kept as a table
of how often each occurred while both are below this; others are added at once."""

_COUNTS = ("instances", "subset", "no_relevant", "no_negative", "top_size", "top_tied",
           "pos_rows", "pos_size", "pos_tied")


@dataclass
class EntrySums:
    """The sums of one output row (a metric, at one gamma for signed metrics): the four
    columns, the tie-break variance, and the rows where the metric is defined."""

    columns: dict[str, Any] = field(default_factory=lambda: {c: ExactSum() for c in COLUMNS})
    variance: ExactSum = field(default_factory=ExactSum)
    count: int = 0
    has_variance: bool = True
    # False when some row has no exact tie-aware value (ERR / IPrec / a geometric mean
    # beyond its work limit): the column is then null, never a partial sum
    has_tie_aware: bool = True
    # a geometric mean's rows whose value ties decide: each one's exact distribution
    # ``[values, probabilities]``, kept until the number of rows is known (the tie-aware
    # column then sums the logarithms of the other rows only)
    spread: list[Any] = field(default_factory=list)
    spread_size: int = 0
    # why the Original column is null: a saved ranking (--original given) lists fewer
    # candidates of some row than the metric reads (the first such row's note)
    unanswered: str | None = None
    # a weighted mean (micro-averaged Precision@K): the columns and the variance hold
    # weighted sums, ``weights`` the sum of the weights
    weighted: bool = False
    weights: ExactSum = field(default_factory=ExactSum)

    def merge(self, other: "EntrySums") -> None:
        for c in COLUMNS:
            self.columns[c].merge(other.columns[c])
        self.variance.merge(other.variance)
        self.count += other.count
        self.has_variance = self.has_variance and other.has_variance
        self.has_tie_aware = self.has_tie_aware and other.has_tie_aware
        self.add_spread(other.spread)
        if self.unanswered is None:
            self.unanswered = other.unanswered
        self.weighted = self.weighted or other.weighted
        self.weights.merge(other.weights)

    def weighted_means(self) -> tuple[dict[str, float | None], float | None]:
        """A weighted mean's columns (each weighted sum over the sum of the weights) and
        its tie-break standard deviation (None without an exact variance); None columns
        when every weight is 0."""
        total = self.weights.fraction()
        if total == 0:
            return dict.fromkeys(COLUMNS), None
        means: dict[str, float | None] = {c: float(self.columns[c].fraction() / total)
                                          for c in COLUMNS}
        std = (math.sqrt(float(self.variance.fraction() / total ** 2)) if self.has_variance
               else None)
        return means, std

    def add_spread(self, spread: list[Any]) -> None:
        """Keep rows' distributions, within the run's limit (beyond it the tie-aware
        column is null)."""
        from tieeval.metrics.measures.geometric import GEO_STORE_LIMIT
        if not self.has_tie_aware:
            return
        self.spread_size += sum(len(values) for values, _ in spread)
        if self.spread_size > GEO_STORE_LIMIT:
            self.has_tie_aware = False
            self.spread = []
            return
        self.spread.extend(spread)

    def state(self) -> dict[str, Any]:
        return {"columns": {c: self.columns[c].state() for c in COLUMNS},
                "variance": self.variance.state(), "count": str(self.count),
                "has_variance": self.has_variance, "has_tie_aware": self.has_tie_aware,
                "spread": [[list(map(float, v)), list(map(float, p))] for v, p in self.spread],
                "spread_size": self.spread_size, "unanswered": self.unanswered,
                "weighted": self.weighted, "weights": self.weights.state()}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "EntrySums":
        return cls({c: ExactSum.from_state(state["columns"][c]) for c in COLUMNS},
                   ExactSum.from_state(state["variance"]), int(state["count"]),
                   bool(state["has_variance"]), bool(state.get("has_tie_aware", True)),
                   [(np.asarray(v, dtype=np.float64), np.asarray(p, dtype=np.float64))
                    for v, p in state.get("spread", [])],
                   int(state.get("spread_size", 0)), state.get("unanswered"),
                   bool(state.get("weighted", False)),
                   ExactSum.from_state(state["weights"]) if "weights" in state else ExactSum())


class Accumulator:
    """Exact, mergeable sums of one run.

    ``entries``: how many output rows the kernel produces; ``ks``: the cutoffs whose
    tie-decided share and short-row count are kept; ``duplicates``: keep the
    duplicate-candidate check (dumps with item ids).

    Counts (all integers): ``instances`` rows read; ``subset`` rows evaluated (``--both``
    keeps fewer); ``no_relevant`` / ``no_negative`` rows without a relevant item / an
    explicit negative; ``top_size``, ``top_tied`` the top-score tie; ``pos_rows``,
    ``pos_size``, ``pos_tied`` the tie block of the (first) relevant item over the rows that
    rank one; per K, ``decided`` (HR@K differs between first and last) and ``k_over_n``
    (fewer than K candidates).
    """

    def __init__(self, entries: int, ks: Iterable[int] = (), duplicates: bool = False):
        self.sums = [EntrySums() for _ in range(entries)]
        self.ks = sorted(set(ks))
        # the counts of _COUNTS
        self.instances = self.subset = self.no_relevant = self.no_negative = 0
        self.top_size = self.top_tied = self.pos_rows = self.pos_size = self.pos_tied = 0
        self.cand_min: int | None = None
        self.cand_max: int | None = None
        self.top_ratio = ExactSum()
        self.decided = {k: 0 for k in self.ks}
        self.k_over_n = {k: 0 for k in self.ks}
        self.duplicates = DuplicateCheck() if duplicates else None
        # the first rows' evidence that a defaulted column-0 positive is none (kernels.hints)
        self.hint: dict[str, Any] | None = None
        # per column, how many rows put the positive at each deterministic rank (the index),
        # not yet added to the sums: integer counts merge exactly, and the kernel that
        # keeps them (the single-positive one) turns them into metric values once per run
        self.ranks: dict[str, np.ndarray] | None = None
        # the same for pairs of counts: ``pairs[name][x, y]`` rows had the pair (x, y)
        self.pairs: dict[str, np.ndarray] | None = None

    def add_lengths(self, lo: int, hi: int) -> None:
        """Widen the candidate-count range by a batch's shortest and longest row."""
        self.cand_min = lo if self.cand_min is None else min(self.cand_min, lo)
        self.cand_max = hi if self.cand_max is None else max(self.cand_max, hi)

    def add_pairs(self, name: str, x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> bool:
        """Count the distinct pairs ``(x[i], y[i])`` ``counts[i]`` times each; False (and
        nothing counted) when a pair reaches :data:`PAIR_MAX`."""
        if x.size == 0:
            return True
        rows, cols = int(x.max()) + 1, int(y.max()) + 1
        if rows > PAIR_MAX or cols > PAIR_MAX:
            return False
        self._table("pairs", name, (rows, cols))[x, y] += counts  # distinct: no repeats
        return True

    def _table(self, kind: str, name: str, shape: tuple[Any, ...]) -> np.ndarray:
        """The count table ``name`` of ``kind`` (``ranks`` or ``pairs``), made or grown to
        at least ``shape``, its counts kept."""
        tables = getattr(self, kind) or {}
        setattr(self, kind, tables)
        old = tables.get(name, np.zeros((0,) * len(shape), dtype=np.int64))
        if name not in tables or any(n > m for n, m in zip(shape, old.shape)):
            grown = np.zeros(tuple(map(max, shape, old.shape)), dtype=np.int64)
            grown[tuple(slice(0, m) for m in old.shape)] = old
            tables[name] = grown
        value: np.ndarray = tables[name]
        return value

    def add_table(self, kind: str, name: str, counts: np.ndarray) -> None:
        """Add a whole count table (a batch's, another accumulator's) to ``name`` of
        ``kind``: a column's rank counts (``counts[r]`` rows at rank ``r``), or pairs'."""
        self._table(kind, name, counts.shape)[tuple(slice(0, n) for n in counts.shape)] \
            += counts

    def merge(self, other: "Accumulator") -> None:
        if other.hint is not None:
            from tieeval.kernels.hints import merge_evidence, new_evidence
            self.hint = merge_evidence(self.hint or new_evidence(), other.hint)
        if other.instances == 0:
            return
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.cand_min is not None and other.cand_max is not None:  # set together
            self.add_lengths(other.cand_min, other.cand_max)
        self.top_ratio.merge(other.top_ratio)
        for k in self.ks:
            self.decided[k] += other.decided[k]
            self.k_over_n[k] += other.k_over_n[k]
        for mine, theirs in zip(self.sums, other.sums):
            mine.merge(theirs)
        for kind in ("ranks", "pairs"):
            for name, table in (getattr(other, kind) or {}).items():
                self.add_table(kind, name, table)
        if self.duplicates is not None and other.duplicates is not None:
            self.duplicates.merge(other.duplicates)

    def to_state(self) -> dict[str, Any]:
        """The sums as plain JSON-able data (big integers as strings), e.g. to ship between
        Spark executors and the driver; :meth:`from_state` rebuilds an equal Accumulator."""
        return {"ks": self.ks, "counts": {name: str(getattr(self, name)) for name in _COUNTS},
                "cand_min": self.cand_min, "cand_max": self.cand_max,
                "top_ratio": self.top_ratio.state(),
                "decided": {str(k): str(v) for k, v in self.decided.items()},
                "k_over_n": {str(k): str(v) for k, v in self.k_over_n.items()},
                "sums": [s.state() for s in self.sums],
                "duplicates": (None if self.duplicates is None
                               else self.duplicates.state()),
                "hint": self.hint,
                **{kind: (None if getattr(self, kind) is None else
                          {name: _sparse(t) for name, t in getattr(self, kind).items()})
                   for kind in ("ranks", "pairs")}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "Accumulator":
        acc = cls(0, state["ks"], state["duplicates"] is not None)
        for name in _COUNTS:
            setattr(acc, name, int(state["counts"][name]))
        acc.cand_min, acc.cand_max = state["cand_min"], state["cand_max"]
        acc.top_ratio = ExactSum.from_state(state["top_ratio"])
        acc.decided = {int(k): int(v) for k, v in state["decided"].items()}
        acc.k_over_n = {int(k): int(v) for k, v in state["k_over_n"].items()}
        acc.sums = [EntrySums.from_state(s) for s in state["sums"]]
        acc.hint = state.get("hint")
        for kind in ("ranks", "pairs"):
            for name, (*index, counts) in (state.get(kind) or {}).items():
                at = tuple(np.asarray(i, dtype=np.int64) for i in index)
                shape = tuple(int(i.max(initial=-1)) + 1 for i in at)
                acc._table(kind, name, shape)[at] += np.asarray(counts, dtype=np.int64)
        if state["duplicates"] is not None:
            acc.duplicates = DuplicateCheck.from_state(state["duplicates"])
        return acc


def _sparse(table: np.ndarray) -> list[Any]:
    """A count table as the indices of its non-zero cells, one list per axis, then their
    counts (JSON-able): ``[ranks, counts]`` or ``[xs, ys, counts]``."""
    at = np.nonzero(table)
    return [i.tolist() for i in at] + [table[at].tolist()]
