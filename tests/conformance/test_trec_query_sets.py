"""TREC runs against trec_eval's printed outputs and pytrec_eval: the files trec_eval reads,
its query set (queries in both files; ``-c`` averages judged queries the run misses as 0),
``-J`` (unjudged documents leave the ranking) and tied random runs.

Oracles: the vendored outputs of trec_eval's own test suite (``trec_eval_data/``, see its
README) and pytrec_eval (trec_eval's code: score descending, then docno descending, the
Original column's order).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import ParameterError

DATA = os.path.join(os.path.dirname(__file__), "trec_eval_data")
# trec_eval's name -> tieeval's metric name
MEASURES = {"P_5": "P@5", "P_10": "P@10", "map": "MAP", "recip_rank": "MRR",
            "ndcg_cut_10": "NDCG@10", "recall_100": "Recall@100"}
ROW = {"P_5": "Precision@5", "P_10": "Precision@10", "map": "MAP", "recip_rank": "MRR",
       "ndcg_cut_10": "NDCG@10", "recall_100": "Recall@100"}



def _write_trec(tmp_path, lines, judgements):
    """The run's and the qrels' lines written as files: (run path, qrels path)."""
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    run_path.write_text("\n".join(lines) + "\n")
    qrels_path.write_text("\n".join(judgements) + "\n")
    return str(run_path), str(qrels_path)

def printed(name: str) -> dict[str, float]:
    """The ``all`` lines of a trec_eval output file: ``{measure: value}``."""
    out = {}
    with open(os.path.join(DATA, name)) as fh:
        for line in fh:
            m = re.match(r"^(\S+)\s+all\s+(\S+)$", line.strip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


def run_cli(*args):
    result = CliRunner().invoke(cli, ["compare", *args, "-f", "json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"][0]


def check_against(run: dict, out: dict, measures) -> None:
    rows = {(r["metric"], r["k"]): r for r in run["metrics"]}
    for name in measures:
        metric = tieeval.Metric.parse(MEASURES[name])
        row = rows[(metric.name, metric.k)]
        # trec_eval prints 4 decimals: its value is within 5e-5 of the printed one
        assert abs(row["original"] - float(out[name])) <= 5e-5 + 1e-12, name
        assert row["last"] <= row["tie_aware"] <= row["first"]


def metric_args(measures):
    return [a for name in measures for a in ("-m", MEASURES[name])]


def test_results_trunc_with_junk_fields_and_minus_c():
    """results.trunc has junk after the tag ("STANDARD more junk at") and lacks query 302:
    trec_eval -c averages 302 in as 0 (out.test.aqc); num_q is 3."""
    out = printed("out.test.aqc")
    run = run_cli("--qrels", os.path.join(DATA, "qrels.test"), os.path.join(DATA, "results.trunc"),
                  "--missing-queries", "zero", "--convention", "trec_eval",
                  *metric_args(MEASURES))
    check_against(run, out, MEASURES)
    queries = run["relevance"]["queries"]
    assert queries["averaged"] == int(out["num_q"]) == 3
    assert (queries["both"], queries["qrels_only_zero"]) == (2, 1)
    assert all(r["instances"] == 3 and r["skipped"] == 0 for r in run["metrics"])
    (warning,) = run["data_warnings"]
    assert warning["kind"] == "trec_queries" and "counted as 0" in warning["message"]


def test_results_trunc_default_leaves_the_missing_query_out():
    """Without -c the query set is the queries in both files: each figure is the -c mean
    times 3/2 (query 302 scored 0 there)."""
    out = printed("out.test.aqc")
    run = run_cli("--qrels", os.path.join(DATA, "qrels.test"), os.path.join(DATA, "results.trunc"),
                  "--convention", "trec_eval", *metric_args(MEASURES))
    rows = {(r["metric"], r["k"]): r for r in run["metrics"]}
    for name in MEASURES:
        metric = tieeval.Metric.parse(MEASURES[name])
        assert abs(rows[(metric.name, metric.k)]["original"] * 2 / 3
                   - float(out[name])) <= 5e-5 + 1e-12
    assert run["relevance"]["queries"]["qrels_only_not_evaluated"] == 1


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.test.with-comments"])
def test_results_test_default_query_set(qrels):
    """trec_eval's default measures on results.test (out.test), also with qrels comments."""
    out = printed("out.test")
    names = ["P_5", "P_10", "map", "recip_rank"]
    run = run_cli("--qrels", os.path.join(DATA, qrels), os.path.join(DATA, "results.test"),
                  "--convention", "trec_eval", *metric_args(names))
    check_against(run, out, names)
    assert run["relevance"]["queries"]["averaged"] == int(out["num_q"])


def test_comments_blank_lines_and_any_blanks_in_a_run(tmp_path):
    """results.test rewritten with comment lines (also indented), blank lines, tabs, runs of
    blanks, CRLF and fields after the tag reads as the original does."""
    rng = np.random.default_rng(3)
    with open(os.path.join(DATA, "results.test")) as fh:
        lines = fh.read().splitlines()
    text = ["# a comment", "   # an indented comment", ""]
    for i, line in enumerate(lines):
        fields = line.split()
        seps = [rng.choice([" ", "\t", "  ", " \t "]) for _ in fields]
        out = "".join(f + s for f, s in zip(fields, seps)).rstrip()
        if i % 7 == 0:
            out = " " + out + " junk after the tag"
        if i % 11 == 0:
            text.append("#" + out)  # a commented-out result
        text.append(out)
        if i % 13 == 0:
            text.append("\t ")
    path = tmp_path / "results.messy"
    path.write_bytes(("\r\n".join(text)).encode())
    names = ["P_5", "P_10", "map", "recip_rank"]
    run = run_cli("--qrels", os.path.join(DATA, "qrels.test"), str(path),
                  "--convention", "trec_eval", *metric_args(names))
    check_against(run, printed("out.test"), names)


# ---------------------------------------------------------------------------------------
# pytrec_eval on tied random runs

pytrec_eval = pytest.importorskip("pytrec_eval")


def random_files(tmp_path, rng, queries=30, missing=4, extra=3, no_relevant=3):
    """A tied run (scores from a few values) and graded qrels with ``missing`` judged queries
    the run does not answer, ``extra`` run queries without judgements, and ``no_relevant``
    judged queries without a relevant document."""
    run, qrels, lines, judgements = {}, {}, [], []
    for q in range(queries + extra):
        n = int(rng.integers(1, 25))
        docs = rng.choice(80, size=n, replace=False)
        scores = rng.choice([0.25, 0.5, 1.0, 2.0], size=n)
        names = [f"{'D' if d % 3 else 'd'}{d}" for d in docs]
        run[f"q{q}"] = dict(zip(names, scores.tolist()))
        lines += [f"q{q}\tQ0  {d} 0 {float(s)!r}  tag" for d, s in zip(names, scores)]
    for q in list(range(queries)) + list(range(queries + extra, queries + extra + missing)):
        judged = {}
        for d in rng.choice(80, size=15, replace=False):
            judged[f"{'D' if d % 3 else 'd'}{d}"] = (0 if q < no_relevant
                                                     else int(rng.integers(0, 4)))
        qrels[f"q{q}"] = judged
        judgements += [f"q{q} 0 {d} {v}" for d, v in judged.items()]
    return (run, qrels, *_write_trec(tmp_path, lines, judgements))


PYTREC = {"P_5": "P_5", "P_10": "P_10", "map": "map", "recip_rank": "recip_rank",
          "ndcg_cut_10": "ndcg_cut_10", "recall_100": "recall_100"}


def pytrec_means(run, qrels, judged_only=False) -> tuple[dict, int]:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.5", "P.10", "map", "recip_rank", "ndcg_cut.10", "recall.100"},
        judged_docs_only_flag=judged_only)
    per_query = evaluator.evaluate(run)
    return ({name: math.fsum(v[name] for v in per_query.values()) / len(per_query)
             for name in PYTREC}, len(per_query))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("missing_queries", ["skip", "zero"])
def test_tied_random_runs_against_pytrec_eval(tmp_path, seed, missing_queries):
    rng = np.random.default_rng(seed)
    run, qrels, run_path, qrels_path = random_files(tmp_path, rng)
    want, n = pytrec_means(run, qrels)  # queries in both files, no-relevant ones as 0
    missing = sum(1 for q in qrels if q not in run)
    result = tieeval.evaluate_path(run_path, list(MEASURES.values()), qrels=qrels_path,
                                   convention="trec_eval", missing_queries=missing_queries)
    if missing_queries == "zero":  # trec_eval -c: the missing queries score 0
        want = {k: v * n / (n + missing) for k, v in want.items()}
    for name, value in want.items():
        row = result.metric(ROW[name])
        assert row.original == pytest.approx(value, rel=1e-12, abs=1e-15), name
        assert row.instances == n + (missing if missing_queries == "zero" else 0)
        assert row.last <= row.tie_aware <= row.first
    queries = result.relevance["queries"]
    assert queries["averaged"] == row.instances and queries["no_relevant"] == 3
    assert queries["run_only_ignored"] == 3


def test_no_relevant_queries_skipped_by_default(tmp_path):
    rng = np.random.default_rng(5)
    run, qrels, run_path, qrels_path = random_files(tmp_path, rng, missing=0)
    result = tieeval.evaluate_path(run_path, ["MAP"], qrels=qrels_path)
    queries = result.relevance["queries"]
    assert queries["averaged"] == queries["both"] - 3 == result.metric("MAP").instances
    assert result.metric("MAP").skipped == 3
    assert "3 queries without a relevant document skipped" in " ".join(result.warnings)


@pytest.mark.parametrize("seed", [0, 1])
def test_judged_only_against_pytrec_eval(tmp_path, seed):
    rng = np.random.default_rng(seed)
    run, qrels, run_path, qrels_path = random_files(tmp_path, rng)
    want, n = pytrec_means(run, qrels, judged_only=True)
    result = tieeval.evaluate_path(run_path, list(MEASURES.values()), qrels=qrels_path,
                                   convention="trec_eval", judged_only=True)
    for name, value in want.items():
        row = result.metric(ROW[name])
        assert row.original == pytest.approx(value, rel=1e-12, abs=1e-15), name


def test_judged_only_tie_aware_is_the_mean_over_tie_orders(tmp_path):
    """Enumerate every tie order of the whole list, drop the unjudged documents, score:
    the mean is the tie-aware value of --judged-only."""
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    docs = ["a", "b", "c", "d", "e", "f"]
    scores = [2.0, 1.0, 1.0, 1.0, 1.0, 0.5]
    run_path.write_text("".join(f"q Q0 {d} 0 {s} t\n" for d, s in zip(docs, scores)))
    judged = {"b": 1, "d": 0, "e": 2, "f": 1}  # a and c unjudged
    qrels_path.write_text("".join(f"q 0 {d} {v}\n" for d, v in judged.items()))
    result = tieeval.evaluate_path(str(run_path), ["Precision@2", "MRR", "MAP"],
                                   qrels=str(qrels_path), judged_only=True)
    sums = {"Precision@2": [], "MRR": [], "MAP": []}
    tied = [1, 2, 3, 4]
    for perm in itertools.permutations(tied):
        order = [0, *perm, 5]
        rels = [judged[docs[i]] for i in order if docs[i] in judged]
        hits = [r > 0 for r in rels]
        sums["Precision@2"].append(sum(hits[:2]) / 2)
        sums["MRR"].append(next(1 / i for i, h in enumerate(hits, 1) if h))
        found = [sum(hits[:i]) / i for i, h in enumerate(hits, 1) if h]
        sums["MAP"].append(sum(found) / 3)
    for name, values in sums.items():
        assert result.metric(name).tie_aware == pytest.approx(math.fsum(values) / len(values),
                                                              rel=1e-12)


# ---------------------------------------------------------------------------------------
# options: refusals and pass-through


def _judged_depth_files(tmp_path, rng, depth, queries=12):
    """A tied run whose tie blocks never straddle rank ``depth`` (the score at ``depth``
    differs from the one below it), with qrels judging some documents (some below 0, some
    not at all), so that -J -M drops documents on both sides of the cut."""
    run, qrels, lines, judgements = {}, {}, [], []
    for q in range(queries):
        n = int(rng.integers(depth + 1, depth + 6))
        while True:
            scores = np.sort(rng.choice([0.5, 1.0, 2.0, 3.0, 4.0], size=n))[::-1]
            if scores[depth - 1] != scores[depth]:
                break
        names = [f"d{q}-{i}" for i in rng.permutation(n)]
        run[f"q{q}"] = list(zip(names, scores.tolist()))
        lines += [f"q{q} Q0 {d} 0 {float(sc)!r} tag" for d, sc in zip(names, scores)]
        judged = {d: int(rng.choice([-1, 0, 1, 2])) for d in names if rng.random() < 0.6}
        judged[f"d{q}-unretrieved"] = 1  # R counts it, the ranking never holds it
        qrels[f"q{q}"] = judged
        judgements += [f"q{q} 0 {d} {v}" for d, v in judged.items()]
    return (run, qrels, *_write_trec(tmp_path, lines, judgements))


def test_judged_only_with_depth_is_every_tie_order_cut_then_judged(tmp_path):
    """trec_eval -J -M N cuts each ranking at N, then drops the unjudged documents. With no
    tie block across the cut, tieeval's First, Last and Tie-aware P@2 and AP are the best,
    worst and mean over every tie order of the whole list, cut at N, then judged only
    (enumerated here), and Original is the docno tie-break's (trec_eval's order)."""
    depth = 6
    rng = np.random.default_rng(11)
    run, qrels, run_path, qrels_path = _judged_depth_files(tmp_path, rng, depth)
    result = tieeval.evaluate_path(run_path, ["Precision@2", "MAP"], qrels=qrels_path,
                                   judged_only=True, depth=depth, no_relevant="zero")
    per_query: dict = {"Precision@2": [], "MAP": []}
    for q, ranked in run.items():
        judged, big_r = qrels[q], sum(v > 0 for v in qrels[q].values())
        blocks = [list(g) for _, g in itertools.groupby(ranked, key=lambda x: x[1])]
        values = {"Precision@2": [], "MAP": []}
        for parts in itertools.product(*(itertools.permutations(b) for b in blocks)):
            order = [d for part in parts for d, _ in part][:depth]
            kept = [judged[d] for d in order if judged.get(d, -1) >= 0]
            hits = [v > 0 for v in kept]
            values["Precision@2"].append(sum(hits[:2]) / 2)
            values["MAP"].append(sum(sum(hits[:i]) / i for i, h in enumerate(hits, 1) if h)
                                 / big_r if big_r else 0.0)
        for name, found in values.items():
            per_query[name].append((min(found), max(found), math.fsum(found) / len(found)))
    for name, rows in per_query.items():
        row = result.metric(name)
        last, first, mean = (math.fsum(r[i] for r in rows) / len(rows) for i in range(3))
        assert row.first == pytest.approx(first, rel=1e-12)
        assert row.last == pytest.approx(last, rel=1e-12)
        assert row.tie_aware == pytest.approx(mean, rel=1e-12)


def test_judged_only_with_depth_answers_ties_across_the_cut(tmp_path):
    """A tie block across rank N: trec_eval keeps its docno order's first documents
    (Original); over the tie orders either of b (non-relevant) and c (relevant) stays
    with a at depth 2, so q1's AP is 1/2 or 1 with probability 1/2 each and q2's is 1:
    MAP Original 1 (c > b), First 1, Last 3/4, tie-aware 7/8, sd sqrt(1/16) / 2. In the API
    and on the command line (tests/conformance/test_trec_tie_orders.py enumerates every
    measure)."""
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    run_path.write_text("q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 2.0 t\n"
                        "q2 Q0 x 1 1.0 t\n")
    qrels_path.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 1\nq2 0 x 1\n")
    row = tieeval.evaluate_path(str(run_path), ["MAP"], qrels=str(qrels_path),
                                judged_only=True, depth=2).metric("MAP")
    assert (row.original, row.first, row.last) == (1.0, 1.0, 0.75)
    assert row.tie_aware == pytest.approx(7 / 8, rel=1e-15)
    assert row.tie_aware_std == pytest.approx(0.25 / 2, rel=1e-12)
    result = CliRunner().invoke(cli, ["compare", str(run_path), "--qrels", str(qrels_path),
                                      "--judged-only", "--depth", "2", "-m", "MAP",
                                      "-f", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["runs"][0]["metrics"][0]["tie_aware"] == \
        pytest.approx(7 / 8, rel=1e-15)


@pytest.mark.parametrize("args,message", [
    (["--missing-queries", "all"], "Invalid value for '--missing-queries'"),
    (["--relevance-level", "0"], "Invalid value for '--relevance-level'"),
    (["--depth", "ten"], "Invalid value for '--depth'"),
    (["--depth", "0"], "Invalid value for '--depth'"),
])
def test_bad_values_exit_2(tmp_path, args, message):
    rng = np.random.default_rng(0)
    _, _, run_path, qrels_path = random_files(tmp_path, rng)
    result = CliRunner().invoke(cli, ["compare", run_path, "--qrels", qrels_path, *args])
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize("flag", [["--missing-queries", "zero"], ["--judged-only"],
                                  ["--group-by-tag"]])
def test_trec_flags_need_qrels(flag):
    path = os.path.join(os.path.dirname(__file__), "..", "..", "sample_scores")
    result = CliRunner().invoke(cli, ["compare", path, *flag])
    assert result.exit_code == 2 and "--qrels" in result.stderr


@pytest.mark.parametrize("kwargs,message", [
    ({"missing_queries": "all"}, "missing_queries must be one of skip, zero"),
    ({"judged_only": "yes"}, "judged_only must be True or False"),
    ({"relevance_level": 0}, "relevance_level must be a number > 0"),
    ({"depth": 2.5}, "depth must be a whole number >= 1"),
])
def test_api_refusals(tmp_path, kwargs, message):
    rng = np.random.default_rng(0)
    _, _, run_path, qrels_path = random_files(tmp_path, rng)
    with pytest.raises(ParameterError, match=message):
        tieeval.evaluate_path(run_path, ["MAP"], qrels=qrels_path, **kwargs)


def test_relevance_level_and_depth_reach_the_options(tmp_path):
    rng = np.random.default_rng(0)
    _, _, run_path, qrels_path = random_files(tmp_path, rng)
    relevance = tieeval.RelOptions(relevance_level=2, depth=50)
    assert (relevance.relevance_level, relevance.depth) == (2, 50)
    run = run_cli(run_path, "--qrels", qrels_path, "--relevance-level", "2", "--depth", "50",
                  "-m", "MAP")
    assert (run["relevance"]["relevance_level"], run["relevance"]["depth"]) == (2, 50)
    result = tieeval.evaluate(np.array([[1.0, 0.5]]), labels=np.array([[2, 1]]),
                              metrics="MAP", relevance_level=2, depth=1)
    assert (result.relevance["relevance_level"], result.relevance["depth"]) == (2, 1)


def test_each_file_is_its_own_run_unless_grouped_by_tag(tmp_path):
    rng = np.random.default_rng(0)
    _, _, run_path, qrels_path = random_files(tmp_path, rng)
    other = tmp_path / "again.run"
    other.write_bytes(open(run_path, "rb").read())  # same tag 'tag'
    args = ["compare", run_path, str(other), "--qrels", qrels_path, "-m", "MAP", "-f", "json",
            "-q"]
    runs = json.loads(CliRunner().invoke(cli, args).stdout)
    assert [g["labels"]["method"] for g in runs["groups"]] == ["run", "again"]
    assert [r["labels"]["tag"] for r in runs["runs"]] == ["tag", "tag"]
    grouped = json.loads(CliRunner().invoke(cli, args + ["--group-by-tag"]).stdout)
    assert [(g["labels"]["method"], g["seeds"]) for g in grouped["groups"]] == [("tag", 2)]
