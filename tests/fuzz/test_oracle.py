"""The fuzzing oracle (tests/fuzz/fuzz_oracle.py) against brute force: on small rows, its
tie-aware figures are the mean over every ordering consistent with the scores, and first /
last the maximum / minimum (METRICS.md section 15's plan)."""

from __future__ import annotations

import itertools
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_oracle  # noqa: E402


def _realised(order, rel, ideal, k):
    gains = rel[list(order)]
    depth = min(k, ideal.size)
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(np.sort(ideal)[::-1][:depth]))
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains[:k]))
    hits = [r for r, g in enumerate(gains) if g > 0]
    return {"HR": float(any(g > 0 for g in gains[:k])), "NDCG": dcg / idcg,
            "MRR": 1.0 / (hits[0] + 1) if hits else 0.0}


def _consistent(order, scores):
    s = scores[list(order)]
    return all(not (s[i] < s[i + 1]) for i in range(len(s) - 1))


@pytest.mark.parametrize("seed", range(3))
def test_oracle_row_figures_match_enumeration_of_tie_orders(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 7))
        dtype = rng.choice([np.float16, np.float32, np.float64, np.int64])
        pool = np.array([0.0, 0.5, 1.0, np.inf, -np.inf, -0.0]) if dtype != np.int64 \
            else np.array([0, 1, 2, -3])
        scores = rng.choice(pool[:int(rng.integers(2, pool.size + 1))], n).astype(dtype)
        rel = rng.choice([0.0, 0.0, 1.0, 2.0, 0.5], n)
        if not (rel > 0).any():
            rel[int(rng.integers(n))] = 1.0
        # a TREC query's ideal counts unretrieved judged documents too
        ideal = np.concatenate([rel, rng.choice([0.0, 3.0], int(rng.integers(0, 2)))]) \
            if rng.random() < 0.3 else None
        row = fuzz_oracle.Row(scores, rel, ideal)
        for k in (1, 2, 3, 10):
            got = fuzz_oracle.row_figures(row, k)
            values = [_realised(o, rel, rel if ideal is None else ideal, k)
                      for o in itertools.permutations(range(n)) if _consistent(o, scores)]
            for metric in ("HR", "NDCG", "MRR"):
                v = [x[metric] for x in values]
                first, last, tie_aware = got[metric]
                assert first == pytest.approx(max(v), rel=1e-12, abs=1e-15)
                assert last == pytest.approx(min(v), rel=1e-12, abs=1e-15)
                assert tie_aware == pytest.approx(math.fsum(v) / len(v), rel=1e-12,
                                                  abs=1e-15), (scores, rel, k, metric)


def test_oracle_dataset_means_skip_rows_without_a_relevant_item():
    rows = fuzz_oracle.Rows([fuzz_oracle.Row(np.array([1.0, 1.0]), np.array([1.0, 0.0])),
                             fuzz_oracle.Row(np.array([1.0, 0.0]), np.array([0.0, 0.0]))],
                            labelled=True)
    got = fuzz_oracle.figures(rows, [1])
    # one row averaged: the positive shares the top with one other item
    assert got["HR@1"] == (1.0, 0.0, 0.5, 1, 1)
    assert got["MRR"] == (1.0, 0.5, 0.75, 1, 1)
