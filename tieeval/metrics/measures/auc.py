"""Pair measures: V-AUC (relevant items against explicit negatives) and AUC (relevant items
against every other candidate).

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

Reference: J. Hanley & B. McNeil, The meaning and use of the area under a ROC curve,
Radiology 1982; H. Mann & D. Whitney, 1947.
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

    def _others_t(self, ev: TableEvaluation) -> Ints:
        b = ev.b
        if self.others == "negatives":
            return b.q_t
        return b.bsz - b.p_t

    def _others_row(self, ev: TableEvaluation) -> Ints:
        b = ev.b
        if self.others == "negatives":
            return b.n_neg
        return b.n - b.n_pos_ranked

    def defined(self, ev: TableEvaluation) -> Bools:
        # pairs of ranked items only
        return (ev.b.n_pos_ranked >= 1) & (self._others_row(ev) >= 1)

    def _pairs(self, ev: TableEvaluation) -> Floats:
        return np.where(ev.defined, ev.b.n_pos_ranked * self._others_row(ev),
                        1).astype(np.float64)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        p, q = b.p_t.astype(np.float64), self._others_t(ev).astype(np.float64)
        if self.others == "negatives":
            below = b.n_neg[b.brow] - b.within_row_exclusive(q) - q
        else:
            # others above a block: its place minus the relevant items above it (the
            # blocks of a sparse table that hold no labelled item are counted by ba)
            above = b.ba - b.within_row_exclusive(b.p_t)
            below = (self._others_row(ev)[b.brow] - above - q).astype(np.float64)
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
            below = self._others_row(ev)[b.row] - (b.pos - rel_above)
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
