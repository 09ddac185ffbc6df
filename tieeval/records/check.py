"""The records of ``tieeval check``: the kinds of bound, one :class:`Threshold`, and the
:class:`Outcome` of one check on one run (what was measured, whether it passed).

Parsing thresholds and measuring runs is :mod:`tieeval.analysis.check`; rendering the
outcomes is :mod:`tieeval.report.check`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tieeval.metrics.metric import Metric
from tieeval.records.results import MetricRow, RunResult

# kind -> (takes a metric, "max" or "min", unit of the bound: "fraction" or "value")
KINDS = {
    "max_change": (True, "max", "fraction"),
    "max_inflation": (True, "max", "fraction"),
    "max_change_sigma": (True, "max", "sigma"),
    "max_spread": (True, "max", "fraction"),
    "max_tie_decided": (False, "max", "fraction"),
    "max_gap": (True, "max", "value"),
    "min": (True, "min", "value"),
    "max_tie_frequency": (False, "max", "fraction"),
    "max_positive_tie_frequency": (False, "max", "fraction"),
}
OPTION_NAMES = {kind: "--" + kind.replace("_", "-") for kind in KINDS}
CHANGE_KINDS = ("max_change", "max_inflation")
# The checks that read the Original column (their JSON names its rule).
ORIGINAL_KINDS = (*CHANGE_KINDS, "max_change_sigma", "max_gap")
SIGMA_FLOOR = 0.01  # max_change_sigma passes a change of at most 1 % of the original


@dataclass(frozen=True)
class Threshold:
    """One bound: ``kind`` from :data:`KINDS`, an optional metric, the bound as a fraction,
    and an optional ``gamma`` picking one gamma row of a signed metric (None: every row of
    the metric)."""

    kind: str
    bound: float
    metric: Metric | None = None
    gamma: float | None = None

    @property
    def comparison(self) -> str:
        return KINDS[self.kind][1]

    @property
    def unit(self) -> str:
        return KINDS[self.kind][2]


@dataclass
class Outcome:
    """One check on one run: what was measured, against which bound, and whether it passed.

    ``measured`` is None when the figure is undefined (the relative gap of a metric whose
    original value is 0 while its tie-aware value is not); such a check fails. ``row`` is
    the metric row checked (None for the tie frequencies); ``gamma`` its gamma, for a
    signed metric of a labelled run.
    """

    run: RunResult
    threshold: Threshold
    metric: Metric | None
    measured: float | None
    passed: bool
    row: MetricRow | None = None

    @property
    def gamma(self) -> float | None:
        return getattr(self.row, "gamma", None)

    @property
    def change(self) -> float | None:
        """The signed relative change original -> tie-aware of a change check,
        ``(tie_aware - original) / original``: negative when Original overstates the
        tie-aware value (0 when both are 0; None when the original is 0 and the tie-aware
        value is not)."""
        row = self.row
        if row is None or self.threshold.kind not in (*CHANGE_KINDS, "max_change_sigma"):
            return None
        if row.original == 0 and row.tie_aware == 0:
            return 0.0
        return row.change_original_to_tie_aware

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.run.path, "check": self.threshold.kind,
                     "metric": None if self.metric is None else str(self.metric)}
        if self.run.labelled:  # as the run's own metric rows: gamma for labelled runs
            out["gamma"] = self.gamma
        out.update(measured=self.measured, bound=self.threshold.bound, passed=self.passed)
        if self.threshold.kind in (*CHANGE_KINDS, "max_change_sigma"):
            out["change"] = self.change  # added key: the signed change
        if self.threshold.kind in ORIGINAL_KINDS:  # the rule behind the Original it read
            out["original_rule"] = self.run.effective_original_rule
        return out


@dataclass(frozen=True)
class DumpError:
    """A dump that could not be checked (damaged, cut short, holding a NaN or no instance):
    its path and the one-line error, which names it."""

    path: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "error": self.message}


@dataclass
class CheckResult:
    """Every outcome of ``tieeval check`` (run order, then threshold order) and the runs
    checked, whose JSON the report carries; ``errors``: the dumps that could not be
    checked; ``order``: every dump's path in the order given (None: the runs', then the
    errors')."""

    outcomes: list[Outcome]
    runs: list[RunResult]
    errors: list[DumpError] = field(default_factory=list)
    order: list[str] | None = None

    @property
    def passed(self) -> bool:
        """Every check passed (whether a dump could not be checked is :attr:`errors`)."""
        return all(o.passed for o in self.outcomes)

    def by_dump(self) -> list[tuple[str, list[Outcome], DumpError | None]]:
        """Per dump, in the order given: its path, its outcomes and its error (or None)."""
        paths = list(dict.fromkeys([*(self.order or ()), *(run.path for run in self.runs),
                                    *(o.run.path for o in self.outcomes),
                                    *(e.path for e in self.errors)]))
        errors = {e.path: e for e in self.errors}
        return [(path, [o for o in self.outcomes if o.run.path == path], errors.get(path))
                for path in paths]
