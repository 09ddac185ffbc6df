"""Recall@K, Precision@K and relative precision: relevant items in the top K, divided by R,
by K or by min(K, R).

Under uniform random tie-breaking the number of relevant items among the ``m_t`` places of
tie block t inside the top K is hypergeometric (docs/METRICS.md 6), so with ``p_t``
relevant items among the block's ``n_t``

    E[hits@K]   = sum_t p_t m_t / n_t
    Var[hits@K] = sum_t m_t (n_t - m_t) p_t (n_t - p_t) / (n_t^2 (n_t - 1))

(only the block straddling the cutoff is random). Recall divides by R, the row's relevant
items (ranked or not), or with ``recall_norm="min"`` by ``min(K, R)`` (LensKit's Recall@K,
with the metric's own K, not ``min(K, n)``); Precision by K, also when the row has fewer
than K candidates (TREC P@K; ``short_list="truncate"`` makes it ``min(K, n)``). Both are
constants, so E scales by 1/denominator and Var by its square. With
``relevant_scores="positive"`` a relevant item scored <= 0 is no hit (the table reads its
label as 0, :class:`~tieeval.kernels.tie_blocks.RelBatch` ``gate``), while R still counts
it: torchmetrics' ``retrieval_recall`` and ``retrieval_precision``.

Relative precision at K is precision at K over the best precision possible at K (trec_eval
relative_P_K):

    relative_P@K = |relevant in the top min(K, depth)| / min(K, R)

which is precision up to K = R and recall past it. Places past the retrieved list count as
non-relevant (m_rel_P.c); a row without a relevant item has none (0 under trec_eval's
convention, as trec_eval prints). The count is hypergeometric in the block the cut at K
straddles (docs/METRICS.md 6), so E and Var are Precision@K's over min(K, R) instead of K.

Reference: F. McSherry & M. Najork, ECIR 2008; trec_eval m_P.c, m_recall.c, m_rel_P.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation


@dataclass(frozen=True)
class RecallMeasure(Measure):
    """Relevant items in the top K divided by R, or by min(K, R): by :meth:`norm`, a
    constant per row, so E and Var scale by it (Precision and RelativeP divide by theirs)."""

    def norm(self, ev: TableEvaluation) -> Floats:
        """R, or min(K, R) with ``recall_norm="min"``."""
        if ev.m.recall_norm == "min" and ev.m.k is not None:
            return np.minimum(float(ev.m.k), ev.R)
        return ev.R

    def closed(self, ev: TableEvaluation) -> Closed:
        e, v, d = ev.hits_moments(ev.b.p_t)
        z = self.norm(ev)
        return e / z, v / z ** 2, d

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        return ev.hits(lab, +1) / self.norm(ev)


@dataclass(frozen=True)
class PrecisionMeasure(RecallMeasure):
    """Relevant items in the top K divided by K; with ``precision_norm="micro"`` by
    min(K, R), each row weighing min(K, R) in the dataset's mean: the sum of the hits
    over the sum of min(K, R) (implicit's precision@K)."""

    def norm(self, ev: TableEvaluation) -> Floats:
        if ev.m.precision_norm == "micro" and ev.m.k is not None:
            return np.minimum(float(ev.m.k), ev.R)
        return ev.k_safe()

    def weight(self, ev: TableEvaluation) -> Floats | None:
        return self.norm(ev) if ev.m.precision_norm == "micro" else None


@dataclass(frozen=True)
class RelativePrecision(RecallMeasure):
    """Relevant items in the top K over min(K, R)."""

    def norm(self, ev: TableEvaluation) -> Floats:
        return np.maximum(np.minimum(ev.k_safe(), ev.R), 1.0)


RECALL = RecallMeasure(
    "Recall", "required",
    "relevant items in the top K divided by R, the row's number of relevant items (with "
    "recall_norm=min, by min(K, R))", ("R",), frozenset({"recall_norm", "relevant_scores"}),
    names={"tieeval": ("Recall", "R"), "trec_eval": ("recall",), "ir_measures": ("R",),
           "RecBole": ("Recall",), "LensKit": ("Recall",), "Cornac": ("Recall",),
           "ranx": ("recall",)},
    needs=frozenset({"labels", "cutoff"}))

PRECISION = PrecisionMeasure(
    "Precision", "required",
    "relevant items in the top K divided by K (TREC P@K, also when K > n; with "
    "precision_norm=micro, the sum of the hits over the sum of min(K, R))", ("P",),
    frozenset({"precision_norm", "relevant_scores"}),
    names={"tieeval": ("Precision", "P"), "trec_eval": ("P",), "ir_measures": ("P",),
           "RecBole": ("Precision",), "LensKit": ("Precision",), "Cornac": ("Precision",),
           "ranx": ("precision",)},
    needs=frozenset({"labels", "cutoff"}))

RELATIVE_P = RelativePrecision(
    "RelativeP", "required",
    "relative precision: relevant items in the top K over min(K, R), the most the top K "
    "can hold (trec_eval relative_P_K)",
    names={"tieeval": ("RelativeP",), "trec_eval": ("relative_P",)},
    needs=frozenset({"labels", "cutoff"}))
