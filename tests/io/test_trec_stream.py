"""A TREC run read query by query (tieeval.io.trec_stream) gives trec_eval's lines whatever
the chunks: chunk ends inside a query, a query over many chunks, runs whose queries are
not together, and bad input in a later chunk.

The oracle is trec_eval 10's own output on the reference collections
(``tests/conformance/trec_reference``, see its README: every query's line and the ``all``
lines, values to 17 digits), which does not depend on the order of a run's lines.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers import trec_lines_every_digit
from tiers import tiered

import tieeval.io.trec_stream as trec_stream
from tieeval.cli import cli
from tieeval.engine.local import evaluate_dump
from tieeval.io.base import RelevanceReadOptions
from tieeval.io.trec_stream import open_trec_run

DATA = Path(__file__).parents[1] / "conformance" / "trec_reference"
OPTIONS = {"none": (), "c": ("--missing-queries", "zero"), "J": ("--judged-only",),
           "c_J": ("--missing-queries", "zero", "--judged-only")}


def invoke(args):
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 keeps stderr apart
        runner = CliRunner()
    return runner.invoke(cli, args, catch_exceptions=False)


def tieeval_lines(run, qrels, options, monkeypatch):
    """tieeval's trec_eval lines, every digit of each value."""
    trec_lines_every_digit(monkeypatch)
    result = invoke(["compare", "--qrels", str(qrels), str(run), "-m", "all_trec",
                     "--convention", "trec_eval", "--format", "trec_eval", "--per-query", "-q",
                     *options])
    assert result.exit_code == 0, result.stderr
    return [tuple(f.strip() for f in line.split("\t")) for line in result.stdout.splitlines()]


def assert_trec_evals(ours, collection, option_set):
    with gzip.open(DATA / collection / f"{option_set}.txt.gz", "rt") as fh:
        theirs = [tuple(line.split()) for line in fh if line.strip()]
    assert [(m, q) for m, q, _ in ours] == [(m, q) for m, q, _ in theirs]
    for (m, q, v), (_, _, w) in zip(ours, theirs):
        if m in ("runid", "relstring"):  # text
            assert v == w
        elif "nan" in w:
            assert "nan" in v, (m, q)
        else:
            assert abs(float(v) - float(w)) <= 1e-9 * max(1.0, abs(float(w))), (m, q, v, w)


# chunks of 64 bytes (a chunk a line: every query split) under no option and under -c -J
# together; each option set under 997-byte chunks (a chunk end inside most queries). Every
# run: 64 bytes with no option, 997 with -c -J, and gamma; the slow tier the others.
@pytest.mark.parametrize("collection,option_set,chunk", tiered([
    ("alpha", "none", 64), ("alpha", "c_J", 997), ("gamma", "none", 1 << 12),
    *(("alpha", o, 997) for o in OPTIONS if o != "c_J"), ("alpha", "c_J", 64)], quick=3))
def test_chunk_ends_inside_queries_give_trec_evals_lines(collection, option_set, chunk,
                                                         monkeypatch):
    # 64 bytes: about one line a chunk, so each query spans many chunks; 997 and 4096 bytes
    # cut queries anywhere
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", chunk)
    folder = DATA / collection
    ours = tieeval_lines(folder / "run", folder / "qrels", OPTIONS[option_set], monkeypatch)
    assert_trec_evals(ours, collection, option_set)


def interleaved(run: Path, out: Path, seed: int = 0) -> None:
    """The run's lines with the queries' lines dealt out in turns (each query's lines in
    their order): no query's lines are together."""
    by_query: dict = {}
    for line in run.read_text().splitlines():
        by_query.setdefault(line.split()[0], []).append(line)
    queues = [list(lines) for lines in by_query.values()]
    random.Random(seed).shuffle(queues)
    lines = []
    while any(queues):
        for q in queues:
            if q:
                lines.append(q.pop(0))
    out.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("option_set,chunk", [("none", 64), ("c_J", trec_stream.CHUNK_BYTES)])
def test_runs_whose_queries_are_not_together_give_trec_evals_lines(option_set, chunk,
                                                                   tmp_path, monkeypatch):
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", chunk)
    folder = DATA / "beta"
    run = tmp_path / "run"
    interleaved(folder / "run", run)
    ours = tieeval_lines(run, folder / "qrels", OPTIONS[option_set], monkeypatch)
    assert_trec_evals(ours, "beta", option_set)


def test_a_query_met_again_in_a_later_chunk_reads_the_run_whole(tmp_path, monkeypatch):
    """The streamed pass gives up where a query comes back, and the whole-run reader's
    pass follows (same figures, the rows in the dump's order, batches in that order)."""
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", 40)
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("q2 Q0 a 1 1 t\nq10 Q0 b 1 1 t\nq2 Q0 c 2 0.5 t\n")
    qrels.write_text("q2 0 c 1\nq10 0 b 1\n")
    dump = open_trec_run(str(run), str(qrels))
    r = evaluate_dump(dump, ["MRR"])
    assert r.metric("MRR").original == pytest.approx((1 / 2 + 1) / 2)  # q2: c 2nd, q10: b 1st
    assert dump.instance_order() is None  # the whole-run reader's rows: the dump's order
    assert [b.ids.tolist() for b in dump.batches(1)] == [["q10"], ["q2"]]


def test_streamed_rows_are_put_in_the_dump_order(tmp_path, monkeypatch):
    """Queries in the run's order (2, 10, 1) are evaluated in that order and reported in
    the dump's (trec_eval's: by query id as text, 1 10 2), per query and per instance."""
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", 30)
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("2 Q0 a 1 1 t\n2 Q0 b 2 1 t\n10 Q0 a 1 3 t\n10 Q0 c 2 2 t\n"
                   "1 Q0 d 1 1 t\n")
    qrels.write_text("1 0 d 1\n2 0 b 1\n10 0 c 1\n")
    dump = open_trec_run(str(run), str(qrels))
    streamed = [b.ids.tolist() for b in dump.batches(1)]
    assert streamed == [["2"], ["10"], ["1"]]
    assert dump.instance_order().tolist() == [2, 1, 0]
    result = invoke(["compare", "--qrels", str(qrels), str(run), "-m", "MRR",
                     "--convention", "trec_eval", "--format", "trec_eval", "--per-query", "-q"])
    assert result.exit_code == 0, result.stderr
    # MRR per query from the lines: 1: d first (1); 10: a (3) above c (2): 1/2; 2: a and
    # b tie at 1, trec_eval puts b (the larger docno) first: 1
    assert [line.split()[1:] for line in result.stdout.splitlines()
            if line.startswith("recip_rank")] == [["1", "1.0000"], ["10", "0.5000"],
                                                  ["2", "1.0000"], ["all", "0.8333"]]
    out = tmp_path / "rows.parquet"
    result = invoke(["compare", "--qrels", str(qrels), str(run), "-m", "MRR",
                     "--per-instance", str(out)])
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table["instance"].to_pylist() == ["1", "10", "2"]
    assert table["MRR_original"].to_pylist() == [1.0, 0.5, 1.0]


@pytest.mark.parametrize("bad,message", [
    ("q9 Q0 z 1 high t", "score 'high' is not a number"),
    ("q1 Q0 d5 1 1 t", "query q1: document d5 is retrieved twice"),
    ("q1 Q0 zz 1 1 t", None),  # q1 again after q2..q8: read whole, no error
])
def test_bad_input_in_a_later_chunk_is_one_error_and_no_output(bad, message, tmp_path,
                                                                monkeypatch):
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", 256)
    lines = [f"q{q} Q0 d{d} {d} {1 / d:.3f} t" for q in range(1, 9) for d in range(1, 30)]
    at = len(lines) - 10
    lines.insert(at, bad)  # in q8's lines, chunks after the first
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("\n".join(lines) + "\n")
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(1, 10)))
    out = tmp_path / "rows.parquet"
    result = invoke(["compare", "--qrels", str(qrels), str(run), "-m", "official",
                     "--convention", "trec_eval", "--format", "trec_eval", "--per-query", "-q",
                     "--per-instance", str(out)])
    if message is None:  # the same figures as the run with q1's lines together
        assert result.exit_code == 0, result.stderr
        lines.remove(bad)
        lines.insert(29, bad)  # after q1's 29 lines
        together = tmp_path / "together"
        together.write_text("\n".join(lines) + "\n")
        expected = invoke(["compare", "--qrels", str(qrels), str(together), "-m", "official",
                           "--convention", "trec_eval", "--format", "trec_eval",
                           "--per-query", "-q"])
        assert expected.exit_code == 0 and result.stdout == expected.stdout
        return
    assert result.exit_code == 2
    assert result.stdout == "" and not out.exists()
    errors = result.stderr.splitlines()
    assert [e for e in errors if e.startswith("Error:")] == errors[-1:]
    assert message in errors[-1]
    if "score" in message:
        assert f"line {at + 1}:" in errors[-1]


@pytest.mark.parametrize("batch_rows", [1, 3, 1000])
def test_batches_of_any_size_give_the_same_figures(batch_rows, monkeypatch):
    """Every column and tie statistic of the JSON, streamed in chunks of 300 bytes and
    batches of 1, 3 or 1000 queries, against the whole-run reader's single pass."""
    folder = DATA / "gamma"
    opts = RelevanceReadOptions(missing_queries="zero")

    def figures(stream: bool):
        dump = open_trec_run(str(folder / "run"), str(folder / "qrels"), opts)
        if not stream:
            dump.settle()
        return evaluate_dump(dump, ["NDCG@10", "MAP", "MRR", "Recall@100"],
                             batch_rows=batch_rows).to_dict()

    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", 300)
    assert figures(True) == figures(False)


def test_lines_of_one_chunk_only_for_queries_in_a_chunk(tmp_path, monkeypatch):
    """A streamed batch holds whole queries: its rows' lines are every line of each."""
    monkeypatch.setattr(trec_stream, "CHUNK_BYTES", 100)
    rng = np.random.default_rng(7)
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    sizes = rng.integers(1, 40, size=30)
    run.write_text("".join(f"q{q:02d} Q0 d{d} {d} {rng.integers(0, 3)} t\n"
                           for q, n in enumerate(sizes) for d in range(n)))
    qrels.write_text("".join(f"q{q:02d} 0 d0 1\n" for q in range(30)))
    dump = open_trec_run(str(run), str(qrels))
    got = {}
    for batch in dump.batches(4):
        for qid, n in zip(batch.ids.tolist(), np.diff(batch.offsets).tolist()):
            got[qid] = n
    assert got == {f"q{q:02d}": int(n) for q, n in enumerate(sizes)}


@pytest.mark.parametrize("run_text,expected", [
    # -0.0 and 0.0 tie (trec_eval compares doubles): docno descending puts b first
    ("q1 Q0 a 1 0.0 t\nq1 Q0 b 2 -0.0 t\n", 1.0),
    ("q1 Q0 b 1 -0.0 t\nq1 Q0 a 2 0.0 t\n", 1.0),
    # a NaN score ranks last under --nan-policy worst, whatever its docno
    ("q1 Q0 b 1 nan t\nq1 Q0 a 2 1 t\n", 0.5),
])
def test_streamed_order_ties_zeros_and_puts_nan_last(run_text, expected, tmp_path):
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text(run_text)
    qrels.write_text("q1 0 b 1\n")
    r = evaluate_dump(open_trec_run(str(run), str(qrels)), ["MRR"], nan_policy="worst")
    assert r.metric("MRR").original == expected
