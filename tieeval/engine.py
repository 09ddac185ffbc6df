"""Run evaluation: batches of a dump -> per-instance values -> exact dataset means.

The accumulator keeps only sums (integer counts and :class:`~tieeval.summation.ExactSum`),
so batches can be processed in any order, on any number of workers, and merged, and the
result does not depend on the split.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from .errors import InputError, ParameterError
from .io import Batch, Dump, ReadAgain, ReadOptions, open_dump, resolve_positive
from .metrics import (COLUMNS, Metric, default_metrics, histogram_cap, rank_value,
                      single_positive, tie_moments)
from .results import MetricRow, RunResult, TieStats
from . import fused
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
        raise InputError(f"{where}{batch.where(exc.row)}: NaN score "
                         f"(pass --nan-policy worst to rank NaN below every score)") from None


def accumulate(batches: Iterable[Batch], metrics: list[Metric], nan_policy: str = "raise",
               path: str = "", progress=None) -> "Accumulator":
    """One Accumulator over ``batches``; ``progress(rows, nbytes)`` after each batch."""
    acc = Accumulator(metrics)
    for batch in batches:
        acc.add(batch_counts(batch, nan_policy, path))
        if progress is not None:
            progress(batch.rows, batch.nbytes)
    return acc


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
        # one rank histogram per column, shared by every metric
        hists = [(column, _RankHistogram(ranks)) for column, ranks in
                 (("original", counts.original), ("first", first), ("last", last),
                  ("tie_aware", untied_first))]
        for m in self.metrics:
            sums = self.sums[m]
            for column, hist in hists:
                hist.add_to(sums.columns[column], m)
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

    def to_state(self) -> dict:
        """The sums as plain JSON-able data (big integers as strings), e.g. to ship between
        Spark executors and the driver; :meth:`from_state` rebuilds an equal Accumulator."""
        return {"metrics": [str(m) for m in self.metrics], "instances": self.instances,
                "cand_min": self.cand_min, "cand_max": self.cand_max,
                "top_size": str(self.top_size), "top_ratio": self.top_ratio.state(),
                "top_tied": str(self.top_tied), "pos_size": str(self.pos_size),
                "pos_tied": str(self.pos_tied),
                "decided": {str(k): str(v) for k, v in self.decided.items()},
                "k_over_n": {str(k): str(v) for k, v in self.k_over_n.items()},
                "sums": [{"columns": {c: s.columns[c].state() for c in COLUMNS},
                          "variance": s.variance.state()}
                         for s in (self.sums[m] for m in self.metrics)]}

    @classmethod
    def from_state(cls, state: dict) -> "Accumulator":
        acc = cls([Metric.parse(m) for m in state["metrics"]])
        acc.instances = int(state["instances"])
        acc.cand_min, acc.cand_max = state["cand_min"], state["cand_max"]
        acc.top_size = int(state["top_size"])
        acc.top_ratio = ExactSum.from_state(state["top_ratio"])
        acc.top_tied, acc.pos_size = int(state["top_tied"]), int(state["pos_size"])
        acc.pos_tied = int(state["pos_tied"])
        acc.decided = {int(k): int(v) for k, v in state["decided"].items()}
        acc.k_over_n = {int(k): int(v) for k, v in state["k_over_n"].items()}
        for m, sums in zip(acc.metrics, state["sums"]):
            acc.sums[m].columns = {c: ExactSum.from_state(sums["columns"][c]) for c in COLUMNS}
            acc.sums[m].variance = ExactSum.from_state(sums["variance"])
        return acc

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


class _RankHistogram:
    """Deterministic ranks counted once per batch and column, for every metric.

    Deterministic columns take few distinct values (one per rank up to K), so counting ranks
    and adding ``count * value`` exactly is much cheaper than summing one float per row.
    Ranks deeper than :data:`_HISTOGRAM_RANKS` share one bucket, worth 0 for every cutoff
    metric with K below it; metrics without a cutoff (or deeper K) add them one by one.
    The sums are exact, so the grouping does not change a bit of the result.
    """

    def __init__(self, ranks: np.ndarray):
        hist = np.bincount(np.minimum(ranks, _HISTOGRAM_RANKS + 1),
                           minlength=_HISTOGRAM_RANKS + 2)
        self.present = np.flatnonzero(hist[:_HISTOGRAM_RANKS + 1])
        self.counts = hist[self.present]
        self.deep = ranks[ranks > _HISTOGRAM_RANKS] if hist[-1] else ranks[:0]

    def add_to(self, total: ExactSum, metric: Metric) -> None:
        if self.present.size:
            total.add_counts(rank_value(metric, self.present), self.counts)
        cap = histogram_cap(metric)
        if self.deep.size and (cap is None or cap > _HISTOGRAM_RANKS):
            total.add(rank_value(metric, self.deep))


def check_nan_policy(nan_policy: str) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                             f"got {nan_policy!r}")
    return nan_policy


def progress_callback(progress):
    """Adapt ``progress``: callbacks take (rows, nbytes), or just rows; None stays None."""
    if progress is None:
        return None
    try:
        inspect.signature(progress).bind(0, 0)
        return progress
    except (TypeError, ValueError):
        return lambda rows, nbytes: progress(rows)


def check_jobs(jobs) -> int:
    """``jobs``: worker processes; 0 or None means one per available core."""
    if jobs is None or (isinstance(jobs, int) and not isinstance(jobs, bool) and jobs == 0):
        return available_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 0:
        raise ParameterError(f"jobs must be a whole number >= 0 (0: every core), got {jobs!r}")
    return int(jobs)


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def evaluate_dump(dump: Dump, metrics: list[Metric] | None = None, *, nan_policy: str = "raise",
                  batch_rows: int | None = None, labels: dict | None = None,
                  progress=None, jobs: int = 1, relevance=None) -> RunResult:
    """Evaluate an opened dump.

    ``batch_rows``: rows per batch (None: about 16 MB of scores); the result does not depend
    on it. ``jobs``: worker processes (1: this process; 0: one per core); the result does
    not depend on it either. ``progress(rows, nbytes)`` (or ``progress(rows)``) is called
    after each batch or part; negative values take back a run that had to start over.
    ``relevance``: options of the general path (:class:`tieeval.labelled.RelOptions`).

    A long-layout dump whose label column turns out to hold relevance labels (graded,
    signed, several positives) is handed to the general path part-way, from the start.
    """
    requested = metrics = default_metrics(DEFAULT_KS) if metrics is None else metrics
    from .labelled import evaluate_general, wants_general_path
    if wants_general_path(dump, metrics, relevance):  # labelled rows, or other metrics
        return evaluate_general(dump, metrics, nan_policy=nan_policy, batch_rows=batch_rows,
                                labels=labels, progress=progress, relevance=relevance)
    metrics = list(metrics)
    check_nan_policy(nan_policy)
    jobs = check_jobs(jobs)
    size = dump.batch_size(batch_rows)
    report = progress_callback(progress)
    fused.use(fused.wanted(dump.nbytes))
    for _ in range(3):
        done = [0, 0]

        def tick(rows, nbytes):
            done[0] += rows
            done[1] += nbytes
            if report is not None:
                report(rows, nbytes)
        try:
            if jobs > 1:
                from .parallel import accumulate_parallel
                acc = accumulate_parallel(dump, metrics, jobs=jobs, nan_policy=nan_policy,
                                          batch_rows=size, progress=tick)
            else:
                acc = accumulate(dump.batches(size), metrics, nan_policy, dump.path, tick)
            break
        except InputError:
            dump.verify()  # a damaged input explains the data error: report the damage
            raise
        except ReadAgain as exc:  # the reader changed strategy (long layout): start over
            if report is not None and (done[0] or done[1]):
                report(-done[0], -done[1])
            dump.start_over(exc)
            if wants_general_path(dump, requested, relevance):  # relevance labels after all
                return evaluate_general(dump, requested, nan_policy=nan_policy,
                                        batch_rows=batch_rows, labels=labels,
                                        progress=progress, relevance=relevance)
    else:  # pragma: no cover - a reader restarts at most twice
        raise InputError(f"{dump.path}: the reader could not settle on a way to read it")
    merged = {**dump.metadata, **(labels or {})}
    result = acc.result(dump.path, dump.dtype, merged)
    result.warnings[:0] = list(dump.warnings)
    return result


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
    if not all(m.single_positive for m in chosen):  # e.g. Recall@K: the general kernel
        from .labelled import evaluate_scores_general
        return evaluate_scores_general(arr, pos, chosen, nan_policy=nan_policy, path=path)
    acc = Accumulator(chosen)
    acc.add(batch_counts(Batch(arr, pos, 0), nan_policy, path))
    return acc.result(path, arr.dtype)


def iter_instance_values(dump: Dump, metrics: list[Metric], *, nan_policy: str = "raise",
                         batch_rows: int | None = None) -> Iterator[tuple[Batch, dict]]:
    """Per-batch, per-instance values: ``(batch, {metric: InstanceValues})``, for
    single-positive dumps."""
    check_nan_policy(nan_policy)
    dump.settle()
    from .labelled import wants_general_path
    if wants_general_path(dump, [], None):
        raise InputError(f"{dump.path}: has relevance labels; per-instance values cover the "
                         "single-positive protocol only")
    for batch in dump.batches(batch_rows):
        counts = batch_counts(batch, nan_policy, dump.path)
        yield batch, {m: single_positive(m, counts.a, counts.b, counts.original)
                      for m in metrics}
