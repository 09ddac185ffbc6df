"""Numerical series shared by the measures: harmonic numbers and discount prefixes, sums of
reciprocal powers without cancellation, the hypergeometric miss probability and the
reciprocal-rank moments of a first relevant block (docs/METRICS.md 2, 5, 7).

Private to the measures (they trust their input); every function is float64 arithmetic on
int64 counts.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from tieeval.metrics.measures.protocol import BlockTable, Ints
from tieeval.util.stopping import checkpoint

_DIRECT = 64  # power sums over at most this many terms are added directly
_CHUNK = 1 << 22  # elements per 2-D work array


def buckets(*sizes: np.ndarray) -> Iterator[tuple[tuple[int, ...], Ints]]:
    """Group indices by the power-of-two ceiling of each size (all sizes >= 1)."""
    keys = np.stack([np.ceil(np.log2(np.maximum(s, 1))).astype(np.int64) for s in sizes])
    if keys.shape[1] == 0:
        return
    uniq, inverse = np.unique(keys, axis=1, return_inverse=True)
    inverse = inverse.ravel()
    for u in range(uniq.shape[1]):
        yield tuple(1 << int(b) for b in uniq[:, u]), np.flatnonzero(inverse == u)


def chunks(idx: np.ndarray, width: int) -> list[np.ndarray]:
    """``idx`` in parts of about :data:`_CHUNK` elements of 2-D work ``width`` wide."""
    return np.array_split(idx, max(1, idx.size * width // _CHUNK + 1))


def _prefix_sums(terms: np.ndarray) -> np.ndarray:
    """``[0, t1, t1+t2, ...]`` with compensated (Neumaier) summation: a plain cumsum drifts
    by about 1e-13 over a few thousand terms, which would show in prefix differences."""
    out = np.empty(len(terms) + 1)
    out[0] = total = comp = 0.0
    for i, t in enumerate(terms.tolist(), 1):
        s = total + t
        comp += (total - s) + t if abs(total) >= abs(t) else (t - s) + total
        total = s
        out[i] = total + comp
    return out


@functools.lru_cache(maxsize=64)
def discount_prefix(kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """``D[r] = sum_{j<=r} 1/log2(j+1)`` and ``D2[r] = sum_{j<=r} 1/log2(j+1)**2``, r=0..kmax."""
    d = 1.0 / np.log2(np.arange(2, kmax + 2, dtype=np.float64))
    D, D2 = _prefix_sums(d), _prefix_sums(d * d)
    D.flags.writeable = False
    D2.flags.writeable = False
    return D, D2


_H_TABLE = 4096


@functools.cache
def _h_tables() -> tuple[np.ndarray, np.ndarray]:
    """``H_n`` and ``H2_n`` for n = 0..4096, compensated; made on first use (a few ms of
    Python loop that a run without tied positives never needs)."""
    h = _prefix_sums(1.0 / np.arange(1, _H_TABLE + 1))
    h2 = _prefix_sums(1.0 / np.arange(1, _H_TABLE + 1) ** 2)
    h.flags.writeable = h2.flags.writeable = False
    return h, h2


_EULER = 0.57721566490153286061


def _tabulated(n: npt.ArrayLike, table: np.ndarray,
               series: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``table[n]`` for int64 n <= 4096, ``series(n as float64)`` above."""
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(n.shape, dtype=np.float64)
    small = n <= _H_TABLE
    out[small] = table[n[small]]
    out[~small] = series(n[~small].astype(np.float64))
    return out


def _harmonic_series(x: np.ndarray) -> np.ndarray:
    inv2 = 1.0 / (x * x)
    out: np.ndarray = (np.log(x) + _EULER + 0.5 / x
            - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 / 252)))
    return out


def _harmonic2_series(x: np.ndarray) -> np.ndarray:
    inv = 1.0 / x
    return math.pi ** 2 / 6 - inv + 0.5 * inv ** 2 - inv ** 3 / 6 + inv ** 5 / 30


def harmonic(n: np.ndarray) -> np.ndarray:
    """``H[n] = sum_{j<=n} 1/j`` for int64 n >= 0: table below 4096, asymptotic series above."""
    return _tabulated(n, _h_tables()[0], _harmonic_series)


def harmonic2(n: np.ndarray) -> np.ndarray:
    """``H2[n] = sum_{j<=n} 1/j**2``: table below 4096, asymptotic series above."""
    return _tabulated(n, _h_tables()[1], _harmonic2_series)


def recip_sum(lo: np.ndarray, hi: np.ndarray, power: int) -> np.ndarray:
    """``sum_{j=lo+1..hi} j**-power`` (power 1 or 2) for int64 ``0 <= lo <= hi``.

    No prefix differences (``H[hi] - H[lo]`` cancels when the range is short and deep, and
    a cumsum table drifts by ~1e-13 over a few thousand terms): terms up to position 64 are
    added directly, and the rest comes from the asymptotic expansion of the tail with every
    difference of powers factored (``1/x - 1/y = (y - x)/(x y)``), which has no cancellation.
    At x >= 64 the truncated series is accurate to about 1e-17 relative.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out = np.zeros(lo.shape, dtype=np.float64)
    # Direct part: the whole range when it is short, else the stretch below position 64.
    cut = np.where(hi - lo <= _DIRECT, hi, np.maximum(lo, np.minimum(hi, _DIRECT)))
    direct = np.flatnonzero(cut > lo)
    if direct.size:
        # j ** -power for every j the rows reach, computed once (the same values as
        # elementwise): the rows then gather them
        table = np.arange(1, int(lo[direct].max()) + _DIRECT + 1, dtype=np.float64) ** -power
        # a range of one term (an untied item) is that term: the same value as the row's
        # sum of it and zeros below, without the row
        one = (hi[direct] - lo[direct]) == 1
        if one.any():
            out[direct[one]] = table[lo[direct[one]]]
            direct = direct[~one]
    for chunk in chunks(direct, _DIRECT):
        checkpoint()
        if chunk.size:
            j = lo[chunk, None] + np.arange(1, _DIRECT + 1)
            out[chunk] = np.where(j <= cut[chunk, None], table[j - 1], 0.0).sum(axis=1)
    deep = np.flatnonzero(hi > cut)  # then cut >= 64
    if deep.size:
        x, y = cut[deep].astype(np.float64), hi[deep].astype(np.float64)
        df = (hi[deep] - cut[deep]).astype(np.float64)
        ix, iy = 1.0 / x, 1.0 / y
        q1 = df * ix * iy  # 1/x - 1/y
        q2 = q1 * (ix + iy)  # 1/x^2 - 1/y^2
        if power == 1:
            q4 = q2 * (ix * ix + iy * iy)
            q6 = q2 * (ix ** 4 + (ix * iy) ** 2 + iy ** 4)
            # H(y) - H(x), H(x) ~ ln x + C + 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6)
            out[deep] += np.log1p(df * ix) - 0.5 * q1 + q2 / 12 - q4 / 120 + q6 / 252
        else:
            q3 = q1 * (ix * ix + ix * iy + iy * iy)
            q5 = q1 * sum(ix ** (4 - e) * iy ** e for e in range(5))
            q7 = q1 * sum(ix ** (6 - e) * iy ** e for e in range(7))
            # T(x) - T(y), T(x) = sum_{j>x} j^-2
            #                   ~ 1/x - 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7)
            out[deep] += q1 - 0.5 * q2 + q3 / 6 - q5 / 30 + q7 / 42
    return out


def pmiss(n: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``C(n-p, m) / C(n, m)``: no marked item among m uniform draws from n with p marked.

    Multiplies ``min(m, p)`` factors in [0, 1] (never forms a binomial, which overflows
    float64 near n = 1030); the loop runs over factor index, shrinking to the rows left.
    """
    out = np.ones(n.shape, dtype=np.float64)
    zero = m > n - p
    length = np.where(zero, 0, np.minimum(m, p))
    c = np.where(m <= p, p, m)  # factors (n - c - i)/(n - i), i < length
    order = np.argsort(-length, kind="stable")
    counts = np.bincount(length, minlength=1)
    alive = length.size - np.cumsum(counts)  # alive[i] = #rows with length > i
    for i in range(int(length.max(initial=0))):
        checkpoint()
        rows = order[:alive[i]]
        out[rows] *= (n[rows] - c[rows] - i) / (n[rows] - i)
    out[zero] = 0.0
    return out


def rr_moments(a: np.ndarray, nb: np.ndarray, p: np.ndarray, k: np.ndarray,
                shortcut: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``E[RR@K]`` and ``E[RR@K^2]`` for a first relevant block (a above, nb items, p relevant).

    The first relevant item sits at in-block position J with
    ``P(J = j) = C(nb-j, p-1) / C(nb, p)``, ``j = 1..nb-p+1`` (docs/METRICS.md 7). With p = 1
    (and ``shortcut``) J is uniform and the sums are harmonic differences (section 2);
    otherwise the pmf comes from its recurrence as a product per row, in power-of-two
    buckets of rows so a row's arithmetic never depends on its neighbours.
    """
    a, nb, p, k = (np.asarray(x, dtype=np.int64) for x in (a, nb, p, k))
    length = np.clip(np.minimum(nb - p + 1, k - a), 0, None)
    e1 = np.zeros(a.shape, dtype=np.float64)
    e2 = np.zeros(a.shape, dtype=np.float64)
    general = length > 0
    if shortcut:
        one = general & (p == 1)
        general &= p != 1
        nbf = nb[one].astype(np.float64)
        e1[one] = recip_sum(a[one], a[one] + length[one], 1) / nbf
        e2[one] = recip_sum(a[one], a[one] + length[one], 2) / nbf
    idx = np.flatnonzero(general)
    if idx.size == 0:
        return e1, e2
    for (width,), sel in buckets(length[idx]):
        for rows in chunks(idx[sel], width):
            checkpoint()
            if rows.size == 0:
                continue
            j = np.arange(1, width + 1, dtype=np.int64)
            nr, pr, ar, lr = (x[rows, None] for x in (nb, p, a, length))
            inside = j <= lr
            # pi_1 = p/nb; pi_j = pi_{j-1} (nb - j - p + 2)/(nb - j + 1)
            num = np.where(j == 1, pr, nr - j - pr + 2)
            den = np.where(j == 1, nr, nr - j + 1)
            f = np.where(inside, num / np.where(inside, den, 1), 0.0)
            pi = np.cumprod(f, axis=1)
            inv = 1.0 / (ar + j)
            t = pi * inv
            e1[rows] = t.sum(axis=1)
            e2[rows] = (t * inv).sum(axis=1)
    return e1, e2


def hypergeometric_hits(b: BlockTable, m_t: np.ndarray, x_t: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E and Var of #(marked in the top), ``m_t`` positions of each block inside the top,
    ``x_t`` marked items per block; the draws of different blocks are independent."""
    n = b.bsz.astype(np.float64)
    m = m_t.astype(np.float64)
    x = x_t.astype(np.float64)
    e = np.bincount(b.brow, weights=x * m / n, minlength=b.rows)
    straddle = (m_t > 0) & (m_t < b.bsz)
    var_t = np.where(straddle, m * (n - m) * x * (n - x) / (n * n * np.maximum(n - 1, 1.0)),
                     0.0)
    decided = np.bincount(b.brow[straddle & (x_t > 0) & (x_t < b.bsz)], minlength=b.rows) > 0
    return e, np.bincount(b.brow, weights=var_t, minlength=b.rows), decided


def hypergeometric_extremes(b: BlockTable, m_t: np.ndarray, x_t: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The largest and smallest #(marked in the top) over the tie orders: ``m_t`` places of
    each block inside the top, ``x_t`` marked items per block. A block the top cut straddles
    holds at most ``min(m, x)`` and at least ``max(0, m - (n - x))`` of its marked items
    there (marked items first / last inside the block)."""
    m, x, n = m_t.astype(np.int64), x_t.astype(np.int64), b.bsz.astype(np.int64)
    most = np.minimum(m, x)
    least = np.maximum(0, m - (n - x))
    return (np.bincount(b.brow, weights=most, minlength=b.rows),
            np.bincount(b.brow, weights=least, minlength=b.rows))


def shifted_square_moments(b: BlockTable, m_t: np.ndarray, x_t: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """E[X^2] and Var[X^2] of X = #(marked in the top), ``m_t`` places of each block inside
    the top and ``x_t`` marked items per block.

    Only a block the cut straddles is random, and a row's cut straddles at most one block,
    so X = c + H with c fixed and H hypergeometric (n items, x marked, m drawn). H's
    factorial moments are ``E[H_(r)] = m_(r) x_(r) / n_(r)`` (falling factorials), which give
    its raw moments mu_1..mu_4; then E[X^2] = c^2 + 2 c mu_1 + mu_2 and
    Var[X^2] = 4 c^2 Var H + 4 c Cov(H, H^2) + Var(H^2).
    """
    m, x, n = (a.astype(np.float64) for a in (m_t, x_t, b.bsz))
    whole = m_t >= b.bsz
    straddle = (m_t > 0) & ~whole
    c = np.bincount(b.brow, weights=np.where(whole, x, 0.0), minlength=b.rows)
    f = [np.zeros(b.rows) for _ in range(5)]  # factorial moments F_1..F_4 of each row's H
    t = np.flatnonzero(straddle)
    rows = b.brow[t]
    term = np.ones(t.size)
    for r in range(1, 5):
        nr = n[t] - (r - 1)
        term = term * (m[t] - (r - 1)) * (x[t] - (r - 1)) / np.where(nr > 0, nr, 1.0)
        term = np.where((m[t] >= r) & (x[t] >= r), term, 0.0)
        f[r][rows] = term
    mu1, mu2 = f[1], f[2] + f[1]
    mu3 = f[3] + 3 * f[2] + f[1]
    mu4 = f[4] + 6 * f[3] + 7 * f[2] + f[1]
    var_h = np.zeros(b.rows)  # the closed form, not mu2 - mu1^2 (which cancels)
    var_h[rows] = (m[t] * (n[t] - m[t]) * x[t] * (n[t] - x[t])
                   / (n[t] * n[t] * np.maximum(n[t] - 1, 1.0)))
    e2 = c * c + 2 * c * mu1 + mu2
    var2 = 4 * c * c * var_h + 4 * c * (mu3 - mu1 * mu2) + (mu4 - mu2 * mu2)
    return e2, np.maximum(var2, 0.0)
