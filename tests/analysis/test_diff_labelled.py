"""``diff`` on labelled dumps and TREC runs: per-instance tie-aware values from
enumeration, paired tests from scipy, alignment by instance or query id, and refusal of
runs whose candidates differ."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
from click.testing import CliRunner
from helpers import tie_orderings

from tieeval.analysis.diff import diff_paths
from tieeval.cli import cli
from tieeval.errors import InputError


def ndcg_at(seq, k):
    """NDCG@k of one label sequence (linear gain, log2 discount, ideal over the row)."""
    dcg = sum(x / math.log2(r + 1) for r, x in enumerate(seq[:k], 1) if x > 0)
    ideal = sorted((x for x in seq if x > 0), reverse=True)[:k]
    idcg = sum(x / math.log2(r + 1) for r, x in enumerate(ideal, 1))
    return dcg / idcg


def expected_ndcg(scores, labels, k):
    """The tie-aware NDCG@k by enumerating every tie order (tests/kernels enumeration)."""
    return float(np.mean([ndcg_at(list(seq), k) for seq in tie_orderings(scores, labels)]))


def original_ndcg(scores, labels, k):
    """The codebases' ranking: np.argsort(row * -1)."""
    order = np.argsort(scores * -1)
    return ndcg_at([labels[i] for i in order], k)


def make_run(rng, rows=14, n=6):
    scores = (rng.integers(0, 3, size=(rows, n)) / 2).astype(np.float32)
    labels = rng.choice([0, 0, 1, 2], size=(rows, n)).astype(np.int64)
    labels[:, 0] = np.maximum(labels[:, 0], 1)  # every row has a relevant item
    return scores, labels


def test_labelled_diff_equals_enumeration_and_scipy(tmp_path, rng):
    scores_a, labels = make_run(rng)
    scores_b = (rng.integers(0, 3, size=scores_a.shape) / 2).astype(np.float32)
    np.savez(tmp_path / "A.npz", scores=scores_a, labels=labels)
    np.savez(tmp_path / "B.npz", scores=scores_b, labels=labels)
    res = CliRunner().invoke(cli, ["diff", str(tmp_path / "A.npz"), str(tmp_path / "B.npz"),
                                   "-m", "NDCG@3", "--format", "json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)["metrics"][0]
    ta = np.array([expected_ndcg(s, lab, 3) for s, lab in zip(scores_a, labels)])
    tb = np.array([expected_ndcg(s, lab, 3) for s, lab in zip(scores_b, labels)])
    assert row["a"] == pytest.approx(ta.mean(), abs=1e-12)
    assert row["b"] == pytest.approx(tb.mean(), abs=1e-12)
    assert row["difference"] == pytest.approx((tb - ta).mean(), abs=1e-12)
    assert row["p_value_t"] == pytest.approx(scipy.stats.ttest_rel(tb, ta).pvalue, rel=1e-9)
    assert row["instances"] == len(ta) and row["gamma"] is None
    oa = np.array([original_ndcg(s, lab, 3) for s, lab in zip(scores_a, labels)])
    ob = np.array([original_ndcg(s, lab, 3) for s, lab in zip(scores_b, labels)])
    assert row["original"]["difference"] == pytest.approx((ob - oa).mean(), abs=1e-12)
    assert row["original"]["p_value_t"] == pytest.approx(
        scipy.stats.ttest_rel(ob, oa).pvalue, rel=1e-9)


def test_rows_without_a_relevant_item_are_left_out_of_the_pairs(tmp_path, rng):
    scores_a, labels = make_run(rng)
    labels[2] = 0  # undefined in both runs: not paired
    scores_b = scores_a[:, ::-1].copy()
    labels_b = labels[:, ::-1].copy()
    np.savez(tmp_path / "A.npz", scores=scores_a, labels=labels)
    np.savez(tmp_path / "B.npz", scores=scores_b, labels=labels_b)
    r = diff_paths(str(tmp_path / "A.npz"), str(tmp_path / "B.npz"), ["NDCG@3"])
    row = r.row("NDCG@3")
    assert row.instances == len(labels) - 1
    # reversing a row keeps its tie blocks: the tie-aware values are identical
    assert row.tie_aware.difference == pytest.approx(0.0, abs=1e-15)


def test_runs_over_other_candidates_are_refused(tmp_path, rng):
    scores, labels = make_run(rng)
    items = np.arange(scores.size).reshape(scores.shape)
    other = items.copy()
    other[5, 2] = 10_000  # a different sampled negative in instance 5
    np.savez(tmp_path / "A.npz", scores=scores, labels=labels, items=items)
    np.savez(tmp_path / "B.npz", scores=scores, labels=labels, items=other)
    with pytest.raises(InputError, match=r"row 5 lists other candidate ids"):
        diff_paths(str(tmp_path / "A.npz"), str(tmp_path / "B.npz"), ["NDCG@3"])
    relabelled = labels.copy()
    relabelled[7, 1] = relabelled[7, 1] + 3
    np.savez(tmp_path / "C.npz", scores=scores, labels=relabelled)
    np.savez(tmp_path / "D.npz", scores=scores, labels=labels)
    with pytest.raises(InputError, match=r"row 7 has other relevance labels"):
        diff_paths(str(tmp_path / "D.npz"), str(tmp_path / "C.npz"), ["NDCG@3"])
    np.savez(tmp_path / "E.npz", scores=scores[:, 0])  # one positive per row, other metrics
    np.savez(tmp_path / "F.npz", scores=scores)
    with pytest.raises(InputError, match="evaluate other metrics"):
        diff_paths(str(tmp_path / "F.npz"), str(tmp_path / "D.npz"))


QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d9 1\nq2 0 d3 1\nq3 0 d5 1\n"


def test_trec_runs_are_aligned_by_query_and_may_retrieve_other_documents(tmp_path):
    run_a = ("q1 Q0 d1 1 0.9 a\nq1 Q0 d2 2 0.9 a\nq1 Q0 d4 3 0.1 a\n"
             "q2 Q0 d3 1 0.5 a\nq2 Q0 d4 2 0.5 a\nq3 Q0 d5 1 0.2 a\n")
    # B lists its queries in another order and retrieves other documents
    run_b = ("q3 Q0 d6 1 0.9 b\nq3 Q0 d5 2 0.9 b\nq2 Q0 d3 1 0.7 b\n"
             "q1 Q0 d9 1 0.8 b\nq1 Q0 d7 2 0.8 b\nq1 Q0 d1 3 0.3 b\n")
    for name, text in (("qrels", QRELS), ("a.run", run_a), ("b.run", run_b)):
        (tmp_path / name).write_text(text)
    res = CliRunner().invoke(cli, ["diff", "--qrels", str(tmp_path / "qrels"),
                                   str(tmp_path / "a.run"), str(tmp_path / "b.run"),
                                   "-m", "MRR", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["alignment"] == "instance"
    row = doc["metrics"][0]
    # reciprocal ranks by query, the tie blocks averaged by hand:
    # A: q1 {d1, d2} tied at the top, both relevant -> 1; q2 {d3, d4} tied -> (1 + 1/2)/2;
    #    q3 d5 first -> 1.   B: q1 {d9, d7} tied, d9 relevant -> 3/4; q2 -> 1;
    #    q3 {d6, d5} tied -> 3/4.
    a = np.array([1.0, 0.75, 1.0])
    b = np.array([0.75, 1.0, 0.75])
    assert row["a"] == pytest.approx(a.mean(), abs=1e-12)
    assert row["b"] == pytest.approx(b.mean(), abs=1e-12)
    assert row["difference"] == pytest.approx((b - a).mean(), abs=1e-12)


def test_labelled_runs_under_two_jobs_equal_one_job(tmp_path, rng, monkeypatch):
    from tieeval.engine import parallel
    from tieeval.engine.local import evaluate_dump
    from tieeval.io.open import open_dump
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    scores, labels = make_run(rng, rows=400, n=9)
    items = np.arange(scores.size).reshape(scores.shape) % 7  # duplicates in every row
    np.savez(tmp_path / "L.npz", scores=scores, labels=labels, items=items)
    qrels = "".join(f"q{q} 0 d{d} {q % 3}\n" for q in range(50) for d in range(0, 30, 4))
    run = "".join(f"q{q} Q0 d{d} {d} {(q * d) % 5 / 4} t\n" for q in range(50)
                  for d in range(30))
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    from tieeval.io.base import RelevanceReadOptions
    for path, options in ((tmp_path / "L.npz", None),
                          (tmp_path / "run", RelevanceReadOptions(qrels=str(tmp_path / "qrels")))):
        one = evaluate_dump(open_dump(path, options), batch_rows=16, jobs=1).to_dict()
        for jobs in (2, 3):
            got = evaluate_dump(open_dump(path, options), batch_rows=16, jobs=jobs).to_dict()
            assert got == one
