"""The general evaluation path: labelled rows (many positives, graded gains, explicit
negatives), TREC runs, and any metric the single-positive closed forms do not cover.

:func:`tieeval.engine.evaluate_dump` hands a dump here when it carries relevance labels
(:mod:`tieeval.labelled_io`; or a long-layout ``label`` column found to hold them part-way,
:mod:`tieeval.longformat`), when a metric other than HR@K / NDCG@K / MRR is asked for, or
when an option changes those (a discount, a short-list policy, ``--both``). A
single-positive dump that comes here is evaluated with a one-hot label at its positive, so
every metric of the registry works on every dump; with the default metrics and options it
keeps the sort-free path of :mod:`tieeval.engine` (plus the duplicate check when it carries
item ids).

Per batch, one :class:`~tieeval.relevance.RelBatch` sorts every row once into tie blocks and
every metric is read off it (:meth:`RelBatch.values`); dataset means are exact sums
(:class:`~tieeval.summation.ExactSum`) over the rows where the metric is defined, so they
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

from .errors import InputError, ParameterError
from .metrics import COLUMNS, DefaultMetrics, Metric, check_k
from .registry import REGISTRY
from .relevance import (AP_NORMS, DISCOUNTS, GAINS, SHORT_LIST_POLICIES, RelBatch, RelMetric,
                        _choice, _number)
from .groups import GroupMetricRow
from .results import MetricRow, RunResult, TieStats, relative_change
from .summation import ExactSum
from .ties import NanScoreError

SUBSETS = ("all", "both")


# ---------------------------------------------------------------------------------------
# Options and metric lists


@dataclass(frozen=True)
class RelOptions:
    """Run-wide options of the general path (see the module docstring for defaults)."""

    gain: str = "linear"
    discount: str = "log2"
    alpha: float = 1.0
    gammas: tuple = (1.0,)
    short_list: str = "pad"
    ap_norm: str = "R"
    both: bool = False
    base: float = 2.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("gain", "discount", "short_list", "ap_norm"):
            set_(self, name, _choice(name, getattr(self, name)))
        set_(self, "alpha", _number("alpha", self.alpha))
        set_(self, "base", _number("base", self.base))
        if self.base <= 1:
            raise ParameterError(f"the log base must be a number > 1, got {self.base!r}")
        gammas = self.gammas
        if isinstance(gammas, (int, float, np.integer, np.floating)) and not isinstance(
                gammas, bool):
            gammas = (gammas,)
        gammas = tuple(dict.fromkeys(_number("gamma", g) for g in gammas))
        if not gammas:
            raise ParameterError("give at least one gamma")
        set_(self, "gammas", gammas)
        set_(self, "both", bool(self.both))

    @property
    def changes_single_positive(self) -> bool:
        """True when an option changes HR@K, NDCG@K or MRR of a single-positive dump."""
        return self.discount != "log2" or self.short_list != "pad" or self.both

    def metric_options(self, spec, k) -> dict:
        """The options of ``self`` that apply to a metric (RelMetric refuses the rest)."""
        out = {}
        if "gain" in spec.options:
            out["gain"] = self.gain
        if "discount" in spec.options:
            out["discount"] = self.discount
            if self.discount == "power":
                out["alpha"] = self.alpha
            if self.discount == "logb":
                out["base"] = self.base
        if k is not None:
            out["short_list"] = self.short_list
            if "ap_norm" in spec.options:
                out["ap_norm"] = self.ap_norm
        return out

    def to_dict(self) -> dict:
        return {"gain": self.gain, "discount": self.discount,
                "alpha": self.alpha if self.discount == "power" else None,
                "log_base": self.base if self.discount == "logb" else None,
                "short_list": self.short_list, "ap_norm": self.ap_norm,
                "gammas": list(self.gammas), "subset": "both" if self.both else "all"}


DEFAULT_OPTIONS = RelOptions()


def default_rel_metrics(ks) -> list[Metric]:
    """HR@K, Recall@K, NDCG@K for every K, then MRR and MAP: a labelled dump's default."""
    ks = [check_k(k) for k in ks]
    return ([Metric("HR", k) for k in ks] + [Metric("Recall", k) for k in ks]
            + [Metric("NDCG", k) for k in ks] + [Metric("MRR"), Metric("MAP")])


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


def wants_general_path(dump, metrics, options: RelOptions | None) -> bool:
    """Whether ``dump`` with ``metrics`` needs this module rather than the sort-free path."""
    info = getattr(dump, "relevance", None)
    if info is not None and (info.source is not None or info.items):
        return True
    if options is not None and options.changes_single_positive:
        return True
    return metrics is not None and not all(m.single_positive for m in metrics)


# ---------------------------------------------------------------------------------------
# Result records


@dataclass
class _LabelledRow:
    """What a labelled run adds to a metric row (of one run or of a seed group): ``gamma``
    (signed metrics; None otherwise) and ``skipped``; means may be None."""

    gamma: float | None = None
    skipped: int = 0

    @property
    def display(self) -> str:
        """The label with gamma for signed metrics (``SNDCG@20 γ=0.5``), for tables."""
        return self.label if self.gamma is None else f"{self.label} γ={self.gamma:g}"

    @property
    def change_original_to_tie_aware(self):
        return _change(self.original, self.tie_aware)

    @property
    def change_first_to_last(self):
        return _change(self.first, self.last)

    def to_dict(self) -> dict:
        """``metric, k, gamma``, then the usual keys, then ``instances, skipped``."""
        base = super().to_dict()
        out = {"metric": base["metric"], "k": base["k"], "gamma": self.gamma}
        out.update((k, v) for k, v in base.items() if k not in out)
        out["instances"] = self.instances
        out["skipped"] = self.skipped
        return out


def _change(before, after):
    return None if before is None or after is None else relative_change(before, after)


@dataclass
class RelMetricRow(_LabelledRow, MetricRow):
    """A metric row of the general path: also ``gamma`` (signed metrics; None otherwise),
    ``instances`` (rows evaluated) and ``skipped`` (rows where it is undefined or outside
    the subset). The means are None when no row was evaluated."""


@dataclass
class LabelledRunResult(RunResult):
    """A :class:`~tieeval.results.RunResult` with what the general path adds to the JSON:
    ``relevance`` (label source, options, subset and skip counts; None for single-positive
    dumps) and ``data_warnings`` (None when the dump has no item ids to check)."""

    relevance: dict | None = None
    data_warnings: list | None = None

    @property
    def caption_note(self) -> str:
        """What a table caption adds: the label source, the subset, trec_eval's order."""
        rel = self.relevance
        if rel is None:
            return ""
        parts = [{"labels": "relevance labels", "positives": "positives/negatives lists",
                  "trec": "TREC run and qrels", "positive": "one positive per row"}.get(
                      rel["source"], rel["source"])]
        if rel["subset"] == "both":
            parts.append(f"Both P&N subset: {rel['instances_in_subset']} instances")
        if rel["source"] == "trec":
            parts.append("Original = trec_eval's order (score, then docno, descending)")
        return "; " + "; ".join(parts)

    def to_dict(self) -> dict:
        out = super().to_dict()
        if self.relevance is not None:
            out["relevance"] = self.relevance
        if self.data_warnings is not None:
            out["data_warnings"] = self.data_warnings
        return out


# ---------------------------------------------------------------------------------------
# Duplicate candidates


class DuplicateCheck:
    """Counts rows that list the same item twice (docs/METRICS.md 13).

    A deterministic model scores both copies alike, which manufactures a tie, and the copy
    counts as a negative: sampled negatives drawn with replacement, or a sampled negative
    equal to the held-out positive, lower the tie-aware figures. Reported, never fixed.
    """

    def __init__(self):
        self.rows = 0
        self.instances = 0
        self.copies = 0
        self.relevant_rows = 0
        self.mismatch_rows = 0

    def add(self, scores, items, offsets, relevant) -> None:
        """``scores``/``items``/``relevant`` flat (with ``offsets``) or 2-D alike."""
        if offsets is None:
            rows, cols = items.shape
            offsets = np.arange(rows + 1, dtype=np.int64) * cols
        items, scores = np.asarray(items).reshape(-1), np.asarray(scores).reshape(-1)
        relevant = np.asarray(relevant).reshape(-1)
        n = np.diff(offsets)
        rows = n.size
        self.instances += rows
        if items.size == 0:
            return
        codes = (items.astype(np.int64) if items.dtype.kind in "iu" and items.dtype != np.uint64
                 else np.unique(items.astype(str) if items.dtype == object else items,
                                return_inverse=True)[1].reshape(-1))
        rw = np.repeat(np.arange(rows, dtype=np.int64), n)
        order = np.lexsort((codes, rw))
        c, r = codes[order], rw[order]
        same = np.zeros(items.size, dtype=bool)
        same[1:] = (c[1:] == c[:-1]) & (r[1:] == r[:-1])  # a copy of the previous one
        if not same.any():
            return
        copies = np.bincount(r[same], minlength=rows)
        self.rows += int(np.count_nonzero(copies))
        self.copies += int(copies.sum())
        gid = np.cumsum(~same) - 1
        size = np.bincount(gid)
        rel = np.bincount(gid, weights=relevant[order].astype(np.float64))
        dup_group = size > 1
        start = np.flatnonzero(~same)
        self.relevant_rows += np.unique(r[start[dup_group & (rel > 0)]]).size
        s = scores[order]
        differ = np.zeros(items.size, dtype=bool)
        with np.errstate(invalid="ignore"):
            differ[1:] = same[1:] & (s[1:] != s[:-1])
        self.mismatch_rows += np.unique(r[differ]).size

    def report(self, path: str) -> tuple[list[dict], list[str]]:
        """``(data_warnings, stderr lines)``; empty when no row holds a duplicate."""
        if self.rows == 0:
            return [], []
        freq = self.rows / max(1, self.instances)
        message = (f"{path}: {self.rows} of {self.instances} instance(s) ({freq:.2%}) list the "
                   f"same item twice ({self.copies} extra candidate(s)); in "
                   f"{self.relevant_rows} of them a relevant item (e.g. the positive) is "
                   "repeated as a candidate. A copy ties with its original and counts as a "
                   "negative, which lowers the tie-aware figures: drop duplicates before "
                   "scoring")
        if self.mismatch_rows:
            message += (f"; in {self.mismatch_rows} instance(s) the copies have different "
                        "scores (non-deterministic inference?)")
        entry = {"kind": "duplicate_items", "instances": self.rows, "frequency": freq,
                 "copies": self.copies, "relevant_instances": self.relevant_rows,
                 "score_mismatch_instances": self.mismatch_rows, "message": message}
        return [entry], [message]


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
               options: RelOptions, data_warnings=None) -> LabelledRunResult:
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
            rows.append(RelMetricRow(entry.metric.name, entry.metric.k, means["original"],
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
        return LabelledRunResult(path, n, int(self.cand_min), int(self.cand_max),
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


def _tick(progress):
    from .engine import progress_callback  # engine imports this module lazily
    return progress_callback(progress) or (lambda rows, nbytes: None)


def choose_metrics(metrics, info) -> list[Metric]:
    """The user's metrics, or the default set of the dump's kind."""
    if metrics is None:
        from .engine import DEFAULT_KS
        return default_rel_metrics(DEFAULT_KS)
    if isinstance(metrics, DefaultMetrics) and info is not None and info.source is not None:
        return default_rel_metrics(metrics.ks)
    return [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]


def evaluate_general(dump, metrics=None, *, nan_policy: str = "raise", batch_rows=None,
                     labels: dict | None = None, progress=None,
                     relevance: RelOptions | None = None) -> RunResult:
    """Evaluate an opened dump through the general kernel (see the module docstring).

    A reader that changes how it reads part-way (:class:`tieeval.io.ReadAgain`: long rows
    not sorted by instance, or a long label column found to hold relevance labels) starts
    the run over; ``progress`` then receives negative values that take back what it saw.
    """
    from .engine import check_nan_policy
    from .io import ReadAgain
    check_nan_policy(nan_policy)
    tick = _tick(progress)
    for _ in range(3):
        done = [0, 0]

        def counted(rows, nbytes):
            done[0] += rows
            done[1] += nbytes
            tick(rows, nbytes)
        try:
            return _evaluate_general(dump, metrics, nan_policy, batch_rows, labels, counted,
                                     relevance)
        except ReadAgain as exc:
            if done[0] or done[1]:
                tick(-done[0], -done[1])
            dump.start_over(exc)
    raise InputError(f"{dump.path}: the reader could not settle on a way to read it")


def _evaluate_general(dump, metrics, nan_policy, batch_rows, labels, tick, relevance):
    from .engine import Accumulator, batch_counts
    options = relevance or DEFAULT_OPTIONS
    info = getattr(dump, "relevance", None)
    source = info.source if info is not None else None
    metrics = choose_metrics(metrics, info)
    dups = DuplicateCheck() if info is not None and info.items else None
    merged = {**dump.metadata, **(labels or {})}
    fast = (source is None and all(m.single_positive for m in metrics)
            and not options.changes_single_positive)
    if fast:  # a single-positive dump with item ids: the sort-free path plus the check
        acc = Accumulator(list(metrics))
        for batch in dump.batches(batch_rows):
            acc.add(batch_counts(batch, nan_policy, dump.path))
            if dups is not None and batch.items is not None:
                dups.add(batch.scores, batch.items, batch.offsets, one_hot(batch))
            tick(batch.rows, batch.nbytes)
        base = acc.result(dump.path, dump.dtype, merged)
        entries, lines = dups.report(dump.path) if dups is not None else (None, [])
        result = LabelledRunResult(**{f: getattr(base, f) for f in base.__dataclass_fields__},
                                   data_warnings=entries)
        result.warnings[:0] = list(dump.warnings) + lines
        return result
    entries = expand(metrics, options)
    ks = [m.k for m in metrics if m.k is not None]
    acc = RelAccumulator(entries, ks, options.both)
    original = info.original if info is not None else "argsort"
    for batch in dump.batches(batch_rows):
        lab = batch.labels if source is not None else one_hot(batch)
        if lab is None:
            raise InputError(f"{dump.path}: {batch.where(0)}: no relevance labels")
        rb = rel_batch(batch, lab, nan_policy, dump.path, original)
        acc.add(rb)
        if dups is not None and batch.items is not None:
            dups.add(batch.scores, batch.items, batch.offsets, np.asarray(lab) > 0)
        tick(batch.rows, batch.nbytes)
    data_entries, lines = dups.report(dump.path) if dups is not None else (None, [])
    result = acc.result(dump.path, dump.dtype, merged, source or "positive", options,
                        data_entries)
    result.warnings[:0] = list(dump.warnings) + lines
    return result


def evaluate_labels(scores, labels, offsets=None, *, k=(1, 5, 10), metrics=None,
                    items=None, gamma=1.0, gain: str = "linear", discount: str = "log2",
                    alpha: float = 1.0, log_base: float = 2.0, short_list: str = "pad",
                    ap_norm: str = "R", both: bool = False, nan_policy: str = "raise",
                    path: str = "<array>") -> RunResult:
    """Evaluate in-memory labelled rows: the Python form of ``tieeval compare`` on a dump
    with ``labels``.

    ``scores`` and ``labels`` are ``(instances, candidates)`` arrays, or flat arrays with
    ``offsets`` (``instances + 1`` row boundaries). Labels: ``> 0`` relevant with that gain,
    ``0`` unobserved, ``< 0`` an explicit negative. ``items`` (same layout) enables the
    duplicate check. ``gamma`` is one value or several (one row per gamma for signed
    metrics). Without ``metrics``: HR@K, Recall@K, NDCG@K for every ``k``, MRR and MAP.

    >>> import numpy as np
    >>> r = evaluate_labels(np.array([[0.9, 0.9, 0.1]]), np.array([[1, 0, 2]]),
    ...                     metrics=["HR@1", "NDCG@3"])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.0, 0.5)
    """
    from .io import Batch
    s = np.asarray(scores)
    lab = np.asarray(labels)
    if s.dtype == object or lab.dtype == object:
        raise InputError("scores and labels must be numeric arrays (ragged rows? pass flat "
                         "arrays with offsets)")
    if offsets is None and s.ndim != 2:
        raise InputError(f"{path}: scores must be a 2-D (instances, candidates) array or flat "
                         f"with offsets, got shape {s.shape}")
    if s.shape != lab.shape:
        raise InputError(f"{path}: scores and labels differ in shape: {s.shape} vs "
                         f"{lab.shape}")
    if s.shape[0] == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    options = RelOptions(gain=gain, discount=discount, alpha=alpha, gammas=gamma,
                         short_list=short_list, ap_norm=ap_norm, both=both, base=log_base)
    if metrics is None:
        chosen = default_rel_metrics(list(k))
    else:
        chosen = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
    off = None if offsets is None else np.asarray(offsets)
    rows = s.shape[0] if off is None else off.size - 1
    batch = Batch(s, np.zeros(rows, dtype=np.int64), 0, off)
    entries = expand(chosen, options)
    acc = RelAccumulator(entries, [m.k for m in chosen if m.k is not None], options.both)
    acc.add(rel_batch(batch, lab, nan_policy, path))
    dup_entries, lines = None, []
    if items is not None:
        dups = DuplicateCheck()
        it = np.asarray(items)
        if it.shape != s.shape:
            raise InputError(f"{path}: items and scores differ in shape: {it.shape} vs "
                             f"{s.shape}")
        dups.add(s, it, off, lab > 0)
        dup_entries, lines = dups.report(path)
    result = acc.result(path, s.dtype, {}, "labels", options, dup_entries)
    result.warnings[:0] = lines
    return result


def evaluate_scores_general(arr, positive, metrics, *, nan_policy="raise",
                            path="<array>") -> RunResult:
    """:func:`tieeval.evaluate` for metrics beyond HR@K / NDCG@K / MRR: one-hot labels."""
    from .io import Batch
    batch = Batch(arr, positive, 0)
    acc = RelAccumulator(expand(metrics, DEFAULT_OPTIONS),
                         [m.k for m in metrics if m.k is not None])
    acc.add(rel_batch(batch, one_hot(batch), nan_policy, path))
    return acc.result(path, arr.dtype, {}, "positive", DEFAULT_OPTIONS)


__all__ = ["RelOptions", "Entry", "RelMetricRow", "LabelledRunResult", "DuplicateCheck",
           "RelAccumulator", "default_rel_metrics", "evaluate_general", "evaluate_labels",
           "expand", "wants_general_path", "GAINS", "DISCOUNTS", "SHORT_LIST_POLICIES",
           "AP_NORMS", "SUBSETS"]


def group_row(row, per_seed):
    """A seed-averaged row (:class:`~tieeval.groups.GroupMetricRow`) of labelled runs, with
    their gamma and the skipped instances summed over seeds."""
    values = {f: getattr(row, f) for f in row.__dataclass_fields__}
    return RelGroupMetricRow(**values, gamma=per_seed[0].gamma,
                             skipped=sum(r.skipped for r in per_seed))


@dataclass
class RelGroupMetricRow(_LabelledRow, GroupMetricRow):
    """A group row of labelled runs: ``gamma`` and ``skipped`` as in :class:`RelMetricRow`."""


def spark_refusal(why: str) -> str:
    """The message of everything ``--engine spark`` leaves to the local engine."""
    return ("--engine spark evaluates HR@K, NDCG@K and MRR of single-positive dumps; "
            f"{why}: run with --engine local")


def refuse_spark(paths, options, metrics, relevance: RelOptions | None) -> None:
    """``--engine spark`` evaluates the single-positive protocol only: refuse labelled
    dumps, TREC runs and the general metrics before any Spark work starts.

    Local paths (and ``file://`` URIs) are opened here, reading only footers and headers.
    A URI only Spark can open (``hdfs://``, ``s3a://``, ...) is not: the Spark engine
    refuses relevance fields from the DataFrame's schema instead
    (:func:`tieeval.spark.evaluate`), and a long label column holding relevance labels
    from the rows. Field names renamed on the command line (``--labels-column``) ask for
    relevance labels, so they are refused up front.
    """
    why = None
    if getattr(options, "qrels", None) is not None:
        why = "TREC runs (--qrels)"
    elif relevance is not None:
        why = "the options of labelled rows (--gain, --discount, --gamma, --both, ...)"
    elif metrics is not None and not all(m.single_positive for m in metrics):
        other = next(m for m in metrics if not m.single_positive)
        why = f"{other} is not one of them"
    if why is None:
        from .io import local_path, open_dump, remote_uri
        from .labelled_io import field_names
        renamed = [f"--{kind}-column {name}" for kind, name in field_names(options).items()
                   if name != kind]
        for path in paths:
            if remote_uri(path):
                if renamed:
                    why = f"relevance fields ({', '.join(renamed)})"
                    break
                continue
            info = getattr(open_dump(local_path(path), options), "relevance", None)
            if info is not None:
                why = f"{path}: a dump with relevance fields ({', '.join(info.fields)})"
                break
    if why is not None:
        raise ParameterError(spark_refusal(why))
