"""Every ir_measures name tieeval accepts means what ir_measures means by it.

The oracle is ir_measures itself (its pytrec_eval, judged and gdeval providers), on
trec_eval's test collection and on a small one of our own with negative judgements,
queries without a relevant document, runs shorter than the cutoffs and a query the run
does not answer. On tie-free runs tieeval's Original column is ir_measures' figure, per
query and in the aggregate; with ties, ir_measures' figure is one tie order's and lies
between tieeval's Last and First.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from tieeval.engine.local import evaluate_path
from tieeval.metrics import spellings

ir_measures = pytest.importorskip("ir_measures")

DATA = os.path.join(os.path.dirname(__file__), "trec_eval_data")


def spelled_names() -> list[str]:
    """Every ir_measures spelling the names page calls supported, at a few parameters."""
    out = []
    for name, _, status, _ in spellings.ir_status():
        if status == spellings.REFUSED:
            continue
        for spelled in name.split(", "):
            if spelled.endswith("@K"):
                out += [spelled.replace("@K", f"@{k}") for k in (1, 5, 1000)]
            elif spelled.endswith("@x"):
                out += [spelled.replace("@x", f"@{x}") for x in (0.0, 0.1, 0.5, 1.0)]
            else:
                out.append(spelled)
    return out


def collection(path, ties: bool):
    """A small collection: graded, negative and zero judgements; a query without a
    relevant document, one the run misses, runs of 2 to 14 documents; numeric qids
    (gdeval, ir_measures' ERR, reads no other)."""
    rng = np.random.default_rng(23 if ties else 5)
    qrels, run = [], []
    for q in range(12):
        docs = [f"d{j:02d}" for j in range(16)]
        labels = rng.choice([-1, 0, 0, 1, 2, 3], len(docs))
        if q == 3:
            labels = np.where(labels > 0, 0, labels)  # judgements, none relevant
        for d, x in zip(docs, labels):
            if rng.random() < 0.7:
                qrels.append(f"{100 + q} 0 {d} {x}")
        if q == 7:
            continue  # judged, not answered
        n = int(rng.integers(2, 15))
        chosen = rng.choice(len(docs), n, replace=False)
        scores = rng.integers(0, 4, n) if ties else rng.permutation(n) + 1
        run += [f"{100 + q} Q0 {docs[j]} 0 {float(s)} tag" for j, s in zip(chosen, scores)]
    (path / "qrels").write_text("\n".join(qrels) + "\n")
    (path / "run").write_text("\n".join(run) + "\n")
    return str(path / "qrels"), str(path / "run")


def tolerance(name: str) -> float:
    """ir_measures reads ERR from gdeval's printed output, to 5 decimals."""
    return 5.000001e-6 if name.startswith("ERR") else 1e-9


def oracle(name, qrels_path, run_path):
    measure = ir_measures.parse_measure(name)
    qrels = list(ir_measures.read_trec_qrels(qrels_path))
    run = list(ir_measures.read_trec_run(run_path))
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return per_query, ir_measures.calc_aggregate([measure], qrels, run)[measure]


def ours(name, qrels_path, run_path, per_query: bool):
    # pytrec_eval (trec_eval 9.0.8) computes IPrec: its rounding is trec_eval9's
    convention = "trec_eval9" if name.startswith("IPrec") else "trec_eval"
    from tieeval.analysis.trec_eval import query_values
    from tieeval.engine.arguments import metric_list
    from tieeval.io.base import RelevanceReadOptions
    metric = metric_list(name)
    assert len(metric) == 1
    # ir_measures counts a judged query the run does not answer as 0 in every measure:
    # averaged in (trec_eval -c), and nothing in the counts NumQ and NumRel (where -c
    # counts the query and its relevant documents)
    missing = "skip" if name in ("NumQ", "NumRel") else "zero"
    run = evaluate_path(run_path, metric, qrels=qrels_path, convention=convention,
                        missing_queries=missing)
    values = None
    if per_query:
        from tieeval.engine.arguments import rel_options
        values = query_values(run_path, metric,
                              options=RelevanceReadOptions(qrels=qrels_path,
                                                           missing_queries=missing),
                              relevance=rel_options(None, {"convention": convention}))
    return run.metrics[0], values


@pytest.mark.parametrize("name", spelled_names())
def test_trec_eval_test_collection(name):
    qrels, run = os.path.join(DATA, "qrels.test"), os.path.join(DATA, "results.test")
    theirs, total = oracle(name, qrels, run)
    row, _ = ours(name, qrels, run, per_query=False)
    assert row.original == pytest.approx(total, abs=tolerance(name)), name


@pytest.mark.parametrize("name", spelled_names())
def test_own_collection_without_ties(name, tmp_path):
    qrels, run = collection(tmp_path, ties=False)
    theirs, total = oracle(name, qrels, run)
    row, values = ours(name, qrels, run, per_query=True)
    assert row.original == pytest.approx(total, abs=tolerance(name)), name
    assert row.first == pytest.approx(row.last, abs=1e-12)
    if name == "NumQ":
        return  # one per query; its all line is the count
    got = {qid: v["original"][i] for (_, _, _), v in values.values.items()
           for i, qid in enumerate(values.qids)}
    for qid, value in theirs.items():
        if qid not in got and value == 0:
            continue  # NumRel of a query the run misses: left out here, 0 there
        assert got[qid] == pytest.approx(value, abs=tolerance(name)), (name, qid)


@pytest.mark.parametrize("name", spelled_names())
def test_own_collection_with_ties_lies_between_last_and_first(name, tmp_path):
    qrels, run = collection(tmp_path, ties=True)
    _, total = oracle(name, qrels, run)
    row, _ = ours(name, qrels, run, per_query=False)
    tol = tolerance(name)
    assert row.last - tol <= total <= row.first + tol, name
