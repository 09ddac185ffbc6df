"""The one registry of metric names: what ``--metric`` accepts, its ``--help`` and its errors.

Every metric tieeval computes is listed once here, whatever protocol it is evaluated under:
the single held-out positive (:mod:`tieeval.kernels.closed_forms`, sort-free closed forms) or
labelled rows with many positives, graded gains and explicit negatives
(:mod:`tieeval.kernels.tie_blocks`). ``Metric.parse`` and ``parse_rel_metric`` both look
names up here, so help text, error messages and accepted spellings cannot drift apart.

Names are matched case-insensitively with ``-`` and ``_`` ignored: ``V-AUC``, ``vauc`` and
``v_auc`` are one metric, and it prints back as its canonical name ``V-AUC``. trec_eval's and
ir_measures' spellings (``ndcg_cut_10``, ``P.5,10``, ``recip_rank``, ``nDCG@10``) are
translated to these names by :mod:`tieeval.metrics.spellings`.
"""


from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tieeval.errors import ParameterError

CUTOFFS = ("required", "optional", "none", "level")
AGGREGATES = ("mean", "sum", "geometric")
MIN_GEO_MEAN = 1e-5
"""The floor of a per-row value before its logarithm in a geometric mean (trec_eval's
``MIN_GEO_MEAN``, m_gm_map.c), so a zero AP does not send the mean to 0."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric: canonical name, cutoff rule, the options that apply, a description.

    ``cutoff`` is ``"required"`` (``HR@10``), ``"optional"`` (``MRR`` is untruncated,
    ``MRR@10`` truncated), ``"none"`` (V-AUC ranks whole lists) or ``"level"`` (a required
    recall level in [0, 1] instead of a rank cutoff: ``IPrec@0.1``). ``options`` names the
    :class:`~tieeval.metrics.options.RelMetric` options that change its value (``gain``,
    ``discount``, ``alpha``, ``gamma``, ``ap_norm``). ``single_positive`` marks the metrics
    with sort-free closed forms for one held-out positive (HR@K, NDCG@K, MRR).
    ``aggregate`` is how per-row values become the dataset figure: ``"mean"`` (most
    metrics), ``"sum"`` (the counts NumRet, NumRel, NumRelRet, NumQ, as trec_eval prints
    them) or ``"geometric"`` (GMAP: ``exp(mean(log(max(x, 1e-5))))``).
    """

    name: str
    cutoff: str
    description: str
    aliases: tuple = ()
    options: frozenset = frozenset()
    single_positive: bool = False
    aggregate: str = "mean"

    @property
    def takes_k(self) -> bool:
        """True when a cutoff is required (``HR@10``)."""
        return self.cutoff == "required"

    @property
    def takes_level(self) -> bool:
        """True when the parameter is a recall level in [0, 1] (``IPrec@0.1``)."""
        return self.cutoff == "level"

    @property
    def signed(self) -> bool:
        """True for the sign-aware metrics, whose value depends on gamma."""
        return "gamma" in self.options


def key(name: str) -> str:
    """The lookup key of a name: upper case, ``-`` and ``_`` removed."""
    return name.upper().replace("-", "").replace("_", "")


class Registry(dict):
    """``{key: MetricSpec}`` that also answers to any spelling of a name or alias."""

    def __getitem__(self, name):
        return super().__getitem__(key(name))

    def get(self, name, default=None):
        return super().get(key(name), default) if isinstance(name, str) else default

    def __contains__(self, name):
        return isinstance(name, str) and super().__contains__(key(name))


REGISTRY: Registry = Registry()


def register(spec: MetricSpec) -> MetricSpec:
    if spec.cutoff not in CUTOFFS:
        raise ValueError(f"cutoff must be one of {CUTOFFS}")
    if spec.aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}")
    for name in (spec.name, *spec.aliases):
        dict.__setitem__(REGISTRY, key(name), spec)
    return spec


_DCG = frozenset({"gain", "discount", "alpha", "base"})
_SDCG = frozenset({"gamma", "discount", "alpha", "base"})

register(MetricSpec(
    "HR", "required",
    "hit ratio: the probability that at least one relevant item (label > 0) is in the top K; "
    "a probability, not a fraction of the relevant items", ("HIT", "HITRATE"),
    single_positive=True))
register(MetricSpec(
    "Recall", "required",
    "relevant items in the top K divided by R, the row's number of relevant items", ("R",)))
register(MetricSpec(
    "Precision", "required",
    "relevant items in the top K divided by K (TREC P@K, also when K > n)", ("P",)))
register(MetricSpec(
    "DCG", "optional", "discounted cumulative gain of the graded relevance max(label, 0)",
    options=_DCG))
register(MetricSpec(
    "NDCG", "optional",
    "DCG divided by the ideal DCG of the row's own labels (zero-padded); one positive: "
    "1/log2(rank+1) within the top K", options=_DCG, single_positive=True))
register(MetricSpec(
    "MRR", "optional",
    "reciprocal rank of the first relevant item (0 beyond K); MRR is the mean", ("RR",),
    single_positive=True))
register(MetricSpec(
    "MAP", "optional",
    "average precision over the top K (full list without K), divided by R or, with "
    "ap_norm=min, by min(K, R); MAP is the mean", ("AP",), frozenset({"ap_norm"})))
register(MetricSpec(
    "SHR", "required",
    "signed hit ratio: [a positive in the top K] - gamma [a negative in the top K]",
    options=frozenset({"gamma"})))
register(MetricSpec(
    "SRecall", "required", "signed recall: (positives - gamma negatives in the top K) / R",
    options=frozenset({"gamma"})))
register(MetricSpec(
    "SDCG", "optional", "signed DCG: gain +1 for positives, -gamma for negatives, 0 otherwise",
    options=_SDCG))
register(MetricSpec(
    "SNDCG", "optional",
    "signed DCG divided by ISDCG = D[min(K, R)], the DCG of positives first", options=_SDCG))
register(MetricSpec(
    "V-AUC", "none",
    "valence AUC: share of (positive, negative) pairs ranked positive first; tie-aware "
    "counts a tied pair 1/2, strict (= the Last column) counts it 0", ("VAUC",)))
register(MetricSpec(
    "Success", "required",
    "trec_eval success@K: 1 when a relevant item is in the top K, else 0 (the value of HR@K "
    "under trec_eval's name)"))
register(MetricSpec(
    "Rprec", "none",
    "R-precision: relevant items in the top R divided by R, R the row's number of relevant "
    "items (trec_eval Rprec)"))
register(MetricSpec(
    "Bpref", "none",
    "binary preference (trec_eval bpref): judged items only; each retrieved relevant item "
    "scores 1 - min(judged non-relevant above it, R) / min(judged non-relevant, R); "
    "the sum is divided by R"))
register(MetricSpec(
    "Judged", "required",
    "share of the top K that is judged (ir_measures Judged@K; divides by K)"))
register(MetricSpec(
    "NumRet", "none", "number of retrieved items (trec_eval num_ret); the dataset figure is "
    "the sum over rows", aggregate="sum"))
register(MetricSpec(
    "NumRel", "none", "number of relevant items, retrieved or not (trec_eval num_rel); the "
    "dataset figure is the sum over rows", aggregate="sum"))
register(MetricSpec(
    "NumRelRet", "none", "number of relevant items retrieved (trec_eval num_rel_ret); the "
    "dataset figure is the sum over rows", aggregate="sum"))
register(MetricSpec(
    "NumQ", "none", "number of rows (queries) evaluated (trec_eval num_q): 1 per row, "
    "summed", aggregate="sum"))
register(MetricSpec(
    "GMAP", "none",
    "geometric mean over rows of average precision, exp(mean(log(max(AP, 1e-5)))) "
    "(trec_eval gm_map); no closed-form tie-aware value", ("gm_map",),
    aggregate="geometric"))
register(MetricSpec(
    "ERR", "required",
    "expected reciprocal rank (Chapelle et al. 2009, gdeval): stop probability "
    "(2^g - 1) / 2^g_max for grade g, g_max = max(4, the largest grade of the "
    "judgements); 4 is gdeval's, so judgements up to 4 give gdeval's and ir_measures' ERR"))
register(MetricSpec(
    "IPrec", "level",
    "interpolated precision at recall level x in [0, 1] (trec_eval iprec_at_recall_x): the "
    "best precision at any rank holding at least round(x R) relevant items", ("iprec_at_recall",)))


def metric_names() -> list[str]:
    """Canonical names in registry order (for help text and error messages)."""
    return list(dict.fromkeys(spec.name for spec in REGISTRY.values()))


def signed_names() -> list[str]:
    """The metrics whose value depends on gamma (SHR, SRecall, SDCG, SNDCG)."""
    return [name for name in metric_names() if REGISTRY[name].signed]


def aliases() -> list[str]:
    return [a for spec in dict.fromkeys(REGISTRY.values()) for a in spec.aliases]


def names_text() -> str:
    """``"HR, Recall, ... (aliases: HIT, ...)"``: what error messages offer (with the other
    tools' spellings: :func:`tieeval.metrics.spellings.choices_text`)."""
    return ", ".join(metric_names()) + " (aliases: " + ", ".join(aliases()) + ")"


def lookup(name: object, text: object = None, choices=names_text) -> MetricSpec:
    """The spec of ``name`` (any spelling), or a ParameterError listing every name
    (``choices()``: the text that lists them)."""
    spec = REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        where = f" in {text!r}" if text is not None and text != name else ""
        raise ParameterError(f"unknown metric {name!r}{where}; choose from {choices()}")
    return spec


MAX_K = 2 ** 62


def check_k(k: object, name: str = "K") -> int:
    """Validate a cutoff: an int >= 1 (bool and non-integral values are refused); ``name``
    is what the messages call it."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"{name} must be a whole number >= 1, got {k!r}")
    if k < 1:
        raise ParameterError(f"{name} must be >= 1, got {k}")
    if k > MAX_K:
        # Cutoffs are int64 in the kernels; any K past a row's length acts as its length.
        raise ParameterError(f"{name} must be at most 2**62 = {MAX_K}, got {k}")
    return int(k)


def parse_gamma(text: str) -> float:
    """A signed metric's penalty written as text: a finite number >= 0."""
    try:
        gamma = float(text)
    except ValueError:
        gamma = math.nan
    if not math.isfinite(gamma) or gamma < 0:
        raise ParameterError(f"gamma must be a finite number >= 0, got {text!r}")
    return gamma


def check_level(x: object) -> float:
    """Validate a recall level: a number in [0, 1] (bool refused)."""
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            raise ParameterError(f"recall level must be a number in [0, 1], got {x!r}") from None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                               np.floating)):
        raise ParameterError(f"recall level must be a number in [0, 1], got {x!r}")
    level = float(x)
    if not 0.0 <= level <= 1.0:  # NaN fails too
        raise ParameterError(f"recall level must be a number in [0, 1], got {x!r}")
    return level


def parameter_text(k: int | float | None) -> str:
    """How a metric's parameter prints after ``@``: ``10``, ``0.1``, and ``1`` for 1.0."""
    if isinstance(k, float):
        text = repr(k)
        return text[:-2] if text.endswith(".0") else text
    return str(k)


def parse_parameter(spec: MetricSpec, text: str, whole: str) -> int | float:
    """The text after ``@`` of ``whole``: a cutoff, or a recall level for level metrics."""
    if spec.takes_level:
        return check_level(text)
    try:
        return int(text)
    except ValueError:
        raise ParameterError(f"cutoff in {whole!r} must be a whole number >= 1") from None


def check_cutoff(spec: MetricSpec, k) -> int | float | None:
    """``k`` validated against the spec's cutoff rule (None where the metric allows it);
    a level metric's parameter is a float in [0, 1]."""
    if spec.takes_level:
        if k is None:
            raise ParameterError(f"{spec.name} needs a recall level, e.g. {spec.name}@0.1")
        return check_level(k)
    if spec.cutoff == "required" and k is None:
        raise ParameterError(f"{spec.name} needs a cutoff, e.g. {spec.name}@10")
    if spec.cutoff == "none" and k is not None:
        raise ParameterError(f"{spec.name} takes no cutoff (got {spec.name}@{k})")
    return None if k is None else check_k(k)
