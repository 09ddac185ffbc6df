"""Relative precision at K: precision at K over the best precision possible at K (trec_eval
relative_P_K).

    relative_P@K = |relevant in the top min(K, depth)| / min(K, R)

which is precision up to K = R and recall past it. Places past the retrieved list count as
non-relevant (m_rel_P.c); a row without a relevant item has none (0 under trec_eval's
convention, as trec_eval prints). The count is hypergeometric in the block the cut at K
straddles (docs/METRICS.md 6), so E and Var are Precision@K's over min(K, R) instead of K.

Reference: trec_eval m_rel_P.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.protocol import Floats, TableEvaluation
from tieeval.metrics.measures.recall import RecallMeasure


@dataclass(frozen=True)
class RelativePrecision(RecallMeasure):
    """Relevant items in the top K over min(K, R)."""

    def norm(self, ev: TableEvaluation) -> Floats:
        return np.maximum(np.minimum(ev.k_safe(), ev.R), 1.0)


RELATIVE_P = RelativePrecision(
    "RelativeP", "required",
    "relative precision: relevant items in the top K over min(K, R), the most the top K "
    "can hold (trec_eval relative_P_K)",
    names={"tieeval": ("RelativeP",), "trec_eval": ("relative_P",)},
    needs=frozenset({"labels", "cutoff"}))
