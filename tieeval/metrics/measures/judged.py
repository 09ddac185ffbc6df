"""Judged@K and Unjudged@K: the share of the top K that is judged, as ir_measures defines
it, and the share without a judgement, as trec_eval does.

ir_measures' Judged@K (its judged provider) counts the retrieved documents with a
relevance judgement, any qrels line, a negative one too, among the top K, and divides by
min(K, retrieved); every query with judgements is averaged in, whether or not one of them
is relevant. So does this measure: an item is judged when the dump marks it judged or its
label is negative (trec_eval reads a negative judgement as "in the pool but unjudged", for
bpref and ``-J``; ir_measures counts it as judged).

The judged items among the ``m_t`` places of a tie block inside the top K are
hypergeometric, as Precision's relevant items (docs/METRICS.md 6) with ``c_t`` judged
items per block. first / last put judged items first / last inside every tie (its maximum
and minimum; the label orderings do not order it). ir_measures breaks score ties by docno
ascending; a TREC run's Original here is trec_eval's order (docno descending), so the
Original column can differ from ir_measures' own figure where a tie straddles K; First,
Last and Tie-aware do not depend on a tie order.

trec_eval's unj_K:

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

Reference: ir_measures' Judged (S. MacAvaney et al., ECIR 2022), providers/judged_provider.py;
trec_eval m_unjudged.c (I. Soboroff, 2023).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from tieeval.metrics.measures.base import BY_JUDGED, BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation
from tieeval.metrics.measures.series import hypergeometric_extremes


@dataclass(frozen=True)
class JudgedShare(Measure):
    """``|judged in the top K| / min(K, n)``."""

    negatives_judged: ClassVar[bool] = True

    def defined(self, ev: TableEvaluation) -> Bools:
        """Every row with a judgement (ir_measures averages every judged query; one the run
        does not answer, a row without candidates under ``--missing-queries zero``, is 0)."""
        b = ev.b
        return (b.n_pos + b.n_judged_nonrel + b.n_neg) >= 1

    def _den(self, ev: TableEvaluation) -> Floats:
        """min(K, n): ir_measures divides by the run's length where it is shorter than K
        (1 for a row without candidates, whose count is 0)."""
        return np.maximum(np.minimum(ev.k, ev.b.n), 1).astype(np.float64)

    def closed(self, ev: TableEvaluation) -> Closed:
        """E[#judged in the top K] / min(K, n): each block contributes ``c_t m_t / n_t``
        (the hypergeometric mean), as Precision does with relevant items."""
        b = ev.b
        c_t = b.block_sum((b.judged_first | (b.lab_first < 0)).astype(np.int64))
        e, v, d = ev.hits_moments(c_t)
        den = self._den(ev)
        return e / den, v / den ** 2, d

    def realise_judged(self, ev: TableEvaluation, judged: Bools) -> Numbers:
        hits = np.bincount(ev.b.row[judged & ev.in_k], minlength=ev.b.rows)
        return hits / self._den(ev)


JUDGED = JudgedShare(
    "Judged", "required",
    "share of the top min(K, retrieved) that is judged, negative judgements included "
    "(ir_measures Judged@K)",
    names={"tieeval": ("Judged",), "ir_measures": ("Judged",)},
    needs=frozenset({"labels", "judged", "cutoff"}), orders=BY_JUDGED)


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
