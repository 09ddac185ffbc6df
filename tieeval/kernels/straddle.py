"""trec_eval ``-J -M N`` where a tie block straddles rank N: a query's First, Last and
tie-aware values from its virtual rows (:mod:`tieeval.io.straddle`).

The query's own row is trec_eval's list (its Original). Its tie-aware value is the
mixture ``sum_c P(c) E_c`` over the virtual rows' exact tie-aware values, its variance
``sum_c P(c) (Var_c + E_c^2) - E^2``, its First and Last the First and Last of the two
extreme virtual rows, and, for a geometric mean, its distribution over tie orders the
mixture of the virtual rows' distributions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tieeval.records.values import InstanceValues


def merge(v: InstanceValues, w: InstanceValues, mix: Any) -> InstanceValues:
    """``v`` (the batch's rows) with the straddled queries' First, Last, tie-aware,
    variance, tie_decided and distribution taken from ``w`` (their virtual rows)."""
    first, last, mean = v.first.copy(), v.last.copy(), v.tie_aware.copy()
    decided = v.tie_decided.copy()
    variance = None if v.variance is None else v.variance.copy()
    vdef = v.defined
    wdef = np.ones(w.tie_aware.size, dtype=bool) if w.defined is None else w.defined
    spread_rows: dict[int, tuple[Any, ...]] = {}
    over: list[int] = []
    for i, r in enumerate(mix.rows.tolist()):
        lo, hi = int(mix.group[i]), int(mix.group[i + 1])
        first[r] = w.first[lo:hi].max()
        last[r] = w.last[lo:hi].min()
        p = mix.weights[lo:hi]
        e = w.tie_aware[lo:hi]
        exact = not np.isnan(p).any() and bool(wdef[lo:hi].all())
        mean[r] = math.fsum((p * e).tolist()) if exact else math.nan
        if variance is not None:
            var = w.variance[lo:hi] if w.variance is not None else np.full(hi - lo, np.nan)
            second = math.fsum((p * (var + e * e)).tolist())
            variance[r] = max(second - mean[r] * mean[r], 0.0) if exact else math.nan
        decided[r] = bool(first[r] != last[r] or w.tie_decided[lo:hi].any()
                          or (exact and e.max() != e.min()))
        if v.spread is not None:
            spread_rows[r] = _distribution(w, lo, hi, p) if exact else ()
            wsp: Any = w.spread
            if not exact or (wsp is not None and np.any(wsp.over[lo:hi])):
                over.append(r)
    spread = v.spread
    if spread is not None:
        spread = _spread(spread, spread_rows, over)
    return InstanceValues(v.original, first, last, mean, variance, decided, vdef, spread)


def _distribution(w: InstanceValues, lo: int, hi: int, p: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The mixture of the virtual rows' distributions (a point where ties decide
    nothing): ``(values, probs)``."""
    have: dict[int, int] = {}
    sp: Any = w.spread
    if sp is not None:
        have = {int(row): j for j, row in enumerate(sp.rows.tolist())}
    values, probs = [], []
    for k in range(lo, hi):
        j = have.get(k)
        if j is None:
            values.append(np.array([w.tie_aware[k]]))
            probs.append(np.array([p[k - lo]]))
        else:
            values.append(np.asarray(sp.values[j], dtype=np.float64))
            probs.append(np.asarray(sp.probs[j], dtype=np.float64) * p[k - lo])
    x, inverse = np.unique(np.concatenate(values), return_inverse=True)
    return x, np.bincount(inverse.reshape(-1), weights=np.concatenate(probs),
                          minlength=x.size)


def _spread(spread: Any, rows: dict[int, tuple[Any, ...]], over: list[int]) -> Any:
    """``spread`` with the straddled rows' distributions replaced."""
    from tieeval.metrics.measures.geometric import Spread
    keep = [j for j, r in enumerate(spread.rows.tolist()) if r not in rows]
    out_rows = [int(spread.rows[j]) for j in keep]
    values = [spread.values[j] for j in keep]
    probs = [spread.probs[j] for j in keep]
    for r, dist in rows.items():
        if dist and dist[0].size > 1:
            out_rows.append(r)
            values.append(dist[0])
            probs.append(dist[1])
    flags = spread.over.copy()
    flags[over] = True
    return Spread(np.asarray(out_rows, dtype=np.int64), values, probs, flags)
