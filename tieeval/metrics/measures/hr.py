"""Hit ratio: HR@K and trec_eval's success@K.

HR@K is the probability that *at least one* relevant item is in the top K (a probability,
not a share of the relevant items). Under uniform random tie-breaking only the first tie
block holding a relevant item matters (docs/METRICS.md 5): with ``a`` candidates above it,
``n`` items and ``p`` relevant of them, ``m = clip(K - a, 0, n)`` of its places inside the
top K,

    E[HR@K] = 1 - C(n - p, m) / C(n, m),     Var[HR@K] = E (1 - E)

first is ``[m >= 1]``, last ``[m > n - p]``. With one held-out positive (``a`` above it,
``b`` tied with it, itself included) the rank is uniform on ``a+1 .. a+b``:
``E = (min(a+b, K) - min(a, K)) / b``.

Reference: F. McSherry & M. Najork, Computing information retrieval performance measures
efficiently in the presence of tied scores, ECIR 2008.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation
from tieeval.metrics.measures.series import pmiss


def _reachable(k: int, a: np.ndarray, b: np.ndarray) -> int:
    """``min(k, deepest rank a + b)``: a K past every row's last rank acts as that rank, so a
    huge K (say 10**20) neither overflows int64 nor allocates a table of K entries."""
    return min(k, int((a + b).max())) if a.size else min(k, 1)


@dataclass(frozen=True)
class HitRatio(Measure):
    """``[a relevant item in the top K]``; exact E and Var from the first relevant block."""

    def covers_single_positive(self, k: int | float | None) -> bool:
        return self.single_positive and k is not None

    def rank_value(self, k: int | float | None, rank: Ints) -> Floats:
        return (np.asarray(rank, dtype=np.int64) <= self.rank_cutoff(k)).astype(np.float64)

    def tie_moments(self, k: int | float | None, a: Ints, b: Ints
                    ) -> tuple[Floats, Floats, Bools]:
        cut = self.rank_cutoff(k)
        reach = _reachable(cut, a, b)
        lo, hi = np.minimum(a, reach), np.minimum(a + b, reach)
        e = (hi - lo) / b.astype(np.float64)
        return e, e, (a < cut) & (cut < a + b)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        e = np.zeros(b.rows)
        decided = np.zeros(b.rows, dtype=bool)
        _, rows, _, nb, p, m = ev.first_block_stats(b.p_t > 0, b.p_t)
        e[rows] = 1.0 - pmiss(nb, p, m)
        decided[rows] = (m >= 1) & (m <= nb - p)
        return e, e * (1.0 - e), decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        return (ev.hits(lab, +1) > 0).astype(np.float64)


HR = HitRatio(
    "HR", "required",
    "hit ratio: the probability that at least one relevant item (label > 0) is in the top K; "
    "a probability, not a fraction of the relevant items", ("HIT", "HITRATE"),
    single_positive=True,
    names={"tieeval": ("HR", "HIT", "HITRATE"), "RecBole": ("Hit",), "LensKit": ("Hit",),
           "Cornac": ("HitRatio",), "ranx": ("hit_rate",)},
    needs=frozenset({"positive", "labels", "cutoff"}))

SUCCESS = HitRatio(
    "Success", "required",
    "trec_eval success@K: 1 when a relevant item is in the top K, else 0 (the value of HR@K "
    "under trec_eval's name)",
    names={"tieeval": ("Success",), "trec_eval": ("success",), "ir_measures": ("Success",)},
    needs=frozenset({"labels", "cutoff"}))

#: The measure behind the tie-decided shares of a run's tie statistics (per ``--k``).
TIE_DECIDED = HR
