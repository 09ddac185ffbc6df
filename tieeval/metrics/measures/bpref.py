"""bpref: binary preference over the judged items (trec_eval bpref).

    bpref = (1/R) sum_{retrieved relevant r} (1 - min(J_r, R) / D)

with ``J_r`` the judged non-relevant items above r and ``D = min(judged non-relevant, R)``
(1 where that is 0: every retrieved relevant item then scores 1). The expectation under
uniform random tie-breaking is exact (see :meth:`Bpref.closed`); its variance couples the
Variance (exact when no depth cut runs through a tie block holding a relevant item).
``J_r = Jb_t + X_r``, with ``Jb_t`` the judged non-relevant items in the blocks above r's
block t (fixed by the scores) and ``X_r`` those of its own block above it, so ``R bpref``
is a sum of one term per block, each depending on its own block's order only; the
variance is the sum of the blocks'. Inside a wholly retrieved block with ``p`` relevant and
``j`` judged non-relevant items, each ``X_r`` is uniform on ``0..j`` and two relevant items
give the pair ``(min, max)`` uniform on ``{0 <= x <= y <= j}``, so with
``h(x) = min(Jb + x, R)`` and ``s^2`` its variance over that uniform ``x``,

    Var_t = p (j + 1 + p) / (j + 2) * s^2 / D^2

(``Cov = s^2 / (j + 2)`` between two of the block's items). A block cut by the depth
leaves the row's variance NaN (not computed), and the dataset's sd null.

Reference: C. Buckley & E. Voorhees, Retrieval evaluation with incomplete information,
SIGIR 2004; trec_eval m_bpref.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.geometric import Spread, geometric_reason, spread
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation
from tieeval.util.ranges import expand


def sum_min(a: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``sum_{y=a}^{a+c-1} min(y, r)`` for float64 integers a, c >= 0, r (bpref's sums)."""
    below = np.clip(r - a, 0.0, c)  # the terms y < r
    value: np.ndarray = below * a + below * (below - 1.0) / 2.0 + (c - below) * r
    return value


@dataclass(frozen=True)
class Bpref(Measure):
    """trec_eval's bpref; exact E and (without a depth cut through a tie) exact Var."""

    def _norm(self, ev: TableEvaluation) -> Floats:
        """D = min(judged non-relevant of the row, R), 1 where it is 0 (then no judged
        non-relevant item exists and every retrieved relevant item scores 1)."""
        b = ev.b
        return np.maximum(np.minimum(b.n_judged_nonrel, b.n_pos), 1).astype(np.float64)

    def closed(self, ev: TableEvaluation) -> Closed:
        """Exact E[bpref] under uniform random tie-breaking (no closed-form variance).

        bpref = (1/R) sum over retrieved relevant items of ``f(J) = 1 - min(J, R) / D``,
        J the judged non-relevant items above the item, D = min(judged non-relevant, R)
        (trec_eval m_bpref.c; f(0) = 1). Take a relevant item of tie block t, with
        ``Jb`` judged non-relevant items in the blocks above and ``j`` in its own block.
        Only its order relative to those ``j`` items matters for J, and that order is
        uniform: J = Jb + X with X uniform on 0..j. A block wholly retrieved contributes

            p_t (1 - S(Jb, j + 1) / ((j + 1) D)),  S(a, c) = sum_{y=a}^{a+c-1} min(y, R),

        in O(1). A block cut by the cutoff (the depth) after its first m items: the
        item and the j judged non-relevant items occupy j + 1 uniform positions of the
        block, the item the (X+1)-th of them, so ``P(X = x, item retrieved) =
        P(H > x) / (j + 1)`` with H ~ Hypergeometric(n_t, m, j + 1) the number of those
        positions among the first m. Summing over x,

            p_t / (j + 1) * E[G(H)],  G(h) = h - S(Jb, h) / D,

        which is computed from the pmf of H (one cut block per row).
        """
        b = ev.b
        R = b.n_pos.astype(np.float64)
        D = self._norm(ev)
        jb = b.within_row_exclusive(b.j_t).astype(np.float64)
        j = b.j_t.astype(np.float64)
        p = b.p_t.astype(np.float64)
        n = b.bsz
        m = ev.m_t
        rows = b.brow
        whole = (m == n) & (p > 0)
        term = np.zeros(b.bst.size)
        term[whole] = p[whole] * (1.0 - sum_min(jb[whole], j[whole] + 1.0, R[rows[whole]])
                                  / ((j[whole] + 1.0) * D[rows[whole]]))
        cut = np.flatnonzero((m > 0) & (m < n) & (p > 0))
        if cut.size:
            from scipy.stats import hypergeom

            draws = b.j_t[cut] + 1
            lo = np.maximum(0, draws - (n[cut] - m[cut]))
            hi = np.minimum(m[cut], draws)
            width = hi - lo + 1
            h, which = expand(lo, width)
            pmf = hypergeom.pmf(h, n[cut][which], m[cut][which], draws[which])
            t = cut[which]
            g = h - sum_min(jb[t], h.astype(np.float64), R[rows[t]]) / D[rows[t]]
            eg = np.bincount(which, weights=pmf * g, minlength=cut.size)
            term[cut] = p[cut] / draws * eg
        e = ev.row_sum_blocks(term) / ev.R
        return e, self._variance(ev, whole, cut, jb, j, p, R, D), None

    def _variance(self, ev: TableEvaluation, whole: np.ndarray, cut: np.ndarray, jb: np.ndarray,
                  j: np.ndarray, p: np.ndarray, R: np.ndarray, D: np.ndarray) -> np.ndarray:
        """Per row the exact variance of bpref (the module docstring), NaN for a row where
        the depth cuts a tie block holding a relevant item."""
        b = ev.b
        rows = b.brow
        c = j[whole] + 1.0  # the values x = 0..j
        r, jb_w = R[rows[whole]], jb[whole]
        below = np.clip(r - jb_w, 0.0, c)  # the x with Jb + x < R: consecutive integers
        w1 = below / c
        # h is a mixture: uniform on Jb..Jb+below-1 (weight w1), the constant R (1 - w1)
        mean1 = jb_w + (below - 1.0) / 2.0
        s2 = (w1 * (below * below - 1.0) / 12.0
              + w1 * (1.0 - w1) * (mean1 - r) ** 2)
        s2 = np.where(below > 0, s2, 0.0)
        pw = p[whole]
        var_t = np.zeros(b.bst.size)
        var_t[whole] = pw * (c + pw) / (c + 1.0) * s2 / D[rows[whole]] ** 2
        var = ev.row_sum_blocks(var_t) / ev.R ** 2
        if cut.size:
            var[rows[cut]] = np.nan
        return var

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        rel = b.relevant(lab)
        nonrel = self.judged_mask(judged) & ~rel
        c = np.cumsum(nonrel.astype(np.int64))  # (faster than a bool array's cumsum)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        above = (c - base[b.row] - nonrel).astype(np.float64)  # judged non-relevant above
        hit = rel & ev.in_k
        r = b.row[hit]
        f = 1.0 - np.minimum(above[hit], b.n_pos[r]) / self._norm(ev)[r]
        return np.bincount(r, weights=f, minlength=b.rows) / ev.R


BPREF = Bpref(
    "Bpref", "none",
    "binary preference (trec_eval bpref): judged items only; each retrieved relevant item "
    "scores 1 - min(judged non-relevant above it, R) / min(judged non-relevant, R); "
    "the sum is divided by R",
    names={"tieeval": ("Bpref",), "trec_eval": ("bpref",), "ir_measures": ("Bpref",),
           "ranx": ("bpref",)},
    needs=frozenset({"labels", "judged"}), orders=BY_LABELS_AND_JUDGED)


@dataclass(frozen=True)
class GeometricBpref(Bpref):
    """bpref per row; the dataset figure is the geometric mean ``exp(mean(log(max(bpref,
    1e-5))))`` (trec_eval gm_bpref)."""

    def spread(self, ev: TableEvaluation, first: Floats) -> Spread | None:
        """Each row's bpref distribution over its tie orders (:mod:`geometric`): a block's
        term is ``sum_{relevant r} (1 - min(Jb + X_r, R) / D)``, X_r the judged
        non-relevant items of the block above r; the other items only take places."""
        b = ev.b
        rel = b.relevant(b.lab_first)
        cls = np.where(rel, 0, np.where(b.judged_first, 1, 2))
        jb = b.within_row_exclusive(b.j_t).astype(np.float64)
        R = b.n_pos.astype(np.float64)
        D = self._norm(ev)
        m_t = ev.m_t

        def block_value(ts: np.ndarray, seqs: np.ndarray) -> np.ndarray:
            row = b.brow[ts][:, None]
            hit = seqs == 0
            above = np.cumsum(seqs == 1, axis=1) - (seqs == 1)
            term = 1.0 - np.minimum(jb[ts][:, None] + above, R[row]) / D[row]
            value: np.ndarray = np.where(hit, term, 0.0).sum(axis=1)
            return value

        whole = m_t == b.bsz
        random_t = (m_t >= 1) & (b.p_t > 0) & np.where(whole, b.j_t > 0, b.p_t < b.bsz)
        return spread(b, m_t, cls, 3, block_value, first, ev.R, random_t, droppable=2)

    def tie_aware_reason(self) -> str:
        return geometric_reason("bpref")


GM_BPREF = GeometricBpref(
    "GBpref", "none",
    "geometric mean over rows of bpref, exp(mean(log(max(bpref, 1e-5)))) "
    "(trec_eval gm_bpref)", ("gm_bpref",),
    aggregate="geometric",
    names={"tieeval": ("GBpref", "gm_bpref"), "trec_eval": ("gm_bpref",)},
    needs=frozenset({"labels", "judged"}), orders=BY_LABELS_AND_JUDGED, has_variance=False)
