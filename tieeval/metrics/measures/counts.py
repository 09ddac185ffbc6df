"""trec_eval's per-query counts: NumRet, NumRel, NumRelRet and NumQ, summed over rows.

    NumRet    = min(n, depth)             retrieved items
    NumRel    = R                         relevant items, retrieved or not
    NumRelRet = |relevant in the top min(n, depth)|
    NumQ      = 1

Each exists for every row, and the dataset figure is the sum (as trec_eval prints them).
Only NumRelRet can depend on the tie order (a depth cut through a tie block): it is
hypergeometric, as Recall's numerator (docs/METRICS.md 6); the others are constants.

Reference: trec_eval m_num_ret.c, m_num_rel.c, m_num_rel_ret.c, m_num_q.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure


@dataclass(frozen=True)
class Count(Measure):
    """A per-row count; ``counts`` is ``"retrieved"``, ``"relevant"``,
    ``"relevant_retrieved"`` or ``"rows"``."""

    counts: str = "rows"

    def defined(self, ev) -> np.ndarray:
        return np.ones(ev.b.rows, dtype=bool)  # a count exists for every row

    def _constant(self, ev) -> np.ndarray:
        if self.counts == "retrieved":
            return ev.kc.astype(np.float64)  # min(n, depth)
        if self.counts == "relevant":
            return ev.b.n_pos.astype(np.float64)
        return np.ones(ev.b.rows)

    def closed(self, ev):
        if self.counts == "relevant_retrieved":
            return ev.hits_moments(ev.b.p_t)
        return self._constant(ev), np.zeros(ev.b.rows), np.zeros(ev.b.rows, dtype=bool)

    def realise(self, ev, lab, judged):
        if self.counts == "relevant_retrieved":
            return ev.hits(lab, +1)
        return self._constant(ev)


NUM_RET = Count(
    "NumRet", "none", "number of retrieved items (trec_eval num_ret); the dataset figure is "
    "the sum over rows", aggregate="sum",
    names={"tieeval": ("NumRet",), "trec_eval": ("num_ret",), "ir_measures": ("NumRet",)},
    needs=frozenset(), counts="retrieved")

NUM_REL = Count(
    "NumRel", "none", "number of relevant items, retrieved or not (trec_eval num_rel); the "
    "dataset figure is the sum over rows", aggregate="sum",
    names={"tieeval": ("NumRel",), "trec_eval": ("num_rel",), "ir_measures": ("NumRel",)},
    needs=frozenset({"labels"}), counts="relevant")

NUM_REL_RET = Count(
    "NumRelRet", "none", "number of relevant items retrieved (trec_eval num_rel_ret); the "
    "dataset figure is the sum over rows", aggregate="sum",
    names={"tieeval": ("NumRelRet",), "trec_eval": ("num_rel_ret",),
           "ir_measures": ("NumRelRet",)},
    needs=frozenset({"labels"}), counts="relevant_retrieved")

NUM_Q = Count(
    "NumQ", "none", "number of rows (queries) evaluated (trec_eval num_q): 1 per row, "
    "summed", aggregate="sum",
    names={"tieeval": ("NumQ",), "trec_eval": ("num_q",), "ir_measures": ("NumQ",)},
    needs=frozenset(), counts="rows")
