"""Unjudged at K: the share of the top K without a judgement (trec_eval unj_K).

    unj@K = |unjudged in the top min(K, n, depth)| / K

An item is unjudged when the qrels do not list it or list it with a negative judgement
(trec_eval's "in the pool, unjudged"); places past the retrieved list count as judged
(m_unjudged.c). It is a "red flag" measure, defined on every row (with or without a
relevant item); under ``--judged-only`` (trec_eval ``-J``) it is 0.

The unjudged items among the ``m_t`` places of a tie block inside the top K are
hypergeometric (docs/METRICS.md 6, with ``n_t - jd_t`` unjudged items per block), so E and
Var are exact. The label orderings do not order judged items against unjudged ones of the
same label, so first / last are the largest and smallest counts the straddled block
allows: first is the most unjudged items the tie orders can put in the top K (its maximum,
as for every measure), last the fewest.

Reference: trec_eval m_unjudged.c (I. Soboroff, 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation
from tieeval.metrics.measures.series import hypergeometric_extremes


@dataclass(frozen=True)
class Unjudged(Measure):
    """``|unjudged in the top K| / K``."""

    def defined(self, ev: TableEvaluation) -> Bools:
        return np.ones(ev.b.rows, dtype=bool)  # exists with or without a relevant item

    def _unjudged_t(self, ev: TableEvaluation) -> Ints:
        return ev.b.bsz - ev.b.jd_t

    def closed(self, ev: TableEvaluation) -> Closed:
        e, var, decided = ev.hits_moments(self._unjudged_t(ev))
        k = ev.k_safe()
        return e / k, var / k ** 2, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        mask = ~self.judged_mask(judged) & ev.in_k
        return np.bincount(b.row[mask], minlength=b.rows) / ev.k_safe()

    def extremes(self, ev: TableEvaluation) -> tuple[Floats, Floats] | None:
        most, least = hypergeometric_extremes(ev.b, ev.m_t, self._unjudged_t(ev))
        k = ev.k_safe()
        return most / k, least / k


UNJUDGED = Unjudged(
    "Unjudged", "required",
    "share of the top K without a judgement (trec_eval unj_K; divides by K, places past the "
    "retrieved list count as judged)",
    names={"tieeval": ("Unjudged",), "trec_eval": ("unj",)},
    needs=frozenset({"labels", "judged", "cutoff", "every_position"}),
    orders=BY_LABELS_AND_JUDGED)
