"""The records of ``tieeval audit``: a published :class:`Claim`, the :class:`Verdict` on it,
and the :class:`AuditItem` pairing a claim with the run group it was judged against.

Reading claims and judging them is :mod:`tieeval.analysis.audit` (whose
:func:`~tieeval.analysis.audit.judge_claim` says what each verdict means); rendering the
items is :mod:`tieeval.report.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tieeval.records.results import AsDict, MetricName

VERDICTS = ("impossible", "tie-break only", "consistent")
DETAILS = ("above first", "below last", "above tie-aware", "below tie-aware",
           "matches tie-aware")


@dataclass(frozen=True)
class Verdict(AsDict):
    """How a published value compares with what the dumps allow.

    ``verdict`` is one of :data:`VERDICTS`; ``detail`` says where the value sits (one of
    :data:`DETAILS`). ``tolerance`` is the rounding tolerance used, ``spread`` the band
    ``max(2 * tie_aware_std, tolerance)`` around ``tie_aware``. ``matches_original`` is
    whether the value equals ``original`` within ``tolerance`` (None without ``original``):
    a claim that matches ``original`` but is 'tie-break only' is what the codebase's own
    tie-breaking printed.
    """

    verdict: str
    detail: str
    value: float
    tolerance: float
    spread: float
    first: float
    last: float
    tie_aware: float
    tie_aware_std: float
    original: float | None
    matches_original: bool | None


@dataclass(frozen=True)
class Claim(MetricName, AsDict):
    """One published number: which method, where, which metric, and the value as printed.

    ``metric`` is the canonical registry name (``"NDCG"``), ``k`` the cutoff (None for
    MRR), ``task`` None when the file leaves it empty. ``value`` is the fraction (a
    trailing ``%`` divided by 100), ``text`` the value exactly as written, ``tolerance``
    half a unit of its last printed digit, ``line`` its line in the file. ``gamma`` is the
    penalty of a signed metric (SHR, SRecall, SDCG, SNDCG) the value was printed for, None
    when the file does not say.
    """

    method: str
    dataset: str
    task: str | None
    metric: str
    k: int | None
    value: float
    text: str
    tolerance: float
    line: int
    gamma: float | None = None


UNMATCHED = "unmatched"
FLAGGED = ("impossible", "tie-break only")


@dataclass(frozen=True)
class AuditItem:
    """One claim and how it fared: the verdict against its matched run group, or no match.

    ``run_labels`` (``labels``, its older name) are the matched group's run labels,
    ``seeds`` how many runs were averaged and ``paths`` their files; all empty when the
    claim matched no run (``verdict`` None).
    ``gamma`` is the gamma of the row the claim was judged against (the claim's own, or
    the only one evaluated; None for unsigned metrics), ``labelled`` whether that row is a
    labelled run's, whose JSON carries ``gamma`` as its metric rows do.
    """

    claim: Claim
    verdict: Verdict | None
    run_labels: dict[str, Any] | None = None
    seeds: int = 0
    paths: tuple[str, ...] = ()
    gamma: float | None = None
    labelled: bool = False
    original_rule: str | None = None  # the rule behind the matched runs' Original

    @property
    def labels(self) -> dict[str, Any] | None:
        """The older name of :attr:`run_labels`."""
        return self.run_labels

    @property
    def has_gamma(self) -> bool:
        """Whether the JSON and CSV name a gamma: a labelled row, or a claim naming one."""
        return self.labelled or self.claim.gamma is not None

    @property
    def status(self) -> str:
        """The verdict name, or ``'unmatched'``."""
        return UNMATCHED if self.verdict is None else self.verdict.verdict

    @property
    def flagged(self) -> bool:
        """'impossible' or 'tie-break only'."""
        return self.status in FLAGGED

    def to_dict(self) -> dict[str, Any]:
        c = self.claim
        out = {"line": c.line, "method": c.method, "dataset": c.dataset, "task": c.task,
               "metric": c.metric, "k": c.k}
        if self.has_gamma:
            out["gamma"] = self.gamma
        out.update(value=c.value, text=c.text, verdict=self.status)
        v = self.verdict
        for key in ("detail", "tolerance", "spread", "last", "tie_aware", "tie_aware_std",
                    "first", "original", "matches_original"):
            out[key] = None if v is None else getattr(v, key)
        out.update(original_rule=self.original_rule, seeds=self.seeds, paths=list(self.paths))
        return out


@dataclass
class AuditResult:
    """Every claim of a claims file (``claims_path``) and how it fared."""

    items: list[AuditItem]
    claims_path: str

    @property
    def flagged(self) -> bool:
        """Whether a claim is 'impossible' or 'tie-break only'."""
        return any(i.flagged for i in self.items)
