"""The single-positive kernel: per-row tie counts -> exact, mergeable sums.

The accumulator keeps only sums (integer counts and :class:`~tieeval.kernels.summation.ExactSum`),
so batches can be processed in any order, on any number of workers, and merged, and the
result does not depend on the split."""


from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import Batch
from tieeval.kernels import fused as fused
from tieeval.kernels.closed_forms import histogram_cap, rank_value, tie_moments
from tieeval.kernels.counts import NanScoreError, RowCounts, dense_counts, ragged_counts
from tieeval.kernels.summation import ExactSum
from tieeval.metrics.metric import COLUMNS, Metric
from tieeval.results import MetricRow, RunResult, TieStats


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
