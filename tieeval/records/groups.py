"""The records of seed averaging: one :class:`GroupResult` per method / dataset / task,
holding its runs, the seed means of their metric rows and tie statistics, and the
across-seed standard deviations.

How the means are taken is :mod:`tieeval.analysis.groups`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tieeval.metrics.metric import COLUMNS
from tieeval.records.display import html
from tieeval.records.results import MetricRow, RunResult, find_row, metric_list
from tieeval.records.run_labels import GROUP_KEYS, RunLabelled

TIE_FIELDS = ("top_tie_size", "top_tie_ratio", "top_tie_frequency", "positive_tie_size",
              "positive_tie_frequency")


@dataclass
class GroupMetricRow(MetricRow):
    """A metric row of a group: the single-run fields hold seed means, plus seed stds."""

    original_seed_std: float | None = None
    first_seed_std: float | None = None
    last_seed_std: float | None = None
    tie_aware_seed_std: float | None = None

    def seed_std(self, column: str) -> float | None:
        std: float | None = getattr(self, f"{column}_seed_std")
        return std

    def _columns(self) -> dict[str, Any]:
        out = super()._columns()
        out.update((f"{c}_seed_std", self.seed_std(c)) for c in COLUMNS)
        return out


@dataclass
class GroupTies:
    """Seed means of the tie statistics, with their across-seed standard deviations."""

    means: dict[str, float]
    seed_stds: dict[str, float | None]
    tie_decided: dict[int, float] = field(default_factory=dict)
    tie_decided_seed_std: dict[int, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: self.means[name] for name in TIE_FIELDS}
        out.update((f"{name}_seed_std", self.seed_stds[name]) for name in TIE_FIELDS)
        out["tie_decided"] = {str(k): v for k, v in self.tie_decided.items()}
        out["tie_decided_seed_std"] = {str(k): v for k, v in self.tie_decided_seed_std.items()}
        return out


@dataclass
class GroupResult(RunLabelled):
    """The runs of one method / dataset / task, averaged over their seeds."""

    run_labels: dict[str, str | None]
    runs: list[RunResult]
    metrics: list[GroupMetricRow]
    ties: GroupTies

    @property
    def seeds(self) -> int:
        return len(self.runs)

    @property
    def key(self) -> tuple[Any, ...]:
        return tuple(self.run_labels.get(k) for k in GROUP_KEYS)

    def metric(self, label: str) -> GroupMetricRow:
        """The row for ``"NDCG@10"``-style labels (case-insensitive)."""
        return find_row(self.metrics, label)

    def __repr__(self) -> str:
        # the dataclass repr would print every seed's run in full
        labels = {k: v for k, v in self.run_labels.items() if v is not None}
        return (f"GroupResult(labels={labels!r}, seeds={self.seeds}, "
                f"metrics=[{metric_list(self.metrics)}])")

    def _repr_html_(self) -> str | None:
        return html("group", self)

    def to_dict(self) -> dict[str, Any]:
        return {"labels": {k: self.run_labels.get(k) for k in GROUP_KEYS}, "seeds": self.seeds,
                "paths": [r.path for r in self.runs],
                "metrics": [m.to_dict() for m in self.metrics], "ties": self.ties.to_dict()}
