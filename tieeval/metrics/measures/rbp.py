"""Rank-biased precision and its residual (trec_eval rbp, rbp_resid), persistence p = 0.9.

    rbp       = (1 - p) sum_{r retrieved} g(item at r) p^(r-1)
    rbp_resid = p^N + (1 - p) sum_{r retrieved, item unjudged} p^(r-1)   (0 with none)

with N the number retrieved (the depth caps it) and ``g`` trec_eval's gain scaled to
[0, 1]: the relevance level (0 for an unjudged or negatively judged item), divided by the
row's largest judged level when that exceeds 1 (m_rbp.c normalises gains outside [0, 1]
by (g - min) / (max - min), the smallest gain being level 0's 0). The gain is the raw
level whatever the relevance level (``-l``) says. The residual is the most rbp could rise
if every unjudged retrieved item had gain 1, plus the unseen tail p^N.

Both are linear in per-item values with position weights ``(1 - p) p^(r-1)``, so each tie
block contributes ``E_t = G_t W_t / n_t`` and ``Var_t = SS_g SS_w / (n_t - 1)`` (exact,
docs/METRICS.md 3-4). The residual's ``p^N`` counts only when some unjudged item is
retrieved: where the depth cuts a tie block holding unjudged items that may all fall
below it, ``E`` adds ``p^N P(some unjudged retrieved)`` (hypergeometric) and the variance
is not computed for the row. first / last rank each tie block's items by label descending
/ ascending, judged before unjudged among equal labels: rbp's maximum and minimum, and the
residual's minimum and maximum.

Reference: A. Moffat & J. Zobel, Rank-biased precision for measurement of retrieval
effectiveness, TOIS 27(1), 2008; trec_eval m_rbp.c, m_rbp_resid.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import BY_LABELS_AND_JUDGED, Measure
from tieeval.metrics.measures.placement import linear_moments
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation
from tieeval.util.stopping import checkpoint

#: trec_eval's default persistence (m_rbp.c, m_rbp_resid.c: ``p = 0.9``).
RBP_PERSISTENCE = 0.9


def _weights(ev: TableEvaluation) -> np.ndarray:
    """``(1 - p) p^r`` at each 0-based retrieved place r, 0 past the depth."""
    b = ev.b
    p = RBP_PERSISTENCE
    return np.where(ev.in_k, (1.0 - p) * p ** b.pos.astype(np.float64), 0.0)


def _powers(count: int) -> np.ndarray:
    """``p^0 .. p^count`` as trec_eval computes them, each the one before times p
    (``cur_p = cur_p * p``), which differs from ``p ** r`` in the last bit."""
    factors = np.full(count + 1, RBP_PERSISTENCE)
    factors[0] = 1.0
    return np.multiply.accumulate(factors)


def _trec_sum(ev: TableEvaluation, values: Floats) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_r values_r p^r, p^N)`` per row as m_rbp.c and m_rbp_resid.c add them up: in
    rank order (a row's items are stored by place), one place after the other, p^r by
    repeated products, places past the depth left out; N is the number retrieved."""
    b = ev.b
    kc = ev.kc.astype(np.int64)
    top = int(max(b.pos.max(initial=0), kc.max(initial=0)))
    powers = _powers(top)
    terms = np.where(ev.in_k, values * powers[b.pos], 0.0)
    # np.bincount adds its weights one after the other in their order, as trec_eval's loop
    return np.bincount(b.row, weights=terms, minlength=b.rows), powers[kc]


@dataclass(frozen=True)
class RankBiasedPrecision(Measure):
    """trec_eval's rbp: ``(1 - p) sum_r g_r p^(r-1)``, gains scaled to [0, 1]."""

    def defined(self, ev: TableEvaluation) -> Bools:
        """Where some judged gain is positive (otherwise rbp is 0): the gain is the raw
        level under any relevance level, as for NDCG."""
        return ev.b.row_max_label() > 0

    def gains(self, ev: TableEvaluation, lab: Floats) -> np.ndarray:
        top = ev.b.row_max_label()
        scale = np.where(top > 1.0, top, 1.0)
        return np.maximum(lab, 0.0) / scale[ev.b.row]

    def closed(self, ev: TableEvaluation) -> Closed:
        e, var = linear_moments(ev.b, self.gains(ev, ev.b.lab_first), _weights(ev))
        return e, var, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        total, _ = _trec_sum(ev, self.gains(ev, lab))
        return (1.0 - RBP_PERSISTENCE) * total  # m_rbp.c: (1.0 - p) * sum


@dataclass(frozen=True)
class RbpResidual(Measure):
    """trec_eval's rbp_resid: ``p^N + (1 - p) sum_{r unjudged} p^(r-1)``, 0 when no
    retrieved item is unjudged."""

    def defined(self, ev: TableEvaluation) -> Bools:
        """Every row: the residual needs no relevant item."""
        return np.ones(ev.b.rows, dtype=bool)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        unj = (~b.judged_first).astype(np.float64)
        e, var = linear_moments(b, unj, _weights(ev))
        # P(some unjudged item retrieved): 1 unless every retrieved place could go to a
        # judged item, which only the block the depth cuts can decide
        u_t = b.block_sum(unj)
        m_t = ev.m_t
        sure = np.bincount(b.brow, weights=np.where(m_t == b.bsz, u_t, 0.0),
                           minlength=b.rows) > 0
        cut = np.flatnonzero((m_t > 0) & (m_t < b.bsz) & (u_t > 0))
        p_none = np.ones(b.rows)
        for t in cut:  # at most one cut block per row
            checkpoint()
            n, m, u = int(b.bsz[t]), int(m_t[t]), int(u_t[t])
            # every one of the m retrieved places of the block holds a judged item
            q = 1.0
            for i in range(m):
                q *= max(n - u - i, 0) / (n - i)
            p_none[b.brow[t]] *= q
        p_some = np.where(sure, 1.0, 1.0 - p_none)
        e = e + RBP_PERSISTENCE ** ev.kc.astype(np.float64) * p_some  # p^N
        random = (p_some > 0) & (p_some < 1)
        var = np.where(random, np.nan, var)
        return e, var, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        unj = ~self.judged_mask(judged) & ev.in_k
        total, tail = _trec_sum(ev, unj.astype(np.float64))
        some = np.bincount(b.row[unj], minlength=b.rows) > 0
        # m_rbp_resid.c: cur_p + (1 - p) * sum
        return np.where(some, tail + (1.0 - RBP_PERSISTENCE) * total, 0.0)


# tieeval's names keep clear of ir_measures' RBP, whose default persistence is 0.8
RBP = RankBiasedPrecision(
    "TrecRBP", "none",
    "rank-biased precision with persistence p = 0.9 (trec_eval rbp): (1 - p) sum of "
    "p^(r-1) times the gain, the relevance level scaled to [0, 1]",
    names={"tieeval": ("TrecRBP",), "trec_eval": ("rbp",)},
    needs=frozenset({"labels", "every_position"}))

RBP_RESID = RbpResidual(
    "TrecRBP-resid", "none",
    "residual of rank-biased precision, p = 0.9 (trec_eval rbp_resid): p^N plus (1 - p) "
    "sum of p^(r-1) over the unjudged retrieved items; 0 when none is unjudged",
    names={"tieeval": ("TrecRBP-resid",), "trec_eval": ("rbp_resid",)},
    needs=frozenset({"labels", "judged", "every_position"}), orders=BY_LABELS_AND_JUDGED)
