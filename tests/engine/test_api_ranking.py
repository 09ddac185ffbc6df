"""``tieeval.evaluate(scores, ..., ranking=..., original=RULE)`` gives the figures of the file
path: the same arrays saved with ``save_scores`` and read by ``evaluate_path``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tieeval
from tieeval.errors import InputError, ParameterError

RULES = ["argsort", "stable", "reverse-stable", "given",
         pytest.param("topk", marks=pytest.mark.skipif(
             importlib.util.find_spec("torch") is None, reason="needs torch"))]


def _tied(rng, rows=40, n=9):
    # few distinct values: ties at the top, around the positives and at the cutoffs
    return rng.integers(0, 4, size=(rows, n)).astype(np.float32) / 4


def _codebase_ranking(scores, depth):
    # what a codebase ranked: a fixed tie order of its own (here by descending position)
    n = scores.shape[1]
    order = np.lexsort((-np.arange(n)[None, :].repeat(len(scores), 0), -scores), axis=1)
    return order[:, :depth]


def _same(a, b):
    da, db = a.to_dict(), b.to_dict()
    da.pop("path"), db.pop("path")
    assert da == db


@pytest.mark.parametrize("rule", RULES)
def test_single_positive_arrays_rank_as_the_saved_file(rule, tmp_path):
    rng = np.random.default_rng(7)
    scores = _tied(rng)
    positive = rng.integers(0, scores.shape[1], size=len(scores))
    ranking = _codebase_ranking(scores, 5)
    metrics = ["HR@1", "HR@5", "NDCG@5", "MRR@5"]
    path = str(tmp_path / "ranked.npz")
    tieeval.save_scores(path, scores, positive=positive, ranking=ranking)
    from_file = tieeval.evaluate_path(path, metrics, original=rule)
    in_memory = tieeval.evaluate(scores, positive=positive, metrics=metrics,
                                 ranking=ranking, original=rule)
    _same(in_memory, from_file)
    if rule == "given":  # the codebase's own tie order, not any rule tieeval knows
        assert in_memory.to_dict()["original_rule"] == "given"


@pytest.mark.parametrize("rule", RULES)
def test_labelled_ragged_arrays_rank_as_the_saved_file(rule, tmp_path):
    rng = np.random.default_rng(11)
    lengths = rng.integers(4, 9, size=30)
    scores = [(rng.integers(0, 3, size=m) / 2).astype(np.float64) for m in lengths]
    labels = [rng.integers(0, 3, size=m) * (rng.random(m) < 0.4) for m in lengths]
    ranking = [np.argsort(-s, kind="stable")[:4] for s in scores]
    metrics = ["HR@2", "Recall@3", "NDCG@4", "MAP@4", "Precision@4"]
    path = str(tmp_path / "ranked.parquet")
    pytest.importorskip("pyarrow")
    tieeval.save_scores(path, scores, labels=labels, ranking=ranking)
    from_file = tieeval.evaluate_path(path, metrics, original=rule, ap_norm="min")
    in_memory = tieeval.evaluate(scores, labels=labels, metrics=metrics, ranking=ranking,
                                 original=rule, ap_norm="min")
    _same(in_memory, from_file)


def test_given_ranks_by_the_listed_order_exactly():
    # every candidate tied: Original is the listed order, whatever numpy would do
    scores = np.zeros((2, 4), dtype=np.float32)
    run = tieeval.evaluate(scores, positive=[3, 0], metrics=["HR@1", "MRR@4"],
                           ranking=[[3, 2, 1, 0], [1, 2, 3, 0]], original="given")
    assert run.metric("HR@1").original == 0.5  # row 0 hit at rank 1, row 1 at rank 4
    assert run.metric("MRR@4").original == (1 + 1 / 4) / 2


def test_given_without_a_ranking_and_a_bad_ranking_are_refused():
    scores = np.array([[0.9, 0.1, 0.5]])
    with pytest.raises(InputError, match="needs a 'ranking' field"):
        tieeval.evaluate(scores, metrics="HR@1", original="given")
    with pytest.raises(ParameterError, match="out of range"):
        tieeval.evaluate(scores, metrics="HR@1", ranking=[[0, 3]], original="given")
    with pytest.raises(ParameterError, match="twice"):
        tieeval.evaluate(scores, metrics="HR@1", ranking=[[0, 0]], original="given")
    with pytest.raises(InputError, match="not a ranking of these scores"):
        tieeval.evaluate(scores, metrics="HR@1", ranking=[[1, 0]], original="given")
