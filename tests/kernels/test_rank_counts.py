"""The single-positive kernel's rank counts: deterministic ranks are counted per column in
the accumulator and turned into metric values once per run. Checked against each row's
value written out from the definitions (HR, NDCG, MRR at a rank; the tie-aware value as
the mean over the tie block's places), with ranks deeper than the counted ones, over any
split of the rows into batches and merges, and through the accumulator's state."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers import CountsAccumulator

from tieeval.kernels.counts import RowCounts
from tieeval.kernels.single import _HISTOGRAM_RANKS
from tieeval.metrics.metric import parse_metric_list

CANDIDATES = 3 * _HISTOGRAM_RANKS  # a third of the ranks lie beyond the counted ones


def value(name: str, k: int | None, rank: int) -> float:
    if k is not None and rank > k:
        return 0.0
    if name == "HR":
        return 1.0
    if name == "NDCG":
        return 1.0 / math.log2(rank + 1)
    return 1.0 / rank  # MRR


def row_counts(rng, rows: int) -> RowCounts:
    a = rng.integers(0, CANDIDATES - 8, size=rows)
    b = np.where(rng.random(rows) < 0.4, rng.integers(2, 8, size=rows), 1)
    original = a + 1 + (rng.integers(0, 1 << 30, size=rows) % b)
    n = np.full(rows, CANDIDATES, dtype=np.int64)
    top = rng.integers(1, 5, size=rows)
    return RowCounts(a=a.astype(np.int64), b=b.astype(np.int64), n=n,
                     top=top.astype(np.int64), original=original.astype(np.int64))


def expected(metrics, counts: RowCounts) -> dict:
    out = {}
    for m in metrics:
        cols = {"original": [], "first": [], "last": [], "tie_aware": []}
        for a, b, o in zip(counts.a.tolist(), counts.b.tolist(), counts.original.tolist()):
            cols["original"].append(value(m.name, m.k, o))
            cols["first"].append(value(m.name, m.k, a + 1))
            cols["last"].append(value(m.name, m.k, a + b))
            cols["tie_aware"].append(
                math.fsum(value(m.name, m.k, r) for r in range(a + 1, a + b + 1)) / b)
        out[str(m)] = {c: math.fsum(v) / len(v) for c, v in cols.items()}
    return out


def got(result) -> dict:
    return {r.label: {"original": r.original, "first": r.first, "last": r.last,
                      "tie_aware": r.tie_aware} for r in result.metrics}


@pytest.mark.parametrize("splits", [1, 3, 7])
def test_rank_counts_give_each_rows_own_values_deep_ranks_and_any_split(splits):
    rng = np.random.default_rng(splits)
    metrics = parse_metric_list(["HR@10", "NDCG@10", f"NDCG@{_HISTOGRAM_RANKS + 500}", "MRR"])
    counts = row_counts(rng, 4000)
    assert (counts.a + counts.b > _HISTOGRAM_RANKS).any() and (counts.b > 1).any()
    total = CountsAccumulator(metrics)
    bounds = np.linspace(0, 4000, splits + 1).astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = CountsAccumulator(metrics)
        part.add(RowCounts(*(getattr(counts, f)[lo:hi]
                             for f in ("a", "b", "n", "top", "original"))))
        # every other part goes through the accumulator's state, as Spark ships it
        if lo % 2:
            part = part.from_state_like(json.loads(json.dumps(part.to_state())))
        total.merge(part)
    want = expected(metrics, counts)
    have = got(total.result("x", np.float32))
    assert have.keys() == want.keys()
    for name in want:
        for column in want[name]:
            assert have[name][column] == pytest.approx(want[name][column], rel=1e-12,
                                                       abs=1e-15), (name, column)


def test_a_result_adds_the_rank_counts_once():
    rng = np.random.default_rng(5)
    metrics = parse_metric_list(["HR@10", "MRR"])
    acc = CountsAccumulator(metrics)
    acc.add(row_counts(rng, 500))
    first = got(acc.result("x", np.float32))
    assert acc.acc.ranks is None  # settled into the sums
    assert got(acc.result("x", np.float32)) == first
