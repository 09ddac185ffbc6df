"""The kernel interface: what every kernel takes, gives and promises.

A :class:`Kernel` turns a :class:`~tieeval.io.base.Batch` into sums of one
:class:`~tieeval.kernels.accumulator.Accumulator` (:meth:`Kernel.add`), per-instance
values (:meth:`Kernel.instance_values`, for ``diff`` and per-row output), and finally one
:class:`~tieeval.results.RunResult` (:meth:`Kernel.result`). Which kernel evaluates a dump
is decided once, from an :class:`EvalSpec`, by :func:`tieeval.kernels.choose.choose_kernel`:
each kernel class answers :meth:`Kernel.supports`, as ir_measures' providers do. Kernels
are plain picklable values, so worker processes and Spark executors run the same code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

from tieeval.errors import InputError
from tieeval.io.base import Batch
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.counts import NAN_POLICIES
from tieeval.kernels.original import LISTED_RULES, default_rule, listed_ranking
from tieeval.kernels.values import InstanceValues
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import DEFAULT_OPTIONS, RelOptions
from tieeval.results import RunResult

if TYPE_CHECKING:
    from tieeval.kernels.whatif import WhatIf


@dataclass(frozen=True)
class EvalSpec:
    """Everything that decides how one dump's batches are evaluated.

    ``metrics``: the metrics asked for (already resolved to the dump's kind);
    ``options``: run-wide options of labelled metrics; ``source``: where relevance comes
    from (None: one positive per row; ``labels``, ``positives`` or ``trec``); ``items``:
    the dump carries candidate ids (the duplicate check runs); ``original``: the rule
    behind the Original column (:data:`~tieeval.results.ORIGINAL_RULES`: ``argsort`` by
    default, ``trec`` for TREC runs; :mod:`tieeval.kernels.original`); ``what_if``: a
    :class:`~tieeval.kernels.whatif.WhatIf` (cast and/or tolerance) or None.
    """

    metrics: tuple
    options: RelOptions = DEFAULT_OPTIONS
    nan_policy: str = "raise"
    source: str | None = None
    items: bool = False
    original: str = "argsort"
    what_if: WhatIf | None = None
    path: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", tuple(
            m if isinstance(m, Metric) else Metric.parse(m) for m in self.metrics))
        if self.nan_policy not in NAN_POLICIES:
            from tieeval.errors import ParameterError
            raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                                 f"got {self.nan_policy!r}")

    @property
    def ks(self) -> list[int]:
        return [m.k for m in self.metrics if m.k is not None]

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


class Kernel(ABC):
    """Per-batch math of one kind of dump, behind one interface (see the module doc)."""

    name = "kernel"
    # Working memory per score relative to the single-positive kernel's: automatic batch
    # sizes are divided by it, so every kernel stays near the same footprint.
    memory_factor = 1

    def __init__(self, spec: EvalSpec):
        self.spec = spec
        self.entries: list[Entry] = []

    @classmethod
    @abstractmethod
    def supports(cls, spec: EvalSpec) -> bool:
        """Whether this kernel evaluates dumps of ``spec`` exactly."""

    def batch_rows(self, dump, batch_rows: int | None = None) -> int:
        """Rows per batch: ``batch_rows``, or the dump's automatic size for this kernel."""
        size = dump.batch_size(batch_rows)
        if batch_rows is None and self.memory_factor > 1:
            size = max(64, size // self.memory_factor)
        return size

    def new(self) -> Accumulator:
        """An empty accumulator for this kernel's entries."""
        return Accumulator(len(self.entries), self.spec.ks, self.spec.items)

    def prepare(self, batch: Batch) -> Batch:
        """The batch as the kernel sees it: scores cast by a what-if, if one is set."""
        what_if = self.spec.what_if
        return batch if what_if is None else what_if.transform(batch)

    @abstractmethod
    def add(self, acc: Accumulator, batch: Batch) -> None:
        """Add one batch's rows to ``acc``."""

    @abstractmethod
    def instance_values(self, batch: Batch) -> list[InstanceValues]:
        """Per-instance values of every entry (in :attr:`entries` order) for one batch."""

    @abstractmethod
    def result(self, acc: Accumulator, path: str, dtype, labels: dict | None = None,
               warnings: Iterable[str] = ()) -> RunResult:
        """The run's record; ``warnings`` (the reader's) come first."""

    def accumulate(self, batches: Iterable[Batch], progress=None) -> Accumulator:
        """One accumulator over ``batches``; ``progress(rows, nbytes)`` after each batch."""
        acc = self.new()
        for batch in batches:
            self.add(acc, batch)
            if progress is not None:
                progress(batch.rows, batch.nbytes)
        return acc

    def nan_error(self, batch: Batch, row: int) -> InputError:
        where = f"{self.spec.path}: " if self.spec.path else ""
        return InputError(f"{where}{batch.where(row)}: NaN score "
                          "(pass --nan-policy worst to rank NaN below every score)")

    def _duplicates(self, acc: Accumulator, batch: Batch, relevant) -> None:
        if acc.duplicates is not None and batch.items is not None:
            acc.duplicates.add(batch.scores, batch.items, batch.offsets, relevant)

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

    def listed(self, batch: Batch):
        """The checked ranking of a batch under ``--original given`` / ``topk``, else None."""
        if self.spec.original not in LISTED_RULES:
            return None
        metrics = [e.metric for e in self.entries]
        return listed_ranking(batch, self.spec.original, metrics, self.spec.path)
