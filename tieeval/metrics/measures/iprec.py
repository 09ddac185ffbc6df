"""Interpolated precision at a recall level, IPrec@x (trec_eval iprec_at_recall_x).

With R relevant items of which ``R_ret`` are ranked, at ranks ``r_1 < ... < r_{R_ret}``, and
``c = lround(x R)`` (trec_eval 10; trec_eval 9.0.8, which pytrec_eval bundles, takes
``c = (long)(x R + 0.9)``: the metric's ``iprec_rounding``, ``--convention trec_eval9``)::

    IPrec(x) = max_{j = max(c, 1)..R_ret} j / r_j     if c <= R_ret and R_ret >= 1,
               0                                    otherwise.

The exact expectation under uniform random tie-breaking is a product over tie blocks of
lattice-path counts (:func:`cascade.iprec_expectation`), within a work limit per row (a
row beyond it is NaN and the dataset's tie-aware figure is null, with the reason). The
variance is not computed: the maximum over ranks has no additive decomposition over
blocks, and no exact computation within the work limits is implemented (the tie-aware sd
is null).

trec_eval's 11pt_avg (IPrec11pt here) is the mean of IPrec at the 11 levels 0, 0.1, ..., 1,
and its expectation the mean of theirs.

Reference: trec_eval m_iprec_at_recall.c, m_11pt_avg.c; F. McSherry & M. Najork, ECIR 2008.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.cascade import (
    iprec_cut,
    iprec_expectation,
    iprec_expectations,
    not_computed_reason,
)


def interpolated_expectation(ev, level: float) -> np.ndarray:
    """The exact E[IPrec(level)] of each row (NaN beyond the work limit)."""
    e = iprec_expectation(ev.b, level, depth=ev.b.depth, relevant_level=ev.b.level,
                          rounding=ev.m.iprec_rounding)
    return np.asarray(e, dtype=np.float64)


def interpolated(ev, lab, level: float) -> np.ndarray:
    """Interpolated precision at recall ``level`` (trec_eval m_iprec_at_recall.c) of the
    ordering whose labels by position are ``lab``: with c = lround(x R), the largest
    precision at any retrieved rank at or below the c-th relevant item (any rank when
    c = 0); 0 when fewer than c relevant items are retrieved or nothing is. (trec_eval 9
    rounds c as (long)(x R + 0.9): ``--convention trec_eval9``.)"""
    b = ev.b
    rel = b.relevant(lab) & ev.in_k
    c = np.cumsum(rel, dtype=np.int64)
    base = np.concatenate(([0], c))[b.offsets[:-1]]
    so_far = c - base[b.row]
    prec = np.where(ev.in_k, so_far / (b.pos + 1.0), 0.0)
    best = np.zeros(b.size)  # max precision at this rank or below (suffix maximum)
    for _, idx in b._by_length(np.arange(b.rows)):
        best[idx] = np.maximum.accumulate(prec[idx][:, ::-1], axis=1)[:, ::-1]
    cut = iprec_cut(level, b.n_pos, ev.m.iprec_rounding)
    out = np.zeros(b.rows)
    at = rel & (so_far == cut[b.row])  # the c-th relevant item (c >= 1)
    out[b.row[at]] = best[at]
    zero = (cut == 0) & (b.n > 0)
    out[zero] = best[b.offsets[:-1][zero]]
    return out


@dataclass(frozen=True)
class InterpolatedPrecision(Measure):
    """trec_eval's interpolated precision at a recall level; exact E within the work
    limit, no variance."""

    def _level(self, ev) -> float:
        level = ev.m.level  # IPrec always has one (RelMetric checks it)
        return 0.0 if level is None else level

    def closed(self, ev):
        return interpolated_expectation(ev, self._level(ev)), None, None

    def realise(self, ev, lab, judged):
        return interpolated(ev, lab, self._level(ev))

    def nan_without_ranked(self, k, big_r, options) -> bool:
        """m_iprec_at_recall.c starts from the precision of the whole ranking,
        num_rel_ret / num_ret: 0/0 for an empty one, kept at every level whose cutoff is 0
        relevant documents."""
        rounding = options.get("iprec_rounding", "trec_eval")
        return int(iprec_cut(float(k), np.array([big_r]), rounding)[0]) == 0

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason(self.name)}"


@dataclass(frozen=True)
class ElevenPointAverage(InterpolatedPrecision):
    """trec_eval's 11pt_avg: the mean of IPrec at the 11 recall levels 0, 0.1, ..., 1.

    m_11pt_avg.c computes the same interpolated precisions as m_iprec_at_recall.c (the
    cutoff lround(x R), the best precision at or below it, 0 past the relevant items
    retrieved) and averages them, so E is the mean of the 11 exact expectations (NaN where
    one is beyond the work limit); no variance, as IPrec.
    """

    def closed(self, ev):
        # the 11 levels share their path counts in one call
        e = iprec_expectations(ev.b, ELEVEN_LEVELS, depth=ev.b.depth,
                               relevant_level=ev.b.level, rounding=ev.m.iprec_rounding)
        return np.sum(e, axis=0) / len(ELEVEN_LEVELS), None, None

    def realise(self, ev, lab, judged):
        return sum(interpolated(ev, lab, x) for x in ELEVEN_LEVELS) / len(ELEVEN_LEVELS)

    def nan_without_ranked(self, k, big_r, options) -> bool:
        """m_11pt_avg.c starts from num_rel_ret / num_ret as m_iprec_at_recall.c does, and
        recall 0.0's cutoff is always 0 relevant documents: an empty ranking's 0/0 is in
        the sum, so the average is -nan whatever R is."""
        return True

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason('IPrec')}"


#: trec_eval's 11pt_avg levels (m_11pt_avg.c): 0.0, 0.1, ..., 1.0 as C writes them.
ELEVEN_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


IPREC = InterpolatedPrecision(
    "IPrec", "level",
    "interpolated precision at recall level x in [0, 1] (trec_eval iprec_at_recall_x): the "
    "best precision at any rank holding at least round(x R) relevant items",
    ("iprec_at_recall",), options=frozenset({"iprec_rounding"}),
    names={"tieeval": ("IPrec", "iprec_at_recall"), "trec_eval": ("iprec_at_recall",),
           "ir_measures": ("IPrec",)},
    needs=frozenset({"labels", "level", "every_position"}), has_variance=False)

IPREC_11PT = ElevenPointAverage(
    "IPrec11pt", "none",
    "11-point interpolated average precision: the mean of IPrec at recall levels 0, 0.1, "
    "..., 1 (trec_eval 11pt_avg)",
    names={"tieeval": ("IPrec11pt",), "trec_eval": ("11pt_avg",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)
