"""Judged@K: the share of the top K that is judged (ir_measures Judged@K; divides by K).

The judged items among the ``m_t`` places of a tie block inside the top K are
hypergeometric, as Precision's relevant items (docs/METRICS.md 6) with ``jd_t`` judged
items per block. first / last put judged items first / last inside every tie (its maximum
and minimum; the label orderings do not order it).

Reference: ir_measures' Judged (S. MacAvaney et al., ECIR 2022).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import BY_JUDGED, Measure


@dataclass(frozen=True)
class JudgedShare(Measure):
    """``|judged in the top K| / K``."""

    def closed(self, ev):
        """E[#judged in the top K] / K: each block contributes ``jd_t m_t / n_t`` (the
        hypergeometric mean), as Precision does with relevant items."""
        e, v, d = ev.hits_moments(ev.b.jd_t)
        k = ev.k_safe()
        return e / k, v / k ** 2, d

    def realise(self, ev, lab, judged):
        hits = np.bincount(ev.b.row[judged & ev.in_k], minlength=ev.b.rows)
        return hits / ev.k_safe()


JUDGED = JudgedShare(
    "Judged", "required",
    "share of the top K that is judged (ir_measures Judged@K; divides by K)",
    names={"tieeval": ("Judged",), "ir_measures": ("Judged",)},
    needs=frozenset({"labels", "judged", "cutoff"}), orders=BY_JUDGED)
