"""Inferred average precision (trec_eval infAP; Yilmaz & Aslam, CIKM 2006).

    infAP = (1/R) sum_{retrieved relevant r} e_r,   e_r = 1 at the first place, else
    e_r = 1/(j+1) + (j/(j+1)) ((b + u + v)/j) ((b + eps)/(b + u + 2 eps))

with j the 0-based place of r, ``b`` the relevant items above it, ``u`` the judged
non-relevant ones (``0 <= label < level``), ``v`` the ones in the pool but unjudged (a
negative qrels judgement) and ``eps = 1e-5``; items outside the pool (unjudged) only take
places. Without sampled judgements (no negative judgement) infAP is AP.

The expectation under uniform random tie-breaking is exact: ``e_r`` depends only on r's
place and on how many relevant, judged non-relevant, pooled-unjudged and unpooled items
lie above it, summed exactly over every composition
(:func:`placement.item_expectation`, within its work limit; a row beyond it is NaN and
the dataset's tie-aware figure null, never a sample). The variance is not computed (the
tie-aware sd is null). first / last rank every tie block by label descending / ascending,
judged before unjudged among equal labels.

Reference: E. Yilmaz & J. A. Aslam, Estimating average precision with incomplete and
imperfect judgments, CIKM 2006; trec_eval m_infap.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.placement import item_expectation, item_reason, row_cumsum
from tieeval.metrics.measures.protocol import (
    BlockTable,
    Bools,
    Closed,
    Floats,
    Numbers,
    TableEvaluation,
)

#: trec_eval's INFAP_EPSILON (trec_eval.h)
INFAP_EPSILON = 1e-5

_REL, _NONREL, _POOLED, _UNPOOLED = 0, 1, 2, 3


def _term(pos: np.ndarray, rel_above: np.ndarray, nonrel_above: np.ndarray,
          pooled_above: np.ndarray) -> np.ndarray:
    j = np.asarray(pos, dtype=np.float64)
    safe = np.where(j > 0, j, 1.0)
    eps = INFAP_EPSILON
    e = (1.0 / (j + 1.0) + (j / (j + 1.0))
         * ((rel_above + nonrel_above + pooled_above) / safe)
         * ((rel_above + eps) / (rel_above + nonrel_above + 2.0 * eps)))
    return np.where(j > 0, e, 1.0)


def _classes(b: BlockTable, lab: Floats, judged: Bools) -> np.ndarray:
    rel = b.relevant(lab)
    return np.where(rel, _REL, np.where(judged, _NONREL, np.where(lab < 0, _POOLED,
                                                                   _UNPOOLED)))


@dataclass(frozen=True)
class InferredAP(Measure):
    """trec_eval's infAP; exact E within the work limit, no variance."""

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        cls = _classes(b, b.lab_first, b.judged_first)

        def f(rows: np.ndarray, pos: np.ndarray, above: np.ndarray, c: int) -> np.ndarray:
            return _term(pos, above[_REL], above[_NONREL], above[_POOLED])

        e = item_expectation(b, cls, 4, (_REL,), f, ev.kc)
        return e / ev.R, None, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        cls = _classes(b, lab, self.judged_mask(judged))
        counts = [row_cumsum(b, (cls == c).astype(np.float64), inclusive=False)
                  for c in (_REL, _NONREL, _POOLED)]
        hit = (cls == _REL) & ev.in_k
        term = np.where(hit, _term(b.pos, *counts), 0.0)
        return np.bincount(b.row, weights=term, minlength=b.rows) / ev.R

    def tie_aware_reason(self) -> str:
        return item_reason(self.name)


INFAP = InferredAP(
    "InfAP", "none",
    "inferred average precision (trec_eval infAP; Yilmaz & Aslam 2006): AP estimated "
    "from sampled judgements, a negative judgement meaning pooled but not judged",
    names={"tieeval": ("InfAP",), "trec_eval": ("infAP",)},
    needs=frozenset({"labels", "judged", "every_position"}), has_variance=False,
    orders=BY_LABELS_AND_JUDGED)
