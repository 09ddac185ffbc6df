"""``tieeval compare --format trec_eval`` against trec_eval's own printed output.

The oracle is trec_eval's test suite (``trec_eval_data/``, see its README): ``out.test`` is
``trec_eval qrels.test results.test`` and ``out.test.aq`` is ``trec_eval -m all_trec -q``.
tieeval's ``original`` column ranks a TREC run as trec_eval does, so for every measure tieeval
computes its lines must be trec_eval's, text for text: names, qids, order within each query
block, values to the 4 printed decimals.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.errors import TieevalError
from tieeval.metrics.metric import Metric

DATA = os.path.join(os.path.dirname(__file__), "trec_eval_data")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def lines_of(*args) -> list[str]:
    result = runner().invoke(cli, ["compare", "--qrels", QRELS, RUN, "--format", "trec_eval",
                                   "-q", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("\n")
    return result.stdout.splitlines()


def trec_eval_lines(name: str) -> list[str]:
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read().splitlines()


def tieeval_has(measure: str) -> bool:
    try:
        Metric.expand(measure)
    except TieevalError:
        return False
    return True


def test_per_query_output_is_trec_evals():
    ours = lines_of("-m", "all_trec", "--per-query")
    theirs = trec_eval_lines("out.test.aq")
    # every measure trec_eval printed that tieeval computes, and only those (plus runid)
    expected = [line for line in theirs
                if line.split("\t")[0].strip() == "runid" or tieeval_has(line.split("\t")[0])]
    assert ours == expected
    assert len({line.split("\t")[0] for line in ours}) >= 40  # P, recall, ndcg_cut, map_cut...
    assert [line.split("\t")[1] for line in ours][:1] == ["301"]
    assert ours[-1].split("\t")[1] == "all"


def test_summary_output_is_trec_evals():
    ours = lines_of("-m", "all_trec")
    theirs = [line for line in trec_eval_lines("out.test.aq") if line.split("\t")[1] == "all"]
    assert ours == [line for line in theirs if line.startswith("runid ")
                    or tieeval_has(line.split("\t")[0])]


def test_official_measures_in_trec_evals_order():
    """-m official, and -m in another order: trec_eval prints its measure-table order."""
    theirs = trec_eval_lines("out.test")
    want = [line for line in theirs if line.startswith("runid ")
            or tieeval_has(line.split("\t")[0])]
    assert lines_of("-m", "official") == want
    shuffled = lines_of("-m", "P.30,5,10", "-m", "recip_rank", "-m", "map")
    # no runid line: trec_eval prints it only when runid is asked for (m_runid.c)
    assert shuffled == [line for line in want
                        if line.split()[0] in ("map", "recip_rank", "P_5", "P_10", "P_30")]
    assert lines_of("-m", "map", "-m", "runid") == [line for line in want
                                                    if line.split()[0] in ("runid", "map")]


def test_every_spelling_prints_the_same_lines():
    a = lines_of("-m", "ndcg_cut.10,20", "-m", "P_5", "--per-query")
    b = lines_of("-m", "nDCG@20", "-m", "NDCG@10", "-m", "P@5", "--per-query")
    c = lines_of("-m", "Precision@5", "-m", "ndcg_cut_10", "-m", "ndcg_cut_20", "--per-query")
    assert a == b == c


def test_json_contract_is_unchanged_by_spellings():
    def rows(*metrics):
        args = ["compare", "--qrels", QRELS, RUN, "--format", "json", "-q"]
        for m in metrics:
            args += ["-m", m]
        result = runner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["runs"][0]["metrics"]
    assert rows("P.5,10", "recip_rank", "map_cut_100") == rows("Precision@5", "Precision@10",
                                                               "MRR", "MAP@100")


def test_columns_on_a_tied_query(tmp_path):
    """One query, two documents tied at score 1, the relevant d1 and the non-relevant d2.
    trec_eval's order (docno descending) puts d2 first: original P_1 = 0 and RR = 1/2. The
    other order gives P_1 = 1, RR = 1, each with probability 1/2: tie_aware P_1 = 0.5,
    RR = 0.75; first = 1, 1; last = 0, 0.5."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 tag\nq1 Q0 d2 2 1.0 tag\n")
    expected = {"original": ("0.0000", "0.5000"), "tie_aware": ("0.5000", "0.7500"),
                "first": ("1.0000", "1.0000"), "last": ("0.0000", "0.5000")}
    for column, (p1, rr) in expected.items():
        args = ["compare", "--qrels", str(tmp_path / "qrels"), str(tmp_path / "run"),
                "-m", "P_1", "-m", "recip_rank", "--format", "trec_eval", "--per-query",
                "-q"]
        if column != "original":
            args += ["--column", column]
        out = runner().invoke(cli, args, catch_exceptions=False).stdout
        assert out == (f"recip_rank            \tq1\t{rr}\n"
                       f"P_1                   \tq1\t{p1}\n"
                       f"recip_rank            \tall\t{rr}\n"
                       f"P_1                   \tall\t{p1}\n"), column


def test_a_score_dump_prints_row_numbers(tmp_path):
    """Rows without ids are numbered from 1. Row 1 ties the positive with the other
    candidate (Success@1 = MRR@1 = 1/2 tie-aware), row 2 ranks it first (1). MRR@1 has no
    trec_eval name and keeps tieeval's."""
    np.savez(tmp_path / "s.npz", scores=np.array([[1.0, 1.0], [1.0, 0.0]]))
    result = runner().invoke(cli, ["compare", str(tmp_path / "s.npz"), "-m", "Success@1",
                                   "-m", "MRR@1", "--format", "trec_eval", "--per-query",
                                   "--column", "tie_aware", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "success_1             \t1\t0.5000", "MRR@1                 \t1\t0.5000",
        "success_1             \t2\t1.0000", "MRR@1                 \t2\t1.0000",
        "success_1             \tall\t0.7500", "MRR@1                 \tall\t0.7500"]


@pytest.mark.parametrize("args,message", [
    (["--column", "tie_aware"], "--column, --per-query and --no-summary apply to --format "
                                "trec_eval"),
    (["--per-query"], "--column, --per-query and --no-summary apply to --format trec_eval"),
    (["--no-summary"], "--column, --per-query and --no-summary apply to --format trec_eval"),
    (["-m", "ndcg_cutt_10"], "unknown metric 'ndcg_cutt_10'; did you mean ndcg_cut_10?"),
    (["-m", "relstring"], "runid and relstring name no metric"),
    (["-m", "relstring.x"], "parameter 'x' of 'relstring.x' must be a number of documents"),
    (["-m", "P.0"], "cutoff '0' of 'P.0' must be >= 1"),
])
def test_usage_errors(args, message):
    result = runner().invoke(cli, ["compare", "--qrels", QRELS, RUN, *args])
    assert result.exit_code == 2
    error = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and message in error[0]
    assert result.stdout == ""


def test_a_closed_pipe_ends_quietly():
    """More lines than a pipe holds, read by `head -1`: no traceback, nothing on stderr."""
    cuts = ",".join(str(k) for k in range(1, 401))
    command = [sys.executable, "-m", "tieeval", "compare", "--qrels", QRELS, RUN, "-q",
               "-m", f"P.{cuts}", "-m", f"recall.{cuts}", "--format", "trec_eval",
               "--per-query"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    producer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
    assert producer.stdout is not None and producer.stderr is not None
    first = producer.stdout.readline()
    producer.stdout.close()  # the reader goes away, as head does
    stderr = producer.stderr.read()
    producer.wait(timeout=120)
    assert first == b"P_1                   \t301\t0.0000\n"
    assert stderr == b""
    assert producer.returncode in (0, -13, 141)  # done, or ended by SIGPIPE


@pytest.mark.parametrize("expected,qrels,run,options", [
    ("out.test.aq", "qrels.test", "results.test", []),
    ("out.test.aqc", "qrels.test", "results.trunc", ["--missing-queries", "zero"]),
    ("out.test.aqcM", "qrels.test", "results.trunc",
     ["--missing-queries", "zero", "--depth", "100"]),
    ("out.test.aql", "qrels.rel_level", "results.test",
     ["--relevance-level", "2", "-m", "relstring.20"]),
])
def test_trec_eval_suite_end_to_end(expected, qrels, run, options):
    """trec_eval's own test suite (-m all_trec -q, with -c, -c -M100 and -l2), through the
    CLI: every line tieeval prints for trec_eval's measures is one of trec_eval's printed
    lines, and every trec_eval line of a measure tieeval has is printed."""
    data = os.path.join(os.path.dirname(__file__), "trec_eval_data")
    result = runner().invoke(cli, ["compare", "--qrels", os.path.join(data, qrels),
                                   os.path.join(data, run), "--format", "trec_eval",
                                   "--per-query", "-m", "all_trec", "--convention",
                                   "trec_eval", *options], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    got = result.stdout.splitlines()
    with open(os.path.join(data, expected)) as fh:
        want = fh.read().splitlines()
    assert set(got) <= set(want)
    have = {line.split("\t")[0].rstrip() for line in got}
    missing = [line for line in want if line.split("\t")[0].rstrip() in have
               and line not in got]
    assert not missing
    assert len(got) == 3 * 96 + 99  # 96 per-query lines for each query, 99 "all" lines
    assert got == want  # every line trec_eval prints, relstring's included


def test_every_trec_measure_is_the_same_whatever_the_batch_size():
    """A query's values never depend on the queries batched with it: -m all_trec plus
    ERR and Judged, with the queries the run misses (rows without candidates, alone in a
    batch at --batch-rows 1), give the same JSON at 1, 2 and all queries per batch."""
    data = os.path.join(os.path.dirname(__file__), "trec_eval_data")
    outputs = []
    for rows in ("1", "2", "1000"):
        result = runner().invoke(cli, [
            "compare", "--qrels", os.path.join(data, "qrels.test"),
            os.path.join(data, "results.trunc"), "--missing-queries", "zero",
            "--convention", "trec_eval", "--batch-rows", rows, "-m", "all_trec",
            "-m", "ERR@10", "-m", "ERR@1000", "-m", "Judged@10", "-f", "json"],
            catch_exceptions=False)
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.stdout)["runs"][0]["metrics"])
    assert outputs[0] == outputs[1] == outputs[2]


@pytest.mark.parametrize("qrels,level", [("qrels.test", 2), ("qrels.rel_level", 3),
                                         ("qrels.rel_level", 5)])
def test_ndcg_under_a_relevance_level_is_pytrec_evals(qrels, level):
    """``-l N`` decides only relevant / non-relevant: ndcg and ndcg_cut_K keep the raw
    judgement as gain, so a query with nothing at level N still scores (qrels.test at -l2:
    trec_eval prints ndcg 0.4021, not 0). pytrec_eval (trec_eval 9) is the oracle of the
    original column, per query and in the 'all' line; the other columns bracket it (the
    tie-aware values are checked by enumeration in tests/kernels/test_trec_measures.py)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    judgements: dict = {}
    with open(os.path.join(DATA, qrels)) as fh:
        for line in fh:
            qid, _, doc, rel = line.split()
            judgements.setdefault(qid, {})[doc] = int(rel)
    ranking: dict = {}
    with open(RUN) as fh:
        for line in fh:
            qid, _, doc, _, score = line.split()[:5]
            ranking.setdefault(qid, {})[doc] = float(score)
    measures = ["ndcg", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_100"]
    want = pytrec_eval.RelevanceEvaluator(judgements, set(measures),
                                          relevance_level=level).evaluate(ranking)
    assert any(want[q]["ndcg"] > 0 and not any(r >= level for r in judgements[q].values())
               for q in want)  # a query without a relevant document that ndcg scores
    printed = {}
    for column in ("original", "first", "last", "tie_aware"):
        args = ["compare", "--qrels", os.path.join(DATA, qrels), RUN, "--format", "trec_eval",
                "--per-query", "--convention", "trec_eval", "--relevance-level", str(level),
                "--column", column, "-q"]
        for m in measures:
            args += ["-m", m]
        result = runner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        got = printed[column] = {}
        for line in result.stdout.splitlines():
            name, qid, value = line.split("\t")
            got[name.rstrip(), qid] = value
    for m in measures:
        for qid in [*want, "all"]:
            if qid == "all":
                expected = sum(want[q][m] for q in want) / len(want)
            else:
                expected = want[qid][m]
            assert printed["original"][m, qid] == f"{expected:.4f}", (m, qid)
            first, tie_aware, last = (float(printed[c][m, qid])
                                      for c in ("first", "tie_aware", "last"))
            assert first >= tie_aware >= last, (m, qid)
            assert first >= expected - 5e-5 and last <= expected + 5e-5, (m, qid)


def test_tie_aware_column_prints_gm_map_or_says_why(tmp_path):
    """GMAP's tie-aware figure is the exact expected geometric mean: --column tie_aware
    prints its 'all' line; where a query's ties are beyond the work limit the figure is
    null (the row's tie_aware_reason), and the line is left out with a warning naming it
    on stderr, never silently."""
    result = runner().invoke(cli, ["compare", "--qrels", QRELS, RUN, "--format", "trec_eval",
                                   "-m", "gm_map", "-m", "map", "--column", "tie_aware"],
                             catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[0].rstrip() for line in result.stdout.splitlines()] == [
        "map", "gm_map"]
    assert "left out" not in result.stderr
    # one query of 40 tied documents, 20 of them relevant: C(40, 20) orders of one block
    (tmp_path / "run").write_text("".join(f"a Q0 d{i} 1 1.0 t\n" for i in range(40)))
    (tmp_path / "qrels").write_text("".join(f"a 0 d{i} {i % 2}\n" for i in range(40)))
    big = runner().invoke(cli, ["compare", "--qrels", str(tmp_path / "qrels"),
                                str(tmp_path / "run"), "--format", "trec_eval", "-m", "gm_map",
                                "-m", "map", "--column", "tie_aware"], catch_exceptions=False)
    assert big.exit_code == 0, big.output
    assert [line.split("\t")[0].rstrip() for line in big.stdout.splitlines()] == [
        "map"]
    assert "GMAP has no tie_aware value" in big.stderr
    assert "left out" in big.stderr and "not estimated by sampling" in big.stderr
    plain = runner().invoke(cli, ["compare", "--qrels", str(tmp_path / "qrels"),
                                  str(tmp_path / "run"), "--format", "trec_eval", "-m",
                                  "gm_map"], catch_exceptions=False)
    assert "gm_map" in plain.stdout and "left out" not in plain.stderr


def test_all_lines_are_added_up_as_trec_eval_adds_them(tmp_path):
    """trec_eval's 'all' value is a sequential double sum over the queries divided by their
    number; on a rounding boundary its last bit decides the printed decimal. Here P_200's
    mean is 41.25 / 2200 = 0.01875 exactly, which trec_eval's loop makes
    0.018750000000000003 (printed 0.0188) where a correctly rounded mean prints 0.0187."""
    hits = [4, 3, 3, 3, 5, 4, 7, 5, 3, 3, 2, 3]  # relevant documents retrieved per query
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    with open(run, "w") as r, open(qrels, "w") as q:
        for i, h in enumerate(hits):
            for d in range(10):
                r.write(f"{301 + i} Q0 d{d} {d + 1} {1 - d / 10:.1f} x\n")
                q.write(f"{301 + i} 0 d{d} {int(d < h)}\n")
    # The oracle: trec_eval's accumulation written out (queries in its qid order).
    total = 0.0
    for h in hits:
        total += h / 200
    expected = f"{total / len(hits):.4f}"
    assert expected == "0.0188" and f"{sum(hits) / 200 / len(hits):.4f}" == "0.0187"
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-m", "P_200",
                                   "--format", "trec_eval", "--convention", "trec_eval", "-q"],
                             catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    (line,) = [line.split() for line in result.stdout.splitlines() if line.startswith("P_200")]
    assert line[1:] == ["all", expected]
    # The JSON keeps the correctly rounded mean.
    doc = json.loads(runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-m",
                                           "P_200", "--format", "json", "--convention",
                                           "trec_eval", "-q"]).stdout)
    assert doc["runs"][0]["metrics"][0]["original"] == sum(hits) / 200 / len(hits)


def test_set_measures_divide_the_count_as_trec_eval_does(tmp_path):
    """m_set_P.c, m_set_rel_P.c and m_set_recall.c divide the count, X / N in doubles: 3 / 10
    is 0.3 where 3 * (1 / 10) is 0.30000000000000004, and the last bit carries into the
    'all' line's sequential sum. Here every query retrieves 10 documents and has 10 relevant
    ones, so set_P = set_relative_P = set_recall = X / 10, and the mean 110 / 320 = 0.34375
    lies on a rounding boundary that trec_eval's sum (of X / 10) leaves below."""
    hits = [4, 0, 0, 0, 8, 0, 10, 5, 4, 7, 0, 0, 2, 0, 5, 4, 3, 3, 3, 6, 3, 5, 8, 0, 3, 7, 2,
            7, 3, 4, 4, 0]
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    with open(run, "w") as r, open(qrels, "w") as q:
        for i, h in enumerate(hits):
            for d in range(10):
                r.write(f"{301 + i} Q0 d{d} {d + 1} {1 - d / 10:.1f} x\n")
                q.write(f"{301 + i} 0 d{d} {int(d < h)}\n")
            for d in range(10 - h):  # relevant, not retrieved: R = 10
                q.write(f"{301 + i} 0 u{d} 1\n")
    # The oracle: trec_eval's per-query division and accumulation written out.
    total = 0.0
    for h in hits:
        total += h / 10
    expected = f"{total / len(hits):.4f}"
    multiplied = 0.0
    for h in hits:
        multiplied += h * (1 / 10)
    assert expected == "0.3437" and f"{multiplied / len(hits):.4f}" == "0.3438"
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-m", "set_P",
                                   "-m", "set_relative_P", "-m", "set_recall", "--format",
                                   "trec_eval", "--convention", "trec_eval", "-q"],
                             catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert [line.split() for line in result.stdout.splitlines()] == [
        [name, "all", expected] for name in ("set_P", "set_relative_P", "set_recall")]


def test_rbp_adds_up_as_trec_eval_does(tmp_path):
    """m_rbp.c adds gain * cur_p in rank order, cur_p = cur_p * p (not p ** r), and
    multiplies by 1 - p at the end; m_rbp_resid.c adds cur_p + (1 - p) * sum. Here the mean
    of rbp is (0.081 + 0.2439 + 0.2439 + 0.171) / 4 = 0.18495 exactly, on a rounding
    boundary that trec_eval's order leaves below and the sum of (1 - p) p ** r above."""
    rels = [[0, 0, 1, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 1, 1, 0, 0]]
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    with open(run, "w") as r, open(qrels, "w") as q:
        for i, labels in enumerate(rels):
            for d, label in enumerate(labels):
                r.write(f"{301 + i} Q0 d{d} {d + 1} {1 - d / 10:.1f} x\n")
                if d != 4:  # the last document unjudged: rbp_resid has a value
                    q.write(f"{301 + i} 0 d{d} {label}\n")

    def rbp(labels, resid=False):  # the loops of m_rbp.c and m_rbp_resid.c
        total, cur_p = 0.0, 1.0
        for d, label in enumerate(labels):
            if (d == 4) if resid else label:
                total += 1.0 * cur_p
            cur_p = cur_p * 0.9
        return cur_p + (1 - 0.9) * total if resid else (1.0 - 0.9) * total

    def printed(resid=False):
        total = 0.0
        for labels in rels:
            total += rbp(labels, resid)
        return f"{total / len(rels):.4f}"

    old = 0.0
    for labels in rels:
        old += sum(label * ((1.0 - 0.9) * 0.9 ** d) for d, label in enumerate(labels))
    assert printed() == "0.1849" and f"{old / len(rels):.4f}" == "0.1850"
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-m", "rbp",
                                   "-m", "rbp_resid", "--format", "trec_eval",
                                   "--convention", "trec_eval", "-q", "--per-query"],
                             catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert ["rbp", "all", printed()] in lines
    assert ["rbp_resid", "all", printed(resid=True)] in lines
    for i, labels in enumerate(rels):
        assert ["rbp", str(301 + i), f"{rbp(labels):.4f}"] in lines


def test_11pt_avg_adds_the_levels_as_trec_eval_does(tmp_path):
    """m_11pt_avg.c adds the interpolated precisions from level 1.0 down to 0.0 (walking the
    ranking backwards); the other order differs in the last bit here, which a mean on a
    rounding boundary would print. The oracle is its loop written out."""
    rels = [0, 1, 1, 0, 0, 1, 1]
    num_rel = sum(rels)
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(f"1 Q0 d{d} {d + 1} {10 - d} x\n" for d in range(len(rels))))
    qrels.write_text("".join(f"1 0 d{d} {label}\n" for d, label in enumerate(rels)))
    levels = [i / 10 for i in range(11)]
    cutoffs = [math.floor(x * num_rel + 0.5) for x in levels]  # lround of x R >= 0
    current_cut = len(cutoffs) - 1
    while current_cut >= 0 and cutoffs[current_cut] > sum(rels):
        current_cut -= 1
    int_precis = sum(rels) / len(rels)
    rel_so_far, total, added = sum(rels), 0.0, []
    for i in range(len(rels), 0, -1):
        if rel_so_far <= 0:
            break
        int_precis = max(int_precis, rel_so_far / i)
        if rels[i - 1]:
            while current_cut >= 0 and rel_so_far == cutoffs[current_cut]:
                total += int_precis
                added.append(int_precis)
                current_cut -= 1
            rel_so_far -= 1
    while current_cut >= 0:
        total += int_precis
        added.append(int_precis)
        current_cut -= 1
    expected = total / len(levels)
    ascending = 0.0
    for value in reversed(added):
        ascending += value
    assert ascending / len(levels) != expected  # the order shows in the last bit
    doc = json.loads(runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-m",
                                           "11pt_avg", "--format", "json", "--convention",
                                           "trec_eval", "-q"]).stdout)
    assert doc["runs"][0]["metrics"][0]["original"] == expected


def test_complete_run_with_a_relevance_level_prints_trec_evals_num_rel():
    """trec_eval -c -l2 (out.test.cl2): its num_rel 'all' line counts every judgement above 0
    in the qrels (m_num_rel.c), not the queries' level-2 counts; every line is trec_eval's."""
    result = runner().invoke(cli, [
        "compare", "--qrels", os.path.join(DATA, "qrels.rel_level"),
        os.path.join(DATA, "results.trunc"), "-m", "official", "--convention", "trec_eval",
        "--format", "trec_eval", "--missing-queries", "zero", "--relevance-level", "2", "-q"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    with open(os.path.join(DATA, "out.test.cl2"), encoding="utf-8") as f:
        assert result.stdout.splitlines() == f.read().splitlines()


# trec_eval's names of the measures below and tieeval's (the JSON's and --per-instance's)
_PRINTED = {"num_ret": "NumRet", "num_rel": "NumRel", "num_rel_ret": "NumRelRet",
            "num_nonrel_judged_ret": "NumNonRelJudgedRet", "num_q": "NumQ",
            "P_2": "Precision@2", "map": "MAP", "Rprec": "Rprec", "success_1": "Success@1"}
_COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "num_q"}


@pytest.mark.parametrize("column", ["original", "first", "last", "tie_aware"])
def test_every_printed_value_is_the_jsons_in_every_column(tmp_path, column):
    """A tie block cut by the depth (-M 3): query 1 ranks the relevant d1 alone, then ties
    d2 (relevant), d3 (non-relevant), d4 (relevant) and the unjudged d5, of which 2 are
    kept: its expected num_rel_ret is 1 + 2 * 2/4 = 2 and num_nonrel_judged_ret 2 * 1/4 =
    0.5. Query 2 ties a and c (relevant), b (non-relevant) and the unjudged x, 3 kept:
    3 * 2/4 = 1.5 and 3 * 1/4 = 0.75. Every line of every column is the JSON's value
    (per query: --per-instance's), a count printed whole only when it is whole."""
    import pyarrow.parquet as pq

    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("1 0 d1 1\n1 0 d2 1\n1 0 d3 0\n1 0 d4 1\n2 0 a 1\n2 0 b 0\n2 0 c 1\n")
    run.write_text("1 Q0 d1 1 3 r\n1 Q0 d2 2 2 r\n1 Q0 d3 3 2 r\n1 Q0 d4 4 2 r\n"
                   "1 Q0 d5 5 2 r\n2 Q0 a 1 1 r\n2 Q0 b 2 1 r\n2 Q0 c 3 1 r\n2 Q0 x 3 1 r\n")
    measures = [arg for name in _PRINTED for arg in ("-m", name)]
    common = ["compare", "--qrels", str(qrels), str(run), "--convention", "trec_eval",
              "-M", "3", "-q", *measures]
    text = runner().invoke(cli, [*common, "--format", "trec_eval", "--per-query",
                                 "--column", column], catch_exceptions=False)
    assert text.exit_code == 0, text.stderr
    rows = tmp_path / "rows.parquet"
    out = runner().invoke(cli, [*common, "--format", "json", "--per-instance", str(rows)],
                          catch_exceptions=False)
    assert out.exit_code == 0, out.stderr
    means = {m["metric"] + (f"@{m['k']}" if m["k"] is not None else ""): m[column]
             for m in json.loads(out.stdout)["runs"][0]["metrics"]}
    per_query = {r["instance"]: r for r in pq.read_table(rows).to_pylist()}
    if column == "tie_aware":  # the expectations derived above
        assert per_query["1"]["NumRelRet_tie_aware"] == 2
        assert per_query["1"]["NumNonRelJudgedRet_tie_aware"] == 0.5
        assert per_query["2"]["NumRelRet_tie_aware"] == 1.5
        assert per_query["2"]["NumNonRelJudgedRet_tie_aware"] == 0.75
        assert means["NumRelRet"] == 3.5 and means["NumNonRelJudgedRet"] == 1.25
    seen = set()
    for line in text.stdout.splitlines():
        measure, qid, printed = (part.strip() for part in line.split("\t"))
        if measure == "runid":
            continue
        name = _PRINTED[measure]
        value = means[name] if qid == "all" else per_query[qid][f"{name}_{column}"]
        if measure in _COUNTS and float(value).is_integer():
            assert printed == str(int(value)), line
        else:  # trec_eval's %6.4f: an expected count keeps its decimals
            assert printed == f"{value:6.4f}", line
        seen.add((measure, qid))
    # num_q has its 'all' line only, as in trec_eval
    assert seen == {(m, q) for m in _PRINTED for q in ("1", "2", "all")
                    if m != "num_q" or q == "all"}
