"""--convention presets against each library's own definition, on tie-free scores.

trec_eval (through pytrec_eval), ranx and scikit-learn are run themselves when installed;
RecBole (which needs torch) is checked against its formulas in
recbole/evaluator/metrics.py, written out here in numpy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.metrics.conventions import CONVENTIONS

KS = (1, 3, 5)


def _data(seed=7, rows=40, n=12, graded=True, empty_rows=(3, 17)):
    rng = np.random.default_rng(seed)
    scores = rng.permutation(rows * n).reshape(rows, n).astype(np.float64) / (rows * n)
    labels = (rng.random((rows, n)) < 0.25) * (rng.integers(1, 4, (rows, n)) if graded
                                               else 1)
    labels[:, 0] = np.where(labels[:, 0] == 0, 1, labels[:, 0])  # most rows: a relevant item
    for r in empty_rows:
        labels[r] = 0
    return scores, labels.astype(np.int64)


def _names(result):
    return [m.metric if m.k is None else f"{m.metric}@{m.k}" for m in result.metrics]


def _value(result, name):
    m = result.metric(name)
    assert m.first == pytest.approx(m.last, abs=1e-12)  # tie-free: every column agrees
    return m.tie_aware


def test_names_and_unknown():
    assert set(CONVENTIONS) == {"paper", "recbole", "trec_eval", "ranx", "sklearn"}
    with pytest.raises(ParameterError, match="unknown convention"):
        tieeval.evaluate(np.eye(3), labels=np.eye(3), convention="lightfm")


def test_paper_is_the_default():
    scores, labels = _data()
    base = tieeval.evaluate(scores, labels=labels, k=KS).to_dict()
    assert tieeval.evaluate(scores, labels=labels, k=KS, convention="paper").to_dict() == base


def test_recbole_formulas():
    scores, labels = _data(graded=False)
    r = tieeval.evaluate(scores, labels=labels, k=KS, convention="recbole")
    assert _names(r) == (
        [f"{name}@{k}" for name in ("HR", "MRR", "MAP", "Precision", "NDCG", "Recall")
         for k in KS])
    keep = labels.sum(axis=1) > 0  # RecBole evaluates users with a test item only
    order = np.argsort(-scores, axis=1, kind="stable")
    pos_index = np.take_along_axis(labels > 0, order, axis=1)[keep]
    pos_len = labels[keep].sum(axis=1)
    width = pos_index.shape[1]
    ranks = np.arange(1, width + 1)
    # recbole/evaluator/metrics.py, column K-1 of each metric_info matrix
    hit = np.cumsum(pos_index, axis=1) > 0
    first = pos_index.argmax(axis=1)
    mrr = np.where(ranks[None, :] >= first[:, None] + 1, 1 / (first[:, None] + 1), 0.0)
    mrr[~pos_index.any(axis=1)] = 0
    pre = pos_index.cumsum(axis=1) / ranks
    sum_pre = np.cumsum(pre * pos_index, axis=1)
    ap = sum_pre / np.minimum(ranks[None, :], pos_len[:, None])
    idcg = np.cumsum(1 / np.log2(ranks + 1))[np.minimum(ranks[None, :], pos_len[:, None]) - 1]
    ndcg = np.cumsum(np.where(pos_index, 1 / np.log2(ranks + 1), 0), axis=1) / idcg
    recall = np.cumsum(pos_index, axis=1) / pos_len[:, None]
    for k in KS:
        for name, table in (("HR", hit), ("MRR", mrr), ("MAP", ap), ("Precision", pre),
                            ("NDCG", ndcg), ("Recall", recall)):
            assert _value(r, f"{name}@{k}") == pytest.approx(table[:, k - 1].mean(),
                                                             abs=1e-12), (name, k)
            assert r.metric(f"{name}@{k}").instances == keep.sum()


def test_trec_eval_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores, labels = _data()
    qrels = {f"q{i}": {f"d{j}": int(labels[i, j]) for j in range(labels.shape[1])}
             for i in range(len(labels))}
    run = {f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(labels.shape[1])}
           for i in range(len(labels))}
    measures = {"map", "recip_rank"} | {f"{m}.{','.join(map(str, KS))}"
                                        for m in ("P", "recall", "ndcg_cut", "map_cut")}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert len(per_query) == len(labels)  # judged queries without a relevant doc included

    def mean(measure):
        return np.mean([q[measure] for q in per_query.values()])
    r = tieeval.evaluate(scores, labels=labels, k=KS, convention="trec_eval")
    assert _value(r, "MAP") == pytest.approx(mean("map"), abs=1e-12)
    assert _value(r, "MRR") == pytest.approx(mean("recip_rank"), abs=1e-12)
    for k in KS:
        assert _value(r, f"Precision@{k}") == pytest.approx(mean(f"P_{k}"), abs=1e-12)
        assert _value(r, f"Recall@{k}") == pytest.approx(mean(f"recall_{k}"), abs=1e-12)
        assert _value(r, f"NDCG@{k}") == pytest.approx(mean(f"ndcg_cut_{k}"), abs=1e-12)
        assert _value(r, f"MAP@{k}") == pytest.approx(mean(f"map_cut_{k}"), abs=1e-12)
        assert r.metric(f"MAP@{k}").instances == len(labels)


def test_ranx():
    ranx = pytest.importorskip("ranx")
    scores, labels = _data()
    qrels = ranx.Qrels({f"q{i}": {f"d{j}": int(labels[i, j]) for j in range(labels.shape[1])
                                  if labels[i, j] > 0} or {"absent": 0}
                        for i in range(len(labels))})
    run = ranx.Run({f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(labels.shape[1])}
                    for i in range(len(labels))})
    names = {"HR": "hit_rate", "MRR": "mrr", "MAP": "map", "Precision": "precision",
             "Recall": "recall", "NDCG": "ndcg"}
    wanted = [f"{v}@{k}" for v in names.values() for k in KS]
    got = ranx.evaluate(qrels, run, wanted, make_comparable=True)
    r = tieeval.evaluate(scores, labels=labels, k=KS, convention="ranx")
    for ours, theirs in names.items():
        for k in KS:
            assert _value(r, f"{ours}@{k}") == pytest.approx(got[f"{theirs}@{k}"],
                                                             abs=1e-12), (ours, k)


def test_sklearn_ndcg_score():
    metrics = pytest.importorskip("sklearn.metrics")
    scores, labels = _data()
    r = tieeval.evaluate(scores, labels=labels, k=KS, convention="sklearn")
    assert _names(r) == [f"NDCG@{k}" for k in KS] + ["NDCG"]
    for k in KS:
        assert _value(r, f"NDCG@{k}") == pytest.approx(
            metrics.ndcg_score(labels, scores, k=k), abs=1e-12)
    assert _value(r, "NDCG") == pytest.approx(metrics.ndcg_score(labels, scores), abs=1e-12)


def test_sklearn_ties_average_like_tie_aware():
    """ndcg_score's default (ignore_ties=False) averages the gains of tied items: the
    tie-aware column."""
    metrics = pytest.importorskip("sklearn.metrics")
    scores, labels = _data()
    scores = np.round(scores * 4) / 4  # many ties
    r = tieeval.evaluate(scores, labels=labels, k=KS, convention="sklearn")
    for k in KS:
        assert r.metric(f"NDCG@{k}").tie_aware == pytest.approx(
            metrics.ndcg_score(labels, scores, k=k), abs=1e-12)


def test_no_relevant_zero_worked_example():
    # row 0: relevant at rank 2 -> RR 1/2; row 1: no relevant item
    scores = np.array([[0.9, 0.5, 0.1], [0.9, 0.5, 0.1]])
    labels = np.array([[0, 1, 0], [0, 0, 0]])
    skip = tieeval.evaluate(scores, labels=labels, metrics=["MRR"])
    zero = tieeval.evaluate(scores, labels=labels, metrics=["MRR"], no_relevant="zero")
    assert skip.metric("MRR").tie_aware == 0.5 and skip.metric("MRR").instances == 1
    assert zero.metric("MRR").tie_aware == 0.25 and zero.metric("MRR").instances == 2
    assert "no_relevant" not in skip.to_dict()["relevance"]
    assert zero.to_dict()["relevance"]["no_relevant"] == "zero"


def test_explicit_options_override_the_preset(tmp_path):
    scores, labels = _data(graded=False)
    r = tieeval.evaluate(scores, labels=labels, k=[5], convention="recbole", ap_norm="R",
                         metrics=["MAP@5"])
    plain = tieeval.evaluate(scores, labels=labels, metrics=["MAP@5"])
    assert r.metric("MAP@5").tie_aware == plain.metric("MAP@5").tie_aware
    assert r.to_dict()["relevance"]["convention"] == "recbole"
    path = tmp_path / "d.npz"
    np.savez(path, scores=scores, labels=labels)
    out = CliRunner().invoke(cli, ["compare", str(path), "--convention", "recbole",
                                    "--k", "5", "--format", "json"])
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)["runs"][0]
    assert run["relevance"]["ap_norm"] == "min"
    assert [(m["metric"], m["k"]) for m in run["metrics"]][:2] == [("HR", 5), ("MRR", 5)]
    api = tieeval.evaluate_path(path, k=[5], convention="recbole")
    assert api.metric("MAP@5").tie_aware == run["metrics"][2]["tie_aware"]
    out = CliRunner().invoke(cli, ["compare", str(path), "--convention", "nope"])
    assert out.exit_code == 2
