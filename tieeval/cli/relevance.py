"""Command-line options of labelled dumps, TREC runs and the general metrics.

They join the shared reading options (:func:`tieeval.cli.common.read_options`), so every
command that reads dumps accepts them; :func:`split_relevance` turns them into the reader's
field names and the evaluation's :class:`~tieeval.metrics.options.RelOptions`.
"""

from __future__ import annotations

import math

import click

from tieeval.cli.app import NumberList, say
from tieeval.cli.stdin import file_only
from tieeval.engine.arguments import REL_KEYWORDS, rel_options
from tieeval.io.base import MISSING_QUERIES
from tieeval.metrics.conventions import CONVENTION_NAMES
from tieeval.metrics.options import (
    AP_NORMS,
    DISCOUNTS,
    NO_RELEVANT_POLICIES,
    PRECISION_NORMS,
    RECALL_NORMS,
    RELEVANT_SCORES,
    SHORT_LIST_POLICIES,
    RelOptions,
)

GAIN_CHOICES = ("linear", "exponential")


def _penalty(g: float, text: str) -> float:
    if not math.isfinite(g) or g < 0:
        raise ValueError(f"gamma must be a finite number >= 0, got {text!r}")
    return g


# one or more penalties: ``1`` or ``0,0.5,1``; each a finite number >= 0
GAMMAS = NumberList("GAMMA", float, "gamma must be a number >= 0", _penalty)


def relevance_options(f):
    """Options for relevance fields, TREC runs and the general metrics' definitions."""
    f = click.option("--both", is_flag=True, default=False,
                     help="Evaluate only rows with a relevant item and an explicit negative "
                          "(label < 0): the sign-aware paper's 'Both P&N' subset.")(f)
    f = click.option("--no-relevant", type=click.Choice(NO_RELEVANT_POLICIES), default=None,
                     help="Instances without a relevant item: 'skip' leaves them out of "
                          "each metric's mean and counts them (default), 'zero' averages "
                          "them in as 0 (trec_eval, ranx, scikit-learn).")(f)
    f = click.option("--recall-norm", type=click.Choice(RECALL_NORMS), default=None,
                     help="Recall@K divides by R, the relevant items (trec_eval recall_K; "
                          "default 'relevant') or by min(K, R) ('min', LensKit).")(f)
    f = click.option("--precision-norm", type=click.Choice(PRECISION_NORMS), default=None,
                     help="Precision@K: each row's hits over K, averaged (default 'K'), or "
                          "'micro': the sum of the hits over the sum of min(K, R) "
                          "(implicit).")(f)
    f = click.option("--relevant-scores", type=click.Choice(RELEVANT_SCORES), default=None,
                     help="'positive': Precision, Recall's hits, MRR and MAP count a "
                          "relevant item only when its score is > 0, in its place in the "
                          "ranking (torchmetrics); Recall still divides by every relevant "
                          "item. Default 'any'.")(f)
    f = click.option("--ap-norm", type=click.Choice(AP_NORMS), default=None,
                     help="MAP@K divides by R (trec_eval map_cut; default) or by "
                          "min(K, R).")(f)
    f = click.option("--short-list", type=click.Choice(SHORT_LIST_POLICIES), default=None,
                     help="Rows with fewer than K candidates: 'pad' keeps K (zero-gain "
                          "padding; Precision divides by K; default), 'truncate' evaluates "
                          "at K = n, 'skip' leaves them out.")(f)
    f = click.option("--gamma", "gamma", type=GAMMAS, multiple=True, metavar="GAMMA",
                     help="Penalty of an explicit negative in SHR, SRecall, SDCG and SNDCG "
                          "(default 1). Several values (--gamma 0 0.5 1 2) give one row per "
                          "gamma: the gamma-sensitivity table.")(f)
    f = click.option("--log-base", type=float, default=2.0, show_default=True, metavar="B",
                     help="Base of --discount logb (> 1).")(f)
    f = click.option("--alpha", type=float, default=1.0, show_default=True,
                     help="Exponent of --discount power (i^-alpha).")(f)
    f = click.option("--discount", type=click.Choice(DISCOUNTS), default=None,
                     help="DCG family position discount: log2 1/log2(i+1) (default); "
                          "power i^-alpha; "
                          "news 1/(1+log2(i)^1.5); linear (K-i+1)/K; logb 1/max(1, log_B(i)) "
                          "(Jarvelin & Kekalainen, --log-base B).")(f)
    f = click.option("--gain", type=click.Choice(GAIN_CHOICES), default=None,
                     help="DCG/NDCG gain of a label: linear (the label; default) or "
                          "exponential (2^label - 1).")(f)
    f = click.option("--convention", type=click.Choice(CONVENTION_NAMES), default=None,
                     metavar="NAME",
                     help="Metric definitions of a library (" + ", ".join(CONVENTION_NAMES)
                          + "): its default metrics at each "
                          "--k, AP normalisation, short-list policy, gain, discount and "
                          "how instances without a relevant item count (see "
                          "docs/reproducing.md#metric-conventions). 'paper' is tieeval's "
                          "defaults. Options given "
                          "explicitly override it.")(f)
    f = click.option("--depth", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Evaluate only the top N documents of each ranking (trec_eval "
                          "-M N). Not with --judged-only.")(f)
    f = click.option("--relevance-level", type=click.IntRange(min=1), default=None,
                     metavar="N",
                     help="A label counts as relevant from N up (trec_eval -l N; default: "
                          "any label > 0). Gains keep the label's value.")(f)
    f = click.option("--judged-only", is_flag=True, default=False,
                     help="TREC runs: drop retrieved documents without a judgement (or "
                          "judged below 0) before ranking, as trec_eval -J does; the "
                          "tie-aware value stays exact. With --depth N the ranking is "
                          "cut at N first, as trec_eval -J -M N cuts it.")(f)
    f = click.option("--missing-queries", type=click.Choice(MISSING_QUERIES), default=None,
                     help="TREC runs: judged queries the run does not answer. 'skip' "
                          "leaves them out (default; trec_eval's default); 'zero' averages "
                          "them in as 0 in every column (trec_eval -c).")(f)
    f = click.option("--qrels", type=click.Path(dir_okay=False), default=None,
                     metavar="QRELS", callback=file_only,
                     help="TREC qrels: every FILE is then a TREC run (qid Q0 docno rank "
                          "score tag), one row per query; 'original' is trec_eval's order "
                          "(score, then docno, descending).")(f)
    f = click.option("--labels", "labels_file", type=click.Path(dir_okay=False),
                     default=None, metavar="FILE.npy", callback=file_only,
                     help="Relevance labels from a separate .npy (np.save), one per "
                          "score: an (instances, candidates) array aligned with each "
                          "FILE's rows and columns; >0 relevant with that gain, 0 "
                          "unobserved, <0 explicit negative.")(f)
    for kind, what in (("items", "candidate ids, for the duplicate check"),
                       ("negatives", "per-row column indices of explicit negatives"),
                       ("positives", "per-row column indices of relevant candidates"),
                       ("labels", "per-candidate relevance labels (>0 relevant with that "
                                  "gain, 0 unobserved, <0 explicit negative)")):
        f = click.option(f"--{kind}-column", default=kind, show_default=True, metavar="NAME",
                         help=f"Field with {what}.")(f)
    return f


def split_relevance(kwargs: dict) -> tuple[dict, RelOptions | None, bool]:
    """``(reader field names, RelOptions or None for all defaults, gamma given)``."""
    fields = {name: kwargs.pop(f"{name}_column", name)
              for name in ("labels", "positives", "negatives", "items")}
    fields.update({"qrels": kwargs.pop("qrels", None),
                   "missing_queries": kwargs.pop("missing_queries", None),
                   "judged_only": kwargs.pop("judged_only", False),
                   "labels_file": kwargs.pop("labels_file", None)})
    if fields["qrels"] is None:
        given = [name for name, on in (("--missing-queries", fields["missing_queries"]),
                                       ("--judged-only", fields["judged_only"])) if on]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise click.UsageError(f"{' and '.join(given)} only {verb} to TREC runs (give "
                                   "--qrels QRELS)")
    gammas = [g for group in kwargs.pop("gamma", ()) or () for g in group]
    labelled = {name: kwargs.pop(name) for name in REL_KEYWORDS if name in kwargs}
    options = rel_options(None, {**labelled, "gamma": tuple(gammas) or 1.0})
    return fields, options, bool(gammas)


def gamma_warning(metrics) -> None:
    """Say so when --gamma was given but no chosen metric depends on it."""
    from tieeval.metrics.registry import REGISTRY
    if not any(REGISTRY[m.name].signed for m in metrics or ()):
        say("Warning: --gamma only changes SHR, SRecall, SDCG and SNDCG, and none of "
            "them is selected (add e.g. -m SNDCG@20)")
