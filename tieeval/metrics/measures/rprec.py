"""R-precision and precision at multiples of R (trec_eval Rprec, Rprec_mult_x).

    Rprec        = |relevant in the top min(R, n, depth)| / R
    Rprec_mult_x = |relevant in the top min(c, n, depth)| / c,   c = (long)(x R + 0.9)

The count is hypergeometric in the block the cut straddles (docs/METRICS.md 6 with K = R
or K = c), so E and Var are Recall's with a per-row cutoff.

Reference: trec_eval m_Rprec.c, m_Rprec_mult.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import (
    Bools,
    Closed,
    Depth,
    Floats,
    Ints,
    Numbers,
    TableEvaluation,
)
from tieeval.metrics.measures.series import hypergeometric_hits


@dataclass(frozen=True)
class RPrecision(Measure):
    """Relevant items in the top R, over R."""

    def read_depth(self, k: int | float | None, r: int | Ints | None = None,
                   n: int | Ints | None = None) -> Depth:
        """The top R places (every position while R is unknown)."""
        return r

    def _cut(self, ev: TableEvaluation) -> Floats:
        """Per row the top min(R, n, depth) positions: trec_eval's ``num_to_look_at``."""
        return np.minimum(ev.b.n_pos, ev.kc)

    def _denominator(self, ev: TableEvaluation) -> Floats:
        return ev.R

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        m_t = np.clip(self._cut(ev)[b.brow] - b.ba, 0, b.bsz)
        e, var, decided = hypergeometric_hits(b, m_t, b.p_t)
        c = self._denominator(ev)
        return e / c, var / c ** 2, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        inside = b.relevant(lab) & (b.pos < self._cut(ev)[b.row])
        return np.bincount(b.row[inside], minlength=b.rows) / self._denominator(ev)


RPREC = RPrecision(
    "Rprec", "none",
    "R-precision: relevant items in the top R divided by R, R the row's number of relevant "
    "items (trec_eval Rprec)",
    names={"tieeval": ("Rprec",), "trec_eval": ("Rprec",), "ir_measures": ("Rprec",),
           "ranx": ("r-precision",)},
    needs=frozenset({"labels"}))


def _cutoff(x: float, r: int | np.ndarray) -> Ints:
    """trec_eval's cutoff in documents: (long) (x * num_rel + 0.9), in double arithmetic."""
    return np.floor(x * np.asarray(r).astype(np.float64) + 0.9).astype(np.int64)


@dataclass(frozen=True)
class RPrecisionMultiple(RPrecision):
    """Precision at a multiple x of R (trec_eval Rprec_mult_x; the module docstring), 0
    when c = 0; places past the retrieved list count as non-relevant, as in
    m_Rprec_mult.c."""

    def read_depth(self, k: int | float | None, r: int | Ints | None = None,
                   n: int | Ints | None = None) -> Depth:
        """The top c = (long)(x R + 0.9) places (every position while R is unknown)."""
        if r is None:
            return None
        return _cutoff(0.0 if k is None else float(k), r)

    def _c(self, ev: TableEvaluation) -> Ints:
        return _cutoff(0.0 if ev.m.level is None else float(ev.m.level), ev.b.n_pos)

    def _cut(self, ev: TableEvaluation) -> Floats:
        return np.minimum(self._c(ev), ev.kc)

    def _denominator(self, ev: TableEvaluation) -> Floats:
        return np.maximum(self._c(ev), 1).astype(np.float64)  # c = 0: the count is 0 too


RPREC_MULT = RPrecisionMultiple(
    "RprecMult", "level",
    "precision at x R documents, R the row's number of relevant items (trec_eval "
    "Rprec_mult_x; x >= 0, its cutoff (long)(x R + 0.9))",
    names={"tieeval": ("RprecMult",), "trec_eval": ("Rprec_mult",)},
    needs=frozenset({"labels", "level"}), level_max=float("inf"))
