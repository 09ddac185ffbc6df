"""Reciprocal rank: RR@K (truncated) and MRR (untruncated); MRR is the mean over rows.

    RR@K = 1 / (rank of the first relevant item), 0 when it is below K

Under uniform random tie-breaking only the first tie block holding a relevant item matters
(``a`` candidates above it, ``n`` items, ``p`` relevant). Its first relevant item sits at
in-block place J with ``P(J = j) = C(n - j, p - 1) / C(n, p)``, ``j = 1..n-p+1``
(docs/METRICS.md 7), so

    E[RR@K] = sum_{j <= min(n-p+1, K-a)} P(J = j) / (a + j),   E[RR^2] likewise with squares

first is ``1/(a+1)``, last ``1/(a+n-p+1)`` (0 past K). One positive: J is uniform and the
sums are harmonic differences, ``E[RR] = (H[a+b] - H[a]) / b``.

Reference: E. Voorhees, The TREC-8 question answering track report, 1999 (MRR);
F. McSherry & M. Najork, ECIR 2008.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Ints, Numbers, TableEvaluation
from tieeval.metrics.measures.series import harmonic, harmonic2, rr_moments


@dataclass(frozen=True)
class ReciprocalRank(Measure):
    """``1 / rank`` of the first relevant item within the cutoff."""

    def covers_single_positive(self, k: int | float | None) -> bool:
        return self.single_positive and k is None

    def rank_value(self, k: int | float | None, rank: Ints) -> Floats:
        return 1.0 / np.asarray(rank, dtype=np.int64)

    def tie_moments(self, k: int | float | None, a: Ints, b: Ints
                    ) -> tuple[Floats, Floats, Bools]:
        lo, hi = a, a + b
        bf = b.astype(np.float64)
        return ((harmonic(hi) - harmonic(lo)) / bf, (harmonic2(hi) - harmonic2(lo)) / bf,
                b > 1)

    def closed(self, ev: TableEvaluation) -> Closed:
        b = ev.b
        e = np.zeros(b.rows)
        e2 = np.zeros(b.rows)
        decided = np.zeros(b.rows, dtype=bool)
        _, rows, a, nb, p, _ = ev.first_block_stats(b.p_t > 0, b.p_t)
        k = ev.kc[rows]
        e[rows], e2[rows] = rr_moments(a, nb, p, k)
        decided[rows] = (a < k) & (p < nb)
        return e, e2 - e * e, decided

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        b = ev.b
        out = np.zeros(b.rows)
        # each row's first relevant item, from the ordering's relevant places (shared)
        _, _, _, place, first, count = b.relevant_places(lab)
        rows = np.flatnonzero(count)
        at = place[first[rows]]
        inside = at < ev.kc[rows]
        out[rows[inside]] = 1.0 / (at[inside] + 1.0)
        return out


MRR = ReciprocalRank(
    "MRR", "optional",
    "reciprocal rank of the first relevant item (0 beyond K); MRR is the mean", ("RR",),
    frozenset({"relevant_scores"}), single_positive=True,
    names={"tieeval": ("MRR", "RR"), "trec_eval": ("recip_rank",), "ir_measures": ("RR",),
           "RecBole": ("MRR",), "LensKit": ("RecipRank",), "Cornac": ("MRR",),
           "ranx": ("mrr",)},
    needs=frozenset({"positive", "labels"}))
