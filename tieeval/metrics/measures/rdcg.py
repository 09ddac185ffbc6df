"""trec_eval's NDCG averages: ndcg_rel (NDCG averaged over the relevant items) and Rndcg
(NDCG averaged at the ideal list's gain changes).

With ``g`` the gain (the relevance level, whatever ``-l`` says), ``D@j`` the DCG of the
first j retrieved places (log2 discount), ``I@j`` the ideal DCG of the first j places of
the judged gains sorted descending, ``T`` the number of positive judged gains and N the
number retrieved:

    ndcg_rel = (1/T) [ sum_{retrieved r, g_r > 0} D@r / I@min(r, T)
                       + (T - N_pos) D@N / I@T ]

(``N_pos`` the retrieved items of positive gain: each relevant item not retrieved counts
the NDCG at the end of the list), and

    Rndcg = mean over the points j of D@min(j, N) / I@j

the points being each place j <= T where the ideal gain changes (j = T included), and
also j = N (with I@T) when T + 1 < N (m_Rndcg.c: the end of the retrieved list; a list
that ends exactly one place after the ideal's last positive gain adds no such point).
Rndcg is 0 for a row with no relevant item (``label >= level``).

Expectations under uniform random tie-breaking are exact. Rndcg is linear in the gains,
``sum_r g_r w_r`` with ``w_r = d_r sum_{points j > r} 1 / (P I@j)``, so each tie block
contributes ``G_t W_t / n_t`` and ``SS_g SS_w / (n_t - 1)`` to E and Var. ndcg_rel is
quadratic: with ``x`` the gain and ``y = [x > 0]``, both of its sums are
``sum_{k, r} c_{kr} E[x_k y_r]``, where for places k != r of one block of n items
``E[x_k y_r] = (S_x S_y - S_xy) / (n (n - 1))``, for k = r ``S_xy / n``, and for places
of different blocks the product of their blocks' means; the sums over pairs reduce to
running sums along each row (no variance is computed: the tie-aware sd is null). first /
last rank every tie block by label descending / ascending.

Reference: K. Järvelin & J. Kekäläinen, TOIS 20(4), 2002; trec_eval m_ndcg_rel.c,
m_Rndcg.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.placement import (
    ideal_gains,
    ideal_prefix,
    linear_moments,
    row_cumsum,
)
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation


def _ideal(ev: TableEvaluation) -> tuple[Floats, Ints, Ints, Floats, Ints]:
    """``(prefix, starts, T)``: each row's ideal DCG@j at ``prefix[starts + j]`` (once per
    batch)."""
    kept: tuple[Floats, Ints, Ints, Floats, Ints] | None = ev.b.shared.get(_IDEAL_KEY)
    if kept is None:
        gains, off = ideal_gains(ev.b)
        prefix, starts = ideal_prefix(gains, off, lambda g, at: g / np.log2(at + 2.0))
        kept = ev.b.shared[_IDEAL_KEY] = (prefix, starts, np.diff(off), gains, off)
    return kept


_IDEAL_KEY = "rdcg.ideal"  # the key of _ideal() in BlockTable.shared


@dataclass(frozen=True)
class NdcgRel(Measure):
    """trec_eval's ndcg_rel: NDCG at each relevant item, the unretrieved ones at the end."""

    def defined(self, ev: TableEvaluation) -> Bools:
        """Where some judged gain is positive (T >= 1), under any relevance level."""
        return ev.b.row_max_label() > 0

    def _parts(self, ev: TableEvaluation
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        b = ev.b
        prefix, starts, t, _, _ = _ideal(ev)
        d = np.where(ev.in_k, 1.0 / np.log2(b.pos + 2.0), 0.0)  # 0-based place r: 1/log2(r + 2)
        ideal_at = prefix[starts[b.row] + np.minimum(b.pos + 1, t[b.row])]
        inv = np.where(ev.in_k & (ideal_at > 0), 1.0 / np.where(ideal_at > 0, ideal_at, 1.0),
                       0.0)
        full = prefix[starts + t]
        return d, inv, t.astype(np.float64), np.where(full > 0, full, 1.0)

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        d, inv, t, full = self._parts(ev)
        x = np.where(ev.in_k, np.maximum(lab, 0.0), 0.0)
        dcg = row_cumsum(b, x * d)
        at_rel = np.bincount(b.row, weights=np.where(x > 0, dcg * inv, 0.0), minlength=b.rows)
        n_pos = np.bincount(b.row[x > 0], minlength=b.rows)
        total = np.bincount(b.row, weights=x * d, minlength=b.rows)
        value: Numbers = (at_rel + (t - n_pos) * total / full) / np.where(ev.defined, t, 1.0)
        return value

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        d, inv, t, full = self._parts(ev)
        x = np.maximum(b.lab_first, 0.0)
        y = (x > 0).astype(np.float64)
        n = b.bsz.astype(np.float64)
        sx, sy = b.block_sum(x), b.block_sum(y)
        xbar, ybar = (sx / n)[b.bid], (sy / n)[b.bid]
        # same place (S_xy = S_x: y marks x > 0) and two places of one block, minus the
        # product of means counted by the independent part
        c1 = sx / n - sx * sy / n ** 2
        c2 = np.where(b.bsz > 1, (sx * sy - sx) / (n * np.maximum(n - 1.0, 1.0)), 0.0) \
            - sx * sy / n ** 2
        ret = ev.in_k.astype(np.float64)
        # first sum: pairs k <= r, weight d_k / I_r
        mean1 = np.bincount(b.row, weights=inv * ybar * row_cumsum(b, d * xbar),
                            minlength=b.rows)
        # d of the places above, within the block (row-local running sums)
        above = row_cumsum(b, d, inclusive=False)
        within = above - above[b.bst][b.bid]
        corr1 = (c1 * b.block_sum(inv * d) + c2 * b.block_sum(inv * within))
        first = mean1 + np.bincount(b.brow, weights=corr1, minlength=b.rows)
        # second sum: T E[D@N] - E[N_pos D@N]
        e_dcg = np.bincount(b.row, weights=d * xbar, minlength=b.rows)
        e_npos = np.bincount(b.row, weights=ret * ybar, minlength=b.rows)
        w_t = b.block_sum(d)
        m_t = b.block_sum(ret)
        corr2 = c1 * w_t + c2 * (m_t - 1.0) * w_t
        e_n_dcg = e_npos * e_dcg + np.bincount(b.brow, weights=corr2, minlength=b.rows)
        e = (first + (t * e_dcg - e_n_dcg) / full) / np.where(ev.defined, t, 1.0)
        return e, None, None


@dataclass(frozen=True)
class RNdcg(Measure):
    """trec_eval's Rndcg: NDCG averaged at the ideal list's gain changes."""

    def _weights(self, ev: TableEvaluation) -> Floats:
        """``w_r = d_r sum_{points j > r} 1 / (P I@j)`` at each place (0 past the depth)."""
        b = ev.b
        prefix, starts, t, gains, off = _ideal(ev)
        rows = b.rows
        grow = np.repeat(np.arange(rows, dtype=np.int64), t)
        gpos = np.arange(gains.size, dtype=np.int64) - off[:-1][grow]
        # the places j (1..T) where the ideal gain changes, and j = T
        change = np.zeros(gains.size, dtype=bool)
        change[1:] = (gains[1:] != gains[:-1]) & (grow[1:] == grow[:-1])
        prow = np.concatenate((grow[change], np.flatnonzero(t > 0)))
        pj = np.concatenate((gpos[change], t[t > 0]))
        idcg = prefix[starts[prow] + pj]
        n_ret = ev.kc
        pk = np.minimum(pj, n_ret[prow])
        tail = np.flatnonzero((t > 0) & (t + 1 < n_ret))
        prow = np.concatenate((prow, tail))
        pk = np.concatenate((pk, n_ret[tail]))
        idcg = np.concatenate((idcg, prefix[starts[tail] + t[tail]]))
        count = np.bincount(prow, minlength=rows).astype(np.float64)
        v = 1.0 / (idcg * count[prow])
        # each point counts at the places r < k: total minus the points stopped by r
        total = np.bincount(prow, weights=v, minlength=rows)
        stop = np.zeros(b.size)
        inside = pk < b.n[prow]
        np.add.at(stop, b.offsets[prow[inside]] + pk[inside], v[inside])
        w = total[b.row] - row_cumsum(b, stop)
        return np.where(ev.in_k, w / np.log2(b.pos + 2.0), 0.0)

    def closed(self, ev: TableEvaluation) -> Closed:
        e, var = linear_moments(ev.b, np.maximum(ev.b.lab_first, 0.0), self._weights(ev))
        return e, var, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        return np.bincount(ev.b.row, weights=np.maximum(lab, 0.0) * self._weights(ev),
                           minlength=ev.b.rows)


NDCG_REL = NdcgRel(
    "NDCG-rel", "none",
    "NDCG averaged over the relevant items (trec_eval ndcg_rel): the NDCG at each "
    "retrieved item of positive gain, the NDCG of the whole list for each one not "
    "retrieved",
    names={"tieeval": ("NDCG-rel",), "trec_eval": ("ndcg_rel",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)

RNDCG = RNdcg(
    "Rndcg", "none",
    "NDCG averaged at the R levels (trec_eval Rndcg): at each place where the ideal "
    "list's gain changes, and at the end of the retrieved list",
    names={"tieeval": ("Rndcg",), "trec_eval": ("Rndcg",)},
    needs=frozenset({"labels", "every_position"}))
