"""The DCG family: DCG@K, NDCG@K and their signed forms SDCG@K, SNDCG@K.

    DCG@K = sum_{r=1..min(K, n)} g(item at r) d(r)

with the gain ``g = max(label, 0)`` (linear) or ``2^label - 1`` (exponential) and the
discount ``d(r) = 1/log2(r+1)`` (or ``r^-alpha``, ``1/(1 + log2(r)^1.5)``, ``(K-r+1)/K``,
``1/max(1, log_b r)``). The signed forms give +1 to a relevant item, ``-gamma`` to an
explicit negative and 0 otherwise. DCG is linear in the gains, so by the linear-statistic
lemma (docs/METRICS.md 3-4) each tie block t contributes

    E_t   = (G_t / n_t) W_t
    Var_t = SS_g SS_w / (n_t - 1)

with ``G_t`` the sum of its gains, ``W_t`` the sum of its places' discounts (0 past K) and
``SS`` the sums of squared deviations from the mean; blocks are independent. NDCG divides
by the ideal DCG of the row's own labels (IDCG@K, ranked and unranked, zero-padded); SNDCG
by ``ISDCG = D[min(K, R)]`` (all positives first, no negative counted), which stays > 0 and
equals the literal ideal whenever ``K <= n - |N|`` (docs/METRICS.md 9). Both normalisers
are tie-independent, so E and Var scale. first / last sort every tie block by gain
descending / ascending: by the rearrangement inequality, the maximum and the minimum.

One positive: ``E[NDCG@K] = (D[min(a+b, K)] - D[min(a, K)]) / b`` (docs/METRICS.md 2).

Reference: K. Järvelin & J. Kekäläinen, Cumulated gain-based evaluation of IR techniques,
TOIS 2002; F. McSherry & M. Najork, ECIR 2008 (tie-averaged DCG).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.hr import _reachable
from tieeval.metrics.measures.protocol import (
    Bools,
    Closed,
    Floats,
    Ints,
    MetricOptions,
    Numbers,
    Realise,
    TableEvaluation,
)
from tieeval.metrics.measures.series import discount_prefix
from tieeval.util.ranges import expand


def gain(rel: np.ndarray, kind: str) -> np.ndarray:
    """Linear (``rel``) or exponential (``2**rel - 1``) gain of graded relevance ``rel``."""
    if kind == "linear":
        return rel
    with np.errstate(over="ignore"):
        # 2**rel - 1: exp2 is exact on integers; expm1 keeps the digits of small rel.
        g = np.where(rel >= 1, np.exp2(rel) - 1.0, np.expm1(rel * math.log(2.0)))
    if not np.isfinite(g).all():
        raise ParameterError("exponential gain 2**label - 1 overflows float64; labels must "
                             "be below 1024")
    return g


def weights(metric: MetricOptions, r: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Discount of the 1-based positions ``r`` (float64) given the row cutoffs ``k``."""
    if metric.discount == "log2":
        return 1.0 / np.log2(r + 1.0)
    if metric.discount == "power":
        return r ** -metric.alpha
    if metric.discount == "news":
        value: np.ndarray = 1.0 / (1.0 + np.log2(r) ** 1.5)
        return value
    if metric.discount == "logb":
        value = 1.0 / np.maximum(1.0, np.log(r) / math.log(metric.base))
        return value
    kf = k.astype(np.float64)
    value = (kf - r + 1.0) / kf
    return value


@dataclass(frozen=True)
class DiscountedGain(Measure):
    """``sum_r g(item at r) d(r)`` over the top K, divided by ``normaliser``.

    ``signed_gain``: +1 / 0 / -gamma instead of the graded gain. ``normaliser``: ``"none"``
    (DCG), ``"ideal"`` (IDCG@K of the row's labels; a row whose ideal is 0 is undefined) or
    ``"positives"`` (ISDCG = D[min(K, R)]).
    """

    signed_gain: bool = False
    normaliser: str = "none"

    # -- one positive ---------------------------------------------------------------------
    def covers_single_positive(self, k: int | float | None) -> bool:
        return self.single_positive and k is not None

    def rank_value(self, k: int | float | None, rank: Ints) -> Floats:
        rank = np.asarray(rank, dtype=np.int64)
        return np.where(rank <= self.rank_cutoff(k), 1.0 / np.log2(rank + 1.0), 0.0)

    def tie_moments(self, k: int | float | None, a: Ints, b: Ints
                    ) -> tuple[Floats, Floats, Bools]:
        k = _reachable(self.rank_cutoff(k), a, b)
        lo, hi = np.minimum(a, k), np.minimum(a + b, k)
        # The table only needs the ranks present; its entries do not depend on its length.
        D, D2 = discount_prefix(1 << max(k - 1, 0).bit_length())
        bf = b.astype(np.float64)
        return (D[hi] - D[lo]) / bf, (D2[hi] - D2[lo]) / bf, (a < k) & (b > 1)

    # -- labelled rows --------------------------------------------------------------------
    def defined(self, ev: TableEvaluation) -> Bools:
        """NDCG exists where the ideal DCG can be positive: some label > 0. The gains are
        the raw labels whatever the relevance level says (trec_eval's ndcg under ``-l``),
        so a row with graded labels all below the level is scored, not left out. Without
        a level, ``label > 0`` is what relevant means and R >= 1 says the same."""
        b = ev.b
        if self.normaliser != "ideal" or b.level is None:
            return super().defined(ev)
        return b.row_max_label() > 0

    def bind(self, ev: TableEvaluation) -> tuple[Callable[[], Closed], Realise]:
        b, metric = ev.b, ev.m
        # Only blocks reaching into the top K carry weight. Every other position has w = 0
        # and adds nothing to E, Var or a realised DCG, so the work runs over the positions
        # of the live blocks ('idx'), which hold every position above the cutoff.
        live = np.flatnonzero(ev.m_t > 0)
        sizes = b.bsz[live]
        idx, local = expand(b.bst[live], sizes)
        row = b.row[idx]
        r = b.pos[idx].astype(np.float64) + 1.0
        w = np.where(ev.in_k[idx], weights(metric, r, ev.k[row]), 0.0)
        gamma = metric.gamma
        signed = self.signed_gain

        def item_gain(lab: Floats) -> np.ndarray:
            if signed:
                return b.relevant(lab) - gamma * (lab < 0)
            return gain(np.maximum(lab, 0.0), metric.gain)

        ideal = self.normaliser == "ideal"
        if self.normaliser != "none" and (b.unranked is not None or b.depth is not None):
            # the ideal list is never truncated at the depth: it needs every position
            unranked = b.unranked if b.unranked is not None else (
                np.zeros(0), np.zeros(b.rows + 1, dtype=np.int64))
            norm = self._extended_norm(ev, item_gain, unranked)
            ev.defined &= norm > 0
        elif self.normaliser != "none" and b.compact:
            norm = self._sparse_norm(ev, item_gain)
            if ideal:
                ev.defined &= norm > 0
        elif ideal:
            cut = None if metric.k is None else self.rank_cutoff(metric.k)
            lab_ideal = b.ideal_labels(cut)[idx]
            norm = np.bincount(row, weights=w * item_gain(lab_ideal), minlength=b.rows)
            ev.defined &= norm > 0
        elif self.normaliser == "positives":
            # ISDCG = D[min(K, R)]: positives first, no negative counted (docs/METRICS.md 9).
            norm = np.bincount(row, weights=w * (b.pos[idx] < b.n_pos[row]), minlength=b.rows)
        else:
            norm = np.ones(b.rows)
        norm = np.where(ev.defined, norm, 1.0)
        brow = b.brow[live]

        def per_block(x: np.ndarray) -> np.ndarray:
            return np.bincount(local, weights=x, minlength=live.size)

        def closed() -> Closed:
            g = item_gain(b.lab_first[idx])
            n = sizes.astype(np.float64)
            gsum, wsum = per_block(g), per_block(w)
            e = np.bincount(brow, weights=gsum * wsum / n, minlength=b.rows)
            ssg = per_block((g - (gsum / n)[local]) ** 2)
            ssw = per_block((w - (wsum / n)[local]) ** 2)
            var_t = np.where(sizes > 1, ssg * ssw / np.maximum(n - 1.0, 1.0), 0.0)
            # first != last iff some block has two different gains and two different
            # weights (rearrangement); inside a block 'first' runs from high to low gain.
            head = np.cumsum(sizes) - sizes  # each live block's first place in idx
            tail = head + sizes - 1
            mixed = (g[head] != g[tail]) & (w[head] != w[tail])
            decided = np.bincount(brow[mixed], minlength=b.rows) > 0
            var = np.bincount(brow, weights=var_t, minlength=b.rows)
            return e / norm, var / norm ** 2, decided

        def realise(lab: Floats, judged: Bools | None = None) -> Numbers:
            value: Numbers = np.bincount(row, weights=w * item_gain(lab[idx]),
                                         minlength=b.rows) / norm
            return value

        return closed, realise

    def _sparse_norm(self, ev: TableEvaluation,
                     item_gain: Callable[[Floats], np.ndarray]) -> np.ndarray:
        """IDCG@K (NDCG) or ISDCG@K (SNDCG) of a sparse batch, as the full table sums them.

        The full table adds, over the positions p < min(K, n) of a row in order, the
        discount of p times the gain of the row's p-th largest label (NDCG) or 1 for
        p < R (SNDCG). Past the positive labels (past R) every term is an exact zero, so
        only the positive labels of the marked items are listed, largest first.
        """
        b, metric = ev.b, ev.m
        ideal = self.normaliser == "ideal"
        if ideal:
            kept = b.shared.get(_IDEAL)
            if kept is None:  # the positive labels by row, largest first
                mrow, ml = b.marked
                sel = ml > 0
                rows, lab = mrow[sel], ml[sel]
                span = ev.label_span(lab)
                if span is None:
                    order = np.lexsort((-lab, rows))
                    rows, lab = rows[order], lab[order]
                elif span <= _GRADES:
                    rows, lab = _by_grade(rows, lab, span, b.rows, b.read_depth)
                else:  # one sort of a whole-number key: row, then label descending
                    top = float(lab.max())
                    key = np.sort(rows * span + (top - lab).astype(np.int64))
                    rows, lab = key // span, top - (key % span).astype(np.float64)
                kept = b.shared[_IDEAL] = (rows, lab, np.bincount(rows, minlength=b.rows))
            rows, lab, count = kept
        else:
            count = b.n_pos
            rows = np.repeat(np.arange(b.rows, dtype=np.int64), count)
        start = np.cumsum(count) - count
        pos = np.arange(rows.size, dtype=np.int64) - start[rows]
        keep = pos < np.minimum(ev.kc, b.n)[rows]
        rows, pos = rows[keep], pos[keep]
        w = weights(metric, pos.astype(np.float64) + 1.0, ev.k[rows])
        if ideal:
            w = w * item_gain(lab[keep])
        return np.bincount(rows, weights=w, minlength=b.rows)

    def _extended_norm(self, ev: TableEvaluation, item_gain: Callable[[Floats], np.ndarray],
                       unranked: tuple[Floats, Ints]) -> np.ndarray:
        """IDCG@K / ISDCG@K over the ranked *and* unranked items of each row.

        The ideal list holds every judged item of the row, best label first, so it may be
        longer than the ranked list; it is cut at K (at ``n + unranked`` without a cutoff).
        ISDCG counts ``min(K, R)`` positions with R including the unranked positives.
        """
        b, metric = ev.b, ev.m
        ulab, uoff = unranked
        u = np.diff(uoff)
        if b.compact:  # the unmarked items (label 0) add exact zeros: the marked ones only
            mrow, ranked_lab = b.marked
            ranked = np.bincount(mrow, minlength=b.rows)
        else:
            mrow, ranked_lab, ranked = b.row, b.lab_input, b.n
        lab = np.concatenate((ranked_lab, ulab))
        rows = np.concatenate((mrow, np.repeat(np.arange(b.rows, dtype=np.int64), u)))
        order = np.lexsort((-lab, rows))
        lab, rows = lab[order], rows[order]
        start = np.concatenate(([0], np.cumsum(ranked + u)))[:-1]
        pos = np.arange(lab.size, dtype=np.int64) - start[rows]
        k = ev.k if metric.k is not None else b.n + u
        cut = k
        if self.normaliser == "positives":
            cut = np.minimum(k, b.n_pos)
            g = np.ones(lab.size)
        else:
            g = item_gain(lab)
        inside = pos < cut[rows]
        w = np.where(inside, weights(metric, pos + 1.0, np.maximum(k, 1)[rows]), 0.0)
        return np.bincount(rows, weights=w * g, minlength=b.rows)


_DCG_OPTIONS = frozenset({"gain", "discount", "alpha", "base"})
_SDCG_OPTIONS = frozenset({"gamma", "discount", "alpha", "base"})

DCG = DiscountedGain(
    "DCG", "optional", "discounted cumulative gain of the graded relevance max(label, 0)",
    options=_DCG_OPTIONS,
    names={"tieeval": ("DCG",), "LensKit": ("DCG",), "ranx": ("dcg",)},
    needs=frozenset({"labels", "cutoff"}))

NDCG = DiscountedGain(
    "NDCG", "optional",
    "DCG divided by the ideal DCG of the row's own labels (zero-padded); one positive: "
    "1/log2(rank+1) within the top K", options=_DCG_OPTIONS, single_positive=True,
    names={"tieeval": ("NDCG",), "trec_eval": ("ndcg_cut", "ndcg"), "ir_measures": ("nDCG",),
           "RecBole": ("NDCG",), "LensKit": ("NDCG",), "Cornac": ("NDCG",),
           "ranx": ("ndcg",)},
    needs=frozenset({"positive", "labels", "cutoff"}), normaliser="ideal")

SDCG = DiscountedGain(
    "SDCG", "optional", "signed DCG: gain +1 for positives, -gamma for negatives, 0 otherwise",
    options=_SDCG_OPTIONS, names={"tieeval": ("SDCG",)},
    needs=frozenset({"labels", "cutoff"}), signed_gain=True)

SNDCG = DiscountedGain(
    "SNDCG", "optional",
    "signed DCG divided by ISDCG = D[min(K, R)], the DCG of positives first",
    options=_SDCG_OPTIONS, names={"tieeval": ("SNDCG",)},
    needs=frozenset({"labels", "cutoff"}), signed_gain=True,
    normaliser="positives")


#: the key of a sparse batch's positive labels by row, largest first, in its shared store
#: (computed once for every ideal-normalised metric of the batch)
_IDEAL = ("DCG", "ideal labels")
_GRADES = 64  # whole-number labels spanning at most this many values: counted per grade


def _by_grade(rows: np.ndarray, lab: np.ndarray, span: int, nrows: int,
              depth: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The positive labels ``lab`` (whole numbers spanning ``span`` values) of rows
    ``rows``, listed by row and label descending, as a sort would list them, from a count
    of each grade per row instead; with ``depth``, only each row's first ``depth`` (no
    cutoff read deeper). Within a row the labels come in the same order, so the sums
    over them are the same, bit for bit."""
    top = float(lab.max())
    counts = np.bincount(rows * span + (top - lab).astype(np.int64),
                         minlength=nrows * span).reshape(nrows, span)
    if depth is not None:
        before = np.cumsum(counts, axis=1) - counts
        counts = np.clip(depth - before, 0, counts)
    cells = np.repeat(np.arange(nrows * span, dtype=np.int64), counts.ravel())
    return cells // span, top - (cells % span).astype(np.float64)
