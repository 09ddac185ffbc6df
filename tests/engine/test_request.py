"""One request, one pass: the command line and the Python API build the same checked
request, the engine refuses there what it cannot honour (with one message, spelled for
each front end), and the outputs asked for ride the pass that makes the totals."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tieeval
from tieeval import save_scores
from tieeval.cli import cli
from tieeval.engine.request import EvalOptions
from tieeval.errors import ParameterError
from tieeval.io.base import Dump, RelevanceReadOptions
from tieeval.metrics.metric import Metric

RULES = ("stable", "reverse-stable", "trec", "topk", "given")


@pytest.fixture
def parquet(tmp_path):
    rng = np.random.default_rng(3)
    path = str(tmp_path / "run.parquet")
    save_scores(path, rng.integers(0, 3, (40, 12)).astype(np.float32),
                rng.integers(0, 12, 40))
    return path


def test_the_request_refuses_nothing_to_spark():
    """Every option runs on Spark (tests/engine/test_spark_parity.py compares its output
    with the local engine's): the request accepts each, from both front ends, without a
    dump or pyspark."""
    for fields in [{"original": rule} for rule in RULES] + [
            {"per_instance": "rows.parquet"}, {"per_query": True}, {"paired": True},
            {"what_if": tieeval.WhatIf("float16")}, {"what_if": tieeval.WhatIf(tolerance=1e-6)},
            {"read": RelevanceReadOptions(qrels="qrels.txt")}]:
        for cli_spelling in (False, True):
            assert EvalOptions(engine="spark", cli=cli_spelling, **fields).engine == "spark"


def test_request_checks_its_fields_once():
    with pytest.raises(ParameterError, match="nan_policy must be one of"):
        EvalOptions(nan_policy="ignore")
    with pytest.raises(ParameterError, match="original must be one of"):
        EvalOptions(original="random")
    with pytest.raises(ParameterError, match="engine must be one of"):
        EvalOptions(engine="dask")


@pytest.fixture
def reads(monkeypatch):
    """Rows handed out by every Dump.batches call: what the input costs to read."""
    seen: list[int] = []
    batches = Dump.batches

    def counted(self, batch_rows=None):
        for batch in batches(self, batch_rows):
            seen.append(batch.rows)
            yield batch
    monkeypatch.setattr(Dump, "batches", counted)
    return seen


def test_per_instance_reads_the_input_once(parquet, tmp_path, reads):
    out = tmp_path / "rows.parquet"
    res = CliRunner().invoke(cli, ["compare", parquet, "-m", "HR@1", "-m", "MRR", "-f", "json",
                                   "--per-instance", str(out), "--batch-rows", "7", "-q"])
    assert res.exit_code == 0, res.output
    assert sum(reads) == 40  # the totals and the rows from one pass (was 80)
    run = json.loads(res.output)["runs"][0]
    rows = pq.read_table(out)
    assert rows.num_rows == 40
    hr = rows.column("HR@1_tie_aware").to_numpy()
    assert hr.mean() == pytest.approx(run["metrics"][0]["tie_aware"], abs=1e-12)


def test_per_query_reads_the_input_once(parquet, reads):
    res = CliRunner().invoke(cli, ["compare", parquet, "-m", "MRR", "-f", "trec_eval",
                                   "--per-query", "--batch-rows", "9", "-q"])
    assert res.exit_code == 0, res.output
    assert sum(reads) == 40
    lines = [line.split() for line in res.output.splitlines()]
    assert [q for _, q, _ in lines if q != "all"] == [str(i + 1) for i in range(40)]


def test_diff_reads_each_input_once(parquet, reads):
    res = CliRunner().invoke(cli, ["diff", parquet, parquet, "-m", "HR@1", "-f", "json"])
    assert res.exit_code == 0, res.output
    assert sum(reads) == 80


def test_api_jobs_zero_is_automatic_as_on_the_command_line(parquet, monkeypatch):
    """jobs=0 (or None) is ``--jobs 0``: below the pool's size this process runs alone."""
    import tieeval.engine.parallel as parallel

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started for a small dump")
    monkeypatch.setattr(parallel, "accumulate_parallel", no_pool)
    for jobs in (0, None):
        got = tieeval.evaluate_path(parquet, [Metric.parse("HR@1")], jobs=jobs)
        assert got.instances == 40


def test_diff_takes_instance_ids_from_the_opened_dump(tmp_path, monkeypatch):
    """diff aligns wide dumps by the ids their own reader gives (Dump.instance_ids), not
    through a second reader of the path."""
    import tieeval.analysis.diff as diff

    def second_reader(*args, **kwargs):
        raise AssertionError("instance ids read outside the dump's reader")
    monkeypatch.setattr(diff, "read_instance_ids", second_reader)
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 3, (30, 6)).astype(np.float32)
    ids = np.arange(30) * 7
    order = rng.permutation(30)
    save_scores(tmp_path / "a.npz", scores, np.zeros(30, dtype=np.int64), instances=ids)
    save_scores(tmp_path / "b.parquet", scores[order], np.zeros(30, dtype=np.int64),
                instances=ids[order])
    res = CliRunner().invoke(cli, ["diff", str(tmp_path / "a.npz"), str(tmp_path / "b.parquet"),
                                   "-m", "HR@1", "-f", "json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["alignment"] == "instance"
    assert got["metrics"][0]["difference"] == 0.0  # the same rows, matched by id


def test_a_parquet_dataset_gives_its_ids_in_the_order_of_its_rows(tmp_path):
    import pyarrow as pa

    folder = tmp_path / "ds"
    folder.mkdir()
    for i, part in enumerate(([5, 3], [9])):
        pq.write_table(pa.table({"scores": [[1.0, 0.0]] * len(part), "instance": part}),
                       folder / f"part-{i}.parquet")
    dump = tieeval.open_dump(str(folder))
    assert dump.instance_ids().tolist() == [5, 3, 9]
    assert dump.instance_ids("other") is None


def test_per_instance_rows_survive_a_pass_that_starts_over(tmp_path):
    """An unsorted long CSV makes the reader start over: the rows file is written by the
    complete pass only, once per instance, and no temporary file is left behind."""
    rng = np.random.default_rng(8)
    lines = [(f"q{i}", p, int(rng.integers(0, 3)), int(p == 0))
             for i in range(20) for p in range(5)]
    order = rng.permutation(len(lines))
    text = "instance,position,score,label\n" + "".join(
        f"{q},{p},{s},{lab}\n" for q, p, s, lab in (lines[i] for i in order))
    (tmp_path / "long.csv").write_text(text)
    out = tmp_path / "rows.parquet"
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "long.csv"), "-m", "HR@1",
                                   "-f", "json", "--per-instance", str(out), "-q"])
    assert res.exit_code == 0, res.output
    rows = pq.read_table(out)
    assert sorted(rows.column("instance").to_pylist()) == sorted(f"q{i}" for i in range(20))
    scores = {}
    for q, _, s, _ in lines:
        scores.setdefault(q, []).append(s)
    # HR@1 tie-aware of one positive at position 0: 1/b when nothing is above it, else 0
    expected = {q: (1 / s.count(s[0]) if max(s) == s[0] else 0.0) for q, s in scores.items()}
    got = dict(zip(rows.column("instance").to_pylist(),
                   rows.column("HR@1_tie_aware").to_pylist()))
    assert got == pytest.approx(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv", "rows.parquet"]


def test_per_instance_with_workers_asked_gives_the_same_run_in_one_read(parquet, tmp_path,
                                                                         reads):
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"rows{jobs}.parquet"
        res = CliRunner().invoke(cli, ["compare", parquet, "-f", "json", "--jobs", jobs,
                                       "--per-instance", str(out), "-q"])
        assert res.exit_code == 0, res.output
        outs.append((res.output, pq.read_table(out)))
    assert outs[0][0] == outs[1][0] and outs[0][1].equals(outs[1][1])
    assert sum(reads) == 2 * 40
