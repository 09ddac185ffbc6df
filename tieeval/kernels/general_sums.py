"""The general evaluation path: labelled rows (many positives, graded gains, explicit
negatives), TREC runs, and any metric the single-positive closed forms do not cover.

:func:`tieeval.engine.local.evaluate_dump` hands a dump here when it carries relevance labels
(:mod:`tieeval.io.relevance`; or a long-layout ``label`` column found to hold them part-way,
:mod:`tieeval.io.long`), when a metric other than HR@K / NDCG@K / MRR is asked for, or
when an option changes those (a discount, a short-list policy, ``--both``). A
single-positive dump that comes here is evaluated with a one-hot label at its positive, so
every metric of the registry works on every dump; with the default metrics and options it
keeps the sort-free path of :mod:`tieeval.engine.local` (plus the duplicate check when it carries
item ids).

Per batch, one :class:`~tieeval.kernels.general.RelBatch` sorts every row once into tie blocks and
every metric is read off it (:meth:`RelBatch.values`); dataset means are exact sums
(:class:`~tieeval.kernels.summation.ExactSum`) over the rows where the metric is defined, so they
do not depend on batch size.

Definitions and defaults (the choices the README documents):

* Default metrics of a labelled dump: HR@K, Recall@K and NDCG@K for every ``--k``, then MRR
  and MAP (full list). A single-positive dump keeps HR@K, NDCG@K and MRR.
* Options, run-wide: gain ``linear`` (or ``exponential``, 2^rel - 1) for DCG/NDCG; discount
  ``log2`` (or ``power`` with ``alpha``, ``news`` 1/(1 + log2(r)^1.5), ``linear``
  (K - r + 1)/K, ``logb`` 1/max(1, log_b(r)) with ``base``) for the DCG family; short-list policy ``pad`` (or ``truncate``, ``skip``)
  for rows with fewer than K candidates; MAP@K normalised by ``R`` (or ``min``);
  ``gamma`` 1 for the signed metrics, several values giving one row per gamma (the
  gamma-sensitivity table).
* Skipping: a row where a metric is undefined (no relevant item; V-AUC also needs an
  explicit negative; NDCG needs a positive ideal DCG; ``skip`` drops short rows) is left
  out of that metric's mean and counted (``instances`` evaluated, ``skipped`` left out).
  ``both`` keeps only rows with a relevant item *and* an explicit negative (the "Both P&N"
  subset of the sign-aware paper); the other rows are skipped by every metric.
* Tie statistics on labelled rows: the top-score tie figures as for single-positive dumps;
  ``positive_tie_size`` / ``positive_tie_frequency`` describe the tie block of the first
  (highest-scored) relevant item, over rows that rank one; ``tie_decided`` is the share of
  those rows whose HR@K differs between first and last. With ``both``, all of them are
  over the subset.
* V-AUC: the Last column is the strict V-AUC (a tied pair counts 0), the tie-aware column
  counts it 1/2, First counts it 1.
* MAP has no closed-form tie-break variance: its ``tie_aware_std`` is null.
"""


from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.counts import NanScoreError
from tieeval.kernels.general import RelBatch
from tieeval.kernels.summation import ExactSum
from tieeval.metrics.metric import COLUMNS, Metric
from tieeval.metrics.options import RelMetric, RelOptions
from tieeval.metrics.registry import REGISTRY
from tieeval.results import MetricRow, RunResult, TieStats


@dataclass(frozen=True)
class Entry:
    """One output row: the metric as written, its kernel form, and gamma if signed."""

    metric: Metric
    rel: RelMetric
    gamma: float | None


def expand(metrics, options: RelOptions) -> list[Entry]:
    """One entry per metric, one per gamma for the signed metrics (metric-major order)."""
    out = []
    for m in metrics:
        spec = REGISTRY[m.name]
        opts = options.metric_options(spec, m.k)
        if spec.signed:
            out += [Entry(m, RelMetric(m.name, m.k, gamma=g, **opts), g)
                    for g in options.gammas]
        else:
            out.append(Entry(m, RelMetric(m.name, m.k, **opts), None))
    return out


# ---------------------------------------------------------------------------------------
# Accumulation


@dataclass
class _Sums:
    columns: dict = field(default_factory=lambda: {c: ExactSum() for c in COLUMNS})
    variance: ExactSum = field(default_factory=ExactSum)
    has_variance: bool = True
    count: int = 0


class RelAccumulator:
    """Exact, mergeable sums of the general path for one run."""

    def __init__(self, entries: list[Entry], ks, both: bool = False):
        self.entries = list(entries)
        self.sums = [_Sums() for _ in self.entries]
        self.ks = sorted(set(ks))
        self.both = both
        self._hr = {k: RelMetric("HR", k) for k in self.ks}
        self.instances = 0
        self.subset = 0
        self.no_relevant = 0
        self.no_negative = 0
        self.cand_min: int | None = None
        self.cand_max: int | None = None
        self.top_size = 0
        self.top_ratio = ExactSum()
        self.top_tied = 0
        self.pos_rows = 0
        self.pos_size = 0
        self.pos_tied = 0
        self.decided = {k: 0 for k in self.ks}
        self.k_over_n = {k: 0 for k in self.ks}

    def add(self, rb: RelBatch) -> None:
        rows = rb.rows
        if rows == 0:
            return
        self.instances += rows
        n = rb.n
        self.cand_min = int(n.min()) if self.cand_min is None else min(self.cand_min,
                                                                          int(n.min()))
        self.cand_max = int(n.max()) if self.cand_max is None else max(self.cand_max,
                                                                          int(n.max()))
        has_pos, has_neg = rb.n_pos >= 1, rb.n_neg >= 1
        self.no_relevant += int(np.count_nonzero(~has_pos))
        self.no_negative += int(np.count_nonzero(~has_neg))
        keep = has_pos & has_neg if self.both else np.ones(rows, dtype=bool)
        self.subset += int(np.count_nonzero(keep))
        # Tie statistics over the kept rows: each row's first block is its top-score tie.
        first = rb.ba == 0
        top_rows, top = rb.brow[first], rb.bsz[first]
        sel = keep[top_rows]
        self.top_size += int(top[sel].sum())
        self.top_ratio.add(top[sel] / n[top_rows[sel]])
        self.top_tied += int(np.count_nonzero(top[sel] > 1))
        t = rb._first_block(rb.p_t > 0)
        prow, psize = rb.brow[t], rb.bsz[t]
        sel = keep[prow]
        self.pos_rows += int(np.count_nonzero(sel))
        self.pos_size += int(psize[sel].sum())
        self.pos_tied += int(np.count_nonzero(psize[sel] > 1))
        ranked_pos = np.zeros(rows, dtype=bool)
        ranked_pos[prow] = True
        for k in self.ks:
            v = rb.values(self._hr[k], original_order=False)
            self.decided[k] += int(np.count_nonzero(v.tie_decided & keep & ranked_pos))
            self.k_over_n[k] += int(np.count_nonzero(keep & (n < k)))
        for entry, sums in zip(self.entries, self.sums):
            v = rb.values(entry.rel)
            mask = v.defined & keep
            sums.count += int(np.count_nonzero(mask))
            for c in COLUMNS:
                sums.columns[c].add(getattr(v, c)[mask])
            if entry.rel.name == "MAP":
                sums.has_variance = False
            else:
                sums.variance.add(v.variance[mask])

    def result(self, path: str, dtype, labels: dict | None, source: str,
               options: RelOptions, data_warnings=None) -> RunResult:
        """The run's rows; ``source`` is where the labels came from (``labels``,
        ``positives``, ``trec`` or ``positive`` for one-hot single-positive rows)."""
        n = self.instances
        if n == 0:
            raise InputError(f"{path}: no instances (empty dump)")
        if self.both and self.subset == 0:
            raise InputError(f"{path}: no instance has both a relevant item (label > 0) and "
                             "an explicit negative (label < 0); --both leaves nothing to "
                             "evaluate")
        rows, warnings = [], []
        for entry, s in zip(self.entries, self.sums):
            if s.count == 0:
                raise InputError(f"{path}: {entry.metric} is undefined for every instance "
                                 f"({_why_undefined(entry.rel, self.no_relevant < n)})")
            means = {c: s.columns[c].mean(s.count) for c in COLUMNS}
            std = (math.sqrt(float(s.variance.fraction())) / s.count if s.has_variance
                   else None)
            rows.append(MetricRow(entry.metric.name, entry.metric.k, means["original"],
                                     means["first"], means["last"], means["tie_aware"], std,
                                     s.count, gamma=entry.gamma, skipped=n - s.count))
        kept = self.subset
        pos = self.pos_rows
        ties = TieStats(self.top_size / kept, self.top_ratio.mean(kept), self.top_tied / kept,
                        self.pos_size / pos if pos else 0.0, self.pos_tied / pos if pos else 0.0,
                        {k: (self.decided[k] / pos if pos else 0.0) for k in self.ks})
        if self.both:
            warnings.append(f"{path}: --both evaluates {kept} of {n} instance(s), those with "
                            "a relevant item and an explicit negative")
        elif self.no_relevant:
            warnings.append(f"{path}: {self.no_relevant} of {n} instance(s) have no relevant "
                            "item (label > 0); every metric skips them")
        if (any(e.metric.name == "V-AUC" for e in self.entries) and not self.both
                and self.no_negative):
            warnings.append(f"{path}: V-AUC skips the {self.no_negative} instance(s) without "
                            "an explicit negative (label < 0)")
        warnings += [f"{path}: K={k} exceeds the candidate count in {c} instance(s)"
                     for k, c in self.k_over_n.items() if c]
        relevance = {"source": source, **options.to_dict(), "instances_in_subset": kept,
                     "instances_without_relevant": self.no_relevant,
                     "instances_without_negative": self.no_negative}
        return RunResult(path, n, int(self.cand_min), int(self.cand_max),
                                 str(np.dtype(dtype)), rows, ties, dict(labels or {}),
                                 warnings, relevance=relevance, data_warnings=data_warnings)


def _why_undefined(metric: RelMetric, some_relevant: bool = False) -> str:
    if metric.name == "V-AUC":
        return "it needs a relevant item and an explicit negative (label < 0) in one row"
    if (some_relevant and metric.k is not None
            and getattr(metric, "short_list", None) == "skip"):
        return (f"--short-list skip leaves out every instance with fewer than {metric.k} "
                "candidates")
    return "no instance has a relevant item (label > 0)"


# ---------------------------------------------------------------------------------------
# Driving a dump through it


def one_hot(batch) -> np.ndarray:
    """Labels of a single-positive batch: 1 at each row's positive, 0 elsewhere."""
    lengths = batch.lengths()
    if batch.offsets is None:
        lab = np.zeros(batch.scores.shape, dtype=np.int8)
        lab[np.arange(batch.rows), batch.positive] = 1
        return lab
    lab = np.zeros(batch.scores.shape[0], dtype=np.int8)
    lab[np.concatenate(([0], np.cumsum(lengths)))[:-1] + batch.positive] = 1
    return lab


def rel_batch(batch, labels, nan_policy: str, path: str, original: str = "argsort"):
    """A :class:`RelBatch` of one batch; a NaN becomes an error naming the dump row."""
    try:
        return RelBatch(batch.scores, labels, batch.offsets, nan_policy=nan_policy,
                        original=original, unranked=getattr(batch, "unranked", None))
    except NanScoreError as exc:
        where = f"{path}: " if path else ""
        raise InputError(f"{where}{batch.where(exc.row)}: NaN score "
                         "(pass --nan-policy worst to rank NaN below every score)") from None
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
