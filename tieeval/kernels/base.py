"""The kernel interface: what every kernel takes, gives and promises.

A :class:`Kernel` turns a :class:`~tieeval.io.base.Batch` into sums of one
:class:`~tieeval.kernels.accumulator.Accumulator` (:meth:`Kernel.add`), per-instance
values (:meth:`Kernel.instance_values`, for ``diff`` and per-row output), and finally one
:class:`~tieeval.records.results.RunResult` (:meth:`Kernel.result`). Which kernel evaluates a dump
is decided once, from an :class:`EvalSpec`, by :func:`tieeval.kernels.choose.choose_kernel`:
each kernel class answers :meth:`Kernel.supports`, as ir_measures' providers do. Kernels
are plain picklable values, so worker processes and Spark executors run the same code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.original import (
    LISTED_RULES,
    Listed,
    Short,
    default_rule,
    listed_ranking,
)
from tieeval.metrics.metric import Metric, parse_metric_list
from tieeval.metrics.options import DEFAULT_OPTIONS, RelOptions
from tieeval.records.batch import Batch
from tieeval.records.results import RunResult
from tieeval.records.values import InstanceValues as InstanceValues  # re-exported

if TYPE_CHECKING:
    from tieeval.records.whatif import WhatIf


def nan_score_error(path: str, batch: Batch, row: int) -> InputError:
    """The one message for a NaN score under ``nan_policy='raise'``, naming the dump row."""
    where = f"{path}: " if path else ""
    return InputError(f"{where}{batch.where(row)}: NaN score "
                      "(pass --nan-policy worst to rank NaN below every score)")


def record_short(acc: Accumulator, short: list[Short | None] | None) -> None:
    """Mark in ``acc`` the output rows (one per entry of ``short``) whose Original a saved
    ranking does not answer in some row of a batch."""
    for sums, item in zip(acc.sums, short or ()):
        if item is not None and sums.unanswered is None:
            sums.unanswered = item.text


def blank_short(values: InstanceValues, item: Short | None) -> InstanceValues:
    """``values`` with the Original of the rows a saved ranking does not answer NaN."""
    if item is not None:
        values.original = np.where(item.rows, np.nan, values.original)
    return values


def unanswered_note(metrics: list[Any], texts: list[str]) -> list[str]:
    """The note on the metrics whose Original column is left empty (``texts``: why, for
    each), none when there are none."""
    if not metrics:
        return []
    names = ", ".join(dict.fromkeys(map(str, metrics)))
    return [f"{texts[0]}: the Original of {names} is left empty (null); First, Last and "
            "Tie-aware need no ranking"]


@dataclass(frozen=True)
class EvalSpec:
    """Everything that decides how one dump's batches are evaluated.

    ``metrics``: the metrics asked for (already resolved to the dump's kind);
    ``options``: run-wide options of labelled metrics; ``source``: where relevance comes
    from (None: one positive per row; ``labels``, ``positives`` or ``trec``); ``items``:
    the dump carries candidate ids (the duplicate check runs); ``original``: the rule
    behind the Original column (:data:`~tieeval.records.results.ORIGINAL_RULES`: ``argsort`` by
    default, ``trec`` for TREC runs; :mod:`tieeval.kernels.original`); ``what_if``: a
    :class:`~tieeval.records.whatif.WhatIf` (cast and/or tolerance) or None.
    """

    metrics: tuple[Any, ...]
    options: RelOptions = DEFAULT_OPTIONS
    nan_policy: str = "raise"
    source: str | None = None
    items: bool = False
    original: str = "argsort"
    what_if: WhatIf | None = None
    path: str = ""

    def __post_init__(self) -> None:
        # the options were checked once, where the request was made
        # (tieeval.engine.request); the spec trusts them
        object.__setattr__(self, "metrics", tuple(parse_metric_list(self.metrics)))

    @property
    def ks(self) -> list[int]:
        # rank cutoffs only: a level metric's parameter (IPrec@0.1) is a recall level
        return [int(m.k) for m in self.metrics if m.k is not None and not m.spec.takes_level]

    def at(self, path: str) -> "EvalSpec":
        """The same spec naming another path in its messages."""
        return replace(self, path=path)


@dataclass(frozen=True)
class Entry:
    """One output row of a kernel: the metric as asked, and gamma for a signed metric."""

    metric: Metric
    gamma: float | None = None
    form: Any = field(default=None, compare=False)  # the kernel's own form of it

    @property
    def label(self) -> str:
        text = str(self.metric)
        return text if self.gamma is None else f"{text} γ={self.gamma:g}"


PADDING_CHECK_ROWS = 1000  # rows of a dump checked for a padding column 0
PADDING_SHARE = 0.5  # more than this share of them: column 0 is not the positive
PADDING_MIN_ROWS = 10  # fewer rows are not checked


def check_default_positive(path: str, batch: Batch, nan_policy: str = "raise") -> None:
    """Stop when the positive defaults to column 0 (no positive field, no
    ``--positive-index``, no relevance labels) and that column looks like padding: in
    more than half of the dump's first rows (at most 1000, those of its first batch) it is
    ``-inf``, NaN (under ``nan_policy="worst"``; else NaN is its own error), or strictly
    below every other score of its row (a full-sort matrix whose column 0 is a padding
    item). Dumps of fewer than 10 rows are not checked. HR@K would otherwise be silently
    near 0."""
    if batch.offsets is not None:
        return
    scores = np.asarray(batch.scores[:PADDING_CHECK_ROWS])
    if scores.ndim != 2 or scores.shape[1] < 2 or scores.dtype.kind != "f" or not len(scores):
        return
    col = scores[:, 0]
    nan0 = np.isnan(col)
    if nan_policy != "worst" and nan0.any():
        return  # the NaN policy reports it
    if len(scores) < PADDING_MIN_ROWS:
        return  # too few rows to tell a padding column from chance
    with np.errstate(invalid="ignore"):
        # the lowest other score, NaN left out (fmin ignores NaN; inf where all are NaN)
        others = np.fmin.reduce(scores[:, 1:], axis=1)
        others[np.isnan(others)] = np.inf
        padding = nan0 | (col == -np.inf) | (col < others)
    share = float(np.count_nonzero(padding)) / len(col)
    if share > PADDING_SHARE:
        raise InputError(
            f"{path}: the positive defaults to column 0, but column 0 is -inf, NaN or the "
            f"row's lowest score in {share:.0%} of the first {len(col)} rows (a padding "
            "item?). Say where the positive is: a 'positive' field in the dump (per-row "
            "column index; tieeval.save_scores(..., positive=...)), --positive-index N "
            "(positive_index= in ReadOptions), or relevance 'labels'")


class Kernel(ABC):
    """Per-batch math of one kind of dump, behind one interface (see the module doc)."""

    name = "kernel"
    # Working memory per score relative to the single-positive kernel's: automatic batch
    # sizes are divided by it, so every kernel stays near the same footprint.
    memory_factor = 1
    # evaluate several batches at once on the sort threads (each batch's own sorts then
    # run in its thread): worth it where most of a batch's work is numpy calls of moderate
    # size that one thread would run one after another
    batch_threads = False
    # result() moves what the accumulator holds aside (tables of counts) into its sums: a
    # caller that adds more rows after a result gives it a copy
    settles = True

    def __init__(self, spec: EvalSpec):
        self.spec = spec
        self.entries: list[Entry] = []

    @classmethod
    @abstractmethod
    def supports(cls, spec: EvalSpec) -> bool:
        """Whether this kernel evaluates dumps of ``spec`` exactly."""

    def batch_rows(self, dump: Any, batch_rows: int | None = None) -> int:
        """Rows per batch: ``batch_rows``, or the dump's automatic size for this kernel."""
        size: int = dump.batch_size(batch_rows)
        if batch_rows is None and self.memory_factor > 1:
            size = max(64, size // self.memory_factor)
        return size

    def new(self) -> Accumulator:
        """An empty accumulator for this kernel's entries."""
        return Accumulator(len(self.entries), self.spec.ks, self.spec.items)

    def prepare(self, batch: Batch) -> Batch:
        """The batch as the kernel sees it: scores cast by a what-if, if one is set."""
        if batch.start == 0 and batch.positive_defaulted and self.spec.source is None:
            check_default_positive(self.spec.path, batch, self.spec.nan_policy)
        what_if = self.spec.what_if
        if what_if is None or what_if.cast is None:
            return batch
        from tieeval.kernels.whatif import cast_scores  # only under a cast
        return replace(batch, scores=cast_scores(batch.scores, what_if.cast))

    @abstractmethod
    def add(self, acc: Accumulator, batch: Batch) -> None:
        """Add one batch's rows to ``acc``."""

    def instance_values(self, batch: Batch) -> list[InstanceValues]:
        """Per-instance values of every entry (in :attr:`entries` order) for one batch."""
        return self.add_values(None, batch)[1]

    @abstractmethod
    def add_values(self, acc: Accumulator | None, batch: Batch
                   ) -> tuple[Any, list[InstanceValues]]:
        """Add one batch to ``acc`` (None: the totals are not wanted) and give its
        per-instance values: ``(row counts or None, values)``; the row counts (``a``,
        ``b``, the original rank) are the single-positive kernel's."""

    @abstractmethod
    def result(self, acc: Accumulator, path: str, dtype: Any,
               labels: dict[str, Any] | None = None,
               warnings: Iterable[str] = ()) -> RunResult:
        """The run's record; ``warnings`` (the reader's) come first."""

    def accumulate(self, batches: Iterable[Batch],
                   progress: Callable[[int, int], object] | None = None) -> Accumulator:
        """One accumulator over ``batches``; ``progress(rows, nbytes)`` after each batch.

        With :attr:`batch_threads` and several sort threads, batches are evaluated on
        those threads, each into its own accumulator, merged in batch order (exact sums:
        the result is the one of a single pass, bit for bit)."""
        from tieeval.kernels.threads import map_batches, threads
        acc = self.new()
        threaded = self.batch_threads and threads() > 1

        def one(batch: Batch) -> tuple[Accumulator, int, int]:
            part = self.new() if threaded else acc
            self.add(part, batch)
            return part, batch.rows, batch.nbytes
        for part, rows, nbytes in (map_batches(one, batches) if threaded
                                   else map(one, batches)):
            if part is not acc:
                acc.merge(part)
            if progress is not None:
                progress(rows, nbytes)
        return acc

    def _finish(self, result: RunResult, acc: Accumulator, path: str,
                warnings: Iterable[str]) -> RunResult:
        lines: list[str] = []
        if acc.duplicates is not None:
            result.data_warnings, lines = acc.duplicates.report(path)
        result.warnings[:0] = list(warnings) + lines
        if self.spec.what_if is not None:
            result.what_if = self.spec.what_if
        if self.spec.original != default_rule(self.spec.source == "trec"):
            result.original_rule = self.spec.original
        return result

    def listed(self, batch: Batch) -> Listed | None:
        """The checked ranking of a batch under ``--original given`` / ``topk``, else None."""
        if self.spec.original not in LISTED_RULES:
            return None
        metrics = [e.metric for e in self.entries]
        return listed_ranking(batch, self.spec.original, metrics, self.spec.path)
