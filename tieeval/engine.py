"""Run evaluation: batches of a dump -> per-instance values -> exact dataset means.

The accumulator keeps only sums (integer counts and :class:`~tieeval.summation.ExactSum`),
so batches can be processed in any order, on any number of workers, and merged, and the
result does not depend on the split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from .errors import InputError, ParameterError
from .io import Batch, Dump, ReadOptions, open_dump, resolve_positive, DEFAULT_BATCH_ROWS
from .metrics import (COLUMNS, Metric, default_metrics, histogram_cap, rank_value,
                      single_positive, tie_moments)
from .results import MetricRow, RunResult, TieStats
from .summation import ExactSum
from .ties import NAN_POLICIES, NanScoreError, RowCounts, dense_counts, ragged_counts

DEFAULT_KS = (1, 5, 10)


def batch_counts(batch: Batch, nan_policy: str = "raise", path: str = "") -> RowCounts:
    """Run the tie kernel on one batch, turning a NaN into an error naming the dump row."""
    try:
        if batch.offsets is None:
            return dense_counts(batch.scores, batch.positive, nan_policy)
        return ragged_counts(batch.scores, batch.offsets, batch.positive, nan_policy)
    except NanScoreError as exc:
        where = f"{path}: " if path else ""
        raise InputError(f"{where}row {batch.start + exc.row}: NaN score "
                         f"(pass --nan-policy worst to rank NaN below every score)") from None


@dataclass
class _MetricSums:
    columns: dict[str, ExactSum] = field(default_factory=lambda: {c: ExactSum() for c in COLUMNS})
    variance: ExactSum = field(default_factory=ExactSum)


class Accumulator:
    """Mergeable sums for one run: counts exactly as integers, floats as exact sums."""

    def __init__(self, metrics: list[Metric]):
        self.metrics = list(metrics)
        self.sums = {m: _MetricSums() for m in self.metrics}
        self.hr_ks = sorted({m.k for m in self.metrics if m.k is not None})
        self.instances = 0
        self.cand_min: int | None = None
        self.cand_max: int | None = None
        self.top_size = 0
        self.top_ratio = ExactSum()
        self.top_tied = 0
        self.pos_size = 0
        self.pos_tied = 0
        self.decided = {k: 0 for k in self.hr_ks}
        self.k_over_n = {k: 0 for k in self.hr_ks}

    def add(self, counts: RowCounts) -> None:
        rows = len(counts.a)
        if rows == 0:
            return
        self.instances += rows
        lo, hi = int(counts.n.min()), int(counts.n.max())
        self.cand_min = lo if self.cand_min is None else min(self.cand_min, lo)
        self.cand_max = hi if self.cand_max is None else max(self.cand_max, hi)
        self.top_size += int(counts.top.sum())
        self.top_ratio.add(counts.top / counts.n)
        self.top_tied += int(np.count_nonzero(counts.top > 1))
        self.pos_size += int(counts.b.sum())
        self.pos_tied += int(np.count_nonzero(counts.b > 1))
        for k in self.hr_ks:
            self.decided[k] += int(np.count_nonzero((counts.a < k) & (k < counts.a + counts.b)))
            self.k_over_n[k] += int(np.count_nonzero(counts.n < k))
        first, last = counts.a + 1, counts.a + counts.b
        tied = np.flatnonzero(counts.b > 1)
        untied_first = np.delete(first, tied) if tied.size else first
        a_tied, b_tied = counts.a[tied], counts.b[tied]
        for m in self.metrics:
            sums = self.sums[m]
            for column, ranks in (("original", counts.original), ("first", first),
                                  ("last", last), ("tie_aware", untied_first)):
                _add_rank_values(sums.columns[column], m, ranks)
            if tied.size:
                # Only tied positives need the closed form; untied ones contribute their
                # single value (through the histogram above) and no variance.
                e, e2, _ = tie_moments(m, a_tied, b_tied)
                sums.columns["tie_aware"].add(e)
                sums.variance.add(np.maximum(e2 - e * e, 0.0))

    def merge(self, other: "Accumulator") -> None:
        if other.instances == 0:
            return
        self.instances += other.instances
        for attr, fn in (("cand_min", min), ("cand_max", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, theirs if mine is None else fn(mine, theirs))
        self.top_size += other.top_size
        self.top_ratio.merge(other.top_ratio)
        self.top_tied += other.top_tied
        self.pos_size += other.pos_size
        self.pos_tied += other.pos_tied
        for k in self.hr_ks:
            self.decided[k] += other.decided[k]
            self.k_over_n[k] += other.k_over_n[k]
        for m in self.metrics:
            for c in COLUMNS:
                self.sums[m].columns[c].merge(other.sums[m].columns[c])
            self.sums[m].variance.merge(other.sums[m].variance)

    def result(self, path: str, dtype, labels: dict | None = None) -> RunResult:
        n = self.instances
        if n == 0:
            raise InputError(f"{path}: no instances (empty dump)")
        rows = []
        for m in self.metrics:
            s = self.sums[m]
            means = {c: s.columns[c].mean(n) for c in COLUMNS}
            std = math.sqrt(float(s.variance.fraction())) / n
            rows.append(MetricRow(m.name, m.k, means["original"], means["first"],
                                  means["last"], means["tie_aware"], std, n))
        ties = TieStats(self.top_size / n, self.top_ratio.mean(n), self.top_tied / n,
                        self.pos_size / n, self.pos_tied / n,
                        {k: self.decided[k] / n for k in self.hr_ks})
        warnings = [f"{path}: K={k} exceeds the candidate count in {c} instance(s); "
                    "HR and NDCG saturate there" for k, c in self.k_over_n.items() if c]
        return RunResult(path, n, int(self.cand_min), int(self.cand_max), str(np.dtype(dtype)),
                         rows, ties, dict(labels or {}), warnings)


_HISTOGRAM_RANKS = 4096


def _add_rank_values(total: ExactSum, metric: Metric, ranks: np.ndarray) -> None:
    """Add ``rank_value(metric, ranks)`` to ``total`` through a rank histogram.

    Deterministic columns take few distinct values (one per rank up to K), so counting ranks
    and adding ``count * value`` exactly is much cheaper than summing one float per row.
    """
    if ranks.size == 0:
        return
    cap = histogram_cap(metric)
    if cap is None:  # no cutoff: histogram the shallow ranks, add deep ones one by one
        deep = ranks > _HISTOGRAM_RANKS
        if deep.any():
            total.add(rank_value(metric, ranks[deep]))
            ranks = ranks[~deep]
        cap = _HISTOGRAM_RANKS
    hist = np.bincount(np.minimum(ranks, cap), minlength=cap + 1)
    present = np.flatnonzero(hist)
    total.add_counts(rank_value(metric, present), hist[present])


def check_nan_policy(nan_policy: str) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                             f"got {nan_policy!r}")
    return nan_policy


def evaluate_dump(dump: Dump, metrics: list[Metric] | None = None, *, nan_policy: str = "raise",
                  batch_rows: int = DEFAULT_BATCH_ROWS, labels: dict | None = None,
                  progress=None) -> RunResult:
    """Evaluate an opened dump; ``progress(rows)`` is called after each batch if given."""
    metrics = default_metrics(DEFAULT_KS) if metrics is None else list(metrics)
    check_nan_policy(nan_policy)
    acc = Accumulator(metrics)
    for batch in dump.batches(batch_rows):
        acc.add(batch_counts(batch, nan_policy, dump.path))
        if progress is not None:
            progress(batch.rows)
    merged = {**dump.metadata, **(labels or {})}
    return acc.result(dump.path, dump.dtype, merged)


def evaluate_path(path: str, metrics: list[Metric] | None = None, *,
                  options: ReadOptions | None = None, **kwargs) -> RunResult:
    """Open and evaluate one dump file."""
    return evaluate_dump(open_dump(path, options), metrics, **kwargs)


def _as_array(scores) -> np.ndarray:
    # Accept anything with __array__ (a CPU torch tensor, a list of lists) without importing
    # the library it comes from; never cast the dtype.
    arr = np.asarray(scores)
    if arr.dtype == object:
        raise InputError("scores must be a numeric (instances, candidates) array, "
                         "got an object array (ragged rows?)")
    return arr


def evaluate(scores, k: Iterable[int] = DEFAULT_KS, positive=None, *,
             metrics: Iterable[Metric | str] | None = None, nan_policy: str = "raise",
             path: str = "<array>") -> RunResult:
    """Evaluate an in-memory score matrix ``scores[instances, candidates]``.

    ``positive`` is each row's positive column (an int, or one int per row; default 0).
    Returns a :class:`~tieeval.results.RunResult` whose ``to_dict()`` matches the JSON
    contract of ``tieeval compare``.

    >>> import numpy as np
    >>> r = evaluate(np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]], dtype=np.float32), k=[1])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.5, 0.75)
    """
    arr = _as_array(scores)
    from .io import _check_matrix
    _check_matrix(path, arr, "scores")
    if metrics is None:
        chosen = default_metrics(list(k))
    else:
        chosen = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
    lengths = np.full(arr.shape[0], arr.shape[1], dtype=np.int64)
    pos = np.zeros(arr.shape[0], dtype=np.int64) if positive is None else positive
    pos = np.broadcast_to(np.asarray(pos), (arr.shape[0],))
    pos = resolve_positive(path, pos, lengths, 0)
    check_nan_policy(nan_policy)
    acc = Accumulator(chosen)
    acc.add(batch_counts(Batch(arr, pos, 0), nan_policy, path))
    return acc.result(path, arr.dtype)


def iter_instance_values(dump: Dump, metrics: list[Metric], *, nan_policy: str = "raise",
                         batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[tuple[Batch, dict]]:
    """Per-batch, per-instance values: ``(batch, {metric: InstanceValues})``."""
    check_nan_policy(nan_policy)
    for batch in dump.batches(batch_rows):
        counts = batch_counts(batch, nan_policy, dump.path)
        yield batch, {m: single_positive(m, counts.a, counts.b, counts.original)
                      for m in metrics}
