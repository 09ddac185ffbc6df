"""Metric conventions: presets that set the metric definitions to those of a library.

``--convention NAME`` (``convention=`` in the API) chooses the default metrics at each
``--k`` and the options of :class:`~tieeval.metrics.options.RelOptions` so that the figures
are the ones that library prints for the same ranking. An option given explicitly
(``--ap-norm R``, ``-m NDCG@10``) overrides the preset.

Each preset is one row of :data:`CONVENTIONS`: every option it sets (:data:`OPTIONS`, all of
them, so the table reads as the definitions side by side), the library version and source
file it was checked against, and its default metrics. docs/reproducing.md prints the same
table (:func:`markdown_table`; a test compares the two), and tests/metrics/test_conventions.py
checks every row against the library itself or its formulas written out from its source.
Where a library's own numbers cannot be reproduced from a ranking, ``caveats`` says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import DEFAULT_OPTIONS, RelOptions
from tieeval.metrics.registry import check_k

#: The RelOptions fields a convention sets, in the order the docs' table shows them.
OPTIONS = ("recall_norm", "ap_norm", "short_list", "gain", "discount", "no_relevant",
           "iprec_rounding", "precision_norm", "relevant_scores")


@dataclass(frozen=True)
class Convention:
    """A library's metric definitions.

    ``metrics`` are templates (``"MAP@K"`` once per K, ``"MRR"`` once), metric-major;
    ``options`` maps every field of :data:`OPTIONS` to its value; ``library`` names the
    library with the version the preset was checked against, ``source`` the file that
    defines its metrics; ``caveats`` what of the library's own output no ranking gives;
    ``atol_grades``: the library reads a qrels grade as a whole number, with C's ``atol``
    (trec_eval's get_qrels.c: ``2.9`` -> 2), and so does a TREC run's reader under it.
    """

    name: str
    library: str
    source: str = ""
    metrics: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    caveats: str = ""
    atol_grades: bool = False

    def __post_init__(self) -> None:
        missing = set(OPTIONS) ^ set(self.options)
        if missing:  # a row of the table must say every definition
            raise ValueError(f"convention {self.name}: options {sorted(missing)} missing or "
                             "unknown")
        RelOptions(**self.options)  # every value is one RelOptions accepts

    def default_metrics(self, ks: Iterable[int]) -> list[Metric]:
        ks = [check_k(k) for k in ks]
        out: list[Metric] = []
        for template in self.metrics:
            if template.endswith("@K"):
                out += [Metric.parse(f"{template[:-2]}@{k}") for k in ks]
            else:
                out.append(Metric.parse(template))
        return list(dict.fromkeys(out))


def _options(**changed: Any) -> dict[str, Any]:
    """tieeval's defaults with ``changed`` over them."""
    return {**{name: getattr(DEFAULT_OPTIONS, name) for name in OPTIONS}, **changed}


CONVENTIONS = {c.name: c for c in (
    Convention("paper", "tieeval's defaults", "docs/METRICS.md", (), _options()),
    Convention(
        "recbole", "RecBole 1.2.1", "recbole/evaluator/metrics.py",
        ("HR@K", "MRR@K", "MAP@K", "Precision@K", "NDCG@K", "Recall@K"),
        _options(ap_norm="min"),
        "RecBole binarises labels (its NDCG and MAP see 1 for every test item): save 0/1 "
        "labels. Its Original is torch.topk's tie order: save the ranking it used "
        "(`--original given`) or use `--original topk`."),
    Convention(
        "trec_eval", "trec_eval through pytrec_eval-terrier 0.5.11", "trec_eval m_*.c",
        ("MAP", "MRR", "Precision@K", "Recall@K", "NDCG@K", "MAP@K"),
        _options(no_relevant="zero"),
        "IPrec@x (`iprec_at_recall_x`) is trec_eval 10's: its cutoff in relevant items is "
        "lround(x R). pytrec_eval bundles trec_eval 9.0.8, whose cutoff is (long)(x R + 0.9): "
        "`--convention trec_eval9` gives its figures.", atol_grades=True),
    Convention(
        "trec_eval9", "trec_eval 9.0.8 through pytrec_eval-terrier 0.5.11",
        "trec_eval 9.0.8 m_iprec_at_recall.c",
        ("MAP", "MRR", "Precision@K", "Recall@K", "NDCG@K", "MAP@K"),
        _options(no_relevant="zero", iprec_rounding="trec_eval9"),
        "trec_eval's convention with trec_eval 9.0.8's IPrec@x, the one pytrec_eval and "
        "ir_measures compute: the cutoff in relevant items is (long)(x R + 0.9), not trec_eval "
        "10's lround(x R). Every other measure is the same in both.", atol_grades=True),
    Convention(
        "ranx", "ranx 0.3.21", "ranx/metrics/*.py",
        ("HR@K", "MRR@K", "MAP@K", "Precision@K", "Recall@K", "NDCG@K"),
        _options(no_relevant="zero")),
    Convention(
        "sklearn", "scikit-learn 1.9.1 ndcg_score", "sklearn/metrics/_ranking.py",
        ("NDCG@K", "NDCG"), _options(no_relevant="zero"),
        "ndcg_score (ignore_ties=False) averages the gains of tied items: it equals the "
        "Tie-aware column, not Original."),
    Convention(
        "lenskit", "LensKit 2025.8.1", "lenskit/metrics/ranking/_hit.py, _pr.py, _dcg.py, "
        "_recip.py, _map.py",
        ("HR@K", "Precision@K", "Recall@K", "NDCG@K", "MRR@K", "MAP@K"),
        _options(recall_norm="min", ap_norm="min", short_list="truncate", discount="logb"),
        "NDCG's default gain is 1 for every test item (`gain=None`): save 0/1 labels, or "
        "compare with `NDCG(gain='rating')` for graded ones. LensKit's Precision counts a "
        "list without a test item as 0; such a list has no relevant item here and is left "
        "out, as LensKit's other metrics (NaN there) leave it out."),
    Convention(
        "cornac", "Cornac 3.0.1", "cornac/metrics/ranking.py",
        ("HR@K", "Precision@K", "Recall@K", "NDCG@K"),
        _options(),
        "Cornac's MRR and MAP have no cutoff: `-m MRR -m MAP` (full AP divided by R). Its "
        "`rank()` sorts only the top max-K items when any metric has a cutoff "
        "(np.argpartition) and leaves the rest in partition order, so its MRR of a user "
        "whose first positive lies below the largest K is not the reciprocal rank of any "
        "ranking by score. Its MAP ranks by scores with rankdata('max'): the Last column "
        "when no tie block holds two positives, and no ranking's AP when one does (all "
        "tied positives take the block's last rank and count each other). Its AUC counts "
        "a tied pair 0: the Last column of AUC. Cornac binarises ratings at "
        "rating_threshold: save 0/1 labels. NCRR and F1 are not computed."),
    Convention(
        "recommenders", "recommenders 1.2.1", "recommenders/evaluation/python_evaluation.py",
        ("Precision@K", "Recall@K", "NDCG@K", "MAP@K"),
        _options(ap_norm="min"),
        "Its tie rule is pandas' stable sort_values: tied items keep the order of the "
        "prediction DataFrame's rows, `--original stable` when they come in item-index "
        "order as in a score matrix. ndcg_at_k binarises (score_type='binary'; its natural "
        "log discount cancels in the ratio): save 0/1 labels. Its `map` (not map_at_k) "
        "divides by R: `--ap-norm R`. A user without a test item is left out."),
    Convention(
        "implicit", "implicit 0.7.3", "implicit/evaluation.pyx (ranking_metrics_at_k)",
        ("Precision@K", "MAP@K", "NDCG@K", "AUC-cut@K"),
        _options(ap_norm="min", precision_norm="micro"),
        "It scores the list model.recommend(..., N=K) returns: a heap's top K, whose "
        "choice among items tied at the cut follows no sort rule (its whole ranking, N = "
        "every item, is `--original reverse-stable`): save that list at each K as the "
        "ranking, `--original given`, one run per K. Its auc is AUC-cut@K (a pair below K "
        "counts 1/2), whose other items are every column but the user's test items, "
        "training items included: save a score for every item, -inf for the training "
        "items recommend() leaves out, not a mask that drops them. A user without a test "
        "item is left out; binary relevance: save 0/1 labels."),
    Convention(
        "torchmetrics", "torchmetrics 1.9.0", "torchmetrics/functional/retrieval/*.py",
        ("HR@K", "Recall@K", "Precision@K", "MRR@K", "MAP@K", "NDCG@K"),
        _options(ap_norm="hits", no_relevant="zero", relevant_scores="positive"),
        "Each metric ranks its own way: RetrievalNormalizedDCG averages the gains of tied "
        "items (the Tie-aware column); Precision, MRR and MAP rank with torch.topk(preds, "
        "K) at each K (`--original topk-each`); HitRate and Recall with "
        "torch.argsort(preds, descending=True) (save that ranking, `--original given`). "
        "Precision, Recall, MRR and MAP count a relevant item with preds <= 0 as not "
        "relevant (`--relevant-scores positive`; Recall still divides by every relevant "
        "item). The Retrieval* classes group rows with torch.sort(indexes), not "
        "stable: these rules are the functional API's, one query per call."),
)}
CONVENTION_NAMES = tuple(CONVENTIONS)


def convention(name: object) -> Convention | None:
    """The convention called ``name`` (None: none asked for)."""
    if name is None:
        return None
    found = CONVENTIONS.get(name.lower().replace("-", "_")) if isinstance(name, str) else None
    if found is None:
        raise ParameterError(f"unknown convention {name!r}; choose from "
                             f"{', '.join(CONVENTION_NAMES)}")
    return found


def preset_options(name: object, **given: Any) -> dict[str, Any]:
    """The :class:`RelOptions` keyword arguments of convention ``name`` with ``given``
    over them; a None in ``given`` means "not given" (the preset's value, else the
    default)."""
    conv = convention(name)
    out = dict(conv.options) if conv is not None else {}
    out.update({key: value for key, value in given.items() if value is not None})
    if conv is not None and conv.name != "paper":
        out["convention"] = conv.name
    return out


def atol_grades(options: object) -> str | None:
    """The name of the convention recorded in ``options`` (a :class:`RelOptions`, or the
    JSON's ``relevance`` dict) when it reads qrels grades with C's ``atol``, else None."""
    name = options.get("convention") if isinstance(options, dict) else getattr(
        options, "convention", None)
    conv = convention(name)
    return conv.name if conv is not None and conv.atol_grades else None


def convention_metrics(options: RelOptions | None, ks: Iterable[int]) -> list[Metric] | None:
    """The default metrics of the convention recorded in ``options`` (None: no convention
    or ``paper``, whose defaults are the dump kind's own)."""
    conv = convention(getattr(options, "convention", None))
    if conv is None or not conv.metrics:
        return None
    return conv.default_metrics(ks)


# ---------------------------------------------------------------------------------------
# the docs' table

_SHOWN = {
    ("recall_norm", "relevant"): "R", ("recall_norm", "min"): "min(K, R)",
    ("ap_norm", "R"): "R", ("ap_norm", "min"): "min(K, R)",
    ("ap_norm", "hits"): "hits in the top K",
    ("short_list", "pad"): "K", ("short_list", "truncate"): "min(K, n)",
    ("short_list", "skip"): "row left out",
    ("no_relevant", "skip"): "left out", ("no_relevant", "zero"): "0, averaged in",
    ("precision_norm", "K"): "hits / K, averaged",
    ("precision_norm", "micro"): "Σ hits / Σ min(K, R)",
    ("relevant_scores", "any"): "relevant",
    ("relevant_scores", "positive"): "not relevant (P, R's hits, MRR, MAP)",
    # a convention keeps the default log base, 2; other discounts show their names
    ("discount", "log2"): "1/log2(r + 1)", ("discount", "logb"): "1/log2(max(r, 2))",
}


def markdown_table() -> str:
    """The conventions side by side, as docs/reproducing.md shows them."""
    lines = ["| Convention | Checked against | Default metrics (per K) | Recall@K divides by "
             "| MAP@K divides by | Precision@K | P@K with fewer than K candidates divides by "
             "| Gain, discount | Instance without a relevant item "
             "| Relevant item scored <= 0 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for conv in CONVENTIONS.values():
        o = conv.options
        metrics = ", ".join(conv.metrics) if conv.metrics else (
            "HR@K, NDCG@K, MRR (labelled: + Recall@K, MAP)")
        cells = [f"`{conv.name}`", f"{conv.library} (`{conv.source}`)", metrics,
                 _SHOWN[("recall_norm", o["recall_norm"])], _SHOWN[("ap_norm", o["ap_norm"])],
                 _SHOWN[("precision_norm", o["precision_norm"])],
                 _SHOWN[("short_list", o["short_list"])],
                 f"{o['gain']}, {_SHOWN.get(('discount', o['discount']), o['discount'])}",
                 _SHOWN[("no_relevant", o["no_relevant"])],
                 _SHOWN[("relevant_scores", o["relevant_scores"])]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_caveats() -> str:
    """What of each library's own output a ranking does not give, one bullet each."""
    return "".join(f"- `{c.name}`: {c.caveats}\n" for c in CONVENTIONS.values() if c.caveats)
