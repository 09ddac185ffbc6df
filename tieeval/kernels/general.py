"""The general kernel: labelled rows (many positives, graded gains, explicit negatives),
TREC runs, and any metric the single-positive closed forms do not cover.

:func:`tieeval.kernels.choose.choose_kernel` picks it for a dump that carries relevance
labels (:mod:`tieeval.io.relevance`; or a long-layout ``label`` column found to hold them
part-way, :mod:`tieeval.io.long`), when a metric other than HR@K / NDCG@K / MRR is asked
for, or when an option changes those (a discount, a short-list policy, ``--both``). A
single-positive dump that comes here is evaluated with a one-hot label at its positive, so
every metric of the registry works on every dump; with the default metrics and options it
keeps the sort-free :mod:`tieeval.kernels.single` kernel.

Per batch, one sparse :class:`~tieeval.kernels.tie_blocks.RelBatch` holds the tie blocks of
the labelled (or judged) items, each row sorted by the codebases' call only where such an
item is tied and a metric can read its place (``rank_depth``: the deepest place any metric
reads, when every metric's measure declares a depth short of the whole row,
:meth:`~tieeval.metrics.measures.base.Measure.read_depth`), and every metric is read off it
(:meth:`RelBatch.values`); a listed ranking or a tolerance takes the full table of every
position. Dataset means are exact sums (:class:`~tieeval.kernels.summation.ExactSum`) over
the rows where the metric is defined, so they do not depend on batch size.

Definitions and defaults (the choices docs/computed.md documents):

* Default metrics of a labelled dump: HR@K, Recall@K and NDCG@K for every ``--k``, then MRR
  and MAP (full list). A single-positive dump keeps HR@K, NDCG@K and MRR.
* Options, run-wide: gain ``linear`` (or ``exponential``, 2^rel - 1) for DCG/NDCG; discount
  ``log2`` (or ``power`` with ``alpha``, ``news`` 1/(1 + log2(r)^1.5), ``linear``
  (K - r + 1)/K, ``logb`` 1/max(1, log_b(r)) with ``base``) for the DCG family; short-list
  policy ``pad`` (or ``truncate``, ``skip``) for rows with fewer than K candidates; MAP@K
  normalised by ``R`` (or ``min``); ``gamma`` 1 for the signed metrics, several values
  giving one row per gamma (the gamma-sensitivity table); ``relevant_scores`` ``any`` (or
  ``positive``: Precision, Recall, MRR and MAP are read off a second table of the batch,
  whose relevant items scored <= 0 are not relevant, in their places; R and the rows a
  metric is defined on still count them, and so do the tie statistics).
* Skipping: a row where a metric is undefined (no relevant item; V-AUC also needs an
  explicit negative; NDCG needs a positive ideal DCG; ``skip`` drops short rows) is left
  out of that metric's mean and counted (``instances`` evaluated, ``skipped`` left out);
  with ``no_relevant="zero"`` (trec_eval, ranx, scikit-learn) a row without a relevant
  item counts 0 in every column instead (V-AUC still skips it).
  ``both`` keeps only rows with a relevant item *and* an explicit negative (the "Both P&N"
  subset of the sign-aware paper); the other rows are skipped by every metric.
* Tie statistics on labelled rows: the top-score tie figures as for single-positive dumps;
  ``positive_tie_size`` / ``positive_tie_frequency`` describe the tie block of the first
  (highest-scored) relevant item, over rows that rank one; ``tie_decided`` is the share of
  those rows whose HR@K differs between first and last. With ``both``, all of them are
  over the subset.
* V-AUC: the Last column is the strict V-AUC (a tied pair counts 0), the tie-aware column
  counts it 1/2, First counts it 1.
* GMAP, ERR and IPrec have no exact tie-break variance (the measure's ``has_variance``),
  nor bpref where a depth cuts a tie block: their ``tie_aware_std`` is null.
* Aggregation: a metric's dataset figure is the mean over its rows, except for trec_eval's
  counts NumRet, NumRel, NumRelRet and NumQ (the sum, as trec_eval prints them; their
  ``tie_aware_std`` is the tie-break std of the sum) and GMAP (the geometric mean of the
  per-row AP, ``exp(mean(log(max(AP, 1e-5))))``). Every column of every kind is an exact
  sum (of values, or of logarithms), so batches, workers and Spark executors merge exactly.
* The geometric means (GMAP, GBpref) have an exact tie-aware figure: rows break their ties
  independently, so ``E[GM] = prod_q E[max(x_q, 1e-5)^(1/Q)]`` (not the geometric mean of
  per-row expectations). Rows no tie decides enter as exact sums of logarithms; each other
  row's exact distribution over its tie orders (the measure's ``spread``) is kept until Q
  is known. Beyond the work limits (tieeval.metrics.measures.geometric) the column is null
  with the reason (``tie_aware_reason``); no sampled or approximated value stands in for it.
"""


from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, cast

import numpy as np

from tieeval.errors import InputError, warn
from tieeval.kernels.accumulator import Accumulator, EntrySums
from tieeval.kernels.base import (
    Entry,
    EvalSpec,
    Kernel,
    blank_short,
    nan_score_error,
    record_short,
    unanswered_note,
)
from tieeval.kernels.counts import NanScoreError, RowCounts
from tieeval.kernels.original import LISTED_RULES, listed_each
from tieeval.kernels.single import one_hot
from tieeval.kernels.summation import distinct_pairs, flush_all
from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.measures.base import deepest
from tieeval.metrics.measures.hr import TIE_DECIDED
from tieeval.metrics.metric import COLUMNS, Metric
from tieeval.metrics.options import RelMetric, RelOptions
from tieeval.metrics.registry import MIN_GEO_MEAN, REGISTRY
from tieeval.records.batch import Batch
from tieeval.records.results import MetricRow, RunResult, TieStats
from tieeval.records.values import InstanceValues
from tieeval.util.stopping import checkpoint


def expand(metrics: Iterable[Metric], options: RelOptions) -> list[Entry]:
    """One entry per metric, one per gamma for the signed metrics (metric-major order);
    each entry's ``form`` is the metric with its options (:class:`RelMetric`)."""
    out = []
    for m in metrics:
        spec = REGISTRY[m.name]
        opts = options.metric_options(spec, m.k)
        if spec.signed:
            out += [Entry(m, g, RelMetric(m.name, m.k, gamma=g, **opts))
                    for g in options.gammas]
        else:
            out.append(Entry(m, None, RelMetric(m.name, m.k, **opts)))
    return out


PRUNED_MEMORY_FACTOR = 4  # GeneralKernel.memory_factor where every metric has a cutoff
#: From this many metrics on, GeneralKernel.memory_factor is PRUNED_MEMORY_FACTOR too
MANY_METRICS = 64


class GeneralKernel(Kernel):
    """Every metric of the registry on any relevance: one sort per row into tie blocks."""

    name = "general"
    # the block table keeps about a dozen int64 or float64 arrays per score
    memory_factor = 8
    batch_threads = True
    settles = False  # result() only reads the sums

    @classmethod
    def supports(cls, spec: EvalSpec) -> bool:
        return True

    def __init__(self, spec: EvalSpec):
        super().__init__(spec)
        self.entries = expand(spec.metrics, spec.options)
        self.both = spec.options.both
        # relevant_scores="positive": those metrics read a second table, whose relevant
        # items scored <= 0 read as not relevant (RelBatch gate)
        self.gated = any(e.form.positive_scores_only for e in self.entries)
        # the deepest place of the 'original' ordering any metric reads, as its measure
        # declares it (Measure.read_depth; None: any place)
        self.rank_depth = deepest(e.form for e in self.entries)
        # the deepest place any ordering is read at (the metrics and the tie-decided HR@K
        # of every --k): the table leaves out the tie blocks below it
        self.prune_depth = (None if self.rank_depth is None else max(
            # HR@K reads the top K (a whole number)
            [self.rank_depth, *(cast(int, TIE_DECIDED.read_depth(k)) for k in spec.ks)]))
        if self.prune_depth is not None:
            # every metric is cut off at K: the table keeps the blocks within that depth
            # only, and about half the working memory per score. Twice the rows per batch
            # halve the per-batch cost of the table's numpy calls (graded 100,000 x 200:
            # 1.07-1.13x the floor in process against 1.25x, at 95 MB peak against 77;
            # benchmarks/bench_labelled.py, docs/performance.md)
            self.memory_factor = PRUNED_MEMORY_FACTOR
        elif len(self.entries) >= MANY_METRICS:
            # each metric costs a batch a fixed number of numpy calls, and the metrics run
            # one at a time on the batch's one table: with many metrics (trec_eval's
            # all_trec, 98) twice the rows per batch halve that cost for a fraction more
            # memory (-m all_trec on 2,000 x 1,000 TREC lines: 9.2 s of CPU at 214 MB
            # peak against 8.6 s at 259 MB; benchmarks/bench_trec.py --measures all_trec)
            self.memory_factor = PRUNED_MEMORY_FACTOR
        if self.gated:  # two block tables per batch
            self.memory_factor *= 2

    def labels(self, batch: Batch) -> np.ndarray:
        if self.spec.source is None:
            return one_hot(batch)
        if batch.labels is None:
            raise InputError(f"{self.spec.path}: {batch.where(0)}: no relevance labels")
        return batch.labels

    def table_options(self, listed: bool) -> TableOptions:
        """How this run's block tables are built: the sparse table (blocks holding a
        labelled or judged item only) unless a ``listed`` ranking or a tolerance needs
        every position."""
        atol = None if self.spec.what_if is None else self.spec.what_if.tolerance
        rule = self.spec.original
        order = ("given" if rule == "trec" else  # TREC rows come in trec_eval's order
                 "argsort" if rule in LISTED_RULES else rule)
        options = self.spec.options
        return TableOptions(nan_policy=self.spec.nan_policy, original=order, tolerance=atol,
                            relevance_level=options.relevance_level, depth=options.depth,
                            sparse=not listed and atol is None, rank_depth=self.rank_depth,
                            prune_depth=self.prune_depth)

    def block_table(self, batch: Batch, labels: np.ndarray) -> RelBatch:
        """The :class:`RelBatch` of one prepared batch; a NaN becomes an error naming the
        dump row. With a metric of ``relevant_scores="positive"``, the same batch's table
        whose relevant items scored <= 0 read as not relevant is ``rb.gated``."""
        listed = self.listed(batch)
        rb = self._table(batch, labels, listed, False)
        if self.spec.original == "topk-each":
            rb.orders = listed_each(batch, [e.metric for e in self.entries], self.spec.path)
        if self.gated:
            rb.gated = self._table(batch, labels, listed, True)
        return rb

    def _table(self, batch: Batch, labels: np.ndarray, listed: Any, gate: bool) -> RelBatch:
        """One block table of ``batch`` (``gate``: relevant items scored <= 0 read as not
        relevant, for the metrics of ``relevant_scores="positive"``), with the listed
        ranking, the planned metrics and the -J -M virtual rows."""
        path = self.spec.path
        try:
            rb = RelBatch(batch.scores, labels, batch.offsets,
                          unranked=getattr(batch, "unranked", None), judged=batch.judged,
                          unranked_judged=getattr(batch, "unranked_judged", None),
                          max_grade=getattr(batch, "max_label", None),
                          options=self.table_options(listed is not None), gate=gate)
        except NanScoreError as exc:
            raise nan_score_error(path, batch, exc.row) from None
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        if listed is not None:
            rb.use_order(listed)
        planned = [e.form for e in self.entries if e.form.positive_scores_only == gate]
        rb.plan(planned)
        mix = getattr(batch, "mixture", None)
        if mix is not None:  # -J -M: the virtual rows of queries straddling the cut
            table = RelBatch(mix.scores, mix.labels, mix.offsets, unranked=mix.unranked,
                             judged=np.ones(mix.labels.size, dtype=bool),
                             unranked_judged=mix.unranked_judged,
                             max_grade=getattr(batch, "max_label", None),
                             options=self.table_options(False), gate=gate)
            table.plan(planned)
            rb.mixture = (mix, table)
        return rb

    @staticmethod
    def entry_values(rb: RelBatch, i: int, entry: Entry) -> InstanceValues:
        """Entry ``i``'s values on ``rb``: its Original ranked by its own list under
        ``--original topk-each``; under -J -M, a query whose tie block straddles the cut
        takes its First, Last and tie-aware values from its virtual rows
        (:mod:`tieeval.kernels.straddle`)."""
        orders = rb.orders
        if entry.form.positive_scores_only:  # its relevant items scored > 0 only
            rb = cast(RelBatch, rb.gated)
        if orders is not None:
            rb.use_order(orders[i])
            rb.short = None  # topk lists reach every depth asked
        v = rb.values(entry.form)
        mixture = getattr(rb, "mixture", None)
        if mixture is None:
            return v
        from tieeval.kernels.straddle import merge
        mix, table = mixture
        return merge(v, table.values(entry.form), mix)

    def add(self, acc: Accumulator, batch: Batch) -> None:
        self._add(acc, self.prepare(batch))

    def _add(self, acc: Accumulator, batch: Batch
             ) -> tuple[RelBatch, list[InstanceValues] | None]:
        """Add a prepared batch's rows to ``acc``: its table and :meth:`add_rows`' values."""
        lab = self.labels(batch)
        rb = self.block_table(batch, lab)
        values = self.add_rows(acc, rb)
        if acc.duplicates is not None and batch.items is not None:
            acc.duplicates.add(batch.scores, batch.items, batch.offsets, np.asarray(lab) > 0)
        return rb, values

    def add_values(self, acc: Accumulator | None, batch: Batch
                   ) -> tuple[None, list[InstanceValues]]:
        """The totals and the per-instance values from one block table and one evaluation
        of each metric (the values the totals add are the ones handed out)."""
        batch = self.prepare(batch)
        if acc is None:
            return None, self._instances(self.block_table(batch, self.labels(batch)))
        rb, values = self._add(acc, batch)
        return None, self._instances(rb, values, counted=values is not None)

    def add_rows(self, acc: Accumulator, rb: RelBatch) -> list[InstanceValues] | None:
        """Add a block table's rows to ``acc``; returns each entry's values as added
        (``no_relevant`` applied), None for a table without rows."""
        rows = rb.rows
        if rows == 0:
            return None
        acc.instances += rows
        record_short(acc, rb.short)
        n = rb.n
        acc.add_lengths(int(n.min()), int(n.max()))
        has_pos, has_neg = rb.n_pos >= 1, rb.n_neg >= 1
        acc.no_relevant += int(np.count_nonzero(~has_pos))
        acc.no_negative += int(np.count_nonzero(~has_neg))
        keep = has_pos & has_neg if self.both else np.ones(rows, dtype=bool)
        acc.subset += int(np.count_nonzero(keep))
        # Tie statistics over the kept rows: each row's first block is its top-score tie.
        top_rows, top = rb.top_ties()
        sel = keep[top_rows]
        acc.top_size += int(top[sel].sum())
        top_kept, n_kept, times = distinct_pairs(top[sel], n[top_rows[sel]])
        acc.top_ratio.add_counts(top_kept / n_kept, times)
        acc.top_tied += int(np.count_nonzero(top[sel] > 1))
        t = rb._first_block(rb.p_t > 0)
        prow, psize = rb.brow[t], rb.bsz[t]
        sel = keep[prow]
        acc.pos_rows += int(np.count_nonzero(sel))
        acc.pos_size += int(psize[sel].sum())
        acc.pos_tied += int(np.count_nonzero(psize[sel] > 1))
        for k in acc.ks:
            acc.decided[k] += int(np.count_nonzero(tie_decided(rb, t, k) & sel))
            # a query the run does not answer (--missing-queries zero) has no candidates:
            # the query-set note reports it, not this warning
            acc.k_over_n[k] += int(np.count_nonzero(keep & (n < k) & (n > 0)))
        added = []
        for i, (entry, sums) in enumerate(zip(self.entries, acc.sums)):
            checkpoint()
            v = self.entry_values(rb, i, entry)
            v = self._counted(v, entry, has_pos)
            added.append(v)
            # RelBatch.values always fills defined and variance (NaN where no closed form)
            mask = cast(np.ndarray, v.defined) & keep
            sums.count += int(np.count_nonzero(mask))
            geometric = REGISTRY[entry.metric.name].aggregate == "geometric"
            random = None
            if geometric:
                random = self._spread(sums, v, mask)
            w = None if v.weight is None else v.weight[mask]
            if w is not None:  # a weighted mean: weighted sums, and the weights' sum
                sums.weighted = True
                sums.weights.add(w)
            for c in COLUMNS:
                x = getattr(v, c)[mask]
                if w is not None:
                    x = x * w
                if c == "tie_aware" and random is not None:
                    x = x[~random]  # the rows whose value ties decide are kept apart
                if c == "tie_aware" and np.isnan(x).any():
                    sums.has_tie_aware = False
                    continue
                if geometric:  # sums of logarithms: the geometric mean merges exactly
                    x = np.log(np.maximum(x, MIN_GEO_MEAN))
                sums.columns[c].add(x)
            var = cast(np.ndarray, v.variance)[mask]
            if w is not None:
                var = var * w ** 2
            if not entry.metric.spec.has_variance or np.isnan(var).any():
                sums.has_variance = False
            else:
                sums.variance.add(var)
        return added

    def one_relevant_table(self) -> bool:
        """Whether rows holding one relevant item each can be added from that item's
        counts (:meth:`add_counts`): every metric is read off the sparse table (none
        needs every position), which no option changes (a relevance level, ``--both``,
        a depth; a what-if's tolerance, NaN ranked worst, candidate ids, one list per
        metric, a positive scored <= 0 read as not relevant, rules
        :func:`tieeval.kernels.device.counts_on_device` checks)."""
        options = self.spec.options
        return (options.relevance_level is None and not options.both
                and options.depth is None and self.spec.original != "topk-each"
                and not self.gated
                and not any(e.form.spec.every_position for e in self.entries))

    def add_counts(self, acc: Accumulator, counts: RowCounts, keep: bool = False
                   ) -> list[InstanceValues] | None:
        """Add rows holding one relevant item each, given by that item's counts
        (:class:`~tieeval.kernels.counts.RowCounts`: above, tied, the row's top tie, its
        1-based Original rank) instead of their scores: the sparse table those rows'
        scores give (:meth:`RelBatch.one_relevant`), and so the same sums, bit for bit
        (:meth:`one_relevant_table` says when). ``keep``: also return each entry's
        per-instance values."""
        listed = self.spec.original in LISTED_RULES
        rb = RelBatch.one_relevant(counts.n, counts.a, counts.b, counts.top,
                                   counts.original - 1, self.table_options(False), listed)
        rb.plan(e.form for e in self.entries)
        values = self.add_rows(acc, rb)
        if not keep or values is None:
            return None
        return self._instances(rb, values, counted=True)

    @staticmethod
    def _spread(sums: EntrySums, v: InstanceValues, mask: np.ndarray) -> np.ndarray | None:
        """A geometric mean's rows (among ``mask``) whose value ties decide: their
        distributions go to ``sums``; returns which of the masked rows they are (None when
        the measure gives no distributions)."""
        spread = v.spread
        if spread is None:
            sums.has_tie_aware = False
            return None
        sp = cast(Any, spread)
        if np.any(sp.over & mask):
            sums.has_tie_aware = False
        random = np.zeros(mask.size, dtype=bool)
        keep = [i for i, row in enumerate(sp.rows.tolist()) if mask[row]]
        random[sp.rows[keep]] = True
        sums.add_spread([(sp.values[i], sp.probs[i]) for i in keep])
        value: np.ndarray | None = random[mask]
        return value

    def _counted(self, v: InstanceValues, entry: Entry, has_pos: np.ndarray) -> InstanceValues:
        """``no_relevant="zero"``: an instance without a relevant item that the metric
        leaves undefined counts as 0 in every column (trec_eval, ranx, scikit-learn);
        the pair measures (V-AUC, AUC), which need a relevant item in every pair, still
        skip it."""
        if (self.spec.options.no_relevant != "zero"
                or not entry.metric.spec.zero_without_relevant):
            return v
        defined = np.ones(has_pos.shape, dtype=bool) if v.defined is None else v.defined
        fill = ~has_pos & ~defined
        if not fill.any():
            return v

        def zero(a: np.ndarray, value: float = 0.0) -> np.ndarray:
            return np.where(fill, value, a)

        variance = None if v.variance is None else zero(v.variance)
        weight = None if v.weight is None else zero(v.weight)  # weighs nothing
        return InstanceValues(zero(v.original), zero(v.first), zero(v.last),
                              zero(v.tie_aware), variance,
                              zero(v.tie_decided, False), defined | fill, v.spread, weight)

    def _instances(self, rb: RelBatch, values: list[InstanceValues] | None = None,
                   counted: bool = False) -> list[InstanceValues]:
        """Each entry's per-instance values from its values on ``rb`` (None: evaluated
        here; ``counted``: ``no_relevant`` already applied)."""
        if values is None:
            values = [self.entry_values(rb, i, e) for i, e in enumerate(self.entries)]
        has_pos = rb.n_pos >= 1
        keep = has_pos & (rb.n_neg >= 1) if self.both else None
        out = []
        short = rb.short or [None] * len(self.entries)
        for entry, v, item in zip(self.entries, values, short):
            if not counted:
                v = self._counted(v, entry, has_pos)
            v = blank_short(v, item)
            if keep is not None:  # RelBatch.values always fills defined
                v.defined = cast(np.ndarray, v.defined) & keep
            if not entry.metric.spec.has_variance:
                v.variance = None
            out.append(v)
        return out

    def result(self, acc: Accumulator, path: str, dtype: np.ndarray,
               labels: dict[str, Any] | None = None,
               warnings: Iterable[str] = ()) -> RunResult:
        """The run's rows; the relevance source is ``labels``, ``positives``, ``trec`` or
        ``positive`` (one-hot single-positive rows)."""
        n = acc.instances
        options = self.spec.options
        if n == 0 or acc.cand_min is None or acc.cand_max is None:  # set by the first row
            raise InputError(f"{path}: no instances (empty dump)")
        if self.both and acc.subset == 0:
            raise InputError(f"{path}: no instance has both a relevant item (label > 0) and "
                             "an explicit negative (label < 0); --both leaves nothing to "
                             "evaluate")
        # every sum's waiting values added at once
        flush_all([acc.top_ratio, *(x for s in acc.sums for x in (
            *s.columns.values(), s.variance, s.weights))])
        rows, own = [], []
        unanswered: list[Metric] = []
        why: list[str] = []
        for entry, s in zip(self.entries, acc.sums):
            if s.count == 0:
                form = entry.form
                why_not = (f"--short-list skip leaves out every instance with fewer than "
                           f"{form.k} candidates" if acc.no_relevant < n and form.k is not None
                           and form.short_list == "skip" else form.spec.undefined_reason())
                raise InputError(f"{path}: {entry.metric} is undefined for every instance "
                                 f"({why_not})")
            kind = REGISTRY[entry.metric.name].aggregate
            if kind == "sum":
                means = {c: s.columns[c].value() for c in COLUMNS}
                std = math.sqrt(float(s.variance.fraction())) if s.has_variance else None
            elif s.weighted:  # micro-averaged Precision@K
                means, std = s.weighted_means()
            else:
                means = {c: s.columns[c].mean(s.count) for c in COLUMNS}
                std = (math.sqrt(float(s.variance.fraction())) / s.count if s.has_variance
                       else None)
            if kind == "geometric":
                means = {c: math.exp(x) for c, x in means.items()}
                if s.has_tie_aware:
                    means["tie_aware"] = expected_geometric_mean(s)
            reason = None
            if s.unanswered is not None:
                means["original"] = None
                unanswered.append(entry.metric)
                why.append(s.unanswered)
            if not s.has_tie_aware:
                means["tie_aware"], std = None, None
                reason = entry.form.spec.tie_aware_reason()
            rows.append(MetricRow(entry.metric.name, entry.metric.k, means["original"],
                                  means["first"], means["last"], means["tie_aware"], std,
                                  s.count, gamma=entry.gamma, skipped=n - s.count,
                                  aggregate=None if kind == "mean" else kind,
                                  tie_aware_reason=reason))
        kept = acc.subset
        pos = acc.pos_rows
        ties = TieStats(acc.top_size / kept, acc.top_ratio.mean(kept), acc.top_tied / kept,
                        acc.pos_size / pos if pos else 0.0, acc.pos_tied / pos if pos else 0.0,
                        {k: (acc.decided[k] / pos if pos else 0.0) for k in acc.ks})
        if self.both:
            own.append(f"{path}: --both evaluates {kept} of {n} instance(s), those with "
                       "a relevant item and an explicit negative")
        elif acc.no_relevant:
            level = options.relevance_level
            # under a relevance level the DCG family's gain stays the raw label: NDCG scores
            # a row with labels below the level (trec_eval's ndcg under -l)
            graded = "" if level is None else ", but NDCG scores those with a label > 0"
            what = f"every metric skips them{graded}"
            if options.no_relevant == "zero":
                from tieeval.metrics.measures import MEASURES  # every family: only here
                skip = " or ".join(m.name for m in MEASURES if not m.zero_without_relevant)
                what = f"every metric but {skip} counts them as 0{graded} (no_relevant=zero)"
            relevant = "label > 0" if level is None else f"label >= {level}"
            own.append(f"{path}: {acc.no_relevant} of {n} instance(s) have no relevant "
                       f"item ({relevant}); {what}")
        negatives = list(dict.fromkeys(e.metric.name for e in self.entries
                                       if "negatives" in e.metric.spec.needs))
        if negatives and not self.both and acc.no_negative:
            own.append(f"{path}: {' and '.join(negatives)} skips the {acc.no_negative} "
                       "instance(s) without an explicit negative (label < 0)")
        over = k_over_n_warnings(path, acc.k_over_n) + unanswered_note(unanswered, why)
        for line in over:  # Python callers see it too, not only in result.warnings
            warn(line)
        own += over
        relevance = {"source": self.spec.source or "positive", **options.to_dict(),
                     "instances_in_subset": kept,
                     "instances_without_relevant": acc.no_relevant,
                     "instances_without_negative": acc.no_negative}
        result = RunResult(path, n, int(acc.cand_min), int(acc.cand_max),
                           str(np.dtype(dtype)), rows, ties, dict(labels or {}), own,
                           relevance=relevance)
        result = self._finish(result, acc, path, warnings)
        if result.what_if is not None and result.what_if.tolerance is not None:
            result.what_if = replace(result.what_if, chained=True)
        return result


def tie_decided(rb: RelBatch, first: np.ndarray, k: int) -> np.ndarray:
    """Whether HR@K differs between the 'first' and 'last' orderings, for the rows of
    ``first`` (each row's first block holding a relevant item): what the tie-decided
    shares count, read off that block's counts instead of evaluating HR@K. HR@K is 1 in
    'first' when the block starts inside the cutoff (its relevant items lead it) and 0 in
    'last' when its items placed inside the cutoff (``m``) fit among its ``size - p``
    other items (its relevant items close it): the ``decided`` of
    :data:`tieeval.metrics.measures.TIE_DECIDED` (HR), whose evaluation this saves."""
    a, size, p = rb.ba[first], rb.bsz[first], rb.p_t[first]
    # the counting cutoff (capped at the depth); past every row's end it acts as the end
    kc = min(k, int(rb.n.max(initial=0)) + 1)
    if rb.depth is not None:
        kc = min(kc, rb.depth)
    m = np.clip(kc - a, 0, size)
    value: np.ndarray = (m >= 1) & (m <= size - p)
    return value


def expected_geometric_mean(s: EntrySums) -> float:
    """``prod_q E[max(x_q, 1e-5)^(1/Q)]`` over the Q rows of a geometric mean: the
    rows no tie decides from their exact sum of logarithms, the others from their
    distributions (tieeval.metrics.measures.geometric)."""
    from tieeval.metrics.measures.geometric import log_root_mean
    fixed = float(s.columns["tie_aware"].fraction() / s.count)
    rest = math.fsum(log_root_mean(values, probs, s.count, MIN_GEO_MEAN)
                     for values, probs in s.spread)
    return math.exp(fixed + rest)


def k_over_n_warnings(path: str, counts: dict[int, int]) -> list[str]:
    """The cutoffs past some rows' candidate count, said once: a TREC run's shorter
    queries fall below several of trec_eval's cutoffs (100 ... 1000) at once, one line for
    all of them rather than one per cutoff."""
    over = [(k, c) for k, c in counts.items() if c]
    if len(over) == 1:
        k, c = over[0]
        return [f"{path}: K={k} exceeds the candidate count in {c} instance(s)"]
    if not over:
        return []
    each = ", ".join(f"K={k} in {c}" for k, c in over)
    return [f"{path}: K exceeds the candidate count at {len(over)} cutoffs ({each} "
            "instance(s))"]
