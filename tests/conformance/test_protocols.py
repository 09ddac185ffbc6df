"""tieeval against the evaluation protocols of the released codebases, rebuilt independently.

The ConsRec-family codebases put the held-out positive in column 0, rank with
``np.argsort(pred_score * -1, axis=1)``, and score HR@K as "the positive's column is among
the first K of the ranking" and NDCG@K as ``log(2) / log(j + 2)`` at 0-based place j. Their
diagnostic variants put the positive first (stable sort, positive in column 0) or last
(stable sort, positive moved to the last column) among its ties, and their Table 4 counts
ties at the row maximum. Each is re-implemented here from that description, row by row, and
compared with tieeval's JSON (unrounded; the codebases round to 5 decimals only when
printing).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tieeval

KS = (1, 3, 5, 10)


def protocol_metrics(pred_score: np.ndarray, pred_rank: np.ndarray, gt_idx: int, k: int):
    hits, ndcgs, rrs = [], [], []
    for row in pred_rank:
        place = int(np.flatnonzero(row == gt_idx)[0])  # 0-based place of the positive
        hits.append(1.0 if place < k else 0.0)
        ndcgs.append(math.log(2) / math.log(place + 2) if place < k else 0.0)
        rrs.append(1.0 / (place + 1))
    return np.mean(hits), np.mean(ndcgs), np.mean(rrs)


def brute_tie_aware(pred_score: np.ndarray, k: int):
    """Average over every feasible place of the positive inside its tied block."""
    hr, ndcg, rr = [], [], []
    for row in pred_score:
        above = sum(1 for s in row if s > row[0])
        tied = sum(1 for s in row if s == row[0])
        places = range(above, above + tied)  # 0-based, each equally likely
        hr.append(sum(p < k for p in places) / tied)
        ndcg.append(sum(math.log(2) / math.log(p + 2) for p in places if p < k) / tied)
        rr.append(sum(1.0 / (p + 1) for p in places) / tied)
    return np.mean(hr), np.mean(ndcg), np.mean(rr)


def saturated_scores(rng, rows=300, cols=101, dtype=np.float32):
    z = rng.normal(6.0, 5.0, size=(rows, cols)).astype(dtype)
    z[:, 0] += 3.0
    return (1.0 / (1.0 + np.exp(-z))).astype(dtype)  # saturates to exactly 1.0 in float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_match_the_codebase_protocols(dtype):
    rng = np.random.default_rng(11)
    S = saturated_scores(rng, dtype=dtype)
    if dtype == np.float64:
        S = np.round(S, 3)  # float64 dumps tie through coarse scores instead
    result = tieeval.evaluate(S, k=KS)
    original_rank = np.argsort(S * -1, axis=1)
    first_rank = np.argsort(S * -1, axis=1, kind="stable")
    moved = np.concatenate([S[:, 1:], S[:, :1]], axis=1)  # positive in the last column
    last_rank = np.argsort(moved * -1, axis=1, kind="stable")
    for k in KS:
        orig = protocol_metrics(S, original_rank, 0, k)
        first = protocol_metrics(S, first_rank, 0, k)
        last = protocol_metrics(moved, last_rank, S.shape[1] - 1, k)
        tie = brute_tie_aware(S, k)
        for i, name in enumerate(("HR", "NDCG")):
            row = result.metric(f"{name}@{k}")
            assert row.original == pytest.approx(orig[i], abs=1e-12)
            assert row.first == pytest.approx(first[i], abs=1e-12)
            assert row.last == pytest.approx(last[i], abs=1e-12)
            assert row.tie_aware == pytest.approx(tie[i], abs=1e-12)
    mrr = result.metric("MRR")
    assert mrr.original == pytest.approx(protocol_metrics(S, original_rank, 0, 1)[2], abs=1e-12)
    assert mrr.tie_aware == pytest.approx(brute_tie_aware(S, 1)[2], abs=1e-12)


def test_tie_statistics_match_the_table_4_definitions():
    rng = np.random.default_rng(12)
    S = saturated_scores(rng)
    ties = tieeval.evaluate(S).ties
    row_max = np.max(S, axis=1, keepdims=True)
    count = np.sum(S == row_max, axis=1)
    assert ties.top_tie_size == pytest.approx(np.mean(count), rel=1e-15)
    assert ties.top_tie_ratio == pytest.approx(np.mean(count / S.shape[1]), rel=1e-14)
    assert ties.top_tie_frequency == pytest.approx(np.mean(count > 1), rel=1e-15)
    b = np.sum(S == S[:, :1], axis=1)
    assert ties.positive_tie_size == pytest.approx(np.mean(b), rel=1e-15)
    assert ties.positive_tie_frequency == pytest.approx(np.mean(b > 1), rel=1e-15)
    # The sample is the sigmoid-saturation pattern the protocol is about.
    assert ties.top_tie_frequency > 0.5


def test_float32_dump_is_never_compared_after_a_cast():
    # Distinct float64 scores that collapse to one float32: a float64 dump has no ties,
    # its float32 rounding does; tieeval must judge each in its own dtype.
    base = 1.0 + np.arange(5) * 1e-10
    S64 = np.tile(base[::-1], (4, 1))  # positive (column 0) is the strict maximum
    assert len(np.unique(S64.astype(np.float32))) == 1
    r64 = tieeval.evaluate(S64, k=[1])
    r32 = tieeval.evaluate(S64.astype(np.float32), k=[1])
    assert r64.metric("HR@1").tie_aware == 1.0 and r64.ties.positive_tie_frequency == 0.0
    assert r32.metric("HR@1").tie_aware == pytest.approx(1 / 5)
    assert r32.dtype == "float32" and r64.dtype == "float64"
