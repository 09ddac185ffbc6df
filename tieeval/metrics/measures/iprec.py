"""Interpolated precision at a recall level, IPrec@x (trec_eval iprec_at_recall_x).

With R relevant items of which ``R_ret`` are ranked, at ranks ``r_1 < ... < r_{R_ret}``, and
``c = lround(x R)``::

    IPrec(x) = max_{j = max(c, 1)..R_ret} j / r_j     if c <= R_ret and R_ret >= 1,
               0                                    otherwise.

The exact expectation under uniform random tie-breaking is a product over tie blocks of
lattice-path counts (:func:`cascade.iprec_expectation`), within a work limit per row (a
row beyond it is NaN and the dataset's tie-aware figure is null, with the reason). The
variance is not computed: the maximum over ranks has no additive decomposition over
blocks, and no exact computation within the work limits is implemented (the tie-aware sd
is null).

Reference: trec_eval m_iprec_at_recall.c; F. McSherry & M. Najork, ECIR 2008.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.cascade import iprec_expectations, not_computed_reason


@dataclass(frozen=True)
class InterpolatedPrecision(Measure):
    """trec_eval's interpolated precision at a recall level; exact E within the work
    limit, no variance."""

    def _cut(self, ev, level: float) -> np.ndarray:
        """trec_eval's cutoff in relevant items: lround(x R) (x R >= 0, so floor(+0.5))."""
        return np.floor(level * ev.b.n_pos + 0.5).astype(np.int64)

    def _level(self, ev) -> float:
        level = ev.m.level  # IPrec always has one (RelMetric checks it)
        return 0.0 if level is None else level

    def _levels(self, ev) -> list[float]:
        """This metric's level first, then the other levels planned on the batch: the
        levels share their set-up, so they are computed together, once per batch."""
        own = self._level(ev)
        others = {0.0 if m.level is None else m.level for m in ev.b.planned
                  if getattr(m, "spec", None) == self}
        return [own] + sorted(others - {own})

    def closed(self, ev):
        # row j of iprec_expectations is iprec_expectation at level j, bit for bit (every
        # path count is a per-request computation), so computing the levels together
        # changes no figure
        store = ev.b.shared.setdefault(("IPrec", "expectation"), {})
        level = self._level(ev)
        if level not in store:
            levels = [x for x in self._levels(ev) if x not in store]
            e = iprec_expectations(ev.b, levels, depth=ev.b.depth,
                                   relevant_level=ev.b.level)
            store.update(zip(levels, (np.asarray(row, dtype=np.float64) for row in e)))
        return store[level], None, None

    def realise(self, ev, lab, judged):
        """Interpolated precision at recall x (trec_eval m_iprec_at_recall.c): with
        c = lround(x R), the largest precision at any retrieved rank at or below the c-th
        relevant item (any rank when c = 0); 0 when fewer than c relevant items are
        retrieved or nothing is. The precision curve of an ordering serves every level
        planned on the batch."""
        key = ("IPrec", "realised", id(lab), id(ev.in_k))
        kept = ev.b.shared.get(key)
        level = self._level(ev)
        if kept is None or kept[0] is not lab or kept[1] is not ev.in_k or level not in kept[2]:
            kept = (lab, ev.in_k, self._realise_levels(ev, lab, self._levels(ev)))
            ev.b.shared[key] = kept
        return kept[2][level]

    def _realise_levels(self, ev, lab, levels) -> dict:
        b = ev.b
        rel = b.relevant(lab) & ev.in_k
        c = np.cumsum(rel, dtype=np.int64)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        so_far = c - base[b.row]
        prec = np.where(ev.in_k, so_far / (b.pos + 1.0), 0.0)
        # max precision at this rank or below (suffix maximum, row by row)
        length = int(b.n[0]) if b.rows else 0
        if length and (b.n == length).all():  # rows of one length: a 2-D view
            best = np.maximum.accumulate(prec.reshape(b.rows, length)[:, ::-1],
                                         axis=1)[:, ::-1].ravel()
        else:
            best = np.zeros(b.size)
            for _, idx in b._by_length(np.arange(b.rows)):
                best[idx] = np.maximum.accumulate(prec[idx][:, ::-1], axis=1)[:, ::-1]
        out_levels = {}
        for level in levels:
            cut = self._cut(ev, level)
            out = np.zeros(b.rows)
            at = rel & (so_far == cut[b.row])  # the c-th relevant item (c >= 1)
            out[b.row[at]] = best[at]
            zero = (cut == 0) & (b.n > 0)
            out[zero] = best[b.offsets[:-1][zero]]
            out_levels[level] = out
        return out_levels

    def tie_aware_reason(self) -> str:
        return f"not computed for some rows: {not_computed_reason(self.name)}"


IPREC = InterpolatedPrecision(
    "IPrec", "level",
    "interpolated precision at recall level x in [0, 1] (trec_eval iprec_at_recall_x): the "
    "best precision at any rank holding at least round(x R) relevant items",
    ("iprec_at_recall",),
    names={"tieeval": ("IPrec", "iprec_at_recall"), "trec_eval": ("iprec_at_recall",),
           "ir_measures": ("IPrec",)},
    needs=frozenset({"labels", "level", "every_position"}), has_variance=False)
