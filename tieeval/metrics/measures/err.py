"""Expected reciprocal rank, ERR@K (Chapelle et al. 2009; the gdeval / ir_measures
definition).

    ERR@K = sum_{r=1..K} (1/r) R_r prod_{i<r} (1 - R_i),   R_i = (2^g_i - 1) / 2^g_max

with ``g_i = max(label_i, 0)`` capped at g_max. The exact expectation under uniform random
tie-breaking is a recurrence over the tie blocks (:func:`cascade.err_expectation`), within
a work limit per row (a row beyond it is NaN and the dataset's tie-aware figure is null,
with the reason). The variance is not computed: the cascade's square couples every pair of
places of a block through the product of their survival factors, and no exact computation
within the work limits is implemented (the tie-aware sd is null).

Reference: O. Chapelle, D. Metzler, Y. Zhang & P. Grinspan, Expected reciprocal rank for
graded relevance, CIKM 2009.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.cascade import err_expectation, not_computed_reason, survival
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation

# gdeval.pl's $MAX_JUDGMENT: the g_max of ERR's stop probability (2^g - 1) / 2^g_max
GDEVAL_MAX_JUDGMENT = 4.0


@dataclass(frozen=True)
class ExpectedReciprocalRank(Measure):
    """The cascade ERR@K; exact E within the work limit, no variance."""

    def max_grade(self, ev: TableEvaluation) -> float | Floats:
        """g_max: the metric's ``max_grade``, else max(4, the largest label of the
        judgements: the batch's, else each row's, ranked or unranked); a float, or per-row
        float64 array. 4 is gdeval's MAX_JUDGMENT (TREC Web track, ir_measures' ERR@K):
        judgements up to 4 give gdeval's figures, larger grades keep R < 1."""
        if ev.m.max_grade is not None:
            return ev.m.max_grade
        if ev.b.max_grade is not None:
            return max(GDEVAL_MAX_JUDGMENT, ev.b.max_grade)
        return np.maximum(ev.b.row_max_label(), GDEVAL_MAX_JUDGMENT)

    def closed(self, ev: TableEvaluation) -> Closed:
        k = self.rank_cutoff(ev.m.k)
        k = k if ev.b.depth is None else min(k, ev.b.depth)
        e = err_expectation(ev.b, k, self.max_grade(ev))
        return np.asarray(e, dtype=np.float64), None, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        """ERR@K = sum_{r <= K} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) / 2^g_max,
        g = max(label, 0) capped at g_max (so R < 1)."""
        b = ev.b
        gmax = np.broadcast_to(np.asarray(self.max_grade(ev), dtype=np.float64), (b.rows,))
        g = np.minimum(np.maximum(lab, 0.0), gmax[b.row])
        stop = -np.expm1(-g * math.log(2.0)) * np.exp2(g - gmax[b.row])  # (2^g - 1)/2^gmax
        survive = survival(b, 1.0 - stop, np.minimum(b.n, ev.kc))  # prod_{i < r} (1 - R_i)
        w = np.where(ev.in_k, stop * survive / (b.pos + 1.0), 0.0)
        return np.bincount(b.row, weights=w, minlength=b.rows)

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason(self.name)}"


ERR = ExpectedReciprocalRank(
    "ERR", "required",
    "expected reciprocal rank (Chapelle et al. 2009, gdeval): stop probability "
    "(2^g - 1) / 2^g_max for grade g, g_max = max(4, the largest grade of the "
    "judgements); 4 is gdeval's, so judgements up to 4 give gdeval's and ir_measures' ERR",
    names={"tieeval": ("ERR",), "ir_measures": ("ERR",)},
    needs=frozenset({"labels", "cutoff", "every_position"}), has_variance=False)
