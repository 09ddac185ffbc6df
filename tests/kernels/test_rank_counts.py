"""The single-positive kernel's rank and pair counts: deterministic ranks, tied positives'
``(a, b)`` and rows' ``(top, n)`` are counted in the accumulator and turned into metric
values, tie-break variances and top-tie ratios once per run. Checked against each row's
value written out from the definitions (HR, NDCG, MRR at a rank; the tie-aware value and
its variance over the tie block's places; top / n), with short rows (the counts kept) and
long ones (ranks deeper than the counted ones, pairs added at once), over any split of the
rows into batches and merges, and through the accumulator's state."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers import CountsAccumulator

from tieeval.kernels.counts import RowCounts
from tieeval.kernels.single import _HISTOGRAM_RANKS
from tieeval.metrics.metric import parse_metric_list

LONG = 3 * _HISTOGRAM_RANKS  # a third of the ranks lie beyond the counted ones


def value(name: str, k: int | None, rank: int) -> float:
    if k is not None and rank > k:
        return 0.0
    if name == "HR":
        return 1.0
    if name == "NDCG":
        return 1.0 / math.log2(rank + 1)
    return 1.0 / rank  # MRR


def row_counts(rng, rows: int, candidates: int = LONG) -> RowCounts:
    a = rng.integers(0, candidates - 8, size=rows)
    b = np.where(rng.random(rows) < 0.4, rng.integers(2, 8, size=rows), 1)
    original = a + 1 + (rng.integers(0, 1 << 30, size=rows) % b)
    n = np.full(rows, candidates, dtype=np.int64)
    n[::5] = candidates - 3  # rows of two lengths
    top = rng.integers(1, 5, size=rows)
    return RowCounts(a=a.astype(np.int64), b=b.astype(np.int64), n=n,
                     top=top.astype(np.int64), original=original.astype(np.int64))


def expected(metrics, counts: RowCounts) -> dict:
    out = {}
    rows = len(counts.a)
    for m in metrics:
        cols = {"original": [], "first": [], "last": [], "tie_aware": [], "variance": []}
        for a, b, o in zip(counts.a.tolist(), counts.b.tolist(), counts.original.tolist()):
            cols["original"].append(value(m.name, m.k, o))
            cols["first"].append(value(m.name, m.k, a + 1))
            cols["last"].append(value(m.name, m.k, a + b))
            places = [value(m.name, m.k, r) for r in range(a + 1, a + b + 1)]
            mean = math.fsum(places) / b
            cols["tie_aware"].append(mean)
            cols["variance"].append(math.fsum((v - mean) ** 2 for v in places) / b)
        out[str(m)] = {c: math.fsum(v) / rows for c, v in cols.items() if c != "variance"}
        # the standard deviation of the mean over independent tie-breaks
        out[str(m)]["std"] = math.sqrt(math.fsum(cols["variance"])) / rows
    out["top ratio"] = math.fsum((counts.top / counts.n).tolist()) / rows
    return out


def got(result) -> dict:
    out = {r.label: {"original": r.original, "first": r.first, "last": r.last,
                     "tie_aware": r.tie_aware, "std": r.tie_aware_std}
           for r in result.metrics}
    out["top ratio"] = result.ties.top_tie_ratio
    return out


@pytest.mark.parametrize("splits", [1, 3, 7])
@pytest.mark.parametrize("candidates", [101, LONG])
def test_rank_and_pair_counts_give_each_rows_own_values_and_any_split(candidates, splits):
    rng = np.random.default_rng(splits)
    metrics = parse_metric_list(["HR@10", "NDCG@10", f"NDCG@{_HISTOGRAM_RANKS + 500}", "MRR"])
    counts = row_counts(rng, 4000, candidates)
    assert (counts.b > 1).any()
    assert (counts.a + counts.b > _HISTOGRAM_RANKS).any() == (candidates == LONG)
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
    assert (total.acc.pairs is not None) == (candidates < LONG)  # counted, or added at once
    want = expected(metrics, counts)
    have = got(total.result("x", np.float32))
    assert have.keys() == want.keys()
    assert have.pop("top ratio") == pytest.approx(want.pop("top ratio"), rel=1e-12)
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
    assert acc.acc.ranks is None and acc.acc.pairs is None  # settled into the sums
    assert got(acc.result("x", np.float32)) == first
