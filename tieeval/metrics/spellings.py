"""Other tools' spellings of the registry's metrics: trec_eval's and ir_measures'.

An IR researcher moving from trec_eval or ir_measures keeps the names they know:

* trec_eval's printed names, ``P_10``, ``ndcg_cut_10``, ``map_cut_100``, ``recall_1000``,
  ``recip_rank``, ``iprec_at_recall_0.10``;
* trec_eval's ``-m`` parameter syntax, ``P.5,10``, ``ndcg_cut.10,20``,
  ``iprec_at_recall..10,.20``, which names several metrics, and a bare parametrised name
  (``ndcg_cut``) for trec_eval's default parameters; the nicknames ``all_trec`` and
  ``official`` for every measure of trec_eval's list that tieeval has;
* ir_measures' names, ``P@10``, ``R@100``, ``nDCG@10``, ``AP``, ``RR@10``, ``Success@10``,
  with its options ``cutoff=N``, ``rel=1`` and ``dcg=log2|exp-log2``.

This module only translates: a spelling becomes the text of one or more registry names
(``"ndcg_cut.10,20"`` -> ``["NDCG@10", "NDCG@20"]``), which the registry then parses
(:meth:`tieeval.metrics.metric.Metric.parse`). Each table row names its registry metric,
so a spelling whose metric the registry lacks is refused with a message naming it, and
``all_trec`` expands only to what the registry has. The same tables give the name a
metric prints under in trec_eval's format (:func:`trec_eval_name`), ``--help`` and the
"Metric names" page (:func:`markdown_table`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from tieeval.errors import ParameterError
from tieeval.metrics.registry import REGISTRY, MetricSpec, key, names_text

CUTOFF = "cutoff"
LEVEL = "level"
MULTIPLE = "multiple"  # a multiple of R (Rprec_mult_0.20 ... Rprec_mult_2.00), a float > 0
# how trec_eval reads the parameters of a measure that takes no cutoff (meas_init.c)
PAIRS = "pairs"  # name=value pairs (get_param_pairs): level=gain (gain_init.c), rbp's p=
VALUES = "values"  # a list of numbers (get_double_params): set_F's beta, utility's weights
#: how a parametrised name is shown (``NDCG@K``, ``IPrec@x``; trec_eval's with ``_``)
_SUFFIX = {CUTOFF: "@K", LEVEL: "@x", MULTIPLE: "@x", "": ""}

# trec_eval's default parameters (m_P.c, m_recall.c, m_ndcg_cut.c, m_map_cut.c,
# m_success.c, m_iprec_at_recall.c)
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_SUCCESS = (1, 5, 10)
TREC_LEVELS = tuple(i / 10 for i in range(11))
TREC_MULTIPLES = tuple(i / 5 for i in range(1, 11))  # m_Rprec_mult.c: 0.2, 0.4 ... 2.0
TREC_UNJ = (5, 10, 20)  # m_unjudged.c

#: trec_eval's run-id line (m_runid.c): a measure of trec_eval's that is no metric here.
#: ``-m runid`` names no metric; under ``--format trec_eval`` it asks for the line, which
#: trec_eval prints only when ``runid`` is requested, itself or in a nickname.
RUNID = "runid"

#: trec_eval's relstring (m_relstring.c): per query, the judgements of the top N ranked
#: documents as text (default N = 10, ``-m relstring.N``). No metric here either: under
#: ``--format trec_eval --per-query`` it asks for the lines, made from the Original ranking.
RELSTRING = "relstring"
RELSTRING_LENGTH = 10


@dataclass(frozen=True)
class TrecMeasure:
    """One trec_eval measure and the registry metric it is (None: tieeval has none).

    ``param`` is ``"cutoff"`` (``P_10``), ``"level"`` (``iprec_at_recall_0.10``, a recall
    level in [0, 1]), ``"multiple"`` (``Rprec_mult_0.20``, a multiple of R) or ``""``
    (``map``); ``defaults`` are trec_eval's parameters when none are given; ``fixed``:
    the parameters of a measure such as ``rbp.p=0.9`` that tieeval takes when they are
    trec_eval's defaults (:func:`trec_printed_name`). ``integer`` measures print as whole
    numbers, ``summary_only`` ones only on the ``all`` lines (trec_eval prints no
    per-query ``gm_map`` or ``num_q``).
    """

    name: str
    target: str | None
    param: str = ""
    defaults: tuple[Any, ...] = ()
    integer: bool = False
    summary_only: bool = False
    #: trec_eval's parameters of a measure without cutoffs, which tieeval computes at
    #: their defaults only: ``(PAIRS, (("p", 0.9),))`` (pairs; a level=gain pair must
    #: keep the gain the level) or ``(VALUES, (1.0,))`` (exactly these numbers)
    fixed: tuple[Any, ...] = ()

    @property
    def spec(self) -> MetricSpec | None:
        """The registry's metric, or None while the registry has none."""
        return None if self.target is None else REGISTRY.get(self.target)

    def spelling(self) -> str:
        """``P_K``, ``iprec_at_recall_x``, ``map``: how the docs show the name."""
        return self.name + _SUFFIX[self.param].replace("@", "_")


# trec_eval's measures of preference judgements and of several judgement groups per query
_PREFS = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
          "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
          "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
          "prefs_pair_imp", "prefs_avgjg_imp")
_JUDGEMENT_GROUPS = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")

# In trec_eval's measure table order (measures.c, te_trec_measures): the order it prints
# measures in, whatever order -m gave them. runid is not a measure here: the trec_eval
# format always prints it.
TREC_MEASURES = (
    TrecMeasure("num_q", "NumQ", integer=True, summary_only=True),
    TrecMeasure("num_ret", "NumRet", integer=True),
    TrecMeasure("num_rel", "NumRel", integer=True),
    TrecMeasure("num_rel_ret", "NumRelRet", integer=True),
    TrecMeasure("map", "MAP"),
    TrecMeasure("gm_map", "GMAP", summary_only=True),
    TrecMeasure("Rprec", "Rprec"),
    TrecMeasure("bpref", "Bpref"),
    TrecMeasure("recip_rank", "MRR"),
    TrecMeasure("iprec_at_recall", "IPrec", LEVEL, TREC_LEVELS),
    TrecMeasure("P", "Precision", CUTOFF, TREC_CUTOFFS),
    TrecMeasure("relstring", None),
    TrecMeasure("recall", "Recall", CUTOFF, TREC_CUTOFFS),
    TrecMeasure("infAP", "InfAP"),
    TrecMeasure("gm_bpref", "GBpref", summary_only=True),
    TrecMeasure("Rprec_mult", "RprecMult", MULTIPLE, TREC_MULTIPLES),
    TrecMeasure("utility", "Utility", fixed=(VALUES, (1.0, -1.0, 0.0, 0.0))),
    TrecMeasure("11pt_avg", "IPrec11pt", fixed=(VALUES, TREC_LEVELS)),
    TrecMeasure("binG", "BinG"),
    TrecMeasure("G", "NormGain", fixed=(PAIRS, ())),
    TrecMeasure("dcg", "DCG", fixed=(PAIRS, ())),
    TrecMeasure("ideal_dcg", None),
    TrecMeasure("ndcg", "NDCG", fixed=(PAIRS, ())),
    TrecMeasure("ndcg_rel", "NDCG-rel", fixed=(PAIRS, ())),
    TrecMeasure("Rndcg", "Rndcg", fixed=(PAIRS, ())),
    TrecMeasure("ndcg_cut", "NDCG", CUTOFF, TREC_CUTOFFS),
    TrecMeasure("map_cut", "MAP", CUTOFF, TREC_CUTOFFS),
    TrecMeasure("relative_P", "RelativeP", CUTOFF, TREC_CUTOFFS),
    TrecMeasure("success", "Success", CUTOFF, TREC_SUCCESS),
    TrecMeasure("set_P", "SetP"),
    TrecMeasure("set_relative_P", "SetRelP"),
    TrecMeasure("set_recall", "SetR"),
    TrecMeasure("set_map", "SetAP"),
    TrecMeasure("set_F", "SetF", fixed=(VALUES, (1.0,))),
    TrecMeasure("num_nonrel_judged_ret", "NumNonRelJudgedRet", integer=True),
    *(TrecMeasure(name, None) for name in (*_PREFS, *_JUDGEMENT_GROUPS, "yaap")),
    TrecMeasure("rbp", "TrecRBP", fixed=(PAIRS, (("p", 0.9),))),
    TrecMeasure("rbp_resid", "TrecRBP-resid", fixed=(PAIRS, (("p", 0.9),))),
    TrecMeasure("unj", "Unjudged", CUTOFF, TREC_UNJ),
)
_TREC = {key(m.name): m for m in TREC_MEASURES}

#: What the "Metric names" page and the refusals say of a trec_eval measure: a note on one
#: tieeval computes, or why tieeval does not compute one (a row without a reason is one
#: not computed yet). A new measure sets its row's target above; its reason here then
#: stops applying.
TREC_NOTES = {
    "runid": "not a metric: the `runid` line of `--format trec_eval`, printed when asked for "
             "(`-m runid`, `official`, `all_trec`)",
    "relstring": "not a metric: the per-query `relstring` lines of `--format trec_eval "
                 "--per-query` (the Original ranking's judgements at the top N ranks), "
                 "printed when asked for (`-m relstring`, `relstring.N`, `all_trec`)",
    "ideal_dcg": "the ideal DCG is NDCG's denominator, not reported on its own",
    "iprec_at_recall": "trec_eval 10's rounding of x·R (lround); trec_eval 9's (pytrec_eval) "
                       "with `--convention trec_eval9`",
    "gm_map": "printed on the `all` line only, as trec_eval prints it",
    "num_q": "printed on the `all` line only, as trec_eval prints it",
    "num_rel": "under `-c -l N` (N > 1) trec_eval's `all` line counts every judgement above 0 "
               "in the qrels, whatever `-l` says; `--format trec_eval` prints that count, "
               "JSON the queries' sum",
    "dcg": "trec_eval's dcg: gain the raw judgement, discount 1/log2(r + 1), no cutoff",
    "set_F": "trec_eval's default beta = 1; `-m set_F.1.0` is taken, another beta is refused",
    "utility": "trec_eval's default weights 1, -1, 0, 0; `-m utility.1,-1,0,0` is taken, "
               "other weights are refused",
    "11pt_avg": "trec_eval's 11 default recall levels; `-m 11pt_avg.0,.1,.2,.3,.4,.5,.6,.7,"
                ".8,.9,1` is taken, other levels are refused",
    "gm_bpref": "printed on the `all` line only, as trec_eval prints it",
    **{name: "trec_eval's default gains (the relevance levels); `level=gain` parameters "
             "are taken where each gain is its level (`-m ndcg.1=1,2=2`), others are refused"
       for name in ("ndcg", "G", "ndcg_rel", "Rndcg")},
    **{name: "trec_eval's default persistence p = 0.9; `-m rbp.p=0.9` is taken, another p "
             "is refused" for name in ("rbp", "rbp_resid")},
    **{name: "preference judgements (trec_eval's prefs and qrels_prefs formats), which "
             "tieeval does not read" for name in _PREFS},
    **{name: "several judgement groups per query (trec_eval's qrels_jg format), which "
             "tieeval does not read" for name in _JUDGEMENT_GROUPS},
    "yaap": "yet another AP (m_yaap.c): in no trec_eval nickname, not computed",
}

# trec_eval's nicknames (measures.c, trec_names and off_names)
TREC_NICKNAMES = {
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                 "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj",
                 "rbp", "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
                 "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel",
                 "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                 "bpref", "recip_rank", "iprec_at_recall", "P"),
}
_NICKNAMES = {key(name): names for name, names in TREC_NICKNAMES.items()}


@dataclass(frozen=True)
class IrMeasure:
    """One ir_measures measure (ir_measures/measures/*.py) and the registry metric it is."""

    name: str
    target: str
    param: str = ""  # "cutoff" (P@10; optional where the metric allows it) or "level"

    def spelling(self) -> str:
        return self.name + _SUFFIX[self.param]


IR_MEASURES = (
    IrMeasure("P", "Precision", CUTOFF),
    IrMeasure("R", "Recall", CUTOFF),
    IrMeasure("nDCG", "NDCG"),
    IrMeasure("nDCG", "NDCG", CUTOFF),
    IrMeasure("AP", "MAP"),
    IrMeasure("AP", "MAP", CUTOFF),
    IrMeasure("RR", "MRR"),
    IrMeasure("RR", "MRR", CUTOFF),
    IrMeasure("Success", "Success", CUTOFF),
    IrMeasure("Rprec", "Rprec"),
    IrMeasure("Bpref", "Bpref"),
    IrMeasure("IPrec", "IPrec", LEVEL),
    IrMeasure("Judged", "Judged", CUTOFF),
    IrMeasure("ERR", "ERR", CUTOFF),
    IrMeasure("NumRet", "NumRet"),
    IrMeasure("NumRel", "NumRel"),
    IrMeasure("NumRelRet", "NumRelRet"),
    IrMeasure("NumQ", "NumQ"),
    IrMeasure("SetP", "SetP"),
    IrMeasure("SetRelP", "SetRelP"),
    IrMeasure("SetR", "SetR"),
    IrMeasure("SetAP", "SetAP"),
    IrMeasure("SetF", "SetF"),
    IrMeasure("infAP", "InfAP"),
)
_IR = {key(m.name): m.target for m in IR_MEASURES}

#: Every measure ir_measures 0.4.3 registers (ir_measures.measures.registry, aliases
#: included), in its order: what the "Metric names" page lists. Those without a row of
#: :data:`IR_MEASURES` are refused with :data:`IR_NOTES`' reason.
IR_CATALOGUE = (
    "P", "Precision", "R", "Recall", "nDCG", "NDCG", "AP", "MAP", "RR", "MRR", "Success",
    "Rprec", "RPrec", "Bpref", "BPref", "IPrec", "Judged", "ERR", "NumRet", "NumRel",
    "NumRelRet", "NumQ", "SDCG", "infAP", "RBP", "SetP", "SetR", "SetF", "SetAP", "SetRelP",
    "INST", "INSQ", "NERR8", "NERR9", "NERR10", "NERR11", "BPM", "Compat", "Accuracy",
    "alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA", "NRBP", "nNRBP", "AP_IA", "MAP_IA",
    "P_IA", "StRecall")

_DIVERSITY = "a diversity measure over query intents (subtopic qrels), which tieeval does not read"
#: A note on an ir_measures measure tieeval computes, or why it does not compute one.
IR_NOTES = {
    "IPrec": "ir_measures computes it with pytrec_eval, trec_eval 9's rounding of x·R: "
             "`--convention trec_eval9` gives its figures",
    "Judged": "judged (any qrels line, negative ones too) among the top min(K, retrieved); "
              "ir_measures breaks score ties by docno ascending, a TREC run's Original here "
              "by trec_eval's order, so the Original column can differ on ties (First, Last "
              "and Tie-aware do not depend on a tie order)",
    "RR": "RR@K comes from ir_measures' msmarco provider, which breaks score ties by docno "
          "ascending, a TREC run's Original here by trec_eval's order (docno descending), so "
          "RR@K's Original can differ on ties (First, Last and Tie-aware do not depend on a "
          "tie order); RR without a cutoff comes from pytrec_eval, in trec_eval's order",
    "ERR": "gdeval's ERR with g_max = max(4, the largest judgement)",
    "NumQ": "ir_measures counts only the queries the run answers: `--missing-queries skip` "
            "(the default)",
    "NumRel": "ir_measures counts the relevant documents of the queries the run answers "
              "only: `--missing-queries skip` (the default)",
    "SDCG": "scaled DCG, `SDCG(max_rel=N)@K`; tieeval's `SDCG@K`, without the max_rel "
            "ir_measures requires, is tieeval's signed DCG",
    "infAP": "trec_eval's infAP (ir_measures computes it with pytrec_eval)",
    "RBP": "ir_measures' rank-biased precision, persistence p = 0.8 unless RBP(p=...) "
           "says, computed by trectools with the grades as gains (not scaled) and each tie "
           "block's weights averaged, or with rel=N by cwl_eval on 0/1 gains; trec_eval's "
           "rbp (p = 0.9, gains scaled to [0, 1]) is `rbp` (`TrecRBP`)",
    **{name: "a set measure of the whole retrieved list" for name in (
        "SetP", "SetR", "SetF", "SetAP", "SetRelP")},
    **{name: "a user-model measure of the C/W/L framework (cwl_eval)" for name in (
        "INST", "INSQ", "NERR8", "NERR9", "NERR10", "NERR11", "BPM")},
    "Compat": "compatibility with a preferred ordering (Clarke et al.), needs ideal rankings",
    "Accuracy": "pairwise accuracy of the ranking (ir_measures' own accuracy provider)",
    **{name: _DIVERSITY for name in ("alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA", "NRBP",
                                      "nNRBP", "AP_IA", "MAP_IA", "P_IA", "StRecall")},
}
# ir_measures' aliases: the measure they are another name for
IR_ALIASES = {"Precision": "P", "Recall": "R", "NDCG": "nDCG", "MAP": "AP", "MRR": "RR",
              "RPrec": "Rprec", "BPref": "Bpref", "MAP_IA": "AP_IA"}


def available(target: str | None) -> bool:
    return target is not None and target in REGISTRY


# ---------------------------------------------------------------------------------------
# translation

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PRINTED = re.compile(rf"^\s*([A-Za-z0-9][A-Za-z0-9_\-]*?)_({_NUMBER})\s*$")
_PARAMETERS = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_\-]*)\.(.*?)\s*$")
_BARE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_\-]*)\s*$")
#: ``NAME(option=value, ...)@K``: ir_measures' names, and the registry's with its options
METRIC_FORM = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(?:\(([^()]*)\))?\s*(?:@\s*(\S+))?\s*$")


def _parameter(measure: TrecMeasure, text: str, whole: str) -> int | float:
    """One trec_eval parameter: a cutoff >= 1, a recall level in [0, 1] or a multiple > 0."""
    floating = measure.param in (LEVEL, MULTIPLE)
    what = {LEVEL: "a recall level in [0, 1]", MULTIPLE: "a number > 0"}.get(measure.param,
                                                                           "a cutoff >= 1")
    try:
        value = float(text) if floating else int(text)
    except ValueError:
        raise ParameterError(f"parameter {text!r} of {whole!r} must be {what}") from None
    if measure.param == LEVEL and not 0 <= value <= 1:
        raise ParameterError(f"recall level {text!r} of {whole!r} must be in [0, 1]")
    if measure.param == MULTIPLE and not 0 < value < float("inf"):
        raise ParameterError(f"parameter {text!r} of {whole!r} must be {what}")
    if measure.param == CUTOFF and value < 1:
        raise ParameterError(f"cutoff {text!r} of {whole!r} must be >= 1")
    return value


def _fixed_text(measure: TrecMeasure) -> str:
    """What tieeval takes of ``measure``'s parameters: ``p=0.9 and level=gain pairs that
    keep each gain the level (rbp.p=0.9,1=1,2=2)``, ``set_F.1``."""
    kind, defaults = measure.fixed
    if kind == VALUES:
        return f"{measure.name}." + ",".join(f"{value:g}" for value in defaults)
    named = [f"{name}={value:g}" for name, value in defaults]
    return " and ".join([*named, "level=gain pairs that keep each gain the level"]) \
        + f" ({measure.name}.{','.join([*named, '1=1,2=2'])})"


def _check_fixed(measure: TrecMeasure, parts: list[str], whole: str) -> None:
    """Refuse parameters of ``measure`` other than trec_eval's defaults, which are all
    tieeval computes it at: ``rbp.p=0.9``, ``set_F.1.0``, ``ndcg.1=1,2=2`` (a relevance
    level's gain left at the level, as gain_init.c gives every level it is not told)."""
    kind, defaults = measure.fixed
    refusal = ParameterError(f"{whole!r}: tieeval computes trec_eval's {measure.name} at its "
                             f"default parameters only: {_fixed_text(measure)}")
    try:
        if kind == VALUES:
            if tuple(float(p) for p in parts) != tuple(defaults):
                raise refusal
            return
        named = dict(defaults)
        for part in parts:
            name, sep, value = (s.strip() for s in part.partition("="))
            if not sep or not name:
                raise refusal
            if re.fullmatch(r"[+-]?\d+", name):  # a level=gain pair: the gain is the level
                if int(name) < 0 or float(value) != int(name):
                    raise refusal
            elif name not in named or float(value) != named[name]:
                raise refusal
    except ValueError:
        raise refusal from None


def trec_printed_name(text: object) -> str | None:
    """The name trec_eval prints for a measure given with its default parameters spelled
    out, which tieeval takes (``rbp.p=0.9`` prints as ``rbp_p=0.9``, ``set_F.1.0`` as
    ``set_F_1.0``: the name, ``_`` and the parameters as written, meas_init.c's
    ``append_string``), else None (the measure's own name or cutoff names apply)."""
    m = _PARAMETERS.match(text) if isinstance(text, str) else None
    if m is None:
        return None
    measure = _TREC.get(key(m.group(1)))
    if measure is None or not measure.fixed or not m.group(2).strip():
        return None
    return f"{measure.name}_{m.group(2)}"


def _texts(measure: TrecMeasure, params: Sequence[int | float], whole: str) -> list[str]:
    """The registry texts of ``measure`` at ``params`` (sorted, as trec_eval sorts them)."""
    if not available(measure.target):
        reason = TREC_NOTES.get(measure.name)
        why = f" ({reason})" if reason else ""
        raise ParameterError(
            f"{whole!r} is trec_eval's {measure.name}, which tieeval does not compute{why}; "
            f"trec_eval measures tieeval has: {trec_text()}")
    if not measure.param:
        return [str(measure.target)]
    # a level or multiple is a float already (_parameter, the defaults): repr 0.1, 1.0
    return [f"{measure.target}@{v!r}" for v in sorted(set(params))]


def _trec_eval(text: str) -> list[str] | None:
    m = _PRINTED.match(text)  # P_10, iprec_at_recall_0.10
    if m:
        measure = _TREC.get(key(m.group(1)))
        if measure is not None and measure.param:
            return _texts(measure, [_parameter(measure, m.group(2), text)], text)
    name = _bare(text)
    if name == key(RUNID):
        return []  # a line of trec_eval's format, no metric (asks_runid)
    names = _NICKNAMES.get(name or "")
    if names is not None:  # all_trec, official: what the registry has of the list
        out: list[str] = []
        for measure in TREC_MEASURES:
            if measure.name in names and available(measure.target):
                out += _texts(measure, measure.defaults, text)
        return out
    # P.5,10, iprec_at_recall..10,.20, ndcg_cut.; ndcg_cut alone: trec_eval's defaults
    m = _PARAMETERS.match(text)
    measure = _TREC.get(name or (key(m.group(1)) if m else ""))
    if measure is None:
        return None
    if measure.name == RELSTRING:
        asks_relstring(text)  # its parameter checked; a line of the format, no metric
        return []
    given = m.group(2) if m else ""
    parts = [p.strip() for p in given.split(",")] if given.strip() else []
    if not measure.param and parts:
        if not measure.fixed:
            raise ParameterError(f"trec_eval's {measure.name} takes no parameters "
                                 f"(got {text!r})")
        _check_fixed(measure, parts, text)
        return _texts(measure, [], text)
    params = [_parameter(measure, p, text) for p in parts] or list(measure.defaults)
    if len(set(params)) < len(params):  # trec_eval: "duplicate cutoffs detected"
        raise ParameterError(f"{text!r} gives a parameter of {measure.name} twice, "
                             "which trec_eval refuses")
    if measure.param and not params:
        raise ParameterError(f"{text!r}: give {measure.name}'s parameters, e.g. "
                             f"{measure.name}.5,10")
    return _texts(measure, params, text)


# ir_measures options -> tieeval's: (ir_measures name, value) -> tieeval option or None
_IR_OPTIONS = {("dcg", "log2"): None, ("dcg", "exp-log2"): "gain=exponential",
               ("rel", "1"): None, ("judged_only", "false"): None}
# ir_measures' measures with a judged_only parameter (ir_measures/measures/*.py)
_JUDGED_ONLY = frozenset(key(n) for n in ("P", "R", "nDCG", "AP", "RR", "Success", "Rprec",
                                          "IPrec"))


def _ir_refusal(name: str, text: str) -> ParameterError:
    """ir_measures' ``name``, which tieeval does not compute, refused with the reason."""
    canonical = IR_ALIASES.get(name, name)
    reason = IR_NOTES.get(canonical)
    why = f" ({reason})" if reason else ""
    return ParameterError(f"{text!r} is ir_measures' {canonical}, which tieeval does not "
                          f"compute{why}; ir_measures measures tieeval has: {ir_text()}")


def _ir_option(name: str, item: str, opt: str, value: str, text: str) -> ParameterError:
    """The error of an ir_measures option tieeval does not take in a metric's name: where
    tieeval has it as a run-wide option, the option to use."""
    if opt == "rel" and value.isdigit():
        if key(name) == "NUMRET":  # NumRet(rel=N) counts the relevant retrieved
            name = "NumRelRet"
        return ParameterError(
            f"ir_measures' {item!r} in {text!r} is tieeval's --relevance-level {value} "
            f"(relevance_level={value} in the API), an option of the whole run: give "
            f"{name}{'@' + text.rsplit('@', 1)[1] if '@' in text else ''} with "
            f"--relevance-level {value}")
    if opt == "judged_only" and value.lower() == "true":
        if key(name) not in _JUDGED_ONLY:
            return ParameterError(f"ir_measures' {name} has no judged_only parameter "
                                  f"(in {text!r})")
        return ParameterError(
            f"ir_measures' {item!r} in {text!r} is tieeval's --judged-only (judged_only=True "
            "in the API; TREC runs, trec_eval -J), an option of the whole run: give the "
            "metric without it, with --judged-only")
    if opt == "gains":
        return ParameterError(f"ir_measures' option {item!r} in {text!r} has no tieeval "
                              "counterpart: gains are the labels (--gain linear) or "
                              "2^label - 1 (--gain exponential)")
    return ParameterError(f"ir_measures' {name} takes no option {item!r} (in {text!r})")


def _ir_measures(text: str) -> list[str] | None:
    m = METRIC_FORM.match(text)
    if not m:
        return None
    name, opt_text, k_text = m.groups()
    if key(name) == "SDCG" and opt_text and any(
            o.strip().startswith(("max_rel", "min_rel", "dcg")) for o in opt_text.split(",")):
        raise _ir_refusal("SDCG", text)  # ir_measures' scaled DCG, written with its max_rel
    target = _IR.get(key(name))
    if target is None:
        if key(name) not in REGISTRY:
            listed = {key(n): n for n in IR_CATALOGUE}.get(key(name))
            if listed is not None:
                raise _ir_refusal(listed, text)
        return None
    if key(name) in REGISTRY and not opt_text:
        return None  # the registry's own spelling: nothing to translate
    if not available(target):
        raise _ir_refusal(name, text)
    changed = key(name) not in REGISTRY
    options = []
    for item in filter(None, (s.strip() for s in (opt_text or "").split(","))):
        opt, sep, value = (s.strip().strip("'\"") for s in item.partition("="))
        changed = changed or opt in ("cutoff", "dcg", "rel", "judged_only")
        if opt == "cutoff" and sep and k_text is None:
            k_text = value
        elif key(name) == "NUMRET" and (opt, value) == ("rel", "1"):
            target = "NumRelRet"  # ir_measures defines NumRelRet as NumRet(rel=1)
        elif (opt, value.lower() if opt == "judged_only" else value) in _IR_OPTIONS:
            if _IR_OPTIONS[(opt, value.lower() if opt == "judged_only" else value)]:
                options.append(str(_IR_OPTIONS[(opt, value)]))
        elif opt in ("dcg", "rel", "gains", "judged_only", "cutoff"):
            raise _ir_option(name, item, opt, value, text)
        else:
            options.append(item)
    if not changed:
        return None  # the registry's name with tieeval's own options
    out = target + (f"({', '.join(options)})" if options else "")
    return [out if k_text is None else f"{out}@{k_text}"]


def _bare(text: object) -> str | None:
    """The key of ``text`` when it is a name alone (``P``, ``official``), else None."""
    m = _BARE.match(text) if isinstance(text, str) else None
    return None if m is None else key(m.group(1))


def trec_family(name: object) -> bool:
    """True when ``name`` alone is a trec_eval measure with parameters (``P``, ``recall``,
    ``success``, ``iprec_at_recall``, ``ndcg_cut``): trec_eval expands it to its default
    parameters, and so does :func:`translate`, even where the registry has the name (``P``
    is Precision's alias, which needs a cutoff)."""
    measure = _TREC.get(_bare(name) or "")
    return measure is not None and bool(measure.param) and bool(measure.defaults)


def _asks(text: object, line: str) -> bool:
    """True when ``text`` asks for trec_eval's ``line`` (``runid``, ``relstring``): its
    name alone, or a nickname whose list holds it, as trec_eval prints it."""
    name = _bare(text)
    return name is not None and (name == key(line) or line in _NICKNAMES.get(name, ()))


def asks_runid(text: object) -> bool:
    """:func:`_asks` for the ``runid`` line (``runid``, ``official``, ``all_trec``)."""
    return _asks(text, RUNID)


def asks_relstring(text: object) -> tuple[str, int] | None:
    """``(the name trec_eval prints, N)`` when ``text`` asks for trec_eval's relstring
    lines: ``relstring`` or a nickname holding it (``all_trec``) for N = 10, printed
    ``relstring``; ``relstring.N``, printed ``relstring_N`` (the parameter as written, as
    meas_init.c appends it; N is trec_eval's ``(long)`` of the number, 0 below 0)."""
    if _asks(text, RELSTRING):
        return RELSTRING, RELSTRING_LENGTH
    m = _PARAMETERS.match(text) if isinstance(text, str) else None
    if m is None or key(m.group(1)) != key(RELSTRING):
        return None
    try:
        value = float(m.group(2))
        length = int(value)
    except (ValueError, OverflowError):
        raise ParameterError(f"parameter {m.group(2).strip()!r} of {text!r} must be a number "
                             "of documents (relstring.20)") from None
    return f"{RELSTRING}_{m.group(2)}", max(length, 0)


def translate(text: object) -> list[str] | None:
    """The registry texts a trec_eval or ir_measures spelling stands for, or None when
    ``text`` is not one (the registry's own names are not translated).

    >>> translate("ndcg_cut.10,5"), translate("recip_rank"), translate("P_10")
    (['NDCG@5', 'NDCG@10'], ['MRR'], ['Precision@10'])
    >>> translate("NDCG@10") is None
    True
    """
    if not isinstance(text, str):
        return None
    m = METRIC_FORM.match(text)
    if m is not None and key(m.group(1)) == "RBP" and m.group(1) != "rbp":
        # ir_measures' RBP (p = 0.8), not trec_eval's rbp (p = 0.9), whose name is lower case
        raise _ir_refusal("RBP", text)
    out = _trec_eval(text)
    return out if out is not None else _ir_measures(text)


def run_option_error(text: str, translated: str) -> ParameterError | None:
    """The error of a metric ``text`` the user wrote whose options in parentheses
    (``translated``: ``NDCG(gain=exponential)@10``, what ir_measures' ``dcg='exp-log2'``
    is here) are options of the whole run on the command line: naming what the user wrote
    and the option that gives it; None when ``translated`` has no such options."""
    m = METRIC_FORM.match(translated)
    if m is None or not m.group(2):
        return None
    name, opt_text, k_text = m.groups()
    if key(name) not in REGISTRY:
        return None
    plain = name if k_text is None else f"{name}@{k_text}"
    flags, api = [], []
    for item in filter(None, (s.strip() for s in opt_text.split(","))):
        opt, sep, value = (s.strip().strip("'\"") for s in item.partition("="))
        if not sep:
            return None
        flags.append(f"--{opt.replace('_', '-')} {value}")
        api.append(f"{opt}={value!r}")
    said = f"{text!r} is {plain} with {' '.join(flags)}" if text != translated else \
        f"{text!r}: {', '.join(api)} is an option of the whole run"
    return ParameterError(f"{said}: give -m {plain} with {' '.join(flags)} "
                          f"({', '.join(api)} in the API)")


# ---------------------------------------------------------------------------------------
# names in trec_eval's output

def trec_measure(spec: MetricSpec, k: int | float | None) -> TrecMeasure | None:
    """The trec_eval measure that prints a registry metric at cutoff (or level) ``k``."""
    for measure in TREC_MEASURES:
        if measure.spec is spec and (measure.param == "") == (k is None):
            return measure
    return None


def trec_eval_name(spec: MetricSpec, k: int | float | None) -> str | None:
    """``P_10``, ``ndcg_cut_10``, ``iprec_at_recall_0.10``: how trec_eval prints a metric
    (``%3.2f`` levels, as meas_init.c), or None when trec_eval has no such measure."""
    measure = trec_measure(spec, k)
    if measure is None:
        return None
    if measure.param in (LEVEL, MULTIPLE):
        return f"{measure.name}_{float(cast(float, k)):3.2f}"  # a level: never None
    return measure.name if k is None else f"{measure.name}_{k}"


def trec_order(spec: MetricSpec, k: int | float | None) -> tuple[Any, ...]:
    """Sort key: trec_eval's measure table order, then the parameter ascending; metrics
    trec_eval lacks come after its measures."""
    measure = trec_measure(spec, k)
    if measure is None:
        return (len(TREC_MEASURES), 0.0)
    return (TREC_MEASURES.index(measure), 0.0 if k is None else float(k))


# ---------------------------------------------------------------------------------------
# what help text, error messages and the docs show

def trec_text() -> str:
    """trec_eval's spellings the registry answers to: ``map, map_cut_K, P_K, ...``."""
    names = [m.spelling() for m in TREC_MEASURES if available(m.target)]
    return ", ".join(names) + " (and P.5,10-style lists, all_trec, official)"


def ir_text() -> str:
    """ir_measures' spellings the registry answers to: ``P@K, R@K, nDCG, ...``."""
    return ", ".join(dict.fromkeys(m.spelling() for m in IR_MEASURES if available(m.target)))


def choices_text() -> str:
    """Every name an unknown-metric error offers: the registry's names and aliases, then
    trec_eval's and ir_measures' spellings."""
    return f"{names_text()}; or trec_eval's {trec_text()}; ir_measures' {ir_text()}"


_PARAMETER = re.compile(r"^\s*(.*?)\s*(?:@\s*(\S*)|_(\d+(?:\.\d*)?))?\s*$")


def closest(text: str, n: int = 3) -> list[str]:
    """The names closest to ``text`` (difflib's ratio, case ignored), written with its
    cutoff: ``NDGC@10`` -> ``['NDCG@10']``, ``ndcg_cutt_10`` -> ``['ndcg_cut_10']``.

    >>> closest("NDGC@10"), closest("ndcg_cutt_10"), closest("xyzzy")
    (['NDCG@10'], ['ndcg_cut_10'], [])
    """
    import difflib

    from tieeval.metrics.registry import aliases, library_names, metric_names
    m = _PARAMETER.match(text)
    core, at, under = m.groups() if m else (text, None, None)
    # every name a metric answers to, lower-cased: (how it is written, trec_eval style,
    # the registry metric it names)
    names: dict[str, tuple[str, bool, str]] = {}
    for name in (*metric_names(), *aliases(), *library_names()):
        names.setdefault(name.lower(), (name, False, REGISTRY[name].name))
    spelled: list[TrecMeasure | IrMeasure] = [*TREC_MEASURES, *IR_MEASURES]
    for sp in spelled:
        if available(sp.target):
            names.setdefault(sp.name.lower(), (sp.name, isinstance(sp, TrecMeasure),
                                               str(sp.target)))
    found = difflib.get_close_matches(core.lower(), list(names), n=2 * n, cutoff=0.75)
    out: list[str] = []
    targets: set[str] = set()
    for low in found:
        written, trec_style, target = names[low]
        if target in targets or len(targets) == n:  # one spelling per metric
            continue
        targets.add(target)
        param = at if at is not None else under
        if param:
            written += f"_{param}" if trec_style else f"@{param}"
        out.append(written)
    return list(dict.fromkeys(out))


def unknown_hint(name: object, text: object = None) -> str:
    """What an unknown-metric error says after the name: the closest names, or the
    registry's names when none is close; every spelling is on docs/metric-names.md."""
    from tieeval.metrics.registry import metric_names
    close = closest(str(text if text is not None else name))
    if close:
        return f"did you mean {' or '.join(close)}? (every name: docs/metric-names.md)"
    # the registry's names in --help order while the line stays short; the page lists all
    names, shown = metric_names(), []  # type: list[str], list[str]
    for name in names:
        if len(", ".join([*shown, name])) > _HINT_WIDTH:
            break
        shown.append(name)
    more = f" and {len(names) - len(shown)} more" if len(shown) < len(names) else ""
    return f"choose from {', '.join(shown)}{more} (every spelling: docs/metric-names.md)"


_HINT_WIDTH = 170  # characters of names an unknown-metric error lists


def missing_trec() -> list[str]:
    """trec_eval's all_trec measures tieeval does not have."""
    return [m.name for m in TREC_MEASURES
            if m.name in TREC_NICKNAMES["all_trec"] and not available(m.target)
            and m.name != RELSTRING]


def markdown_table() -> str:
    """The "Metric names" table: each registry metric, its aliases, trec_eval's and
    ir_measures' spellings (docs/metric-names.md holds a copy; a test compares them)."""
    from tieeval.metrics.registry import LIBRARY_VOCABULARIES, metric_names
    lines = ["| tieeval | aliases | trec_eval | ir_measures | "
             + " | ".join(LIBRARY_VOCABULARIES) + " |",
             "|---|---|---|---|" + "---|" * len(LIBRARY_VOCABULARIES)]
    for name in metric_names():
        spec = REGISTRY[name]
        shown = {"required": f"{name}@K", "optional": f"{name}, {name}@K", "none": name,
                 "level": f"{name}@x"}
        trec = [m.spelling() for m in TREC_MEASURES if m.spec is spec]
        ir = list(dict.fromkeys(m.spelling() for m in IR_MEASURES
                                if REGISTRY.get(m.target) is spec))
        cells = [shown[spec.cutoff], ", ".join(spec.aliases), ", ".join(trec), ", ".join(ir)]
        cells += [", ".join(spec.names_in(v)) for v in LIBRARY_VOCABULARIES]
        lines.append("| " + " | ".join(f"`{c}`".replace(", ", "`, `") if c else "–"
                                       for c in cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_missing() -> str:
    """The docs' list of trec_eval's and ir_measures' measures tieeval does not have."""
    trec = ", ".join(f"`{name}`" for name in missing_trec())
    ir = ", ".join(f"`{name}`" for name, _, status, _ in ir_status()
                   if status == REFUSED and name not in IR_ALIASES)
    trec_line = (f" (`all_trec` expands without them): {trec}" if trec else
                 ": none (`all_trec` prints every line trec_eval prints, `relstring` per "
                 "query)")
    return (f"- trec_eval's `all_trec` measures{trec_line}\n"
            f"- ir_measures' measures (the reasons: [the tables below]"
            f"(#every-trec_eval-and-ir_measures-measure)): {ir}\n")


# ---------------------------------------------------------------------------------------
# every measure of trec_eval and ir_measures, with its status here

SUPPORTED, NOTED, REFUSED = "supported", "supported, with a note", "refused"


def trec_status() -> list[tuple[str, str, str, str]]:
    """Every trec_eval 10 measure (its measure table, runid first): ``(name, tieeval's
    metric, status, note or reason)``, status one of :data:`SUPPORTED`, :data:`NOTED`,
    :data:`REFUSED`."""
    rows = [(RUNID, "", NOTED, TREC_NOTES[RUNID])]
    for m in TREC_MEASURES:
        note = TREC_NOTES.get(m.name, "")
        if m.name == RELSTRING:  # a line of the format, as runid
            rows.append((m.name, "", NOTED, note))
        elif available(m.target):
            rows.append((m.spelling(), str(m.target) + _SUFFIX[m.param],
                         NOTED if note else SUPPORTED, note))
        else:
            rows.append((m.spelling(), "", REFUSED, note or "not computed yet"))
    return rows


def ir_status() -> list[tuple[str, str, str, str]]:
    """Every ir_measures measure of :data:`IR_CATALOGUE`: ``(name, tieeval's metric,
    status, note or reason)``."""
    rows = []
    for name in IR_CATALOGUE:
        canonical = IR_ALIASES.get(name, name)
        mine = [m for m in IR_MEASURES if m.name == canonical and available(m.target)]
        note = IR_NOTES.get(canonical, "")
        status = NOTED if note else SUPPORTED
        if name != canonical:
            note = f"ir_measures' alias of {canonical}" + (f"; {note}" if note else "")
        if mine:
            shown = ", ".join(dict.fromkeys(m.target + _SUFFIX[m.param] for m in mine))
            spelled = ", ".join(dict.fromkeys(
                name + m.spelling()[len(m.name):] for m in mine))
            rows.append((spelled, shown, status, note))
        else:
            rows.append((name, "", REFUSED, note or "not computed yet"))
    return rows


def _status_table(head: str, rows: Iterable[tuple[str, str, str, str]]) -> str:
    lines = [f"| {head} | tieeval | status | note |", "|---|---|---|---|"]
    for name, target, status, note in rows:
        cells = [", ".join(f"`{n}`" for n in name.split(", ")),
                 ", ".join(f"`{t}`" for t in target.split(", ")) if target else "–",
                 status, note or "–"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_trec_status() -> str:
    """The "Metric names" page's table of every trec_eval 10 measure and its status."""
    return _status_table("trec_eval 10", trec_status())


def markdown_ir_status() -> str:
    """The "Metric names" page's table of every ir_measures measure and its status."""
    return _status_table("ir_measures 0.4.3", ir_status())
