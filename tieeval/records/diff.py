"""The records of ``tieeval diff`` and ``tieeval rank``: one column's paired comparison,
one metric's row, the two runs compared, the whole :class:`DiffResult`; and the
:class:`Ranking` of several methods in one setting.

Computing them is :mod:`tieeval.analysis.diff` (with the tests of
:mod:`tieeval.analysis.stats`); rendering them is :mod:`tieeval.report.diff`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tieeval.records.display import html
from tieeval.records.results import AsDict, MetricName, find_row, metric_list
from tieeval.records.run_labels import RunLabelled
from tieeval.records.whatif import WhatIf

EXACT_RANDOMIZATION_MAX_N = 20  # 2**20 sign vectors: about 8 MB and a few milliseconds


@dataclass(frozen=True)
class PairedResult(AsDict):
    """Paired comparison of method A and method B on the same ``n`` instances.

    ``a`` and ``b`` are the two means, ``difference`` the mean of ``b - a`` (positive:
    B is higher). ``difference_std`` is the standard deviation of ``difference`` under
    random tie-breaking, None without variances. ``statistic`` is the paired t,
    ``p_value_t`` its two-sided p-value and ``ci_low`` / ``ci_high`` the t-based
    ``confidence`` interval of the mean difference; all four are None when ``n < 2``.
    ``p_value_randomization`` is the two-sided sign-flip p-value (None when ``n < 2``),
    exact over all ``2**n`` sign vectors when ``randomization_exact``, else Monte Carlo.
    """

    n: int
    a: float
    b: float
    difference: float
    difference_std: float | None
    p_value_t: float | None
    p_value_randomization: float | None
    ci_low: float | None
    ci_high: float | None
    statistic: float | None
    confidence: float
    randomization_exact: bool


# The keys of one column's comparison, in JSON order.
COMPARISON_KEYS = ("a", "b", "difference", "difference_std", "p_value_t",
                   "p_value_randomization", "ci_low", "ci_high")


# ---------------------------------------------------------------------------------------
# paired comparisons of two runs

def winner_of(difference: float) -> str:
    """``'B'`` when ``B - A > 0``, ``'A'`` when it is < 0, ``'tie'`` when it is 0."""
    return "B" if difference > 0 else "A" if difference < 0 else "tie"


_VERB = {"B": "wins", "A": "loses", "tie": "ties"}


def verdict_text(original_winner: str, tie_aware_winner: str) -> str:
    """``'B wins under original, loses under tie-aware'`` (or ``... under both ...``).

    >>> verdict_text("B", "A")
    'B wins under original, loses under tie-aware'
    >>> verdict_text("A", "A")
    'B loses under both original and tie-aware'
    """
    if original_winner == tie_aware_winner:
        return f"B {_VERB[original_winner]} under both original and tie-aware"
    return (f"B {_VERB[original_winner]} under original, {_VERB[tie_aware_winner]} under "
            "tie-aware")


@dataclass(frozen=True)
class ColumnComparison(PairedResult):
    """One column's paired comparison: a :class:`~tieeval.analysis.stats.PairedResult` that names
    its winner; its JSON holds the fields of :data:`COMPARISON_KEYS`, the winner (the sign
    of the mean difference) and whether the difference is significant."""

    @classmethod
    def from_paired(cls, r: PairedResult) -> "ColumnComparison":
        return cls(**asdict(r))

    @property
    def winner(self) -> str:
        """The sign of the mean difference: ``'B'``, ``'A'`` or ``'tie'`` (the JSON
        contract's ``winner``), significant or not."""
        return winner_of(self.difference)

    @property
    def significant(self) -> bool:
        """Both paired tests reject "no difference" at level ``1 - confidence``.

        Requiring both is the cautious reading: the sign-flip test orders sign vectors as
        ``|t|`` does but needs no normality, and on few instances it cannot reach small
        p-values (at least ``2 / 2**n``) where the t-test of a constant difference gives
        ``p = 0``. Without a p-value (one instance) nothing is significant.
        """
        return is_significant(self.p_value_t, self.p_value_randomization, self.confidence,
                              self.difference)

    @property
    def significant_winner(self) -> str | None:
        """``'A'`` or ``'B'`` when the difference is significant, else None."""
        return self.winner if self.significant else None

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in COMPARISON_KEYS}
        out["winner"] = self.winner
        out["significant"] = self.significant
        return out


def is_significant(p_value_t: float | None, p_value_randomization: float | None,
                   confidence: float, difference: float = 1.0) -> bool:
    """``p < 1 - confidence`` for both the t-test and the sign-flip test (two-sided), and a
    non-zero difference.

    >>> is_significant(0.01, 0.02, 0.95), is_significant(0.01, 0.06, 0.95)
    (True, False)
    >>> is_significant(None, None, 0.95)
    False
    """
    if difference == 0 or p_value_t is None or p_value_randomization is None:
        return False
    alpha = 1.0 - confidence
    return p_value_t < alpha and p_value_randomization < alpha


@dataclass(frozen=True)
class DiffRow(MetricName):
    """One metric: B versus A under the tie-aware column and under the original column."""

    metric: str
    k: int | None
    tie_aware: ColumnComparison
    original: ColumnComparison
    gamma: float | None = None
    instances: int | None = None  # instances paired (labelled runs skip undefined ones)
    labelled: bool = False

    @property
    def winner_changed(self) -> bool:
        return self.tie_aware.winner != self.original.winner

    @property
    def verdict(self) -> str:
        return verdict_text(self.original.winner, self.tie_aware.winner)

    @property
    def significance_changed(self) -> bool:
        """The columns reach different conclusions at the chosen confidence (a significant
        winner under one, another or none under the other)."""
        return self.tie_aware.significant_winner != self.original.significant_winner

    def to_dict(self) -> dict[str, Any]:
        """``metric``, ``k``, the tie-aware comparison flat, ``original`` nested, then
        ``winner_changed`` and ``verdict``."""
        out: dict[str, Any] = {"metric": self.metric, "k": self.k}
        if self.labelled:  # labelled runs: gamma, and the instances actually paired
            out.update(gamma=self.gamma, instances=self.instances)
        out.update(self.tie_aware.to_dict())
        out.update(original=self.original.to_dict(), winner_changed=self.winner_changed,
                   verdict=self.verdict)
        return out


@dataclass
class DiffSide(RunLabelled):
    """What identifies one compared run."""

    path: str
    run_labels: dict[str, str]
    dtype: str
    instances: int
    original_rule: str = "argsort"  # the rule that produced its Original values

    @property
    def name(self) -> str:
        return self.run_labels.get("method") or self.path

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "method": self.run_labels.get("method"),
                "labels": dict(self.run_labels), "dtype": self.dtype, "instances": self.instances,
                "original_rule": self.original_rule}


@dataclass
class DiffResult:
    """B versus A on the same instances, one :class:`DiffRow` per metric."""

    a: DiffSide
    b: DiffSide
    alignment: str
    instances: int
    rows: list[DiffRow]
    permutations: int
    seed: int | None
    confidence: float
    what_if: WhatIf = field(default_factory=WhatIf)

    def __repr__(self) -> str:
        # the dataclass repr spells out every paired test of every row
        return (f"DiffResult(a={self.a.path!r}, b={self.b.path!r}, "
                f"instances={self.instances}, metrics=[{metric_list(self.rows)}])")

    def _repr_html_(self) -> str | None:
        return html("diff", self)

    @property
    def randomization_exact(self) -> bool:
        return self.instances <= EXACT_RANDOMIZATION_MAX_N

    def row(self, label: str) -> DiffRow:
        return find_row(self.rows, label)

    @property
    def original_rules(self) -> list[str]:
        """The rules of A's and B's Original columns, once each (one when they agree)."""
        return list(dict.fromkeys((self.a.original_rule, self.b.original_rule)))

    def to_dict(self) -> dict[str, Any]:
        # ``original_rule``: the rule of both runs' Original (each side names its own too)
        rules = self.original_rules
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "alignment": self.alignment,
                "instances": self.instances, "confidence": self.confidence,
                "original_rule": rules[0] if len(rules) == 1 else None,
                "randomization": {"exact": self.randomization_exact,
                                  "permutations": (None if self.randomization_exact
                                                   else self.permutations),
                                  "seed": None if self.randomization_exact else self.seed},
                "what_if": self.what_if.to_dict() if self.what_if.active else None,
                "metrics": [r.to_dict() for r in self.rows]}


# ---------------------------------------------------------------------------------------
# rankings of several methods (Table 5 reading)

@dataclass(frozen=True)
class RankEntry:
    """A method's place in one setting and metric: tie-aware and original value and rank.

    ``change = original_rank - tie_aware_rank``: positive when the method moves up once
    ties are handled fairly.
    """

    method: str
    tie_aware: float
    tie_aware_std: float
    original: float
    tie_aware_rank: int
    original_rank: int
    change: int
    seeds: int
    original_rule: str | None = None  # the rule behind ``original`` (argsort, given, ...)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "tie_aware": self.tie_aware,
                "tie_aware_std": self.tie_aware_std, "original": self.original,
                "original_rule": self.original_rule,
                "tie_aware_rank": self.tie_aware_rank, "original_rank": self.original_rank,
                "change": self.change, "seeds": self.seeds}


@dataclass(frozen=True)
class Ranking(MetricName):
    """Methods of one dataset and task ranked by one metric (best first, tie-aware).

    ``gamma`` is the penalty of a signed metric's row (one ranking per ``--gamma``), None
    otherwise; ``labelled`` says the runs are labelled, whose JSON carries ``gamma`` as
    their metric rows do.
    """

    dataset: str | None
    task: str | None
    metric: str
    k: int | None
    entries: tuple[RankEntry, ...]
    gamma: float | None = None
    labelled: bool = False

    @property
    def changed(self) -> bool:
        """Whether any method's rank differs between original and tie-aware."""
        return any(e.change != 0 for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "task": self.task, "metric": self.metric,
                     "k": self.k}
        if self.labelled:
            out["gamma"] = self.gamma
        out.update(changed=self.changed, methods=[e.to_dict() for e in self.entries])
        return out


@dataclass
class RankResult:
    """The rankings of ``tieeval rank``, under ``what_if`` when one was applied."""

    rankings: list[Ranking]
    what_if: WhatIf | None = None
