"""Pair measures: V-AUC (relevant items against explicit negatives), AUC (relevant items
against every other candidate) and AUC-cut@K (AUC of the top K, the rest left unordered).

    AUC = #{(p, o): p ranked above o} / (|P| |O|)

over the relevant items P and the others O of a row: for V-AUC, O are the explicit
negatives (label < 0); for AUC every candidate that is not relevant (the ROC AUC of the
row's scores against its relevance, as scikit-learn's ``roc_auc_score`` computes it).
Inside a tie block the relative order of its ``p_t`` relevant items and ``o_t`` others is
uniform, so the correctly ordered pairs of the block follow the Mann-Whitney U null
distribution, with mean ``p_t o_t / 2`` and variance ``p_t o_t (p_t + o_t + 1) / 12``;
blocks are independent (docs/METRICS.md 9):

    E   = (#{y_p > y_o} + #{y_p == y_o} / 2) / (|P| |O|)
    Var = sum_t p_t o_t (p_t + o_t + 1) / 12 / (|P| |O|)^2

A tied pair counts 1/2 in the expectation (scikit-learn's and the Mann-Whitney
convention), 0 in last (the strict AUC: Cornac's) and 1 in first. A row needs a ranked
relevant item and an other one; a row without a relevant item is skipped also under
``no_relevant="zero"``.

AUC-cut@K is the AUC of a top-K list (implicit's ``auc``, evaluation.pyx
ranking_metrics_at_k): a (relevant, other) pair counts 1 when the relevant item is in the
top K above the other, 0 when the other is in the top K above it, and 1/2 when both are
below K. With P relevant candidates, N = n - P others, H hits and M = c - H misses among
the top c = min(K, n) places, and S the (hit, miss) pairs in the top K ordered hit first,

    AUC-cut@K = (S + (N - M) (H + P) / 2) / (P N)

(each miss below K is beaten by the H hits and ties with the P - H relevant items below
K). At K >= n it is the AUC of the ranking. Moving a relevant item above an adjacent other
never lowers it, so First and Last are the relevant-first and relevant-last orders. Under
uniform random tie-breaking, with ``m_t`` places of block t inside the top K, ``x_t`` its
relevant items there (hypergeometric; random only in the block straddling the cutoff),
``o_t = n_t - p_t`` its others and ``A`` the (miss above hit) pairs of the top K,
``S = H (c - H) - A`` and

    E[A] = sum_t (E[x_t] (a_t - r_t) + C(m_t, 2) p_t o_t / (n_t (n_t - 1)))

with ``r_t`` the relevant items above block t, so that E needs E[H] and E[H^2] only. Given
``x_t``, the pairs inside the top K of block t are a Mann-Whitney count (mean
x (m - x) / 2, variance x (m - x) (m + 1) / 12), and with it the value is linear in
``x_t``, of slope (m_t + n - c) / 2: blocks are independent, so

    Var = sum_t ((m_t + n - c)^2 / 4 Var[x_t] + E[x_t (m_t - x_t)] (m_t + 1) / 12) / (P N)^2

Reference: J. Hanley & B. McNeil, The meaning and use of the area under a ROC curve,
Radiology 1982; H. Mann & D. Whitney, 1947; implicit 0.7.3, implicit/evaluation.pyx.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation


@dataclass(frozen=True)
class PairAUC(Measure):
    """Share of (relevant, other) pairs ranked relevant first; ``others`` is
    ``"negatives"`` (explicit negatives only: V-AUC) or ``"non_relevant"`` (every
    candidate that is not relevant: AUC)."""

    others: str = "negatives"

    def _others(self, ev: TableEvaluation) -> tuple[Ints, Ints]:
        """The others per block and per row."""
        b = ev.b
        if self.others == "negatives":
            return b.q_t, b.n_neg
        return b.bsz - b.p_t, b.n - b.n_pos_ranked

    def defined(self, ev: TableEvaluation) -> Bools:
        # pairs of ranked items only
        return (ev.b.n_pos_ranked >= 1) & (self._others(ev)[1] >= 1)

    def _pairs(self, ev: TableEvaluation) -> Floats:
        return np.where(ev.defined, ev.b.n_pos_ranked * self._others(ev)[1],
                        1).astype(np.float64)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        p, q = b.p_t.astype(np.float64), self._others(ev)[0].astype(np.float64)
        if self.others == "negatives":
            below = b.n_neg[b.brow] - b.within_row_exclusive(q) - q
        else:
            # others above a block: its place minus the relevant items above it (the
            # blocks of a sparse table that hold no labelled item are counted by ba)
            above = b.ba - b.within_row_exclusive(b.p_t)
            below = (self._others(ev)[1][b.brow] - above - q).astype(np.float64)
        pairs = self._pairs(ev)
        greater = ev.row_sum_blocks(p * below)
        tied = ev.row_sum_blocks(p * q)
        e = (greater + 0.5 * tied) / pairs
        var = ev.row_sum_blocks(p * q * (p + q + 1.0)) / 12.0 / pairs ** 2
        return e, var, b.row_any((p > 0) & (q > 0))

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        pos = b.relevant(lab)
        if self.others == "negatives":
            neg = lab < 0
            c = np.cumsum(neg, dtype=np.int64)
            base = np.concatenate(([0], c))[b.offsets[:-1]]
            below = b.n_neg[b.row] - (c - base[b.row])
        else:
            # others below a relevant item: all others minus those above it (its place
            # minus the relevant items above it)
            c = np.cumsum(pos, dtype=np.int64)
            base = np.concatenate(([0], c))[b.offsets[:-1]]
            rel_above = c - base[b.row] - pos
            below = self._others(ev)[1][b.row] - (b.pos - rel_above)
        return (np.bincount(b.row[pos], weights=below[pos].astype(np.float64),
                            minlength=b.rows) / self._pairs(ev))

    def undefined_reason(self) -> str:
        if self.others == "negatives":
            return "it needs a relevant item and an explicit negative (label < 0) in one row"
        return "it needs a relevant item and a candidate that is not relevant in one row"


V_AUC = PairAUC(
    "V-AUC", "none",
    "valence AUC: share of (positive, negative) pairs ranked positive first; tie-aware "
    "counts a tied pair 1/2, strict (= the Last column) counts it 0", ("VAUC",),
    names={"tieeval": ("V-AUC", "VAUC")},
    needs=frozenset({"labels", "negatives"}), zero_without_relevant=False)

AUC = PairAUC(
    "AUC", "none",
    "area under the ROC curve of a row: share of (relevant, other candidate) pairs ranked "
    "relevant first; tie-aware counts a tied pair 1/2 (scikit-learn's roc_auc_score), "
    "Last counts it 0",
    names={"tieeval": ("AUC",), "Cornac": ("AUC",)},
    needs=frozenset({"positive", "labels"}), zero_without_relevant=False,
    others="non_relevant")


@dataclass(frozen=True)
class CutAUC(Measure):
    """The AUC of the top K: a pair with both items below K counts 1/2 (implicit's auc@K)."""

    def defined(self, ev: TableEvaluation) -> Bools:
        b = ev.b
        return (b.n_pos_ranked >= 1) & (b.n > b.n_pos_ranked)

    def _counts(self, ev: TableEvaluation) -> tuple[Floats, Floats, Floats, Floats]:
        """Per row P, N, c = min(K, n) and P N (1 where undefined)."""
        b = ev.b
        p = b.n_pos_ranked.astype(np.float64)
        n_other = (b.n - b.n_pos_ranked).astype(np.float64)
        c = np.minimum(ev.kc, b.n).astype(np.float64)
        return p, n_other, c, np.where(ev.defined, p * n_other, 1.0)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        big_p, big_n, c, pairs = self._counts(ev)
        e_h, var_h, _ = ev.hits_moments(b.p_t)
        e_h2 = var_h + e_h * e_h
        live = ev.live_blocks()
        rows = b.brow[live]
        m = ev.m_t[live].astype(np.float64)
        size = b.bsz[live].astype(np.float64)
        p = b.p_t[live].astype(np.float64)
        o = size - p
        others_above = (b.ba - b.within_row_exclusive(b.p_t))[live].astype(np.float64)
        e_x = m * p / size
        var_x = np.where(m < size, m * (size - m) * p * o
                         / (size * size * np.maximum(size - 1.0, 1.0)), 0.0)
        # (other above relevant) pairs inside the top K: with the others of earlier
        # blocks, and inside the block (a pair of its first m places, in either order)
        inside = m * (m - 1.0) / 2.0 * p * o / (size * np.maximum(size - 1.0, 1.0))
        e_a = np.bincount(rows, weights=e_x * others_above + inside, minlength=b.rows)
        e_s = c * e_h - e_h2 - e_a
        tail = ((big_n - c) * big_p + (big_n - c + big_p) * e_h + e_h2) / 2.0
        e = (e_s + tail) / pairs
        slope = (m + b.n[rows] - c[rows]) / 2.0
        var_t = slope * slope * var_x + (m * e_x - var_x - e_x * e_x) * (m + 1.0) / 12.0
        var = np.bincount(rows, weights=var_t, minlength=b.rows) / pairs ** 2
        decided = b.row_any((ev.m_t > 0) & (b.p_t > 0) & (b.bsz > b.p_t))
        return e, var, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        big_p, big_n, c, pairs = self._counts(ev)
        _, row, nth, place, _, _ = b.relevant_places(lab)
        hit = place < ev.kc[row]
        h = np.bincount(row[hit], minlength=b.rows).astype(np.float64)
        # (miss above hit) pairs: the others above each hit, its place minus the relevant
        # items above it
        a = np.bincount(row[hit], weights=(place - (nth - 1))[hit].astype(np.float64),
                        minlength=b.rows)
        misses = c - h
        return (h * misses - a + (big_n - misses) * (h + big_p) / 2.0) / pairs

    def undefined_reason(self) -> str:
        return "it needs a relevant item and a candidate that is not relevant in one row"


AUC_CUT = CutAUC(
    "AUC-cut", "required",
    "AUC of the top K (implicit's auc@K): share of (relevant, other candidate) pairs "
    "ranked relevant first, where a pair with both items below K counts 1/2",
    names={"tieeval": ("AUC-cut",)},
    needs=frozenset({"positive", "labels", "cutoff"}), zero_without_relevant=False)
