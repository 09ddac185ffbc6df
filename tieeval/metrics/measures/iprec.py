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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.cascade import (
    iprec_cut,
    iprec_expectations,
    not_computed_reason,
)
from tieeval.metrics.measures.protocol import (
    BlockTable,
    Bools,
    Closed,
    Floats,
    Numbers,
    TableEvaluation,
)
from tieeval.util.stopping import checkpoint


def _planned_levels(ev: TableEvaluation) -> set[float]:
    """The recall levels of every IPrec and 11pt_avg metric planned on the batch with this
    metric's rounding: they share their set-up, so they are computed together, once."""
    key = ("IPrec", "planned", ev.m.iprec_rounding)
    kept = ev.b.shared.get(key)
    if kept is not None and kept[0] is ev.b.planned:
        levels: set[float] = kept[1]
        return levels
    levels = set()
    for m in ev.b.planned:
        checkpoint()
        spec = getattr(m, "spec", None)
        if isinstance(spec, InterpolatedPrecision) and m.iprec_rounding == ev.m.iprec_rounding:
            levels.update(spec.recall_levels(m.level))
    ev.b.shared[key] = (ev.b.planned, levels)
    return levels


def _interpolated(ev: TableEvaluation, lab: Floats, levels: Iterable[float]
                  ) -> dict[float, np.ndarray]:
    """Interpolated precision at each recall level of ``levels`` (trec_eval
    m_iprec_at_recall.c) of the ordering whose labels by position are ``lab``, as
    ``{level: values}``: with c = lround(x R), the largest precision at any retrieved rank
    at or below the c-th relevant item (any rank when c = 0); 0 when fewer than c relevant
    items are retrieved or nothing is. (trec_eval 9 rounds c as (long)(x R + 0.9):
    ``--convention trec_eval9``.)

    The best precision at or below a rank is reached at a relevant item (between two of
    them precision only falls), so the curve is read at the relevant items retrieved
    only: with j relevant items at or above the j-th one's place r_j, its precision is
    j / (r_j + 1) and the interpolated precision the largest of these from the c-th on,
    the same float as the largest over every place (division rounds monotonically). So
    the compact block table, which keeps every relevant item at its true place, gives
    the full table's values."""
    b = ev.b
    _, rel_row, so_far, place, base, in_row = b.relevant_places(lab)
    inside = place < ev.kc[rel_row]
    if not inside.all():  # a depth: each row's relevant items above it (a prefix)
        rel_row, so_far, place = rel_row[inside], so_far[inside], place[inside]
        in_row = np.bincount(rel_row, minlength=b.rows)
        base = np.cumsum(in_row) - in_row
    best = _suffix_max(so_far / (place + 1.0), rel_row, b.rows)
    out_levels = {}
    for level in levels:
        checkpoint()
        cut = iprec_cut(level, b.n_pos, ev.m.iprec_rounding)
        out = np.zeros(b.rows)
        reached = np.flatnonzero((cut >= 1) & (cut <= in_row))
        out[reached] = best[base[reached] + cut[reached] - 1]
        # c = 0: the best precision anywhere (0 where no relevant item is retrieved)
        zero = np.flatnonzero((cut == 0) & (in_row > 0))
        out[zero] = best[base[zero]]
        out_levels[level] = out
    return out_levels


def _suffix_max(x: np.ndarray, row: np.ndarray, rows: int) -> np.ndarray:
    """Per element, the largest of ``x`` from it to the end of its row (``row``
    non-decreasing), exactly: a running maximum of integer keys (the row, later rows
    lower, then the rank of the value among the distinct values), read back as values."""
    if x.size == 0:
        value: np.ndarray = x.copy()
        return value
    values, rank = np.unique(x, return_inverse=True)
    key = (rows - 1 - row) * values.size + rank.ravel()
    value = values[np.maximum.accumulate(key[::-1])[::-1] % values.size]
    return value


@dataclass(frozen=True)
class InterpolatedPrecision(Measure):
    """trec_eval's interpolated precision at a recall level; exact E within the work
    limit, no variance."""

    def recall_levels(self, level: float | None) -> tuple[float, ...]:
        """The recall levels whose interpolated precisions the value averages: the
        metric's own (IPrec always has one: RelMetric checks it)."""
        return (0.0 if level is None else level,)

    def full_table(self, b: BlockTable) -> bool:
        """It reads only the relevant items' places and the tie blocks holding them, so
        the compact table serves, but for a depth (``-M``), which cuts blocks the
        compact table leaves out."""
        return b.depth is not None

    def closed(self, ev: TableEvaluation) -> Closed:
        # The exact E[IPrec(level)] of each row at each level (NaN beyond the work limit),
        # computed once per batch for every level planned on it: the levels share their
        # path counts. Row j of iprec_expectations is iprec_expectation at level j, bit for
        # bit (every path count is a computation of its own request), so computing the
        # levels together changes no figure.
        levels = self.recall_levels(ev.m.level)
        rounding = ev.m.iprec_rounding
        store = ev.b.shared.setdefault(("IPrec", "expectation", rounding), {})
        if any(x not in store for x in levels):
            todo = sorted((set(levels) | _planned_levels(ev)) - set(store))
            rows = iprec_expectations(ev.b, todo, depth=ev.b.depth, relevant_level=ev.b.level,
                                      rounding=rounding)
            store.update(zip(todo, (np.asarray(row, dtype=np.float64) for row in rows)))
        e = np.array([store[x] for x in levels])
        return np.sum(e, axis=0) / len(e), None, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        # the ordering's precision curve is made once per batch for every level planned on
        # it (:func:`_interpolated`)
        levels = self.recall_levels(ev.m.level)
        key = ("IPrec", "realised", ev.m.iprec_rounding, id(lab), id(ev.in_k))
        kept = ev.b.shared.get(key)
        if (kept is None or kept[0] is not lab or kept[1] is not ev.in_k
                or any(x not in kept[2] for x in levels)):
            kept = (lab, ev.in_k, _interpolated(ev, lab, set(levels) | _planned_levels(ev)))
            ev.b.shared[key] = kept
        # the levels' arrays summed in m_11pt_avg.c's order, the highest level first (sum's
        # start, 0, adds nothing), so that the digits trec_eval prints are the same
        return cast(Floats, sum(reversed([kept[2][x] for x in levels]))) / len(levels)

    def nan_without_ranked(self, k: int | float | None, big_r: int,
                           options: dict[str, Any]) -> bool:
        """m_iprec_at_recall.c starts from the precision of the whole ranking,
        num_rel_ret / num_ret: 0/0 for an empty one, kept at every level whose cutoff is 0
        relevant documents."""
        rounding = options.get("iprec_rounding", "trec_eval")
        return int(iprec_cut(float(cast(float, k)), np.array([big_r]), rounding)[0]) == 0

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason('IPrec')}"


@dataclass(frozen=True)
class ElevenPointAverage(InterpolatedPrecision):
    """trec_eval's 11pt_avg: the mean of IPrec at the 11 recall levels 0, 0.1, ..., 1.

    m_11pt_avg.c computes the same interpolated precisions as m_iprec_at_recall.c (the
    cutoff lround(x R), the best precision at or below it, 0 past the relevant items
    retrieved) and averages them, so E is the mean of the 11 exact expectations (NaN where
    one is beyond the work limit); no variance, as IPrec. trec_eval 9 rounded the cutoff
    as (long)(x R + 0.9) here too: ``--convention trec_eval9`` follows it.
    """

    def recall_levels(self, level: float | None) -> tuple[float, ...]:
        return ELEVEN_LEVELS

    def nan_without_ranked(self, k: int | float | None, big_r: int,
                           options: dict[str, Any]) -> bool:
        """m_11pt_avg.c starts from num_rel_ret / num_ret as m_iprec_at_recall.c does, and
        recall 0.0's cutoff is always 0 relevant documents: an empty ranking's 0/0 is in
        the sum, so the average is -nan whatever R is."""
        return True


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
    "..., 1 (trec_eval 11pt_avg)", options=frozenset({"iprec_rounding"}),
    names={"tieeval": ("IPrec11pt",), "trec_eval": ("11pt_avg",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)
