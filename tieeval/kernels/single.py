"""The single-positive kernel: one held-out positive per row, HR@K, NDCG@K and MRR.

Per row it counts ``a`` (candidates strictly above the positive) and ``b`` (tied with it,
itself included) in the stored dtype, plus the rank numpy's ``np.argsort(scores * -1)``
gives the positive, only for rows whose positive is tied (:mod:`tieeval.kernels.counts`),
or the rank another Original rule gives it (:mod:`tieeval.kernels.original`).
Every column then follows from closed forms (:mod:`tieeval.kernels.closed_forms`) without
a sort. Deterministic columns are summed through rank histograms, tie-aware values only
for tied rows; all sums are exact, so the result does not depend on the split.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from tieeval.errors import InputError, warn
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.base import (
    Entry,
    EvalSpec,
    Kernel,
    blank_short,
    nan_score_error,
    record_short,
    unanswered_note,
)
from tieeval.kernels.closed_forms import (
    histogram_cap,
    rank_value,
    single_positive,
    tie_moments,
)
from tieeval.kernels.counts import (
    NanScoreError,
    RowCounts,
    block_counts,
    dense_counts,
    ragged_abt,
    ragged_counts,
)
from tieeval.kernels.fused import active as fused_active
from tieeval.kernels.original import LISTED_RULES, batch_offsets
from tieeval.kernels.summation import distinct_pairs, flush_all
from tieeval.metrics.metric import COLUMNS
from tieeval.records.batch import Batch
from tieeval.records.results import MetricRow, RunResult, TieStats
from tieeval.records.values import InstanceValues


def batch_counts(batch: Batch, nan_policy: str = "raise", path: str = "",
                 rule: str = "argsort", keep: bool = True) -> RowCounts:
    """Run the tie kernel on one batch, turning a NaN into an error naming the dump row.
    ``rule``: the Original rule of the ``original`` ranks (argsort, stable, reverse-stable;
    other rules leave them to the kernel). ``keep``: whether anything but the counts looks
    at the scores afterwards (:func:`block_counts`, for a batch still to be read)."""
    try:
        if batch.offsets is None and batch.lazy and not fused_active():
            return block_counts(batch, nan_policy, rule, keep)
        if batch.offsets is None:
            return dense_counts(batch.scores, batch.positive, nan_policy, rule)
        return ragged_counts(batch.scores, batch.offsets, batch.positive, nan_policy, rule)
    except NanScoreError as exc:
        raise nan_score_error(path, batch, exc.row) from None


def one_hot(batch: Batch) -> np.ndarray:
    """Labels of a single-positive batch: 1 at each row's positive, 0 elsewhere."""
    lengths = batch.lengths()
    if batch.offsets is None:
        lab: np.ndarray = np.zeros(batch.scores.shape, dtype=np.int8)
        lab[np.arange(batch.rows), batch.positive] = 1
        return lab
    lab = np.zeros(batch.scores.shape[0], dtype=np.int8)
    lab[np.concatenate(([0], np.cumsum(lengths)))[:-1] + batch.positive] = 1
    return lab


class SinglePositiveKernel(Kernel):
    """HR@K, NDCG@K and MRR of dumps with one positive per row, without sorting rows."""

    name = "single-positive"
    batch_threads = True

    @classmethod
    def supports(cls, spec: EvalSpec) -> bool:
        return (spec.source is None and all(m.single_positive for m in spec.metrics)
                and not spec.options.changes_single_positive
                and spec.original != "topk-each")  # one ranking per metric: general

    def __init__(self, spec: EvalSpec):
        super().__init__(spec)
        self.metrics = list(spec.metrics)
        self.entries = [Entry(m) for m in self.metrics]

    def counts(self, batch: Batch, keep: bool = True) -> RowCounts:
        """``a``, ``b``, the top tie and the original rank of one (prepared) batch, under
        the what-if's tolerance when one is set. ``keep``: see :meth:`scores_wanted`."""
        exact = batch_counts(batch, self.spec.nan_policy, self.spec.path, self.spec.original,
                             keep)
        listed = self.listed(batch)
        if listed is not None:
            exact.original = listed.positive_ranks(batch.positive, exact.a)
            exact.short = listed.short
        what_if = self.spec.what_if
        if what_if is None or what_if.tolerance is None:
            return exact
        # scores within the tolerance of the positive (of the row maximum) count as tied:
        # a, b and the top tie recounted (a dense batch as the ragged one of its rows)
        s, offsets = batch_offsets(batch)
        a, b, top, _ = ragged_abt(s, offsets, batch.positive, self.spec.nan_policy,
                                  what_if.tolerance)
        return RowCounts(a, b, exact.n, top, exact.original, exact.short)

    def scores_wanted(self, acc: Accumulator, batch: Batch) -> bool:
        """Whether anything but the counts looks at the batch's scores once they are
        counted: the hints of a defaulted positive (the dump's first rows), the duplicate
        items check, a ranking the dump carries (``--original given`` / ``topk``), a
        what-if. If not, only the tied rows need stay in a batch read as it is counted
        (:func:`block_counts`'s ``keep``)."""
        from tieeval.kernels.hints import HINT_ROWS
        return ((batch.positive_defaulted and self.spec.source is None
                 and batch.start < HINT_ROWS)
                or (acc.duplicates is not None and batch.items is not None)
                or self.spec.original in LISTED_RULES
                or self.spec.what_if is not None)

    def add(self, acc: Accumulator, batch: Batch) -> None:
        batch = self.prepare(batch)
        self._add(acc, batch, self.counts(batch, keep=self.scores_wanted(acc, batch)))

    def _add(self, acc: Accumulator, batch: Batch, counts: RowCounts) -> None:
        """Add the rows of a prepared batch, counted, to ``acc``."""
        record_short(acc, counts.short)
        self.add_hint(acc, batch, counts)
        self.add_counts(acc, counts)
        if acc.duplicates is not None and batch.items is not None:
            acc.duplicates.add(batch.scores, batch.items, batch.offsets, one_hot(batch))

    def add_counts(self, acc: Accumulator, counts: RowCounts) -> None:
        rows = len(counts.a)
        if rows == 0:
            return
        acc.instances += rows
        acc.subset += rows
        acc.pos_rows += rows
        acc.add_lengths(int(counts.n.min()), int(counts.n.max()))
        acc.top_size += int(counts.top.sum())
        top, n, times = distinct_pairs(counts.top, counts.n)
        if not acc.add_pairs("top", top, n, times):
            acc.top_ratio.add_counts(top / n, times)
        acc.top_tied += int(np.count_nonzero(counts.top > 1))
        tied = np.flatnonzero(counts.b > 1)
        acc.pos_size += int(counts.b.sum())
        acc.pos_tied += tied.size
        first, last = counts.a + 1, counts.a + counts.b
        for k in acc.ks:
            acc.decided[k] += int(np.count_nonzero((counts.a < k) & (k < last)))
            acc.k_over_n[k] += int(np.count_nonzero(counts.n < k))
        # a tied positive's moments depend on (a, b) only: each distinct pair is computed
        # once and added as many times as it occurs (exact sums: the same result)
        a_tied, b_tied, times = distinct_pairs(counts.a[tied], counts.b[tied])
        # the deterministic columns as rank counts, shared by every metric; the tie-aware
        # column's untied rows are the first column's less its tied ones
        first_bins = _rank_bins(first)
        columns = (("original", counts.original, _rank_bins(counts.original)),
                   ("first", first, first_bins),
                   ("last", last, _rank_bins(last)),
                   ("tie_aware", first, first_bins - _rank_bins(first[tied])))
        for column, ranks, bins in columns:
            acc.add_table("ranks", column, bins[:_HISTOGRAM_RANKS + 1])
            if bins[-1]:  # ranks too deep for the counts: each one's value, where not 0
                deep = ranks > _HISTOGRAM_RANKS
                if column == "tie_aware" and tied.size:
                    deep[tied] = False
                deep_ranks = ranks[deep]
                for m, sums in zip(self.metrics, acc.sums):
                    cap = histogram_cap(m)
                    # past the depth the measure reads, every rank has the value at cap:
                    # left out where it is 0
                    if (cap is None or cap > _HISTOGRAM_RANKS
                            or rank_value(m, np.array([cap]))[0] != 0):
                        sums.columns[column].add(rank_value(m, deep_ranks))
        for sums in acc.sums:
            sums.count += rows
        # Only tied positives need the closed form; untied ones contribute their single
        # value (through the rank counts above) and no variance. Their (a, b) pairs are
        # counted too, and their moments worked out once per run where the pairs are small.
        if not acc.add_pairs("tied", a_tied, b_tied, times):
            self._add_moments(acc, a_tied, b_tied, times)

    def _add_moments(self, acc: Accumulator, a: np.ndarray, b: np.ndarray,
                     times: np.ndarray) -> None:
        """Tied positives at the distinct pairs ``(a, b)``, ``times`` rows each: every
        metric's tie-aware mean and variance."""
        if a.size == 0:
            return
        for m, sums in zip(self.metrics, acc.sums):
            e, e2, _ = tie_moments(m, a, b)
            sums.columns["tie_aware"].add_counts(e, times)
            sums.variance.add_counts(np.maximum(e2 - e * e, 0.0), times)

    def settle(self, acc: Accumulator) -> None:
        """Add the accumulated rank and pair counts to the sums: every metric's value at
        each rank, each tied pair's moments and each top tie's ratio, times its count
        (exact: the sums of the rows' own values); once per run."""
        for column, bins in (acc.ranks or {}).items():
            present = np.flatnonzero(bins)
            if present.size:
                for m, sums in zip(self.metrics, acc.sums):
                    sums.columns[column].add_counts(rank_value(m, present), bins[present])
        pairs = acc.pairs or {}
        if "tied" in pairs:
            a, b = np.nonzero(pairs["tied"])
            self._add_moments(acc, a, b, pairs["tied"][a, b])
        if "top" in pairs:
            top, n = np.nonzero(pairs["top"])
            acc.top_ratio.add_counts(top / n, pairs["top"][top, n])
        acc.ranks = acc.pairs = None

    def add_hint(self, acc: Accumulator, batch: Batch, counts: RowCounts) -> None:
        """The evidence of the dump's first rows that a positive defaulted to column 0 is
        not one (:mod:`tieeval.kernels.hints`); a warning, never a figure. ``counts``:
        the batch's own counts, which give it for a dense batch without another pass
        (unless a tolerance changed them)."""
        if not batch.positive_defaulted or self.spec.source is not None:
            return
        from tieeval.kernels.hints import (
            HINT_ROWS,
            add_count_evidence,
            add_evidence,
            new_evidence,
        )
        if batch.start >= HINT_ROWS:
            return
        if acc.hint is None:
            acc.hint = new_evidence()
        what_if = self.spec.what_if
        if (batch.offsets is None and np.ndim(batch.scores) == 2
                and (what_if is None or what_if.tolerance is None)):
            add_count_evidence(acc.hint, np.asarray(batch.scores), counts.a, counts.b,
                               batch.start, self.spec.nan_policy != "raise")
            return
        add_evidence(acc.hint, batch.scores, batch.offsets, batch.start)

    def add_values(self, acc: Accumulator | None, batch: Batch
                   ) -> tuple[RowCounts, list[InstanceValues]]:
        """The batch's counts serve the totals and the per-instance values alike."""
        batch = self.prepare(batch)
        counts = self.counts(batch)
        if acc is not None:
            self._add(acc, batch, counts)
        return counts, self._values(counts)

    def _values(self, counts: RowCounts) -> list[InstanceValues]:
        """Each metric's per-instance values (no Original where a saved ranking does not
        answer it)."""
        short = counts.short or [None] * len(self.metrics)
        return [blank_short(single_positive(m, counts.a, counts.b, counts.original), item)
                for m, item in zip(self.metrics, short)]

    def result(self, acc: Accumulator, path: str, dtype: Any,
               labels: dict[str, Any] | None = None,
               warnings: Iterable[str] = ()) -> RunResult:
        n = acc.instances
        if n == 0 or acc.cand_min is None or acc.cand_max is None:  # set by the first row
            raise InputError(f"{path}: no instances (empty dump)")
        self.settle(acc)
        flush_all([acc.top_ratio, *(x for s in acc.sums
                                    for x in (*s.columns.values(), s.variance))])
        rows, unanswered, why = [], [], []
        for m, s in zip(self.metrics, acc.sums):
            means = {c: s.columns[c].mean(n) for c in COLUMNS}
            std = math.sqrt(float(s.variance.fraction())) / n
            original: float | None = means["original"]
            if s.unanswered is not None:
                original = None
                unanswered.append(m)
                why.append(s.unanswered)
            rows.append(MetricRow(m.name, m.k, original, means["first"],
                                  means["last"], means["tie_aware"], std, n))
        ties = TieStats(acc.top_size / n, acc.top_ratio.mean(n), acc.top_tied / n,
                        acc.pos_size / n, acc.pos_tied / n,
                        {k: acc.decided[k] / n for k in acc.ks})
        own = [f"{path}: K={k} exceeds the candidate count in {c} instance(s); "
               "HR and NDCG saturate there" for k, c in acc.k_over_n.items() if c]
        own += unanswered_note(unanswered, why)
        if acc.hint is not None:
            from tieeval.kernels.hints import evidence_hints
            own += evidence_hints(path, acc.hint)
        for line in own:  # Python callers see it too, not only in result.warnings
            warn(line)
        result = RunResult(path, n, int(acc.cand_min), int(acc.cand_max),
                           str(np.dtype(dtype)), rows, ties, dict(labels or {}), own)
        return self._finish(result, acc, path, warnings)


_HISTOGRAM_RANKS = 4096
"""Deterministic ranks up to this are counted (per column, in the accumulator) and turned
into metric values once per run: they take few distinct values (one per rank up to K),
so counting them and adding ``count * value`` exactly is much cheaper than summing one
float per row. Deeper ranks are worth 0 for every cutoff metric that reads less deep than
this (its measure's ``read_depth``); for the others they are added one by one. The sums
are exact, so the grouping does not change a bit of the result."""


def _rank_bins(ranks: np.ndarray) -> np.ndarray:
    """How many of ``ranks`` equal each rank up to :data:`_HISTOGRAM_RANKS` (index = rank),
    and in the last place how many are deeper."""
    return np.bincount(np.minimum(ranks, _HISTOGRAM_RANKS + 1),
                       minlength=_HISTOGRAM_RANKS + 2)
