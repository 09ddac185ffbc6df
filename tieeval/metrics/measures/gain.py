"""trec_eval's gain measures binG and G (experimental measures of 2008 combining traits of
MAP and NDCG).

    binG = (1/R) sum_{retrieved relevant r} 1 / log2(2 + N_r)
    G    = (1/I) sum_{retrieved r, g_r != 0} g_r / log2(2 + C_r - S_r)

``N_r`` is the number of non-relevant items above r (relevant: ``label >= level``), ``g``
the gain (the relevance level, whatever ``-l`` says), ``S_r`` the gains of the items up to
and including r, ``C_r = sum_{i <= r} max(ideal gain at i, 1)`` the ideal list's cost (1
past its last positive gain) and ``I`` the sum of the ideal (judged) gains. With binary
judgements G equals binG.

The expectation under uniform random tie-breaking is exact: each term depends only on the
item's place and on how many items of each kind (relevant or not; each gain) lie above it,
and those are summed exactly over every composition (:func:`placement.item_expectation`,
within its work limit; a row beyond it is NaN and the dataset's tie-aware figure null).
The variance is not computed (the terms of two items of a block are dependent through
their places; the tie-aware sd is null). first / last rank every tie block by label
descending / ascending.

Reference: trec_eval m_binG.c, m_G.c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.placement import (
    ideal_gains,
    ideal_prefix,
    item_expectation,
    item_reason,
    row_cumsum,
)
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation


@dataclass(frozen=True)
class BinaryGain(Measure):
    """trec_eval's binG: relevant items weighted by 1 / log2(2 + non-relevant above)."""

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        cls = np.where(b.relevant(b.lab_first), 0, 1)

        def f(rows: np.ndarray, pos: np.ndarray, above: np.ndarray, c: int) -> np.ndarray:
            value: np.ndarray = 1.0 / np.log2(2.0 + pos - above[0])
            return value

        e = item_expectation(b, cls, 2, (0,), f, ev.kc)
        return e / ev.R, None, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        rel = b.relevant(lab) & ev.in_k
        so_far = row_cumsum(b, rel.astype(np.float64))
        term = np.where(rel, 1.0 / np.log2(2.0 + b.pos - (so_far - 1.0)), 0.0)
        return np.bincount(b.row, weights=term, minlength=b.rows) / ev.R

    def tie_aware_reason(self) -> str:
        return item_reason(self.name)


def _cost_prefix(ev: TableEvaluation) -> tuple[np.ndarray, Ints, Ints, np.ndarray]:
    """Per row ``(X, starts, T, I)``: ``X[starts + j] = sum_{k < j} (max(ideal_k, 1) - 1)``
    for j = 0..T, T the number of positive ideal gains and I their sum (once per batch)."""
    kept: tuple[np.ndarray, Ints, Ints, np.ndarray] | None = ev.b.shared.get(_COST_KEY)
    if kept is None:
        gains, off = ideal_gains(ev.b)
        x, starts = ideal_prefix(gains, off, lambda g, _: np.maximum(g, 1.0) - 1.0)
        rows = ev.b.rows
        count = np.diff(off)
        grow = np.repeat(np.arange(rows, dtype=np.int64), count)
        total = np.bincount(grow, weights=gains, minlength=rows)
        kept = ev.b.shared[_COST_KEY] = (x, starts, count, total)
    return kept


_COST_KEY = "gain.cost_prefix"  # the key of _cost_prefix() in BlockTable.shared


@dataclass(frozen=True)
class NormalisedGain(Measure):
    """trec_eval's G: each gain over log2(2 + ideal cost - gain so far), over the ideal
    gains' sum."""

    def defined(self, ev: TableEvaluation) -> Bools:
        """Where some judged gain is positive (the ideal gains' sum), under any level."""
        return ev.b.row_max_label() > 0

    def _cost(self, ev: TableEvaluation, rows: np.ndarray, pos: np.ndarray,
              prefix: tuple[np.ndarray, Ints, Ints, np.ndarray]) -> np.ndarray:
        x, starts, count, _ = prefix
        value: np.ndarray = pos + 1.0 + x[starts[rows] + np.minimum(pos + 1, count[rows])]
        return value

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        prefix = _cost_prefix(ev)
        g = np.maximum(b.lab_first, 0.0)
        values, cls = np.unique(g, return_inverse=True)
        wanted = tuple(int(i) for i in np.flatnonzero(values != 0))

        def f(rows: np.ndarray, pos: np.ndarray, above: np.ndarray, c: int) -> np.ndarray:
            s = values @ above + values[c]
            value: np.ndarray = values[c] / np.log2(2.0 + self._cost(ev, rows, pos, prefix) - s)
            return value

        e = item_expectation(b, cls.reshape(-1), values.size, wanted, f, ev.kc)
        return e / np.where(ev.defined, prefix[3], 1.0), None, None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        prefix = _cost_prefix(ev)
        g = np.where(ev.in_k, np.maximum(lab, 0.0), 0.0)
        s = row_cumsum(b, g)
        cost = self._cost(ev, b.row, b.pos, prefix)
        term = np.where(g != 0, g / np.log2(2.0 + cost - s), 0.0)
        return (np.bincount(b.row, weights=term, minlength=b.rows)
                / np.where(ev.defined, prefix[3], 1.0))

    def tie_aware_reason(self) -> str:
        return item_reason(self.name)


BING = BinaryGain(
    "BinG", "none",
    "binary gain (trec_eval binG): each retrieved relevant item scores "
    "1 / log2(2 + non-relevant items above it); the sum is divided by R",
    names={"tieeval": ("BinG",), "trec_eval": ("binG",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)

# trec_eval's one-letter name G is its spelling only (tieeval.metrics.spellings translates
# it): a registry key "G" would be any "g" string of the code, such as a format spec
G = NormalisedGain(
    "NormGain", "none",
    "normalised gain (trec_eval G): each retrieved item's gain over log2(2 + ideal cost - "
    "gain so far), summed and divided by the sum of the judged gains",
    names={"tieeval": ("NormGain",)},
    needs=frozenset({"labels", "every_position"}), has_variance=False)
