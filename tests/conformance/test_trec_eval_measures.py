"""The Original column against trec_eval's printed values (tests/conformance/trec_eval_data).

trec_eval's own test runs and its printed per-query and ``all`` outputs are the oracle:
``out.test.aq`` (``-m all_trec -q``), ``out.test.aqc`` (``-c``: queries missing from the
run count as 0), ``out.test.aqcM`` (``-c -M100``: only the top 100 of each ranking) and
``out.test.aql`` (``-l2`` on ``qrels.rel_level``). Rows are built from the files the way
the TREC reader builds them (trec_eval's order: score, then docno, descending); trec_eval
prints 4 decimals, so values agree within 5e-5.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tieeval.io.trec import read_qrels, trec_order
from tieeval.io.trec_stream import open_trec_run
from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelMetric, RelOptions
from tieeval.metrics.registry import MIN_GEO_MEAN

DATA = Path(__file__).parent / "trec_eval_data"
TOL = 5e-5

CASES = {  # output file: (qrels, run, -c, -M, -l)
    "out.test.aq": ("qrels.test", "results.test", False, None, None),
    "out.test.aqc": ("qrels.test", "results.trunc", True, None, None),
    "out.test.aqcM": ("qrels.test", "results.trunc", True, 100, None),
    "out.test.aql": ("qrels.rel_level", "results.test", False, None, 2.0),
}


def trec_name(name: str):
    """tieeval's metric for a trec_eval measure name, or None when not covered."""
    fixed = {"map": "MAP", "Rprec": "Rprec", "bpref": "Bpref", "recip_rank": "MRR",
             "gm_map": "GMAP", "num_ret": "NumRet", "num_rel": "NumRel",
             "num_rel_ret": "NumRelRet", "num_q": "NumQ", "ndcg": "NDCG"}
    if name in fixed:
        return Metric(fixed[name])
    for prefix, metric in (("P_", "Precision"), ("recall_", "Recall"),
                           ("ndcg_cut_", "NDCG"), ("map_cut_", "MAP"),
                           ("success_", "Success")):
        if name.startswith(prefix):
            return Metric(metric, int(name[len(prefix):]))
    if name.startswith("iprec_at_recall_"):
        return Metric("IPrec", float(name[len("iprec_at_recall_"):]))
    return None


def printed(output: str) -> dict:
    """``{(metric, qid): value}`` from trec_eval's output, for the measures covered."""
    out = {}
    for line in (DATA / output).read_text().splitlines():
        name, qid, value = line.split()
        metric = trec_name(name)
        if metric is not None:
            out[metric, qid] = float(value)
    return out


def read_run(path: Path) -> dict:
    """``{qid: (docnos, scores)}``; fields after the sixth are ignored, as trec_eval
    ignores them (``results.trunc`` has text there)."""
    run: dict = {}
    for line in path.read_bytes().splitlines():
        fields = line.split()
        if fields:
            docs, scores = run.setdefault(fields[0].decode(), ([], []))
            docs.append(fields[2])
            scores.append(float(fields[4]))
    return run


def rows(qrels_file: str, run_file: str, complete: bool):
    """The rows of a run as the TREC reader builds them; with ``complete`` (-c), the
    qrels queries missing from the run as empty rows (every judged document unranked)."""
    qrels = read_qrels(str(DATA / qrels_file))
    run = read_run(DATA / run_file)
    qids = sorted(q for q in (qrels if complete else run) if q in qrels)
    scores, labels, judged, lengths, ulab, ujudged, ulen = [], [], [], [], [], [], []
    for q in qids:
        docs = np.array(run.get(q, ([], []))[0], dtype=bytes)
        s = np.array(run.get(q, ([], []))[1], dtype=np.float64)
        if docs.size:
            order = trec_order(docs, s)
            docs, s = docs[order], s[order]
        rel = qrels[q]
        scores.append(s)
        labels.append(np.array([rel.get(d, 0) for d in docs.tolist()], dtype=np.float64))
        judged.append(np.array([rel.get(d, -1) >= 0 for d in docs.tolist()], dtype=bool))
        lengths.append(docs.size)
        seen = set(docs.tolist())
        missed = np.array([v for d, v in rel.items() if d not in seen], dtype=np.float64)
        ulab.append(missed)
        ujudged.append(missed >= 0)
        ulen.append(missed.size)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    uoff = np.concatenate(([0], np.cumsum(ulen))).astype(np.int64)
    return qids, dict(scores=np.concatenate(scores), labels=np.concatenate(labels),
                      offsets=offsets, judged=np.concatenate(judged),
                      unranked=(np.concatenate(ulab), uoff),
                      unranked_judged=np.concatenate(ujudged))


def per_query(case: str):
    qrels, run, complete, depth, level = CASES[case]
    qids, batch = rows(qrels, run, complete)
    rb = RelBatch(batch.pop("scores"), batch.pop("labels"), batch.pop("offsets"), **batch,
                  options=TableOptions(original="given", depth=depth, relevance_level=level))
    return qids, rb


def original(rb: RelBatch, metric: Metric) -> np.ndarray:
    """Per-row Original values; rows without a relevant item count 0 (trec_eval)."""
    v = rb.values(RelMetric(metric.name, metric.k))
    return np.where(v.defined, v.original, 0.0)


def aggregate(metric: Metric, values: np.ndarray) -> float:
    kind = metric.spec.aggregate
    if kind == "sum":
        return float(values.sum())
    if kind == "geometric":
        return math.exp(float(np.mean(np.log(np.maximum(values, MIN_GEO_MEAN)))))
    return float(values.mean())


@pytest.mark.parametrize("case", sorted(CASES))
def test_original_matches_trec_eval_per_query_and_all(case):
    expected = printed(case)
    qids, rb = per_query(case)
    metrics = sorted({m for m, _ in expected}, key=str)
    assert len(metrics) >= 60  # every measure family listed in trec_name is printed
    row = {q: i for i, q in enumerate(qids)}
    checked = 0
    for metric in metrics:
        values = original(rb, metric)
        for (m, qid), want in expected.items():
            if m != metric:
                continue
            got = aggregate(metric, values) if qid == "all" else values[row[qid]]
            tol = 0.5 if metric.spec.aggregate == "sum" else TOL
            assert abs(got - want) <= tol, (case, str(metric), qid, got, want)
            checked += 1
    assert checked == len(expected)


@pytest.mark.parametrize("case", ["out.test.aq", "out.test.aql"])
@pytest.mark.parametrize("batch_rows", [None, 7])
def test_the_kernel_aggregates_as_trec_eval(case, batch_rows):
    """Through the TREC reader and the general kernel: the dataset figures (means, sums,
    the geometric mean of GMAP) are trec_eval's ``all`` values, whatever the batching."""
    from tieeval.engine.local import evaluate_dump

    qrels, run, _, depth, level = CASES[case]
    expected = {m: v for (m, q), v in printed(case).items() if q == "all"}
    dump = open_trec_run(DATA / run, DATA / qrels)
    options = RelOptions(no_relevant="zero", relevance_level=level, depth=depth)
    result = evaluate_dump(dump, list(expected), relevance=options, batch_rows=batch_rows)
    for row in result.metrics:
        metric = Metric(row.metric, row.k)
        tol = 0.5 if metric.spec.aggregate == "sum" else TOL
        assert abs(row.original - expected[metric]) <= tol, (str(metric), row.original)
        if metric.name == "GMAP":
            # the exact expected geometric mean (tests/kernels/test_geometric_tie_aware.py)
            assert row.last <= row.tie_aware <= row.first and row.tie_aware_reason is None
            assert row.to_dict()["aggregate"] == "geometric"
        elif metric.spec.aggregate == "sum":
            assert row.to_dict()["aggregate"] == "sum"
        else:
            assert "aggregate" not in row.to_dict()


def test_sums_and_geometric_means_merge_exactly_through_state():
    """Two halves of the queries accumulated apart, shipped as state (as between Spark
    executors) and merged, give the one-pass result bit for bit, GMAP's tie-aware figure
    (kept apart per tied query until the number of queries is known) included."""
    from tieeval.engine.local import kernel_for
    from tieeval.kernels.accumulator import Accumulator

    dump = open_trec_run(DATA / "results.test", DATA / "qrels.test")
    metrics = [Metric.parse(m) for m in ("NumRet", "NumRel", "NumRelRet", "NumQ", "GMAP",
                                         "Bpref", "Rprec", "IPrec@0.1", "Success@5")]
    kernel = kernel_for(dump, metrics, relevance=RelOptions(no_relevant="zero"))
    whole = kernel.accumulate(dump.batches(3))
    parts = [kernel.new(), kernel.new()]
    for i, batch in enumerate(dump.batches(3)):
        kernel.add(parts[i % 2], batch)
    merged = Accumulator.from_state(parts[0].to_state())
    merged.merge(Accumulator.from_state(parts[1].to_state()))
    a = kernel.result(whole, dump.path, dump.dtype).to_dict()["metrics"]
    b = kernel.result(merged, dump.path, dump.dtype).to_dict()["metrics"]
    assert a == b
    gmap = next(row for row in a if row["metric"] == "GMAP")
    assert gmap["tie_aware"] is not None and gmap["tie_aware_std"] is None
    assert gmap["aggregate"] == "geometric" and "tie_aware_reason" not in gmap
    iprec = next(row for row in a if row["metric"] == "IPrec")
    assert iprec["k"] == 0.1


def gdeval_err(gains: list, k: int) -> float:
    """gdeval.pl's ``err`` sub (TREC Web track; ir_measures' ERR@K): R = (2^g - 1) / 2^4,
    4 being its $MAX_JUDGMENT, over the run sorted by score then docno, descending."""
    score, decay = 0.0, 1.0
    for i, g in enumerate(gains[:k]):
        r = (2.0 ** g - 1.0) / 2.0 ** 4
        score += r * decay / (i + 1)
        decay *= 1.0 - r
    return score


@pytest.mark.parametrize("k", [5, 20, 1000])
def test_err_is_gdevals(k):
    """ERR@K's Original column on trec_eval's test run equals gdeval's ERR, recomputed here
    from the files (judgements <= 4, so g_max = 4 as in gdeval); the other columns bound
    it (query 301 has a tie deep in its ranking that moves a judged document)."""
    qrels = read_qrels(str(DATA / "qrels.test"))
    run = read_run(DATA / "results.test")
    want = {}
    for qid, (docs, scores) in run.items():
        judged = qrels.get(qid, {})
        order = sorted(range(len(docs)), key=lambda i: (scores[i], docs[i]), reverse=True)
        gains = [max(judged.get(docs[i], 0), 0) for i in order]
        want[qid] = gdeval_err(gains, k)
    from tieeval.engine.local import collect_instance_values

    dump = open_trec_run(str(DATA / "results.test"), str(DATA / "qrels.test"))
    _, values, ids = collect_instance_values(dump, [Metric("ERR", k)])
    v = values[0]
    assert ids is not None and sorted(ids) == sorted(want)
    for i, qid in enumerate(ids):
        assert v.original[i] == pytest.approx(want[qid], rel=1e-12)
        assert v.last[i] <= v.tie_aware[i] <= v.first[i]
        assert v.last[i] - 1e-15 <= v.original[i] <= v.first[i] + 1e-15
