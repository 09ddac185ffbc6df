"""Metric conventions: presets that set the metric definitions to those of a library.

``--convention NAME`` (``convention=`` in the API) chooses the default metrics at each
``--k`` and the options of :class:`~tieeval.metrics.options.RelOptions` (gain, discount,
short-list policy, AP normalisation, how instances without a relevant item count) so that
the figures are the ones that library prints for the same ranking. An option given
explicitly (``--ap-norm R``, ``-m NDCG@10``) overrides the preset.

* ``paper``: tieeval's defaults (HR@K, NDCG@K, MRR; labelled dumps add Recall@K and MAP).
* ``recbole``: RecBole's ``recbole/evaluator/metrics.py``: Hit@K, MRR@K, MAP@K with
  AP divided by min(K, R), Precision@K divided by K, NDCG@K (binary gain, log2), Recall@K;
  users without a test item are not evaluated.
* ``trec_eval``: ``map``, ``recip_rank``, ``P_K``, ``recall_K``, ``ndcg_cut_K`` and
  ``map_cut_K`` (AP divided by R); a judged query without a relevant document counts 0.
* ``ranx``: ``hit_rate@K``, ``mrr@K``, ``map@K`` (divided by R), ``precision@K`` (divided
  by K), ``recall@K``, ``ndcg@K`` (Järvelin's linear gain); a query without a relevant
  document scores 0.
* ``sklearn``: ``ndcg_score`` at each K and over the whole list (linear gain, log2); a row
  whose true relevances are all 0 scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelOptions
from tieeval.metrics.registry import check_k


@dataclass(frozen=True)
class Convention:
    """A library's metric definitions: ``metrics`` are templates (``"MAP@K"`` once per K,
    ``"MRR"`` once), metric-major; ``options`` the :class:`RelOptions` fields it sets."""

    name: str
    library: str
    metrics: tuple = ()
    options: tuple = ()

    def default_metrics(self, ks) -> list[Metric]:
        ks = [check_k(k) for k in ks]
        out: list[Metric] = []
        for template in self.metrics:
            if template.endswith("@K"):
                out += [Metric.parse(f"{template[:-2]}@{k}") for k in ks]
            else:
                out.append(Metric.parse(template))
        return list(dict.fromkeys(out))


_PLAIN = (("gain", "linear"), ("discount", "log2"), ("short_list", "pad"))
CONVENTIONS = {c.name: c for c in (
    Convention("paper", "tieeval's defaults"),
    Convention("recbole", "RecBole (recbole/evaluator/metrics.py)",
               ("HR@K", "MRR@K", "MAP@K", "Precision@K", "NDCG@K", "Recall@K"),
               _PLAIN + (("ap_norm", "min"), ("no_relevant", "skip"))),
    Convention("trec_eval", "trec_eval (and pytrec_eval)",
               ("MAP", "MRR", "Precision@K", "Recall@K", "NDCG@K", "MAP@K"),
               _PLAIN + (("ap_norm", "R"), ("no_relevant", "zero"))),
    Convention("ranx", "ranx",
               ("HR@K", "MRR@K", "MAP@K", "Precision@K", "Recall@K", "NDCG@K"),
               _PLAIN + (("ap_norm", "R"), ("no_relevant", "zero"))),
    Convention("sklearn", "scikit-learn (ndcg_score)", ("NDCG@K", "NDCG"),
               _PLAIN + (("no_relevant", "zero"),)),
)}
CONVENTION_NAMES = tuple(CONVENTIONS)


def convention(name) -> Convention | None:
    """The convention called ``name`` (None: none asked for)."""
    if name is None:
        return None
    found = CONVENTIONS.get(name.lower().replace("-", "_")) if isinstance(name, str) else None
    if found is None:
        raise ParameterError(f"unknown convention {name!r}; choose from "
                             f"{', '.join(CONVENTION_NAMES)}")
    return found


def preset_options(name, **given) -> dict:
    """The :class:`RelOptions` keyword arguments of convention ``name`` with ``given``
    over them; a None in ``given`` means "not given" (the preset's value, else the
    default)."""
    conv = convention(name)
    out = dict(conv.options) if conv is not None else {}
    out.update({key: value for key, value in given.items() if value is not None})
    if conv is not None and conv.name != "paper":
        out["convention"] = conv.name
    return out


def convention_metrics(options: RelOptions | None, ks) -> list[Metric] | None:
    """The default metrics of the convention recorded in ``options`` (None: no convention
    or ``paper``, whose defaults are the dump kind's own)."""
    conv = convention(getattr(options, "convention", None))
    if conv is None or not conv.metrics:
        return None
    return conv.default_metrics(ks)
