"""trec_eval's per-query counts: NumRet, NumRel, NumRelRet, NumNonRelJudgedRet and NumQ,
summed over rows.

    NumRet             = min(n, depth)             retrieved items
    NumRel             = R                         relevant items, retrieved or not
    NumRelRet          = |relevant in the top min(n, depth)|
    NumNonRelJudgedRet = |judged non-relevant in the top min(n, depth)|
    NumQ               = 1

Each exists for every row, and the dataset figure is the sum (as trec_eval prints them).
Only NumRelRet and NumNonRelJudgedRet can depend on the tie order (a depth cut through a tie
block): they are hypergeometric, as Recall's numerator (docs/METRICS.md 6); the others are
constants. The label orderings do not take NumNonRelJudgedRet to its extremes (they order
relevant items, not judged ones), so its first / last are the largest and smallest counts
the straddled block allows.

Reference: trec_eval m_num_ret.c, m_num_rel.c, m_num_rel_ret.c,
m_num_nonrel_judged_ret.c, m_num_q.c.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tieeval.metrics.measures.base import BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation
from tieeval.metrics.measures.series import hypergeometric_extremes


@dataclass(frozen=True)
class Count(Measure):
    """A per-row count; ``counts`` is ``"retrieved"``, ``"relevant"``,
    ``"relevant_retrieved"``, ``"judged_nonrelevant_retrieved"`` or ``"rows"``."""

    counts: str = "rows"

    def defined(self, ev: TableEvaluation) -> Bools:
        return np.ones(ev.b.rows, dtype=bool)  # a count exists for every row

    def _constant(self, ev: TableEvaluation) -> Floats:
        if self.counts == "retrieved":
            return ev.kc.astype(np.float64)  # min(n, depth)
        if self.counts == "relevant":
            return ev.b.n_pos.astype(np.float64)
        return np.ones(ev.b.rows)

    def closed(self, ev: TableEvaluation) -> Closed:
        if self.counts == "relevant_retrieved":
            return ev.hits_moments(ev.b.p_t)
        if self.counts == "judged_nonrelevant_retrieved":
            return ev.hits_moments(ev.b.j_t)  # j_t: judged non-relevant items per block
        return self._constant(ev), np.zeros(ev.b.rows), np.zeros(ev.b.rows, dtype=bool)

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        if self.counts == "relevant_retrieved":
            return ev.hits(lab, +1)
        if self.counts == "judged_nonrelevant_retrieved":
            b = ev.b
            mask = self.judged_mask(judged) & ~b.relevant(lab) & ev.in_k
            return np.bincount(b.row[mask], minlength=b.rows).astype(np.float64)
        return self._constant(ev)

    def extremes(self, ev: TableEvaluation) -> tuple[Floats, Floats] | None:
        if self.counts == "judged_nonrelevant_retrieved":
            return hypergeometric_extremes(ev.b, ev.m_t, ev.b.j_t)
        return None


def _count(name: str, trec: str, what: str, counts: str, needs: tuple[str, ...] = ("labels",),
           ir: bool = True, **kwargs: Any) -> Count:
    """The count of ``what`` per row (trec_eval's ``trec``), summed over rows."""
    names = {"tieeval": (name,), "trec_eval": (trec,)}
    if ir:
        names["ir_measures"] = (name,)
    return Count(name, "none", f"number of {what} (trec_eval {trec}); the dataset figure is "
                 "the sum over rows", aggregate="sum", names=names, needs=frozenset(needs),
                 counts=counts, **kwargs)


NUM_RET = _count("NumRet", "num_ret", "retrieved items", "retrieved", needs=())
NUM_REL = _count("NumRel", "num_rel", "relevant items, retrieved or not", "relevant")
NUM_REL_RET = _count("NumRelRet", "num_rel_ret", "relevant items retrieved",
                     "relevant_retrieved")
NUM_NONREL_JUDGED_RET = _count(
    "NumNonRelJudgedRet", "num_nonrel_judged_ret", "judged non-relevant items retrieved",
    "judged_nonrelevant_retrieved", needs=("labels", "judged"), ir=False,
    orders=BY_LABELS_AND_JUDGED)

NUM_Q = Count(
    "NumQ", "none", "number of rows (queries) evaluated (trec_eval num_q): 1 per row, "
    "summed", aggregate="sum",
    names={"tieeval": ("NumQ",), "trec_eval": ("num_q",), "ir_measures": ("NumQ",)},
    needs=frozenset(), counts="rows")
