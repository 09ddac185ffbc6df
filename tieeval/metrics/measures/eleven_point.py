"""trec_eval's 11-point interpolated average precision (11pt_avg): IPrec11pt here.

    11pt_avg = (1/11) sum_{x = 0, 0.1, ..., 1} IPrec(x)

m_11pt_avg.c computes the same interpolated precisions as m_iprec_at_recall.c (the cutoff
lround(x R) in relevant items, the best precision at or below it, 0 when fewer relevant
items are retrieved) and averages them, so this measure is the mean of
:data:`~tieeval.metrics.measures.iprec.IPREC` at the 11 levels, realised value and exact
expectation alike (the expectation of a mean is the mean of the expectations; NaN where one
level is beyond IPrec's work limit). No variance, as IPrec.

Reference: trec_eval m_11pt_avg.c, m_iprec_at_recall.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.cascade import not_computed_reason
from tieeval.metrics.measures.iprec import InterpolatedPrecision

#: trec_eval's levels (m_11pt_avg.c): 0.0, 0.1, ..., 1.0 as C writes them.
ELEVEN_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class _AtLevel:
    """An evaluation of IPrec11pt seen as one of IPrec at ``level``: the metric's level
    replaced, everything else (the batch, the cutoffs, the options) the evaluation's own."""

    def __init__(self, ev, level: float):
        self._ev = ev
        self.m = _MetricAtLevel(ev.m, level)

    def __getattr__(self, name):
        return getattr(self._ev, name)


class _MetricAtLevel:
    def __init__(self, metric, level: float):
        self._metric, self.level = metric, level

    def __getattr__(self, name):
        return getattr(self._metric, name)


@dataclass(frozen=True)
class ElevenPointAverage(InterpolatedPrecision):
    """The mean of IPrec at recall 0, 0.1, ..., 1; exact E within IPrec's work limit, no
    variance."""

    def closed(self, ev):
        e = sum(InterpolatedPrecision.closed(self, _AtLevel(ev, x))[0] for x in ELEVEN_LEVELS)
        return np.asarray(e, dtype=np.float64) / len(ELEVEN_LEVELS), None, None

    def realise(self, ev, lab, judged):
        return sum(InterpolatedPrecision.realise(self, _AtLevel(ev, x), lab, judged)
                   for x in ELEVEN_LEVELS) / len(ELEVEN_LEVELS)

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason('IPrec')}"


IPREC_11PT = ElevenPointAverage(
    "IPrec11pt", "none",
    "11-point interpolated average precision: the mean of IPrec at recall levels 0, 0.1, "
    "..., 1 (trec_eval 11pt_avg)",
    names={"tieeval": ("IPrec11pt",), "trec_eval": ("11pt_avg",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)
