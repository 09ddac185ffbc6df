"""The single-positive closed forms (McSherry & Najork, ECIR 2008, specialised to one relevant
item). With ``a`` candidates strictly above the positive and ``b`` tied with it (itself
included), the positive's rank under uniform random tie-breaking is uniform on
``a+1 .. a+b``; with ``lo = min(a, K)`` and ``hi = min(a+b, K)``:

* ``E[HR@K]   = (hi - lo) / b``, ``Var = h (1 - h)``
* ``E[NDCG@K] = (D[hi] - D[lo]) / b`` with ``D[r] = sum_{j<=r} 1/log2(j+1)``
* ``E[RR]     = (H[a+b] - H[a]) / b`` with harmonic numbers ``H`` (MRR: no cutoff)

``first`` puts the positive at ``a+1``, ``last`` at ``a+b``; ``original`` at the rank the
codebase's own ``np.argsort`` gave it. All arithmetic is float64; counts are int64.
"""


from __future__ import annotations

import functools
import math

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.records.values import InstanceValues

# The one registry of metric names lives in tieeval.metrics.registry; these names stay importable
# from here because they were public before (``tieeval.REGISTRY``, ``metrics.check_k``):
# __all__ below lists them with this module's own.


# ---------------------------------------------------------------------------------------
# Prefix sums of the discounts. Differences of prefixes are taken only up to K, where the
# prefixes are small and the cancellation error is a few ulps.

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
_H_EXACT = _prefix_sums(1.0 / np.arange(1, _H_TABLE + 1))
_H2_EXACT = _prefix_sums(1.0 / np.arange(1, _H_TABLE + 1) ** 2)
_EULER = 0.57721566490153286061


def _tabulated(n, table: np.ndarray, series) -> np.ndarray:
    """``table[n]`` for int64 n <= 4096, ``series(n as float64)`` above."""
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(n.shape, dtype=np.float64)
    small = n <= _H_TABLE
    out[small] = table[n[small]]
    out[~small] = series(n[~small].astype(np.float64))
    return out


def _harmonic_series(x: np.ndarray) -> np.ndarray:
    inv2 = 1.0 / (x * x)
    return (np.log(x) + _EULER + 0.5 / x
            - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 / 252)))


def _harmonic2_series(x: np.ndarray) -> np.ndarray:
    inv = 1.0 / x
    return math.pi ** 2 / 6 - inv + 0.5 * inv ** 2 - inv ** 3 / 6 + inv ** 5 / 30


def harmonic(n: np.ndarray) -> np.ndarray:
    """``H[n] = sum_{j<=n} 1/j`` for int64 n >= 0: table below 4096, asymptotic series above."""
    return _tabulated(n, _H_EXACT, _harmonic_series)


def harmonic2(n: np.ndarray) -> np.ndarray:
    """``H2[n] = sum_{j<=n} 1/j**2``: table below 4096, asymptotic series above."""
    return _tabulated(n, _H2_EXACT, _harmonic2_series)


def rank_value(metric: Metric, rank: np.ndarray) -> np.ndarray:
    """The metric's value for a positive at the deterministic 1-based ``rank`` (float64).

    The one definition behind the original, first and last columns, so that every path
    (per instance or through rank histograms) produces the same floats.
    """
    _check_single_positive(metric)
    rank = np.asarray(rank, dtype=np.int64)
    if metric.name == "HR":
        return (rank <= metric.k).astype(np.float64)
    if metric.name == "NDCG":
        return np.where(rank <= metric.k, 1.0 / np.log2(rank + 1.0), 0.0)
    if metric.name == "MRR":
        return 1.0 / rank
    raise ParameterError(f"{metric} is not defined for the single-positive protocol")


def _check_single_positive(metric: Metric) -> None:
    if not metric.single_positive:
        raise ParameterError(f"{metric} is not defined for the single-positive protocol "
                             "(use tieeval.kernels.general for it)")


def _variance(e: np.ndarray, e2: np.ndarray, b: np.ndarray) -> np.ndarray:
    # E[X^2] - E[X]^2 can round to -1e-18; an untied positive has no tie-break variance at all.
    return np.where(b > 1, np.maximum(e2 - e * e, 0.0), 0.0)


def histogram_cap(metric: Metric) -> int | None:
    """Ranks above this have the same value (0) for cutoff metrics; None: no cutoff."""
    return None if metric.k is None else int(metric.k) + 1


def single_positive(metric: Metric, a: np.ndarray, b: np.ndarray,
                    original: np.ndarray) -> InstanceValues:
    """Per-instance values of ``metric`` from the counts ``a``, ``b`` and the original rank.

    ``a``, ``b`` and ``original`` are int64 arrays with ``a + 1 <= original <= a + b``.
    """
    first = rank_value(metric, a + 1)
    last = rank_value(metric, a + b)
    orig = rank_value(metric, original)
    e, e2, decided = tie_moments(metric, a, b)
    # An untied positive's expectation is its one value; the prefix difference D[a+1] - D[a]
    # can be an ulp off it and break last <= tie_aware <= first.
    e = np.where(b == 1, first, e)
    return InstanceValues(orig, first, last, e, _variance(e, e2, b), decided)


def _reachable(k: int, a: np.ndarray, b: np.ndarray) -> int:
    """``min(k, deepest rank a + b)``: a K past every row's last rank acts as that rank, so a
    huge K (say 10**20) neither overflows int64 nor allocates a discount table of K entries."""
    return min(k, int((a + b).max())) if a.size else min(k, 1)


def _cutoff(metric: Metric) -> int:
    """HR's and NDCG's K: the closed forms take them only with a cutoff."""
    if metric.k is None:
        raise ParameterError(f"{metric} has no cutoff: the single-positive closed forms "
                             "take HR@K and NDCG@K")
    return int(metric.k)


def tie_moments(metric: Metric, a: np.ndarray, b: np.ndarray):
    """``E[X]``, ``E[X^2]`` under uniform tie-breaking, and whether first != last."""
    bf = b.astype(np.float64)
    if metric.name == "HR":
        k = _cutoff(metric)
        reach = _reachable(k, a, b)
        lo, hi = np.minimum(a, reach), np.minimum(a + b, reach)
        e = (hi - lo) / bf
        return e, e, (a < k) & (k < a + b)
    if metric.name == "NDCG":
        k = _reachable(_cutoff(metric), a, b)
        lo, hi = np.minimum(a, k), np.minimum(a + b, k)
        # The table only needs the ranks present; its entries do not depend on its length.
        D, D2 = discount_prefix(1 << max(k - 1, 0).bit_length())
        return (D[hi] - D[lo]) / bf, (D2[hi] - D2[lo]) / bf, (a < k) & (b > 1)
    if metric.name == "MRR":
        lo, hi = a, a + b
        return ((harmonic(hi) - harmonic(lo)) / bf, (harmonic2(hi) - harmonic2(lo)) / bf,
                b > 1)
    raise ParameterError(f"{metric} is not defined for the single-positive protocol")
