"""Metric definitions with their options: :class:`RelMetric` (a registry metric with gain,
discount, short-list policy, AP normalisation or gamma) and :class:`RelOptions`, the
run-wide options of labelled dumps (``--gain``, ``--discount``, ``--gamma``, ``--both``...)
and their defaults, as docs/METRICS.md defines them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.metrics.registry import (
    REGISTRY,
    MetricSpec,
    check_cutoff,
    check_k,
    lookup,
    metric_names,
    parameter_text,
    parse_parameter,
)
from tieeval.metrics.registry import key as _key
from tieeval.metrics.spellings import METRIC_FORM, choices_text, translate, unknown_hint

DISCOUNTS = ("log2", "power", "news", "linear", "logb")
SHORT_LIST_POLICIES = ("pad", "truncate", "skip")
AP_NORMS = ("R", "min", "hits")
RECALL_NORMS = ("relevant", "min")
#: Precision@K's average: each row's hits over K (``"K"``), or ``"micro"``, every row's hits
#: over the sum of their min(K, R) (implicit's precision@K)
PRECISION_NORMS = ("K", "micro")
#: Which relevant items Precision, Recall's hits, MRR and MAP count: those of ``"any"`` score
#: (default), or only those scored > 0 (``"positive"``: torchmetrics zeroes the target where
#: preds <= 0); Recall still divides by every relevant item
RELEVANT_SCORES = ("any", "positive")
NAN_POLICIES = ("raise", "worst")
NO_RELEVANT_POLICIES = ("skip", "zero")
ORIGINAL_ORDERS = ("argsort", "stable", "reverse-stable", "given")

_DEFAULTS = {"gain": "linear", "discount": "log2", "alpha": 1.0, "base": 2.0, "gamma": 1.0,
             "short_list": "pad", "ap_norm": "R", "max_grade": None,
             "recall_norm": "relevant", "iprec_rounding": "trec_eval", "precision_norm": "K",
             "relevant_scores": "any"}
_OPTION_ORDER = tuple(_DEFAULTS)  # the order str() prints the options in


# ---------------------------------------------------------------------------------------
# Metric values and their registry


# The registry is shared with the single-positive metrics (tieeval.metrics.registry): one list of
# names drives --help, error messages and both parsers.
REL_REGISTRY = REGISTRY
rel_metric_names = metric_names  # canonical names in registry order


def _number(name: str, value: object, above_one: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 1 with ``above_one``: a log base); the message
    states the bound that applies, so a negative base is not told it must be >= 0."""
    bound = "> 1" if above_one else ">= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
        raise ParameterError(f"{name} must be a number {bound}, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or (x <= 1 if above_one else x < 0):
        raise ParameterError(f"{name} must be a finite number {bound}, got {value!r}")
    return x


_CHOICE_ALIASES = {
    "gain": {"linear": "linear", "lin": "linear", "exponential": "exponential",
             "exp": "exponential"},
    "discount": {d: d for d in DISCOUNTS},
    "short_list": {p: p for p in SHORT_LIST_POLICIES},
    "ap_norm": {"r": "R", "min": "min", "minkr": "min", "hits": "hits"},
    "recall_norm": {"relevant": "relevant", "r": "relevant", "min": "min", "minkr": "min"},
    "iprec_rounding": {"treceval": "trec_eval", "treceval10": "trec_eval",
                       "treceval9": "trec_eval9"},
    "precision_norm": {"k": "K", "micro": "micro"},
    "relevant_scores": {"any": "any", "positive": "positive"},
}


def _choice(name: str, value: object) -> str:
    table = _CHOICE_ALIASES[name]
    canon = table.get(_key(value).lower()) if isinstance(value, str) else None
    if canon is None:
        raise ParameterError(f"{name} must be one of {', '.join(sorted(set(table.values())))}; "
                             f"got {value!r}")
    return canon


def _applicable(spec: MetricSpec, k: int | float | None, discount: str) -> set[str]:
    """The options that change ``spec``'s value at parameter ``k`` with ``discount``
    (:class:`RelMetric` refuses another one set away from its default)."""
    allowed = set(spec.options)
    if spec.name == "ERR":
        allowed.add("max_grade")
    if k is not None and not spec.takes_level:
        allowed.add("short_list")
    else:
        allowed.discard("ap_norm")
    if discount != "power":
        allowed.discard("alpha")
    if discount != "logb":
        allowed.discard("base")
    return allowed


@dataclass(frozen=True)
class RelMetric:
    """A general metric as a value: ``RelMetric("NDCG", 10)`` is ``NDCG@10``.

    Fields (validated and canonicalised on construction; non-default options print back):

    * ``name``: a registry name or alias (``"AP"`` becomes ``"MAP"``, ``"RR"`` ``"MRR"``).
    * ``k``: the cutoff K (an int >= 1), or None for the whole list where allowed.
    * ``gain`` (DCG/NDCG): ``"linear"`` (``rel``) or ``"exponential"`` (``2**rel - 1``).
    * ``discount`` (DCG/NDCG/SDCG/SNDCG), weight of 1-based position ``r``:
      ``"log2"`` ``1/log2(r+1)`` (standard); ``"power"`` ``r**-alpha``; ``"news"``
      ``1/(1 + log2(r)**1.5)``; ``"linear"`` ``(K - r + 1)/K``; ``"logb"`` Järvelin &
      Kekäläinen's log base b, ``1/max(1, log_b(r))`` (no discount above rank b, then
      ``1/log_b(r)``). All are non-increasing, so 'first' stays the maximum. (Writing
      ``1/log_b(r+1)`` instead would only rescale ``log2`` and leave NDCG unchanged.)
    * ``alpha``: exponent of the power discount (>= 0; 0 means no discount).
    * ``base``: the base b of the ``logb`` discount (> 1; default 2).
    * ``gamma`` (signed metrics): the penalty of an explicit negative, >= 0; gamma = 0
      gives the unsigned metric on binary labels.
    * ``short_list``: rows with fewer candidates than K. ``"pad"`` (default) fills the
      list with zero-gain positions and keeps K: Precision divides by K (TREC), the linear
      discount uses K. ``"truncate"`` evaluates such a row at ``K = n`` (NDCG@n, the same
      as ``min(K, n)``): Precision divides by n and the linear discount uses n. ``"skip"``
      marks such rows undefined. HR, Recall, RR, AP and (S)NDCG with the other discounts
      are the same under pad and truncate (the padding adds nothing, and IDCG / ISDCG
      already stop at min(K, n) / min(K, R)).
    * ``ap_norm`` (MAP@K): divide by ``"R"`` (trec_eval ``map_cut``, default) or by
      ``"min"`` = min(K, R) (common in recommender toolkits) or by ``"hits"``, the relevant
      items in the top K (torchmetrics). Full AP always divides by R.
    * ``recall_norm`` (Recall@K): divide by ``"relevant"`` = R (trec_eval ``recall_K``,
      default) or by ``"min"`` = min(K, R) (LensKit's ``Recall``), so that a row with more
      relevant items than K can reach 1. Either is a constant per row, so the tie-aware
      value and variance scale with it.
    * ``max_grade`` (ERR): g_max of the stop probability ``(2**g - 1) / 2**g_max``; None
      (default) takes max(4, the largest label of the judgements), 4 being gdeval's
      maximum judgement (see :class:`RelOptions`).

    * ``iprec_rounding`` (IPrec@x): the cutoff in relevant items is trec_eval 10's
      ``lround(x R)`` (``"trec_eval"``, default) or trec_eval 9.0.8's ``(long)(x R + 0.9)``
      (``"trec_eval9"``: pytrec_eval's and so ir_measures' figures; ``--convention
      trec_eval9``).

    * ``precision_norm`` (Precision@K): each row's hits over K (``"K"``, default, then
      averaged over rows) or ``"micro"``: the hits of every row over the sum of their
      min(K, R), as implicit's precision@K (a mean of hits / min(K, R) weighted by
      min(K, R); per instance, hits / min(K, R)).

    * ``relevant_scores`` (Precision, Recall, MRR/RR, MAP/AP): ``"any"`` (default) counts
      every relevant item; ``"positive"`` counts a relevant item whose score is <= 0 (or
      NaN) as not relevant, as torchmetrics does (it zeroes the target where preds <= 0
      before ranking). The item keeps its place in the ranking. Recall still divides by
      every relevant item of the row, and a row is defined by them (a row whose relevant
      items are all scored <= 0 scores 0); AP divides by the relevant items scored > 0
      (``ap_norm="R"``, ``"min"`` and the full list) or by the hits in the top K
      (``"hits"``).

    ``k`` of a level metric (``IPrec``) is a float recall level in [0, 1].
    """

    name: str
    k: int | float | None = None
    gain: str = "linear"
    discount: str = "log2"
    alpha: float = 1.0
    gamma: float = 1.0
    short_list: str = "pad"
    ap_norm: str = "R"
    base: float = 2.0
    max_grade: float | None = None
    recall_norm: str = "relevant"
    iprec_rounding: str = "trec_eval"
    precision_norm: str = "K"
    relevant_scores: str = "any"

    def __post_init__(self) -> None:
        spec = lookup(self.name, hint=unknown_hint)
        set_ = object.__setattr__
        set_(self, "name", spec.name)
        set_(self, "k", check_cutoff(spec, self.k))
        if self.max_grade is not None:
            set_(self, "max_grade", _number("max_grade", self.max_grade))
        for opt in _CHOICE_ALIASES:
            set_(self, opt, _choice(opt, getattr(self, opt)))
        set_(self, "alpha", _number("alpha", self.alpha))
        set_(self, "base", _number("base", self.base, above_one=True))
        set_(self, "gamma", _number("gamma", self.gamma))
        allowed = _applicable(spec, self.k, self.discount)
        for opt in _OPTION_ORDER:
            if opt not in allowed and getattr(self, opt) != _DEFAULTS[opt]:
                where = ("without a cutoff" if opt in ("short_list", "ap_norm")
                         else "unless discount=power" if opt == "alpha"
                         else "unless discount=logb" if opt == "base" else "")
                raise ParameterError(f"option {opt}={getattr(self, opt)!r} does not apply to "
                                     f"{spec.name} {where}".rstrip())

    @property
    def signed(self) -> bool:
        """True for the sign-aware metrics, whose value depends on gamma."""
        return self.spec.signed

    @property
    def positive_scores_only(self) -> bool:
        """True when a relevant item counts only with a score > 0 (``relevant_scores``):
        the kernels evaluate the metric on the batch's table of such labels."""
        return self.relevant_scores == "positive"

    @property
    def spec(self) -> MetricSpec:
        """The metric's measure: its definition and math
        (:class:`tieeval.metrics.measures.base.Measure`)."""
        return REL_REGISTRY[self.name]

    @property
    def level(self) -> float | None:
        """The recall level of a level metric (``IPrec@0.1``), else None."""
        if self.k is None or not REL_REGISTRY[self.name].takes_level:
            return None
        return float(self.k)

    def options(self) -> dict[str, Any]:
        """The non-default options, in a fixed order (what ``str`` prints)."""
        return {opt: getattr(self, opt) for opt in _OPTION_ORDER
                if getattr(self, opt) != _DEFAULTS[opt]}

    def __str__(self) -> str:
        opts = self.options()
        text = self.name
        if opts:
            text += "(" + ", ".join(f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"
                                    for k, v in opts.items()) + ")"
        return text if self.k is None else f"{text}@{parameter_text(self.k)}"


def parse_rel_metric(text: str, **options: Any) -> RelMetric:
    """Parse ``"NDCG@10"``, ``"V-AUC"``, ``"P@5"`` or ``"NDCG(gain=exp)@10"``.

    Names are case-insensitive; ``-`` and ``_`` inside names are ignored. Options may be
    given in parentheses or as keyword arguments (not both for the same option).

    >>> str(parse_rel_metric("sndcg@20", gamma=0.5)), str(parse_rel_metric("ap@100"))
    ('SNDCG(gamma=0.5)@20', 'MAP@100')
    """
    if not isinstance(text, str):
        raise ParameterError(f"metric must be text such as 'NDCG@10', got {text!r}")
    m = METRIC_FORM.match(text)
    if m is None or _key(m.group(1)) not in REL_REGISTRY or _foreign_options(m.group(2)):
        texts = translate(text)  # trec_eval's or ir_measures' spelling
        if texts is not None:
            if len(texts) != 1:
                raise ParameterError(f"{text!r} names {len(texts)} metrics "
                                     f"({', '.join(texts) or 'none'}); give one here")
            text = texts[0]
            m = METRIC_FORM.match(text)
    if not m:
        raise ParameterError(f"cannot parse metric {text!r}; expected NAME, NAME@K or "
                             f"NAME(option=value, ...)@K with NAME one of {choices_text()}")
    name, opt_text, k_text = m.groups()
    spec = lookup(name, text, hint=unknown_hint)
    k = None if k_text is None else parse_parameter(spec, k_text, text)
    merged = dict(options)
    for item in filter(None, (s.strip() for s in (opt_text or "").split(","))):
        key, sep, value = (s.strip() for s in item.partition("="))
        if not sep or key not in _DEFAULTS:
            raise ParameterError(f"bad option {item!r} in {text!r}; options are "
                                 + ", ".join(_OPTION_ORDER))
        if key in merged:
            raise ParameterError(f"option {key} given twice for {text!r}")
        if key in ("alpha", "gamma", "base", "max_grade"):
            try:
                value = float(value)
            except ValueError:
                raise ParameterError(f"{key} must be a number, got {value!r}") from None
        merged[key] = value
    unknown = set(merged) - set(_DEFAULTS)
    if unknown:
        raise ParameterError(f"unknown option(s) {', '.join(sorted(unknown))}; options are "
                             + ", ".join(_OPTION_ORDER))
    return RelMetric(name, k, **merged)

def _foreign_options(opt_text: str | None) -> bool:
    """True when the parentheses hold an option tieeval does not have (ir_measures')."""
    return any(item.partition("=")[0].strip() not in _DEFAULTS
               for item in filter(None, (s.strip() for s in (opt_text or "").split(","))))


# ---------------------------------------------------------------------------------------
# Options and metric lists


@dataclass(frozen=True)
class RelOptions:
    """Run-wide options of the general path (see the module docstring for defaults)."""

    gain: str = "linear"
    discount: str = "log2"
    alpha: float = 1.0
    gammas: tuple[float, ...] = (1.0,)
    short_list: str = "pad"
    ap_norm: str = "R"
    both: bool = False
    base: float = 2.0
    no_relevant: str = "skip"
    convention: str | None = None
    relevance_level: float | None = None
    depth: int | None = None
    err_max_grade: float | None = None
    recall_norm: str = "relevant"
    iprec_rounding: str = "trec_eval"
    precision_norm: str = "K"
    relevant_scores: str = "any"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.relevance_level is not None:
            level = _number("relevance_level", self.relevance_level)
            if level <= 0:
                # a label-0 item (judged non-relevant, or not judged at all) is never relevant
                raise ParameterError(f"relevance_level must be a number > 0, got "
                                     f"{self.relevance_level!r}")
            # trec_eval's levels are whole numbers: kept as int when whole (JSON prints 2)
            set_(self, "relevance_level", int(level) if level.is_integer() else level)
        if self.depth is not None:
            set_(self, "depth", check_k(self.depth, "depth"))
        if self.err_max_grade is not None:
            set_(self, "err_max_grade", _number("err_max_grade", self.err_max_grade))
        for name in _CHOICE_ALIASES:
            set_(self, name, _choice(name, getattr(self, name)))
        if self.no_relevant not in NO_RELEVANT_POLICIES:
            raise ParameterError(f"no_relevant must be one of {', '.join(NO_RELEVANT_POLICIES)}"
                                 f"; got {self.no_relevant!r}")
        if self.convention is not None and not isinstance(self.convention, str):
            raise ParameterError(f"convention must be a name, got {self.convention!r}")
        set_(self, "alpha", _number("alpha", self.alpha))
        set_(self, "base", _number("the log base", self.base, above_one=True))
        gammas = self.gammas
        if isinstance(gammas, (int, float, np.integer, np.floating)) and not isinstance(
                gammas, bool):
            gammas = (gammas,)
        if isinstance(gammas, (str, bytes)) or not isinstance(gammas, Iterable):
            raise ParameterError(f"gamma must be a number >= 0 or a list of them, got "
                                 f"{gammas!r}")
        gammas = tuple(dict.fromkeys(_number("gamma", g) for g in gammas))
        if not gammas:
            raise ParameterError("give at least one gamma")
        set_(self, "gammas", gammas)
        set_(self, "both", bool(self.both))

    @property
    def changes_single_positive(self) -> bool:
        """True when an option changes HR@K, NDCG@K or MRR of a single-positive dump."""
        return (self.discount != "log2" or self.short_list != "pad" or self.both
                or self.depth is not None or self.relevance_level is not None
                or self.relevant_scores != "any")

    def metric_options(self, spec: MetricSpec, k: int | float | None) -> dict[str, Any]:
        """The options of ``self`` that apply to a metric (RelMetric refuses the rest; the
        gammas make one metric each)."""
        allowed = _applicable(spec, k, self.discount) - {"gamma"}
        return {opt: getattr(self, "err_max_grade" if opt == "max_grade" else opt)
                for opt in _OPTION_ORDER if opt in allowed}

    def to_dict(self) -> dict[str, Any]:
        out = {"gain": self.gain, "discount": self.discount,
               "alpha": self.alpha if self.discount == "power" else None,
               "log_base": self.base if self.discount == "logb" else None,
               "short_list": self.short_list, "ap_norm": self.ap_norm,
               "gammas": list(self.gammas), "subset": "both" if self.both else "all"}
        # keys added only when they differ from the defaults (older JSON stays identical)
        for name in ("no_relevant", "recall_norm", "iprec_rounding", "precision_norm",
                     "relevant_scores", "convention", "relevance_level", "depth",
                     "err_max_grade"):
            if getattr(self, name) != getattr(DEFAULT_OPTIONS, name):
                out[name] = getattr(self, name)
        return out


DEFAULT_OPTIONS = RelOptions()


def default_rel_metrics(ks: Iterable[int]) -> list[Metric]:
    """HR@K, Recall@K, NDCG@K for every K, then MRR and MAP: a labelled dump's default."""
    ks = [check_k(k) for k in ks]
    return ([Metric("HR", k) for k in ks] + [Metric("Recall", k) for k in ks]
            + [Metric("NDCG", k) for k in ks] + [Metric("MRR"), Metric("MAP")])
