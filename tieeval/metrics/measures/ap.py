"""Average precision: AP@K / MAP (the mean over rows), and GMAP (their geometric mean).

    AP@K = (1/Z) sum_{r <= K, item r relevant} precision@r,   precision@r = hits@r / r

with ``Z = R`` (trec_eval's map and map_cut) or, with ``ap_norm="min"``, ``Z = min(K, R)``;
with ``ap_norm="hits"``, ``Z = hits@K``, the relevant items in the top K (torchmetrics'
``RetrievalMAP(top_k=K)``; 0 when there are none). With ``relevant_scores="positive"`` a
relevant item scored <= 0 counts as not relevant, in the sum and in R (torchmetrics'
``retrieval_average_precision`` zeroes its target before ranking).

With ``Z = hits@K`` the expectation is of a ratio: hits@K depends only on how many of
the relevant items of the block cut by K (if any) fall inside it, j, hypergeometric; given
j they fill its m places inside K uniformly, so its term is ``(j/m) [(1 + B) S1 +
(j-1)/(m-1) S2]``, and ``E[AP@K] = sum_j P(j) (E_in + term(j)) / (H_in + j)``, ``E_in`` and
``H_in`` the expected sum and the relevant items of the blocks wholly inside K. It has no
exact variance here (``tie_aware_std`` is null).

Expectation (docs/METRICS.md 8; McSherry & Najork's tie-averaged AP): with ``p_t`` relevant
items among the ``n_t`` of tie block t, ``a_t`` candidates above it, ``m_t`` of its places
inside the cutoff and ``B_t`` relevant items in the blocks above it,

    E[AP@K] = (1/Z) sum_t (p_t/n_t) [(1 + B_t) S1_t + (p_t-1)/(n_t-1) S2_t]
    S1_t = sum_{i<=m_t} 1/(a_t+i),   S2_t = sum_{i<=m_t} (i-1)/(a_t+i)

Variance (exact, derived here). ``B_t`` does not depend on the tie order, so
``Z AP = sum_t Y_t`` with ``Y_t = sum_{i<=m_t} rho_i (B_t + c_i) / (a_t+i)``, ``rho_i`` the
relevance of the block's i-th place and ``c_i = rho_1 + ... + rho_i``; each ``Y_t`` depends
only on its own block's order, so ``Var(AP) = sum_t Var(Y_t) / Z^2``. Writing
``w_i = 1/(a_t+i)``, ``Y = (B+1) L + Q`` with ``L = sum_i w_i rho_i`` and
``Q = sum_{j<i} w_i rho_j rho_i``, and the moments of ``rho`` on k distinct places are
``f_k = p (p-1) ... (p-k+1) / (n (n-1) ... (n-k+1))`` (a uniform arrangement of p ones):

    Var L    = (f1 - f2) S(w^2) + (f2 - f1^2) W^2
    Cov(L,Q) = (f3 - f1 f2) W A + (f2 - f3) (C + N2)
    Var Q    = (f4 - f2^2) A^2 + (f3 - f4) N3 + (f2 - f4) N2

with ``W = sum w_i``, ``A = sum (i-1) w_i``, ``C = sum_{j<i} w_j w_i``,
``N2 = sum (i-1) w_i^2`` (a pair of places with itself), ``N3 = sum (i-1)(i-2) w_i^2 +
4 sum_{j<i} (j-1) w_j w_i`` (two pairs sharing one place). O(m_t) per block; the tests
check it against every tie order of small rows.

first / last (labels descending / ascending inside ties) are the maximum and the minimum.

Reference: F. McSherry & M. Najork, ECIR 2008; trec_eval m_map.c, m_map_cut.c, m_gm_map.c.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.geometric import Spread, geometric_reason, spread
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation
from tieeval.metrics.measures.series import buckets, chunks
from tieeval.util.stopping import checkpoint


def _falling_ratio(p: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """``f_k = p (p-1) ... (p-k+1) / (n (n-1) ... (n-k+1))``, 0 where p < k (float64)."""
    out = np.ones(p.shape)
    for i in range(k):
        checkpoint()
        ok = p - i > 0
        out = np.where(ok, out * (p - i) / np.where(n - i > 0, n - i, 1), 0.0)
    return out


def _block_place_sums(a: np.ndarray, m: np.ndarray) -> Floats:
    """Per block (``a`` above it, ``m >= 1`` places inside the cutoff), over its places
    ``i = 1..m`` with ``w_i = 1/(a+i)``: ``W, S(w^2), A, N2, sum (i-1)(i-2) w_i^2`` and
    ``U = sum_{j<i} (j-1) w_j w_i``.

    Rows of places are padded to a power of two (w = 0 past m), so a block's sums come from
    its own places in order, whatever blocks it is batched with.
    """
    out = np.zeros((6, a.size))
    if a.size == 0:
        return out
    for (width,), sel in buckets(m):
        for part in chunks(sel, width):
            checkpoint()
            if part.size == 0:
                continue
            i = np.arange(1, width + 1, dtype=np.float64)
            w = np.where(i <= m[part, None], 1.0 / (a[part, None] + i), 0.0)
            im1 = i - 1.0
            w2 = w * w
            # P_i = sum_{j<i} (j-1) w_j: the exclusive running sum along the block
            run = np.cumsum(im1 * w, axis=1) - im1 * w
            out[:, part] = (w.sum(axis=1), w2.sum(axis=1), (im1 * w).sum(axis=1),
                            (im1 * w2).sum(axis=1), (im1 * (i - 2.0) * w2).sum(axis=1),
                            (w * run).sum(axis=1))
    return out


def ap_block_variance(a: np.ndarray, n: np.ndarray, p: np.ndarray, m: np.ndarray,
                      before: np.ndarray) -> np.ndarray:
    """``Var(Y_t)`` of every block (see the module docstring): ``a`` candidates above it,
    ``n`` items, ``p`` relevant, ``m`` places inside the cutoff, ``before`` relevant items
    in the blocks above it. Blocks whose order cannot matter get an exact 0."""
    var = np.zeros(a.size)
    live = np.flatnonzero((m >= 1) & (p > 0) & (p < n))
    if live.size == 0:
        return var
    a, n, p, m = (x[live].astype(np.int64) for x in (a, n, p, m))
    nf, pf = n.astype(np.float64), p.astype(np.float64)
    W, S2, A, N2, Na, U = _block_place_sums(a.astype(np.float64), m)
    C = 0.5 * (W * W - S2)
    N3 = Na + 4.0 * U
    f1, f2, f3, f4 = (_falling_ratio(pf, nf, k) for k in (1, 2, 3, 4))
    # differences of the moments in forms without cancellation where n allows them
    var_l = pf * (nf - pf) / (nf * (nf - 1.0)) * (S2 - W * W / nf)
    f3_f1f2 = np.where(n >= 3, -2.0 * f2 * (nf - pf) / (nf * np.maximum(nf - 2.0, 1.0)),
                       -f1 * f2)
    r1 = (pf - 2.0) * (pf - 3.0) / np.maximum((nf - 2.0) * (nf - 3.0), 1.0)
    r2 = pf * (pf - 1.0) / (nf * (nf - 1.0))
    f4_f2f2 = np.where(n >= 4, f2 * (r1 - r2), -f2 * f2)
    cov_lq = f3_f1f2 * W * A + (f2 - f3) * (C + N2)
    var_q = f4_f2f2 * A * A + (f3 - f4) * N3 + (f2 - f4) * N2
    b1 = before[live].astype(np.float64) + 1.0
    var[live] = np.maximum(b1 * b1 * var_l + 2.0 * b1 * cov_lq + var_q, 0.0)
    return var


@dataclass(frozen=True)
class AveragePrecision(Measure):
    """``(1/Z) sum_{r <= K, relevant} precision@r``; exact E and Var."""

    def norm(self, ev: TableEvaluation) -> Floats:
        """Z: R, or min(K, R) with ``ap_norm="min"`` and a cutoff (``"hits"``: see
        :meth:`realise`, :meth:`_closed_hits`). R counts the relevant items the table
        counts relevant: under ``relevant_scores="positive"`` not those scored <= 0
        (``n_gated``; torchmetrics' full AP divides by the relevant items scored > 0), and
        1 where none is left (the sum is 0 there)."""
        r = ev.R
        if ev.b.n_gated.any():
            r = np.maximum(r - ev.b.n_gated, 1.0)
        if ev.m.k is not None and ev.m.ap_norm == "min":
            return np.minimum(ev.k_safe(), r)
        return r

    def _terms(self, ev: TableEvaluation) -> tuple[Floats, Floats, Ints, Floats]:
        """Per block ``(s1, s2, before, term)``: the sums over its places inside the cutoff
        of ``1/r`` and of ``(places above in the block)/r``, the relevant items of the
        blocks above it, and its expected sum of precisions at its relevant items."""
        b = ev.b
        n = b.bsz.astype(np.float64)
        p = b.p_t
        inv = np.where(ev.in_k, 1.0 / (b.pos + 1.0), 0.0)
        # Segment sums over each block's own positions (no prefix differences at depth).
        s1 = b.block_sum(inv)
        s2 = b.block_sum(inv * (b.pos - b.ba[b.bid]))
        before = b.within_row_exclusive(p)
        c = np.where(b.bsz > 1, (p - 1) / np.maximum(n - 1.0, 1.0), 0.0)
        term = np.where(p > 0, p / n * ((1.0 + before) * s1 + c * s2), 0.0)
        return s1, s2, before, term

    def _closed_hits(self, ev: TableEvaluation) -> Closed:
        """E[AP@K] divided by the hits in the top K (the module docstring); no variance."""
        b = ev.b
        p = b.p_t
        m = ev.m_t
        s1, s2, before, term = self._terms(ev)
        inside = (m >= 1) & (m >= b.bsz)
        e_in = ev.row_sum_blocks(np.where(inside, term, 0.0))
        h_in = ev.row_sum_blocks(np.where(inside, p, 0).astype(np.float64))
        e = np.where(h_in > 0, e_in / np.maximum(h_in, 1.0), 0.0)
        cut = np.flatnonzero((m >= 1) & (m < b.bsz) & (p > 0))  # at most one per row
        if cut.size:
            rows = b.brow[cut]
            nc, pc, mc = (x[cut].astype(np.int64) for x in (b.bsz, p, m))
            table = np.array([math.lgamma(x + 1.0) for x in range(int(nc.max()) + 1)])

            def log_choose(top: np.ndarray, k: np.ndarray) -> np.ndarray:
                ok = (k >= 0) & (k <= top)
                kk = np.clip(k, 0, top)
                out: np.ndarray = np.where(ok, table[top] - table[kk] - table[top - kk],
                                           -np.inf)
                return out

            total = np.zeros(cut.size)
            b1 = before[cut] + 1.0
            pair = np.where(mc > 1, 1.0 / np.maximum(mc - 1.0, 1.0), 0.0)
            for j in range(int(np.minimum(pc, mc).max()) + 1):
                checkpoint()
                prob = np.exp(log_choose(pc, np.full(cut.size, j))
                              + log_choose(nc - pc, mc - j) - log_choose(nc, mc))
                mine = j / mc * (b1 * s1[cut] + (j - 1) * pair * s2[cut])
                hits = h_in[rows] + j
                total += np.where(hits > 0, prob * (e_in[rows] + mine)
                                  / np.maximum(hits, 1.0), 0.0)
            e[rows] = total
        decided = b.row_any((m >= 1) & (p > 0) & (p < b.bsz))
        return e, None, decided

    def extremes(self, ev: TableEvaluation) -> tuple[Floats, Floats] | None:
        """AP@K over the hits in the top K is not monotone in moving a relevant item up
        (one more hit in the top K can lower the mean precision), so the label orderings
        are not its extremes: the maximum puts the relevant items of every block wholly
        inside K first and j of the cut block's at the top of its places, the minimum
        last and at the bottom, each at its best (worst) j; None for the other AP."""
        if ev.m.k is None or ev.m.ap_norm != "hits":
            return None
        b = ev.b
        p, n, m = (x.astype(np.int64) for x in (b.p_t, b.bsz, ev.m_t))
        a = b.ba.astype(np.float64)
        before = b.within_row_exclusive(p).astype(np.float64)

        def places(offset: np.ndarray, count: np.ndarray, sel: np.ndarray) -> np.ndarray:
            """sum_{i <= count} (B + i) / (a + offset + i) for the blocks ``sel``."""
            out = np.zeros(sel.size)
            for i in range(1, int(count.max(initial=0)) + 1):
                out += np.where(i <= count, (before[sel] + i) / (a[sel] + offset + i), 0.0)
            return out

        inside = np.flatnonzero((m >= 1) & (m >= n) & (p > 0))
        s_max = np.bincount(b.brow[inside], weights=places(np.zeros(inside.size), p[inside],
                                                           inside), minlength=b.rows)
        s_min = np.bincount(b.brow[inside], weights=places(
            (n[inside] - p[inside]).astype(np.float64), p[inside], inside), minlength=b.rows)
        h_in = np.bincount(b.brow[inside], weights=p[inside], minlength=b.rows)
        safe = np.maximum(h_in, 1.0)
        first = np.where(h_in > 0, s_max / safe, 0.0)
        last = np.where(h_in > 0, s_min / safe, 0.0)
        cut = np.flatnonzero((m >= 1) & (m < n) & (p > 0))
        if cut.size:
            rows = b.brow[cut]
            lo = np.maximum(0, m[cut] - (n[cut] - p[cut]))
            hi = np.minimum(p[cut], m[cut])
            best, worst = first[rows].copy(), last[rows].copy()
            best[lo > 0], worst[lo > 0] = -np.inf, np.inf  # j = 0 is not possible there
            for j in range(1, int(hi.max()) + 1):
                checkpoint()
                ok = (lo <= j) & (j <= hi)
                count = np.full(cut.size, j)
                top = places(np.zeros(cut.size), count, cut)
                bottom = places((m[cut] - j).astype(np.float64), count, cut)
                hits = h_in[rows] + j
                best = np.where(ok, np.maximum(best, (s_max[rows] + top) / hits), best)
                worst = np.where(ok, np.minimum(worst, (s_min[rows] + bottom) / hits), worst)
            first[rows], last[rows] = best, worst
        return first, last

    def _key(self, ev: TableEvaluation) -> tuple[object, ...]:
        """What AP's values on a batch depend on besides the batch: MAP and GMAP of the
        same options share them (computed once per batch)."""
        return ("AP", ev.m.k, ev.m.ap_norm, ev.m.short_list)

    def closed(self, ev: TableEvaluation) -> Closed:
        if ev.m.k is not None and ev.m.ap_norm == "hits":
            return self._closed_hits(ev)
        b = ev.b
        kept = b.shared.get(self._key(ev))
        if kept is None:
            _, _, r_before, term = self._terms(ev)
            z = self.norm(ev)
            e = ev.row_sum_blocks(term) / z
            decided = b.row_any((ev.m_t >= 1) & (b.p_t > 0) & (b.p_t < b.bsz))
            kept = b.shared[self._key(ev)] = (e, decided, r_before, z)
        e, decided, r_before, z = kept
        var = None
        if self.has_variance:
            var_t = ap_block_variance(b.ba, b.bsz, b.p_t, ev.m_t, r_before)
            var = ev.row_sum_blocks(var_t) / z ** 2
        return e, var, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        key = (*self._key(ev), "realised", id(lab))
        kept = b.shared.get(key)
        if kept is None or kept[0] is not lab:
            # precision at each relevant item inside the cutoff: its number among the
            # row's relevant items over its place
            _, row, nth, place, _, _ = b.relevant_places(lab)
            inside = place < ev.kc[row]
            value: np.ndarray = np.bincount(
                row[inside], weights=nth[inside] / (place[inside] + 1.0),
                minlength=b.rows).astype(np.float64)
            if ev.m.k is not None and ev.m.ap_norm == "hits":
                hits = np.bincount(row[inside], minlength=b.rows).astype(np.float64)
                value = np.where(hits > 0, value / np.maximum(hits, 1.0), 0.0)
            else:
                value = value / self.norm(ev)
            kept = b.shared[key] = (lab, value)
        return kept[1]


@dataclass(frozen=True)
class GeometricAP(AveragePrecision):
    """AP per row; the dataset figure is the geometric mean ``exp(mean(log(max(AP,
    1e-5))))`` (trec_eval gm_map)."""

    def spread(self, ev: TableEvaluation, first: Floats) -> Spread | None:
        """Each row's AP distribution over its tie orders (:mod:`geometric`): a block's
        term is ``sum_{i <= m} rho_i (B + c_i) / (a + i)`` (the module docstring)."""
        b = ev.b
        cls = np.where(b.relevant(b.lab_first), 0, 1)
        before = b.within_row_exclusive(b.p_t)
        m_t = ev.m_t

        def block_value(ts: np.ndarray, seqs: np.ndarray) -> np.ndarray:
            rho = (seqs == 0).astype(np.float64)
            hits = before[ts][:, None] + np.cumsum(rho, axis=1)
            place = b.ba[ts][:, None] + np.arange(1, seqs.shape[1] + 1, dtype=np.float64)
            value: np.ndarray = (rho * hits / place).sum(axis=1)
            return value

        random_t = (m_t >= 1) & (b.p_t > 0) & (b.p_t < b.bsz)
        return spread(b, m_t, cls, 2, block_value, first, self.norm(ev), random_t)

    def tie_aware_reason(self) -> str:
        return geometric_reason("AP")


MAP = AveragePrecision(
    "MAP", "optional",
    "average precision over the top K (full list without K), divided by R or, with "
    "ap_norm=min, by min(K, R) (ap_norm=hits: by the hits in the top K); MAP is the mean",
    ("AP",), frozenset({"ap_norm", "relevant_scores"}),
    names={"tieeval": ("MAP", "AP"), "trec_eval": ("map", "map_cut"), "ir_measures": ("AP",),
           "RecBole": ("MAP",), "LensKit": ("AveragePrecision",), "Cornac": ("MAP",),
           "ranx": ("map",)},
    needs=frozenset({"labels"}))

GMAP = GeometricAP(
    "GMAP", "none",
    "geometric mean over rows of average precision, exp(mean(log(max(AP, 1e-5)))) "
    "(trec_eval gm_map); tie-aware: the exact expectation over tie orders", ("gm_map",),
    aggregate="geometric",
    names={"tieeval": ("GMAP", "gm_map"), "trec_eval": ("gm_map",)},
    needs=frozenset({"labels"}), has_variance=False)
