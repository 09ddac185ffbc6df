"""R-precision: relevant items in the top R, divided by R (trec_eval Rprec).

    Rprec = |relevant in the top min(R, n, depth)| / R

The count is hypergeometric in the block the cut at R straddles (docs/METRICS.md 6 with
K = R), so E and Var are Recall's with a per-row cutoff.

Reference: trec_eval m_Rprec.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.series import hypergeometric_hits


@dataclass(frozen=True)
class RPrecision(Measure):
    """Relevant items in the top R, over R."""

    def _cut(self, ev) -> np.ndarray:
        """Per row the top min(R, n, depth) positions: trec_eval's ``num_to_look_at``."""
        return np.minimum(ev.b.n_pos, ev.kc)

    def closed(self, ev):
        b = ev.b
        m_t = np.clip(self._cut(ev)[b.brow] - b.ba, 0, b.bsz)
        e, var, decided = hypergeometric_hits(b, m_t, b.p_t)
        return e / ev.R, var / ev.R ** 2, decided

    def realise(self, ev, lab, judged):
        b = ev.b
        inside = b.relevant(lab) & (b.pos < self._cut(ev)[b.row])
        return np.bincount(b.row[inside], minlength=b.rows) / ev.R


RPREC = RPrecision(
    "Rprec", "none",
    "R-precision: relevant items in the top R divided by R, R the row's number of relevant "
    "items (trec_eval Rprec)",
    names={"tieeval": ("Rprec",), "trec_eval": ("Rprec",), "ir_measures": ("Rprec",),
           "ranx": ("r-precision",)},
    needs=frozenset({"labels"}))
