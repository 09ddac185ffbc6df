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
    assert set(CONVENTIONS) == {"paper", "recbole", "trec_eval", "trec_eval9", "ranx",
                                "sklearn", "lenskit", "cornac", "recommenders", "implicit",
                                "torchmetrics"}
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


def test_trec_eval9_iprec_is_pytrec_evals(tmp_path):
    """pytrec_eval bundles trec_eval 9.0.8, whose iprec_at_recall cuts at (long)(x R + 0.9)
    relevant items where trec_eval 10 takes lround(x R): ``--convention trec_eval9`` gives
    pytrec_eval's figures on TREC runs with ties (its Original is trec_eval's docno rule),
    and the default, trec_eval 10's, differs on some of them."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(11)
    levels = [i / 10 for i in range(11)]
    differs = 0
    for trial in range(4):
        rows, n = 15, int(rng.integers(3, 25))
        scores = rng.integers(0, 5, (rows, n)).astype(float)
        labels = (rng.random((rows, n)) < 0.35) * rng.integers(1, 3, (rows, n))
        labels[:, 0] = np.maximum(labels[:, 0], 1)
        qrels = {f"q{i}": {f"d{j:02d}": int(labels[i, j]) for j in range(n)}
                 for i in range(rows)}
        run = {f"q{i}": {f"d{j:02d}": float(scores[i, j]) for j in range(n)
                         if rng.random() < 0.8} for i in range(rows)}
        (tmp_path / "q").write_text("".join(f"{q} 0 {d} {v}\n" for q, docs in qrels.items()
                                            for d, v in docs.items()))
        (tmp_path / "r").write_text("".join(f"{q} Q0 {d} 0 {v} t\n" for q, docs in run.items()
                                            for d, v in docs.items()))
        per_query = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(
            {q: docs for q, docs in run.items() if docs})
        metrics = [f"IPrec@{x}" for x in levels]
        nine = tieeval.evaluate_path(str(tmp_path / "r"), metrics, qrels=str(tmp_path / "q"),
                                     convention="trec_eval9")
        ten = tieeval.evaluate_path(str(tmp_path / "r"), metrics, qrels=str(tmp_path / "q"),
                                    convention="trec_eval")
        for x, a, b in zip(levels, nine.metrics, ten.metrics):
            want = np.mean([q[f"iprec_at_recall_{x:.2f}"] for q in per_query.values()])
            assert a.original == pytest.approx(want, abs=1e-12), (trial, x)
            assert a.last <= a.tie_aware <= a.first
            differs += abs(b.original - want) > 1e-9
    assert differs > 0  # the two roundings are told apart on these collections


# slow tier: ranx compiles its numba functions afresh in a new environment (about 25 CPU-s)
@pytest.mark.slow
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


# ---------------------------------------------------------------------------------------
# LensKit and Cornac: their metric definitions written out from their source files, on
# tie-free rankings (rows of different lengths, some shorter than K, some with R > K)

def _ragged(seed=3, rows=60):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 14, size=rows)
    scores = [rng.permutation(m).astype(np.float64) / m for m in lengths]
    labels = [(rng.random(m) < 0.35).astype(np.int64) for m in lengths]
    labels[5][:] = 0  # no test item: LensKit's metrics are NaN, Cornac skips the user
    labels[9][:] = 1  # every candidate relevant: R > K
    return scores, labels


def _lenskit(rel, k):
    """One list's LensKit 2025.8.1 metrics (lenskit/metrics/ranking/): ``rel`` marks the
    test items of the ranked candidates, best first; ``n=k`` truncates the list."""
    recs = rel[:k]  # RankingMetricBase.truncate
    ranks = np.arange(1, len(recs) + 1)
    nrel = int(rel.sum())  # len(test): every test item is a candidate here
    weight = 1 / np.log2(np.maximum(ranks, 2))  # _weighting.LogRankWeight (offset 0)
    ideal = (1 / np.log2(np.maximum(np.arange(1, min(nrel, k) + 1), 2))).sum()  # fixed_dcg
    good = np.flatnonzero(recs)
    return {
        "HR": 1.0 if recs.any() else 0.0,  # _hit.Hit
        "Precision": recs.sum() / len(recs),  # _pr.Precision: divides by len(recs)
        "Recall": recs.sum() / min(nrel, k),  # _pr.Recall: nrel capped at n
        "NDCG": weight[recs].sum() / ideal,  # _dcg.NDCG, gain=None (binary)
        "MRR": 1.0 / (good[0] + 1.0) if good.size else 0.0,  # _recip.RecipRank
        "MAP": (np.cumsum(recs)[recs] / ranks[recs]).sum() / min(nrel, len(recs)),  # _map
    }


def test_lenskit_formulas():
    scores, labels = _ragged()
    ks = (1, 3, 5, 20)
    r = tieeval.evaluate(scores, labels=labels, k=ks, convention="lenskit")
    assert _names(r) == [f"{name}@{k}" for name in ("HR", "Precision", "Recall", "NDCG",
                                                   "MRR", "MAP") for k in ks]
    kept = [i for i, lab in enumerate(labels) if lab.any()]  # NaN lists are left out
    for k in ks:
        want = [_lenskit(labels[i][np.argsort(-scores[i])].astype(bool), k) for i in kept]
        for name in want[0]:
            got = r.metric(f"{name}@{k}")
            assert _value(r, f"{name}@{k}") == pytest.approx(
                np.mean([w[name] for w in want]), abs=1e-12), (name, k)
            assert got.instances == len(kept)
    assert r.to_dict()["relevance"]["recall_norm"] == "min"


def _cornac(gt_pos, pd_rank, item_indices, pd_scores, k):
    """One user's Cornac 3.0.1 metrics (cornac/metrics/ranking.py), with ``pd_rank`` the
    candidates by descending score (what Recommender.rank returns with k=-1)."""
    top = pd_rank[:k]
    hits = np.isin(top, gt_pos)
    tp = hits.sum()
    gain = 2 ** hits.astype(int) - 1  # NDCG.dcg_score
    dcg = np.sum(gain / np.log2(np.arange(len(hits)) + 2))
    ideal_hits = np.isin(gt_pos[:k], gt_pos).astype(int)
    idcg = np.sum((2 ** ideal_hits - 1) / np.log2(np.arange(len(ideal_hits)) + 2))
    matched = np.nonzero(np.isin(pd_rank, gt_pos))[0]  # MRR over the whole ranking
    relevant = np.isin(item_indices, gt_pos)  # MAP: rankdata(-scores, "max")
    rank = np.array([(pd_scores >= s).sum() for s in pd_scores])[relevant]
    within = np.array([(pd_scores[relevant] >= s).sum() for s in pd_scores[relevant]])
    return {"HR": 1.0 if tp > 0 else 0.0, "Precision": tp / k, "Recall": tp / len(gt_pos),
            "NDCG": dcg / idcg, "MRR": 1.0 / (matched[0] + 1), "MAP": (within / rank).mean()}


def test_cornac_formulas():
    scores, labels = _ragged(seed=5)
    ks = (1, 3, 5, 20)
    r = tieeval.evaluate(scores, labels=labels, k=ks, convention="cornac")
    assert _names(r) == [f"{name}@{k}" for name in ("HR", "Precision", "Recall", "NDCG")
                         for k in ks]
    full = tieeval.evaluate(scores, labels=labels, metrics=["MRR", "MAP"],
                            convention="cornac")
    kept = [i for i, lab in enumerate(labels) if lab.any()]  # ranking_eval skips them
    for k in ks:
        want = []
        for i in kept:
            items = np.arange(len(scores[i]))
            order = items[scores[i].argsort()[::-1]]  # Recommender.rank, k=-1
            want.append(_cornac(np.flatnonzero(labels[i]), order, items, scores[i], k))
        for name in ("HR", "Precision", "Recall", "NDCG"):
            assert _value(r, f"{name}@{k}") == pytest.approx(
                np.mean([w[name] for w in want]), abs=1e-12), (name, k)
        for name in ("MRR", "MAP"):  # no cutoff in Cornac: the same for every k
            assert _value(full, name) == pytest.approx(np.mean([w[name] for w in want]),
                                                       abs=1e-12), name


def test_cornac_map_is_the_last_column_with_one_positive_per_tie_block():
    """Cornac's MAP ranks with rankdata('max'): a positive tied with negatives takes the
    block's last rank, which is the Last column's AP; with two tied positives it is no
    ordering's AP."""
    scores = np.array([[0.9, 0.5, 0.5, 0.5, 0.1], [0.5, 0.5, 0.9, 0.5, 0.2]])
    labels = np.array([[0, 1, 0, 0, 1], [1, 0, 0, 0, 1]])
    items = np.arange(5)
    want = [_cornac(np.flatnonzero(lab), items, items, s, 5)["MAP"]
            for s, lab in zip(scores, labels)]
    got = tieeval.evaluate(scores, labels=labels, metrics=["MAP"], convention="cornac")
    assert got.metric("MAP").last == pytest.approx(np.mean(want), abs=1e-15)
    # two positives in one tie block: both take rank 3 and count each other
    two = _cornac(np.array([0, 1]), items, items, np.array([0.5, 0.5, 0.5, 0.1, 0.0]), 5)
    orders = {(0.5 * (1 / a + 2 / b)) for a, b in ((1, 2), (1, 3), (2, 3))}
    assert two["MAP"] == pytest.approx(2 / 3) and all(abs(two["MAP"] - o) > 1e-9
                                                      for o in orders)


def test_lenskit_recall_is_exact_under_ties_against_enumeration():
    """--recall-norm min divides each row's hit count by the constant min(K, R): first,
    last, tie-aware and its sd follow, checked over every tie order."""
    import itertools
    scores = np.array([[0.5, 0.5, 0.5, 0.5, 0.2, 0.5], [0.7, 0.1, 0.7, 0.7, 0.1, 0.7]])
    labels = np.array([[1, 0, 1, 1, 1, 0], [0, 1, 1, 0, 1, 1]])
    for k in (1, 2, 3, 5):
        means, highs, lows, variances = [], [], [], []
        for s, lab in zip(scores, labels):
            values = []
            for order in itertools.permutations(range(len(s))):
                if all(s[a] >= s[b] for a, b in zip(order, order[1:])):
                    values.append(sum(lab[c] for c in order[:k]) / min(k, lab.sum()))
            means.append(np.mean(values))
            highs.append(max(values))
            lows.append(min(values))
            variances.append(np.var(values))
        for how in ({"recall_norm": "min"}, {"convention": "lenskit"}):
            got = tieeval.evaluate(scores, labels=labels, metrics=[f"Recall@{k}"], **how)
            row = got.metric(f"Recall@{k}")
            assert row.tie_aware == pytest.approx(np.mean(means), rel=1e-12)
            assert row.first == pytest.approx(np.mean(highs), rel=1e-12)
            assert row.last == pytest.approx(np.mean(lows), rel=1e-12)
            # the sd of the mean over independent rows: sqrt(sum Var) / rows
            assert row.tie_aware_std == pytest.approx(np.sqrt(sum(variances)) / 2,
                                                      rel=1e-9)


def test_recall_norm_option_everywhere(tmp_path):
    scores, labels = _data(graded=False)
    plain = tieeval.evaluate(scores, labels=labels, metrics=["Recall@2"])
    capped = tieeval.evaluate(scores, labels=labels, metrics=["Recall@2"],
                              recall_norm="min")
    assert capped.metric("Recall@2").tie_aware > plain.metric("Recall@2").tie_aware
    assert "recall_norm" not in plain.to_dict()["relevance"]  # older JSON unchanged
    path = tmp_path / "d.npz"
    np.savez(path, scores=scores, labels=labels)
    out = CliRunner().invoke(cli, ["compare", str(path), "-m", "Recall@2", "--recall-norm",
                                   "min", "--format", "json"])
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)["runs"][0]
    assert run["metrics"][0]["tie_aware"] == capped.metric("Recall@2").tie_aware
    assert run["relevance"]["recall_norm"] == "min"
    api = tieeval.evaluate_path(path, metrics=["Recall@2"], recall_norm="min")
    assert api.metric("Recall@2").tie_aware == capped.metric("Recall@2").tie_aware
    # the preset's value gives way to an explicit one
    back = tieeval.evaluate(scores, labels=labels, metrics=["Recall@2"],
                            convention="lenskit", recall_norm="relevant")
    assert back.metric("Recall@2").tie_aware == plain.metric("Recall@2").tie_aware
    with pytest.raises(ParameterError, match="recall_norm must be one of"):
        tieeval.evaluate(scores, labels=labels, recall_norm="K")


def test_the_docs_print_the_conventions_table():
    from pathlib import Path

    from tieeval.metrics.conventions import markdown_caveats, markdown_table
    page = (Path(__file__).parents[2] / "docs" / "reproducing.md").read_text()
    assert markdown_table() in page
    assert markdown_caveats() in page
