"""Fractional qrels grades: read as trec_eval reads them under its convention, kept elsewhere.

trec_eval reads a grade with C's ``atol`` (get_qrels.c): the digits up to the first other
character, so ``0.5`` is 0, ``2.9`` is 2, ``-1.5`` is -1, ``1e2`` is 1. The oracle is the same
qrels with every grade truncated by hand and written out: under ``--convention trec_eval``
every per-query value of every column equals the one computed from that file. Without the
convention the grades are kept: NDCG's gains are the grades as written (derived by hand).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.analysis.trec_eval import query_values
from tieeval.cli import cli
from tieeval.engine.arguments import metric_list, rel_options
from tieeval.io.base import RelevanceReadOptions
from tieeval.io.trec import _qrels_columns, _qrels_lines, atol, read_qrels

# (query, docno, grade as written, grade as trec_eval's atol reads it -- by hand)
JUDGEMENTS = [
    ("q1", "d1", "0.5", "0"), ("q1", "d2", "1.5", "1"), ("q1", "d3", "2.9", "2"),
    ("q1", "d4", "0", "0"), ("q1", "d5", "1", "1"), ("q1", "d6", "-1.5", "-1"),
    ("q1", "d7", "-0.5", "0"), ("q1", "d8", "1e2", "1"),
    ("q2", "d1", "2.9", "2"), ("q2", "d2", "0.5", "0"), ("q2", "d3", "1.5", "1"),
    ("q2", "d9", "0.9", "0"),
    ("q3", "d1", "0.5", "0"), ("q3", "d2", "3", "3"),
]
CHANGED = sum(1 for _, _, written, read in JUDGEMENTS if float(written) != float(read))
# scores with ties, some cut by the depth below
RUN = [
    ("q1", "d1", 3), ("q1", "d2", 2), ("q1", "d3", 2), ("q1", "d4", 1), ("q1", "d7", 1),
    ("q1", "d8", 1), ("q1", "d6", 0.5), ("q1", "dx", 0.5),
    ("q2", "d2", 1), ("q2", "d1", 1), ("q2", "d9", 1), ("q2", "d3", 0),
    ("q3", "d1", 2), ("q3", "d2", 2), ("q3", "dy", 1),
]
METRICS = ["all_trec", "NDCG@3", "ERR@5", "AP@5", "nDCG@10"]


def write(tmp_path, which: int, plus: bool = False):
    """The qrels (grades as written, or ``which=3`` as truncated by hand) and the run.
    ``plus``: grades written ``+3``, a field the fast parser leaves to the line reader."""
    qrels = tmp_path / ("qrels_written" if which == 2 else "qrels_truncated")
    lines = [f"{q} 0 {d} {('+' if plus and g[0] not in '+-' else '') + g}"
             for q, d, *grades in JUDGEMENTS for g in [grades[which - 2]]]
    qrels.write_text("\n".join(lines) + "\n")
    run = tmp_path / "run"
    run.write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(RUN)))
    return str(qrels), str(run)


def test_atol_reads_as_c_does():
    got = [atol(t) for t in (b"0.5", b"2.9", b"-1.5", b"1e2", b"+3", b"  7", b"-0.5",
                             b".5", b"003", b"-", b"", b"99999999999999999999")]
    assert got == [0, 2, -1, 1, 3, 7, 0, 0, 3, 0, 0, (1 << 63) - 1]


@pytest.mark.parametrize("plus", [False, True])
def test_readers_truncate_under_the_convention_only(tmp_path, plus):
    written, _ = write(tmp_path, 2, plus)
    truncated, _ = write(tmp_path, 3)
    want = {q: {d: float(g) for d, g in docs.items()} for q, docs in
            read_qrels(truncated).items()}
    assert read_qrels(written, "trec_eval") == want
    kept = read_qrels(written)
    assert kept["q1"][b"d3"] == 2.9 and kept["q1"][b"d8"] == 100.0
    # the chunked (pyarrow) reader and the line reader agree, grades truncated
    from tieeval.io.trec import GradeNote
    note = GradeNote(written, "trec_eval")
    cols = _qrels_columns(written, grades=note)
    lines = list(_qrels_lines(written, open(written, "rb").read(),
                              GradeNote(written, "trec_eval")))
    np.testing.assert_array_equal(cols.value, [float(r[2]) for r in lines])
    assert note.changed == CHANGED


def _per_query(run, qrels, convention):
    metrics = metric_list(METRICS)
    values = query_values(run, metrics, options=RelevanceReadOptions(qrels=qrels),
                          relevance=rel_options(None, {"convention": convention,
                                                       "depth": 2}))
    return values


@pytest.mark.parametrize("convention", ["trec_eval", "trec_eval9"])
@pytest.mark.parametrize("plus", [False, True])
def test_every_value_is_the_truncated_qrels_one(tmp_path, convention, plus):
    """Every per-query value of every measure and column, a tie block cut by the depth."""
    written, run = write(tmp_path, 2, plus)
    truncated, _ = write(tmp_path, 3)
    got = _per_query(run, written, convention)
    want = _per_query(run, truncated, convention)
    assert got.qids == want.qids and got.values.keys() == want.values.keys()
    for key, columns in want.values.items():
        for column, values in columns.items():
            np.testing.assert_array_equal(got.values[key][column], values,
                                          err_msg=f"{key} {column}")
    # and the means, through the API
    a = tieeval.evaluate_path(run, METRICS, qrels=written, convention=convention)
    b = tieeval.evaluate_path(run, METRICS, qrels=truncated, convention=convention)
    assert [(m.metric, m.k, m.original, m.first, m.last, m.tie_aware) for m in a.metrics] == \
        [(m.metric, m.k, m.original, m.first, m.last, m.tie_aware) for m in b.metrics]


def _cli(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, ["compare", *args], catch_exceptions=False)


@pytest.mark.parametrize("judged_only", [[], ["-J"]])
def test_num_rel_is_the_truncated_count_and_the_warning_is_said_once(tmp_path, judged_only):
    written, run = write(tmp_path, 2)
    truncated, _ = write(tmp_path, 3)
    # the count of grades > 0 once truncated, per query, by hand from the table
    want = {}
    for q, _, _, read in JUDGEMENTS:
        want[q] = want.get(q, 0) + (int(read) > 0)
    out = _cli("--qrels", written, run, "--convention", "trec_eval", "--format", "trec_eval",
               "--per-query", "-m", "num_rel", *judged_only)
    assert out.exit_code == 0, out.stderr
    lines = [line.split() for line in out.stdout.splitlines()]
    assert {q: int(v) for m, q, v in lines if m == "num_rel" and q != "all"} == want
    assert [int(v) for m, q, v in lines if q == "all"] == [sum(want.values())]
    warnings = [line for line in out.stderr.splitlines() if line.startswith("Warning:")]
    grades = [w for w in warnings if "as trec_eval reads them" in w]
    assert len(grades) == 1
    assert grades[0] == (f"Warning: {written}: {CHANGED} grades read as trec_eval reads them, "
                         "as whole numbers (atol: 0.5 -> 0, 1.5 -> 1); without the "
                         "trec_eval convention they are kept as written")
    # the truncated file itself changes nothing: no warning
    out = _cli("--qrels", truncated, run, "--convention", "trec_eval", "--format", "trec_eval",
               "-m", "num_rel")
    assert out.exit_code == 0 and "as trec_eval reads" not in out.stderr
    # without the convention the grades are kept, and nothing is said
    out = _cli("--qrels", written, run, "-m", "num_rel", "--format", "json")
    assert out.exit_code == 0 and "as trec_eval reads" not in out.stderr
    row = json.loads(out.stdout)["runs"][0]["metrics"][0]
    kept = {}
    for q, _, grade, _ in JUDGEMENTS:
        kept[q] = kept.get(q, 0) + (float(grade) > 0)
    assert row["original"] == sum(kept.values())


def test_without_the_convention_fractional_gains_are_kept(tmp_path):
    """NDCG of q3 and q2 with the grades as written, derived by hand (linear gain, 1/log2(r+1);
    no tie inside the kept list below)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("q 0 a 0.5\nq 0 b 2.9\nq 0 c 1.5\nq 0 z 0.9\n")
    run = tmp_path / "run"
    run.write_text("q Q0 a 1 3 t\nq Q0 c 2 2 t\nq Q0 b 3 1 t\nq Q0 y 4 0 t\n")
    dcg = 0.5 / math.log2(2) + 1.5 / math.log2(3) + 2.9 / math.log2(4)
    ideal = 2.9 / math.log2(2) + 1.5 / math.log2(3) + 0.9 / math.log2(4) + 0.5 / math.log2(5)
    result = tieeval.evaluate_path(str(run), ["NDCG"], qrels=str(qrels))
    assert result.metrics[0].original == pytest.approx(dcg / ideal, rel=1e-12)
    # the same run under the convention: gains 0, 2, 1 (0.9 and 0.5 judged non-relevant)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    result = tieeval.evaluate_path(str(run), ["NDCG"], qrels=str(qrels), convention="trec_eval")
    assert result.metrics[0].original == pytest.approx(dcg / ideal, rel=1e-12)
