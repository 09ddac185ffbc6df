"""The sign-aware hit ratio and recall: SHR@K and SRecall@K.

P are the relevant items (label > 0), N the explicit negatives (label < 0), gamma >= 0 the
penalty of a negative (docs/METRICS.md 9):

    SHR@K     = [a positive in the top K] - gamma [a negative in the top K]
    SRecall@K = (|P in top K| - gamma |N in top K|) / |P|

SHR's two indicators are HR's hypergeometric events on the first block holding a positive
and the first holding a negative; they are dependent only when that is one block, where
``P(both) = 1 - P(no positive) - P(no negative) + C(n-p-q, m) / C(n, m)``. SRecall is
linear in the item values ``[P] - gamma [N]`` (the linear-statistic lemma, docs/METRICS.md
3). first ranks P, then the unlabelled items, then N inside every tie; last the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation
from tieeval.metrics.measures.series import pmiss


@dataclass(frozen=True)
class SignedHitRatio(Measure):
    """``[P in top K] - gamma [N in top K]``."""

    def closed(self, ev: TableEvaluation) -> Closed:
        b, g = ev.b, ev.m.gamma
        hp = np.zeros(b.rows)
        hn = np.zeros(b.rows)
        cov = np.zeros(b.rows)
        tp, rp, _, npb, p, mp = ev.first_block_stats(b.p_t > 0, b.p_t)
        tn, rn, _, nnb, q, mn = ev.first_block_stats(b.q_t > 0, b.q_t)
        miss_p = pmiss(npb, p, mp)
        miss_n = pmiss(nnb, q, mn)
        hp[rp] = 1.0 - miss_p
        hn[rn] = 1.0 - miss_n
        # Both first blocks are the same block: the events are dependent (docs/METRICS.md 9).
        block_of_p = np.full(b.rows, -1)
        block_of_p[rp] = tp
        same = block_of_p[rn] == tn
        if same.any():
            rs = rn[same]
            nb_, m_ = nnb[same], mn[same]
            p_, q_ = b.p_t[tn[same]], q[same]
            p00 = pmiss(nb_, p_ + q_, m_)
            p11 = 1.0 - (1.0 - hp[rs]) - miss_n[same] + p00
            cov[rs] = p11 - hp[rs] * hn[rs]
        e = hp - g * hn
        var = hp * (1.0 - hp) + g * g * hn * (1.0 - hn) - 2.0 * g * cov
        decided = np.zeros(b.rows, dtype=bool)
        decided[rp] = (mp >= 1) & (mp <= npb - p)
        if g > 0:
            decided[rn] |= (mn >= 1) & (mn <= nnb - q)
        return e, var, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        return ((ev.hits(lab, +1) > 0).astype(np.float64)
                - ev.m.gamma * (ev.hits(lab, -1) > 0))


@dataclass(frozen=True)
class SignedRecall(Measure):
    """``(|P in top K| - gamma |N in top K|) / |P|``."""

    def closed(self, ev: TableEvaluation) -> Closed:
        b, g = ev.b, ev.m.gamma
        live = ev.live_blocks()  # blocks reaching into the top K
        rows = b.brow[live]
        m, n, p, q = ev.m_t[live], b.bsz[live].astype(np.float64), b.p_t[live], b.q_t[live]
        mu = (p - g * q) / n
        e = np.bincount(rows, weights=(p - g * q) * m / n, minlength=b.rows)
        ssg = p * (1.0 - mu) ** 2 + q * (g + mu) ** 2 + (n - p - q) * mu ** 2
        straddle = m < n
        var_t = np.where(straddle, m * (n - m) / (n * np.maximum(n - 1, 1.0)) * ssg, 0.0)
        mixed = (p > 0) & (p < n)
        if g > 0:
            mixed |= (q > 0) & (q < n)
        decided = np.bincount(rows[straddle & mixed], minlength=b.rows) > 0
        var = np.bincount(rows, weights=var_t, minlength=b.rows)
        return e / ev.R, var / ev.R ** 2, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        return (ev.hits(lab, +1) - ev.m.gamma * ev.hits(lab, -1)) / ev.R


SHR = SignedHitRatio(
    "SHR", "required",
    "signed hit ratio: [a positive in the top K] - gamma [a negative in the top K]",
    options=frozenset({"gamma"}), names={"tieeval": ("SHR",)},
    needs=frozenset({"labels", "cutoff"}))

SRECALL = SignedRecall(
    "SRecall", "required", "signed recall: (positives - gamma negatives in the top K) / R",
    options=frozenset({"gamma"}), names={"tieeval": ("SRecall",)},
    needs=frozenset({"labels", "cutoff"}))
