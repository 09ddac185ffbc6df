"""Plain result records: what a run measured, before any formatting.

Every writer (table, JSON, CSV, Markdown) consumes these records; :meth:`RunResult.to_dict`
is the JSON contract. Floats are kept unrounded; ratios and frequencies are fractions.
"""

from __future__ import annotations

import importlib
import platform
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from tieeval.records.display import html
from tieeval.records.run_labels import LABEL_KEYS, RunLabelled

# The rules the Original column can rank by (``--original``; see tieeval.kernels.original).
# A run records its rule in ``original_rule`` only when it is not its dump's default:
# ``argsort`` (``trec`` for TREC runs), so the absence of the key means the default.
ORIGINAL_RULES = ("argsort", "stable", "reverse-stable", "trec", "topk", "topk-each", "given")
ORIGINAL_RULE_TEXT = {
    "argsort": "np.argsort(scores * -1)",
    "stable": "a stable descending sort, ties by ascending position "
              "(np.argsort(-scores, kind='stable'))",
    "reverse-stable": "a stable descending sort, ties by descending position",
    "trec": "trec_eval's order (score, then docno, descending)",
    "topk": "torch.topk(scores, K) on the CPU (K: the largest cutoff); GPU kernels may "
            "order ties differently",
    "topk-each": "torch.topk(scores, K) on the CPU for each metric's own K (torchmetrics' "
                 "rule); GPU kernels may order ties differently",
    "given": "the ranking the dump carries (its 'ranking' field)",
}


def relative_change(before: float | None, after: float | None) -> float | None:
    """``(after - before) / before`` as a fraction, or None when ``before`` is 0 (or
    either is None: a column not computed)."""
    if before is None or after is None or before == 0:
        return None
    return (after - before) / before


class AsDict:
    """A dataclass record whose JSON form is its fields, in order."""

    def to_dict(self: Any) -> dict[str, Any]:
        return asdict(self)


class MetricName:
    """How a row names its metric: ``label`` (``NDCG@10``) and ``display`` (with gamma
    for signed metrics, ``SNDCG@20 γ=0.5``). Needs ``metric``, ``k`` and ``gamma``."""

    # set by the dataclasses that use it (not fields here: MetricName is no dataclass)
    metric: str
    k: int | float | None
    gamma: float | None

    @property
    def label(self) -> str:
        if self.k is None:
            return self.metric
        k = self.k
        # a recall level (IPrec@0.1) prints as the metric parses it; 1.0 prints as 1
        text = repr(k)[:-2] if isinstance(k, float) and repr(k).endswith(".0") else str(k)
        return f"{self.metric}@{text}"

    @property
    def display(self) -> str:
        """The label with gamma for signed metrics, for tables."""
        return self.label if self.gamma is None else f"{self.label} γ={self.gamma:g}"


@dataclass
class MetricRow(MetricName):
    """One metric at one cutoff under the four columns, averaged over the instances.

    Rows of labelled runs (many positives, graded or signed relevance, TREC) also carry
    ``gamma`` (signed metrics; None otherwise) and ``skipped`` (rows where the metric is
    undefined or outside the subset): :attr:`labelled` is then true, the JSON row gains
    ``gamma``, ``instances`` and ``skipped``, and a mean may be None when no row was
    evaluated. ``tie_aware_std`` is None where no exact variance exists (ERR, IPrec, GMAP).

    ``aggregate`` is None for a mean (most metrics), ``"sum"`` for trec_eval's counts
    (NumRet, NumRel, NumRelRet, NumQ) and ``"geometric"`` for GMAP and GBpref;
    ``tie_aware_reason`` says why ``tie_aware`` is None when no exact value exists (a
    computation beyond its documented work limit: IPrec, ERR, GMAP, InfAP, ...). Both JSON keys
    appear only when set, so the rows of the other metrics keep their shape. ``k`` of a
    level metric (IPrec) is its recall level, a float.
    """

    metric: str
    k: int | float | None
    original: float | None
    first: float | None
    last: float | None
    tie_aware: float | None
    tie_aware_std: float | None
    instances: int = 0
    gamma: float | None = None
    skipped: int | None = None
    aggregate: str | None = None
    tie_aware_reason: str | None = None

    @property
    def labelled(self) -> bool:
        """True for a row of a labelled run (it has a ``skipped`` count)."""
        return self.skipped is not None

    @property
    def change_original_to_tie_aware(self) -> float | None:
        return relative_change(self.original, self.tie_aware)

    @property
    def change_first_to_last(self) -> float | None:
        return relative_change(self.first, self.last)

    def _columns(self) -> dict[str, Any]:
        return {"original": self.original, "first": self.first, "last": self.last,
                "tie_aware": self.tie_aware, "tie_aware_std": self.tie_aware_std,
                "change_original_to_tie_aware": self.change_original_to_tie_aware,
                "change_first_to_last": self.change_first_to_last}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metric": self.metric, "k": self.k}
        if self.labelled:
            out["gamma"] = self.gamma
        out.update(self._columns())
        if self.labelled:
            out["instances"] = self.instances
            out["skipped"] = self.skipped
        optional = (("aggregate", self.aggregate), ("tie_aware_reason", self.tie_aware_reason))
        out.update((key, value) for key, value in optional if value is not None)
        return out


class _Labelled(Protocol):
    """A row that names its metric (``NDCG@10``)."""

    @property
    def label(self) -> str: ...


_Row = TypeVar("_Row", bound=_Labelled)


def label_rows(rows: Iterable[_Row], label: str, gamma: float | None = None) -> list[_Row]:
    """The rows labelled ``label`` (``"NDCG@10"``-style, case-insensitive): one per gamma
    for a signed metric of a labelled run, else one; with ``gamma``, only that gamma's."""
    out = [row for row in rows if row.label.upper() == label.upper()]
    if gamma is not None:
        out = [row for row in out if getattr(row, "gamma", None) == gamma]
    return out


def gammas_text(rows: Iterable[Any]) -> str:
    """``gammas: 0.0, 0.5``: the gammas ``rows`` were evaluated at, for messages."""
    have = sorted({row.gamma for row in rows if getattr(row, "gamma", None) is not None})
    return f"gammas: {', '.join(map(repr, have)) or 'none'}"


def find_row(rows: Iterable[_Row], label: str) -> _Row:
    """The first row labelled ``label`` (case-insensitive); KeyError when there is none."""
    found = label_rows(rows, label)
    if not found:
        raise KeyError(label)
    return found[0]


@dataclass
class TieStats:
    """How tied the scores are (means over instances; frequencies as fractions).

    ``top_tie_size``: mean number of candidates sharing the row maximum (m_x);
    ``top_tie_ratio``: mean m_x / candidates; ``top_tie_frequency``: share of rows with
    m_x > 1; ``positive_tie_size``: mean b; ``positive_tie_frequency``: share with b > 1;
    ``tie_decided``: per K, the share of rows whose HR@K differs between first and last.
    """

    top_tie_size: float
    top_tie_ratio: float
    top_tie_frequency: float
    positive_tie_size: float
    positive_tie_frequency: float
    tie_decided: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tie_decided"] = {str(k): v for k, v in self.tie_decided.items()}
        return out


@dataclass
class RunResult(RunLabelled):
    """Everything measured on one score dump. ``run_labels`` (``labels``, its older name;
    the JSON key ``"labels"``) say which method, dataset, task and seed it is."""

    path: str
    instances: int
    candidates_min: int
    candidates_max: int
    dtype: str
    metrics: list[MetricRow]
    ties: TieStats
    run_labels: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    relevance: dict[str, Any] | None = None
    data_warnings: list[dict[str, Any]] | None = None
    what_if: Any = None  # a tieeval.records.whatif.WhatIf when measured under one
    original_rule: str | None = None  # set only when not the dump's default rule
    # a TREC run under trec_eval -J: the queries left without a ranked document and their
    # R (trec_eval prints -nan where it divides 0 by 0 there); not part of the JSON
    zero_division: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def effective_original_rule(self) -> str:
        """The rule that produced the Original column, named even when it is the dump's
        default: ``original_rule``, else ``trec`` for a TREC run, else ``argsort``."""
        if self.original_rule is not None:
            return self.original_rule
        return "trec" if (self.relevance or {}).get("source") == "trec" else "argsort"

    @property
    def labelled(self) -> bool:
        """True when the run went through the general kernel: labelled rows, TREC runs,
        or metrics and options beyond HR@K / NDCG@K / MRR (``relevance`` is then set)."""
        return self.relevance is not None

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
            n = rel["instances_in_subset"]
            parts.append(f"Both P&N subset: {n} instance{'' if n == 1 else 's'}")
        if rel["source"] == "trec":
            parts.append("Original = trec_eval's order (score, then docno, descending)")
            queries = rel.get("queries")
            if queries:
                parts.append(query_set_note(queries))
        return "; " + "; ".join(parts)

    def metric(self, label: str) -> MetricRow:
        """The row for ``"NDCG@10"``-style labels (case-insensitive)."""
        return find_row(self.metrics, label)

    def __repr__(self) -> str:
        # the dataclass repr lists every row and statistic (thousands of characters):
        # say which run it is and what it holds; the figures are in its tables
        return (f"RunResult(path={self.path!r}, instances={self.instances}, "
                f"metrics=[{metric_list(self.metrics)}])")

    def _repr_html_(self) -> str | None:
        return html("run", self)

    @property
    def candidates(self) -> dict[str, int]:
        """``{"min": ..., "max": ...}`` candidates per instance, as in the JSON contract."""
        return {"min": self.candidates_min, "max": self.candidates_max}

    def to_dict(self) -> dict[str, Any]:
        # labels always carries method, dataset, task and seed (null when unknown), then
        # any other metadata the run was given, so the keys do not depend on the input.
        labels = {k: self.run_labels.get(k) for k in LABEL_KEYS}
        labels.update((k, v) for k, v in self.run_labels.items() if k not in labels)
        out = {"path": self.path, "instances": self.instances,
               "candidates": self.candidates,
               "dtype": self.dtype, "metrics": [m.to_dict() for m in self.metrics],
               "ties": self.ties.to_dict(), "labels": labels}
        what_if = None if self.what_if is None else self.what_if.to_dict()
        out.update((key, value) for key, value in (
            ("relevance", self.relevance), ("data_warnings", self.data_warnings),
            ("what_if", what_if), ("original_rule", self.original_rule)) if value is not None)
        return out


def metric_list(rows: Iterable[MetricName], shown: int = 8) -> str:
    """``HR@1, NDCG@10, ...``: the first ``shown`` row names of a short repr."""
    names = list(dict.fromkeys(row.display for row in rows))
    return ", ".join(names[:shown] + (["..."] if len(names) > shown else []))


def original_rule_of(runs: Iterable[RunResult]) -> str:
    """The rule(s) behind the Original figures of ``runs`` (seeds averaged into one
    figure, say): their effective rules, once each, joined by ``; ``."""
    return "; ".join(dict.fromkeys(r.effective_original_rule for r in runs))


def query_set_note(queries: dict[str, Any]) -> str:
    """A TREC run's query set in a few words: ``98 queries averaged (100 in run and qrels,
    2 without a relevant document skipped; 3 run-only ignored)``."""
    n = queries["averaged"]
    inside = [f"{queries['both']} in run and qrels"]
    if queries.get("qrels_only_zero"):
        inside.append(f"{queries['qrels_only_zero']} qrels-only counted as 0")
    if queries["no_relevant"]:
        inside.append(f"{queries['no_relevant']} without a relevant document "
                      + ("skipped" if queries["no_relevant_policy"] == "skip"
                         else "counted as 0"))
    left = []
    if queries["run_only_ignored"]:
        left.append(f"{queries['run_only_ignored']} run-only ignored")
    if queries.get("qrels_only_not_evaluated"):
        left.append(f"{queries['qrels_only_not_evaluated']} qrels-only not evaluated "
                    "(--missing-queries zero)")
    return (f"{n} {'query' if n == 1 else 'queries'} averaged ({', '.join(inside)})"
            + (f"; {', '.join(left)}" if left else ""))


def simd_level() -> str:
    """The highest SIMD extension numpy dispatches to on this CPU (sort kernels depend on it)."""
    # numpy's private module (no type stubs): numpy._core from 2.0, numpy.core before
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = importlib.import_module(module).__cpu_features__
            break
        except (ImportError, AttributeError):  # pragma: no cover - older numpy layout
            continue
    else:
        return "unknown"
    for name in ("AVX512_SPR", "AVX512_ICL", "AVX512_SKX", "AVX512F", "AVX2", "SSE42",
                 "SVE", "ASIMD", "NEON", "VSX4", "VSX3", "VSX2", "VX"):
        if features.get(name):
            return name
    return "baseline"


def environment() -> dict[str, Any]:
    """numpy version, its SIMD level and the machine: what the 'original' column depends on."""
    from tieeval._version import __version__
    return {"tieeval_version": __version__, "numpy_version": np.__version__,
            "numpy_simd": simd_level(), "machine": platform.machine()}


class _Record(Protocol):
    """A result record with its JSON form (:class:`tieeval.records.groups.GroupResult`)."""

    def to_dict(self) -> dict[str, Any]: ...


def report_dict(runs: list[RunResult], groups: list[_Record] | None = None,
                what_if: Any = None) -> dict[str, Any]:
    """The JSON document for a list of runs (the single-run contract).

    With ``groups`` (:class:`~tieeval.analysis.groups.GroupResult` records) a ``groups`` list of
    seed-averaged figures follows ``runs``; with an active ``what_if`` a ``what_if`` key
    precedes them (every run carries one too).
    """
    out = environment()
    if what_if is not None and what_if.active:
        out["what_if"] = what_if.to_dict()
    out["runs"] = [r.to_dict() for r in runs]
    if groups is not None:
        out["groups"] = [g.to_dict() for g in groups]
    return out
