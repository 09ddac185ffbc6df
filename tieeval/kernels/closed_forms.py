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

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.measures.series import discount_prefix, harmonic, harmonic2
from tieeval.metrics.metric import Metric
from tieeval.records.values import InstanceValues

# The series the closed forms take (public here before they moved to the measures).
__all__ = ["discount_prefix", "harmonic", "harmonic2", "histogram_cap", "rank_value",
           "single_positive", "tie_moments"]


def rank_value(metric: Metric, rank: np.ndarray) -> np.ndarray:
    """The metric's value for a positive at the deterministic 1-based ``rank`` (float64).

    The one definition behind the original, first and last columns, so that every path
    (per instance or through rank histograms) produces the same floats.
    """
    if not metric.single_positive:
        raise ParameterError(f"{metric} is not defined for the single-positive protocol "
                             "(use tieeval.kernels.general for it)")
    return metric.spec.rank_value(metric.k, np.asarray(rank, dtype=np.int64))


def histogram_cap(metric: Metric) -> int | None:
    """The first rank the metric does not read: a positive ranked there or deeper has
    one value, the one at this rank (0 for a cutoff metric); None: it reads every rank.
    From the depth its measure declares for one relevant item
    (:meth:`~tieeval.metrics.measures.base.Measure.read_depth`)."""
    depth = metric.spec.read_depth(metric.k, 1, None)
    return None if depth is None else int(depth) + 1


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
    # E[X^2] - E[X]^2 can round to -1e-18; an untied positive has no tie-break variance at all.
    variance = np.where(b > 1, np.maximum(e2 - e * e, 0.0), 0.0)
    return InstanceValues(orig, first, last, e, variance, decided)


def tie_moments(metric: Metric, a: np.ndarray, b: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``E[X]``, ``E[X^2]`` under uniform tie-breaking, and whether first != last."""
    spec = metric.spec
    if not spec.single_positive:
        raise ParameterError(f"{metric} is not defined for the single-positive protocol")
    if metric.k is None and not spec.covers_single_positive(None):
        raise ParameterError(f"{metric} has no cutoff: the single-positive closed forms "
                             "take HR@K and NDCG@K")
    return spec.tie_moments(metric.k, a, b)
