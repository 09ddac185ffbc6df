"""Per-instance values of one metric: the one record both kernels return row by row (and
``diff``, ``--per-instance`` and ``--per-query`` consume)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class InstanceValues:
    """Per-instance values of one output row (float64 arrays, one entry per instance).

    ``defined`` (bool) marks the instances where the metric exists (None: all of them);
    ``variance`` is the tie-break variance of ``tie_aware`` (None where no closed form
    exists, MAP); ``tie_decided`` marks instances whose first and last values differ.
    """

    original: np.ndarray
    first: np.ndarray
    last: np.ndarray
    tie_aware: np.ndarray
    variance: np.ndarray | None
    tie_decided: np.ndarray
    defined: np.ndarray | None = None
    # a geometric mean's rows whose value ties decide, with their exact distributions
    # (tieeval.metrics.measures.geometric.Spread), for the dataset's tie-aware figure
    spread: object | None = None
    # a weighted mean's weight per instance (micro-averaged Precision@K: min(K, R)); None:
    # the plain mean
    weight: np.ndarray | None = None
