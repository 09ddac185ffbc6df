"""The Spark engine gives bit-for-bit the local engine's results (Spark local mode, offline),
for single-positive and labelled dumps alike.

One SparkSession for every Spark test (tests/conftest.py) and tiny data keep this
near a minute. Skipped, with the reason shown by ``pytest -ra``, only when pyspark or Java
is missing (``pip install "tieeval[spark]"``; Java 17 or later). The test on a real
standalone cluster (a master and two workers started from the pyspark install, on
127.0.0.1; one worker killed mid-application) runs only with ``TIEEVAL_SPARK_STANDALONE=1``
(.ci/run sets it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

pyspark = pytest.importorskip("pyspark", reason="pyspark not installed: pip install "
                              "'tieeval[spark]' to run the Spark engine tests")
if shutil.which("java") is None:
    pytest.skip("Java not found: the Spark engine tests need Java 17 or later",
                allow_module_level=True)

# pyspark warns about pandas versions it has not certified; mapInArrow needs no pandas
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support:FutureWarning")

# after the skips above: tieeval.engine.spark imports pyspark (E402 is expected here)
from tieeval.cli import cli  # noqa: E402
from tieeval.engine import spark as tspark  # noqa: E402
from tieeval.engine.local import evaluate_labels, evaluate_path  # noqa: E402
from tieeval.errors import InputError  # noqa: E402
from tieeval.io.base import ReadOptions, RelevanceReadOptions  # noqa: E402
from tieeval.metrics.options import RelOptions  # noqa: E402


def write_long(tmp, long) -> None:
    """A shuffled long table as a two-file Parquet dataset ``long/`` and as ``long.csv``."""
    (tmp / "long").mkdir()
    half = len(long) // 2
    pq.write_table(long.slice(0, half), tmp / "long" / "part-0.parquet")
    pq.write_table(long.slice(half), tmp / "long" / "part-1.parquet")
    pcsv.write_csv(long, tmp / "long.csv")


def same(result) -> dict:
    d = result.to_dict()
    d.pop("path")
    return d


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """Tiny tied dumps: wide ragged Parquet, a shuffled long dataset (two files), long CSV."""
    tmp = tmp_path_factory.mktemp("spark")
    rng = np.random.default_rng(20261129)
    lengths = rng.integers(1, 12, size=60)
    rows = [(rng.integers(0, 4, size=n) / 3).astype(np.float32) for n in lengths]
    positive = np.array([rng.integers(0, n) for n in lengths])
    wide = pa.table({"scores": pa.array([r.tolist() for r in rows], type=pa.list_(pa.float32())),
                     "positive": positive})
    pq.write_table(wide.replace_schema_metadata({"model": "M"}), tmp / "wide.parquet",
                   row_group_size=16)
    inst = np.concatenate([np.full(n, i) for i, n in enumerate(lengths)])
    position = np.concatenate([np.arange(n) for n in lengths])
    label = np.concatenate([(np.arange(n) == p).astype(np.int8)
                            for n, p in zip(lengths, positive)])
    long = pa.table({"instance": [f"u{i}" for i in inst], "position": position,
                     "score": np.concatenate(rows), "label": label})
    write_long(tmp, long.take(pa.array(rng.permutation(len(inst)))))
    return tmp


def test_wide_ragged_parquet_matches_local(spark, dumps):
    path = str(dumps / "wide.parquet")
    result = tspark.evaluate_path(path, spark=spark)
    assert same(result) == same(evaluate_path(path))
    assert result.labels["model"] == "M"


def test_long_dataset_and_csv_match_local(spark, dumps):
    for path, options in ((dumps / "long", ReadOptions()),
                          (dumps / "long.csv", ReadOptions(score_dtype="float32"))):
        local = evaluate_path(str(path), options=options)
        assert same(tspark.evaluate_path(str(path), options=options, spark=spark)) == same(local)
    # long and wide are the same dump (the wide file also carries metadata)
    wide = same(evaluate_path(str(dumps / "wide.parquet")))
    assert wide.pop("labels")["model"] == "M"
    long = same(local)
    long.pop("labels")
    assert long == wide


def test_evaluate_dataframe(spark, dumps):
    wide = spark.read.parquet(str(dumps / "wide.parquet"))
    expected = same(evaluate_path(str(dumps / "wide.parquet")))
    got = tspark.evaluate(wide, k=(1, 5, 10), path="x", metadata={"model": "M"})
    assert same(got) == expected
    long = spark.read.parquet(str(dumps / "long")).repartition(3)
    got = tspark.evaluate(long, metrics=["HR@1", "HR@5", "HR@10", "NDCG@1", "NDCG@5",
                                         "NDCG@10", "MRR"], metadata={"model": "M"})
    assert same(got) == expected


def test_errors_reach_the_driver_as_one_line(spark):
    frame = spark.createDataFrame([([0.5, float("nan")],), ([0.1, 0.2],)],
                                  "scores array<float>")
    with pytest.raises(InputError) as info:
        tspark.evaluate(frame, path="nan-frame")
    assert "NaN score" in str(info.value) and "\n" not in str(info.value)


def test_cli_engine_spark_equals_local(spark, dumps):
    outputs = []
    for engine in ("local", "spark"):
        res = CliRunner().invoke(cli, ["compare", str(dumps / "wide.parquet"), "--engine",
                                       engine, "--format", "json", "--quiet"])
        assert res.exit_code == 0, res.output
        outputs.append(json.loads(res.stdout)["runs"])
    assert outputs[0] == outputs[1]


def test_remote_uris_are_read_by_spark_only(spark, dumps, tmp_path, monkeypatch):
    """``--engine spark hdfs://...``: nothing is looked up on the local disk; a stand-in
    session maps the URI to the test's files, as a cluster's file system would."""
    pq.write_table(pa.table({"scores": [[0.5, 0.5]], "labels": [[1, 0]]}),
                   tmp_path / "labelled.parquet")
    roots = {"hdfs://namenode/": dumps, "s3a://bucket/": tmp_path}

    class Reader:
        def option(self, key, value):
            assert (key, value) == ("parquet.page.verify-checksum.enabled", "true")
            return self

        def parquet(self, uri):
            prefix = next(p for p in roots if uri.startswith(p))
            return spark.read.parquet(str(roots[prefix] / uri[len(prefix):]))

    class Session:
        read = Reader()

    def local(*args, **kwargs):
        raise AssertionError("a remote URI was opened on the local disk")

    monkeypatch.setattr(tspark, "session", lambda *args, **kwargs: Session())
    monkeypatch.setattr(tspark, "open_dump", local)
    monkeypatch.setattr("tieeval.io.open.open_dump", local)
    res = CliRunner().invoke(cli, ["compare", "hdfs://namenode/wide.parquet", "--engine",
                                   "spark", "--format", "json", "--quiet"])
    assert res.exit_code == 0, res.output
    (run,) = json.loads(res.stdout)["runs"]
    monkeypatch.undo()
    local_run = same(evaluate_path(str(dumps / "wide.parquet")))
    assert run["metrics"] == local_run["metrics"] and run["ties"] == local_run["ties"]
    assert run["path"] == "hdfs://namenode/wide.parquet"
    # relevance fields are found in the DataFrame's schema: a labelled run, as locally
    monkeypatch.setattr(tspark, "session", lambda *args, **kwargs: Session())
    monkeypatch.setattr("tieeval.io.open.open_dump", local)
    res = CliRunner().invoke(cli, ["compare", "s3a://bucket/labelled.parquet", "--engine",
                                   "spark", "-m", "MAP", "--format", "json", "--quiet"])
    assert res.exit_code == 0, res.output
    (run,) = json.loads(res.stdout)["runs"]
    monkeypatch.undo()
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "labelled.parquet"), "-m", "MAP",
                                   "--format", "json", "--quiet"])
    (local_run,) = json.loads(res.stdout)["runs"]
    assert run["path"] == "s3a://bucket/labelled.parquet"
    run["path"] = local_run["path"]
    assert run == local_run and run["relevance"]["source"] == "labels"


def test_file_uris_are_local_paths(spark, dumps):
    path = dumps / "wide.parquet"
    got = tspark.evaluate_path(path.as_uri(), spark=spark)
    assert same(got) == same(evaluate_path(str(path)))


# ---------------------------------------------------------------------------------------
# labelled dumps: the general kernel on Spark


def lists(rows, typ):
    return pa.array([r.tolist() for r in rows], type=pa.list_(typ))


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """Tiny tied labelled dumps, ragged rows: wide Parquet with ``labels`` (signed, graded),
    ``positives``/``negatives`` lists, ``items`` with duplicates, a single-positive dump with
    items; long Parquet (two files, shuffled) and CSV whose label column holds relevance
    labels in a few instances only (the others one 1 each)."""
    tmp = tmp_path_factory.mktemp("spark-labelled")
    rng = np.random.default_rng(20261130)
    n = 90
    lengths = rng.integers(1, 14, size=n)
    scores = [(rng.integers(0, 4, size=m) / 3).astype(np.float32) for m in lengths]
    labels = [rng.choice([-1, 0, 0, 0, 1, 2, 3], size=m).astype(np.int8) for m in lengths]
    items = [np.array([f"i{v}" for v in rng.integers(0, 15, size=m)]) for m in lengths]
    pq.write_table(pa.table({"scores": lists(scores, pa.float32()),
                             "labels": lists(labels, pa.int8())}
                            ).replace_schema_metadata({"model": "L"}),
                   tmp / "labels.parquet", row_group_size=16)
    positives = [np.flatnonzero(lab > 0) for lab in labels]
    negatives = [np.flatnonzero(lab < 0) for lab in labels]
    pq.write_table(pa.table({"scores": lists(scores, pa.float32()),
                             "positives": lists(positives, pa.int32()),
                             "negatives": lists(negatives, pa.int64())}),
                   tmp / "posneg.parquet", row_group_size=20)
    pq.write_table(pa.table({"scores": lists(scores, pa.float32()),
                             "rel": lists(labels, pa.int8()),
                             "items": lists(items, pa.string())}),
                   tmp / "items.parquet", row_group_size=25)
    positive = np.array([rng.integers(0, m) for m in lengths])
    ids = [rng.integers(0, 10, size=m) for m in lengths]
    pq.write_table(pa.table({"scores": lists(scores, pa.float32()), "positive": positive,
                             "items": lists(ids, pa.int64())}),
                   tmp / "single_items.parquet", row_group_size=30)
    # long: one 1 per instance, except a few instances with graded, signed or several
    # positives (and one with none)
    one_hot = [(np.arange(m) == p).astype(np.int64) for m, p in zip(lengths, positive)]
    for i in (7, 40, 41, 77):
        one_hot[i] = labels[i].astype(np.int64)
    one_hot[60] = np.zeros(lengths[60], dtype=np.int64)
    inst = np.concatenate([np.full(m, i) for i, m in enumerate(lengths)])
    long = pa.table({"instance": inst, "position": np.concatenate([np.arange(m)
                                                                   for m in lengths]),
                     "score": np.concatenate(scores), "label": np.concatenate(one_hot)})
    write_long(tmp, long.take(pa.array(rng.permutation(len(inst)))))
    return tmp


def both_engines(*args) -> list[dict]:
    """``tieeval compare ARGS --format json`` with each engine; the runs, identical."""
    runs = []
    for engine in ("local", "spark"):
        res = CliRunner().invoke(cli, ["compare", *map(str, args), "--engine", engine,
                                       "--format", "json", "--quiet"])
        assert res.exit_code == 0, res.output
        runs.append(json.loads(res.stdout)["runs"])
    assert runs[0] == runs[1]
    return runs[1]


def test_wide_labels_match_local(spark, labelled):
    path = labelled / "labels.parquet"
    (run,) = both_engines(path)  # the labelled defaults: HR, Recall, NDCG, MRR, MAP
    assert run["relevance"]["source"] == "labels"
    # the file's metadata, as through the Python API
    api = tspark.evaluate_path(str(path), spark=spark)
    assert api.to_dict() == evaluate_path(str(path)).to_dict() and api.labels["model"] == "L"
    assert {m["metric"] for m in run["metrics"]} == {"HR", "Recall", "NDCG", "MRR", "MAP"}
    (run,) = both_engines(path, "-m", "SNDCG@5", "-m", "SHR@3", "-m", "SRecall@10",
                          "-m", "SDCG@5", "-m", "V-AUC", "-m", "Precision@5",
                          "--gamma", "0", "0.5", "1", "2")
    assert sorted({m["gamma"] for m in run["metrics"] if m["gamma"] is not None}) == [
        0.0, 0.5, 1.0, 2.0]
    (run,) = both_engines(path, "--both", "-m", "NDCG@5", "-m", "MAP@5", "-m", "SNDCG@5",
                          "-m", "V-AUC", "--gamma", "0.5")
    assert run["relevance"]["subset"] == "both"
    both_engines(path, "--gain", "exponential", "--discount", "power", "--alpha", "0.5",
                 "--short-list", "truncate", "--ap-norm", "min", "-m", "NDCG@5",
                 "-m", "DCG@10", "-m", "MAP@5", "-m", "Precision@10")
    both_engines(path, "--discount", "logb", "--log-base", "3", "--short-list", "skip",
                 "-k", "3", "12")


def test_positives_negatives_and_items_match_local(spark, labelled):
    (run,) = both_engines(labelled / "posneg.parquet", "-m", "SNDCG@5", "-m", "MAP",
                          "-m", "V-AUC", "--gamma", "0", "1")
    assert run["relevance"]["source"] == "positives"
    # the same labels, given as a list column: the same figures
    (same_labels,) = both_engines(labelled / "labels.parquet", "-m", "SNDCG@5", "-m", "MAP",
                                  "-m", "V-AUC", "--gamma", "0", "1")
    assert run["metrics"] == same_labels["metrics"]
    # string item ids with duplicates in rows, labels under another name
    (run,) = both_engines(labelled / "items.parquet", "--labels-column", "rel",
                          "-m", "NDCG@10", "-m", "Recall@5")
    (warning,) = run["data_warnings"]
    assert warning["kind"] == "duplicate_items" and warning["instances"] > 0
    # integer item ids next to one positive per row
    (run,) = both_engines(labelled / "single_items.parquet")
    assert run["data_warnings"][0]["instances"] > 0


def test_general_metrics_on_single_positive_dumps_match_local(spark, dumps):
    for path in (dumps / "wide.parquet", dumps / "long"):
        (run,) = both_engines(path, "-m", "Recall@5", "-m", "MAP", "-m", "Precision@3",
                              "-m", "NDCG@10", "--short-list", "skip")
        assert run["relevance"]["source"] == "positive"
    (run,) = both_engines(dumps / "long.csv", "--score-dtype", "float32", "-m", "MAP@5",
                          "--discount", "news", "-m", "NDCG@5")


def test_long_relevance_labels_match_local(spark, labelled):
    """Most instances hold one 1: a partition may finish on the single-positive path while
    another finds relevance labels, and the job runs again with the general kernel."""
    for args in ((labelled / "long",),
                 (labelled / "long.csv", "--score-dtype", "float32"),
                 (labelled / "long", "-m", "SNDCG@5", "-m", "SHR@1", "--gamma", "0", "1",
                  "--both")):
        (run,) = both_engines(*args)
        assert run["relevance"]["source"] == "labels"
        assert run["instances"] == 90


def test_evaluate_dataframe_with_labels(spark):
    """The DataFrame API against the local engine's in-memory entry (ragged rows, a label
    list column; then the same rows in the long layout)."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 9, size=40)
    scores = [rng.integers(0, 3, size=m).astype(np.float64) for m in lengths]
    labels = [rng.choice([-1, 0, 0, 1, 2], size=m) for m in lengths]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    metrics = ["HR@3", "NDCG@5", "SNDCG@5", "MAP", "V-AUC"]
    local = evaluate_labels(np.concatenate(scores), np.concatenate(labels), offsets,
                            metrics=metrics, gamma=[0.0, 1.0], path="frame").to_dict()
    options = RelOptions(gammas=(0.0, 1.0))
    wide = spark.createDataFrame([(s.tolist(), lab.tolist()) for s, lab in zip(scores, labels)],
                                 "scores array<double>, labels array<long>").repartition(3)
    got = tspark.evaluate(wide, metrics, relevance=options, path="frame")
    assert got.to_dict() == local
    long = spark.createDataFrame(
        [(i, j, float(s[j]), int(lab[j])) for i, (s, lab) in enumerate(zip(scores, labels))
         for j in range(len(s))],
        "instance long, position long, score double, label long").repartition(4)
    assert tspark.evaluate(long, metrics, relevance=options, path="frame").to_dict() == local


def test_labelled_errors_are_one_line(spark, tmp_path):
    # a labels row shorter than its scores row: the local reader's message, per partition
    frame = spark.createDataFrame([([0.5, 0.2], [1, 0]), ([0.1, 0.3], [1])],
                                  "scores array<float>, labels array<int>").coalesce(1)
    with pytest.raises(InputError) as info:
        tspark.evaluate(frame, path="short")
    assert "'labels' has 1 entries but the row has 2 candidates" in str(info.value)
    assert "\n" not in str(info.value)
    # relevance one way only, and no positive field next to labels (the schema says so)
    frame = spark.createDataFrame([([0.5, 0.2], [1, 0], 0)],
                                  "scores array<float>, labels array<int>, positive long")
    with pytest.raises(InputError, match="has both 'labels' and the single-positive field"):
        tspark.evaluate(frame, path="both")
    frame = spark.createDataFrame([([0.5, 0.2], ["a", "b"])],
                                  "scores array<float>, labels array<string>")
    with pytest.raises(InputError, match="column 'labels' must be a list of numbers per row"):
        tspark.evaluate(frame, path="text")
    # a renamed field must exist, as locally
    with pytest.raises(InputError, match=r"no field 'rel' \(--labels-column\)"):
        tspark.evaluate(frame.drop("labels"), path="renamed",
                        options=RelevanceReadOptions(labels="rel"))
    # a long label that is not finite, found on the relevance pass
    long = spark.createDataFrame([(1, 0, 0.5, 2.0), (1, 1, 0.2, float("nan"))],
                                 "instance long, position long, score double, label double")
    with pytest.raises(InputError, match="labels must be finite"):
        tspark.evaluate(long, path="y")


def test_what_remains_local_is_refused_in_one_line(spark, dumps, tmp_path):
    """Only a dump's format leaves it to the local engine: NPY/NPZ, and float16 Parquet
    (Spark has no float16); every option runs on Spark (tests/engine/test_spark_parity.py)."""
    np.save(tmp_path / "s.npy", np.zeros((2, 3), dtype=np.float32))
    pq.write_table(pa.table({"scores": pa.array([np.array([0.5, 0.25], dtype=np.float16)],
                                                type=pa.list_(pa.float16()))}),
                   tmp_path / "half.parquet")
    for args, message in (
            ([tmp_path / "s.npy"], "the Spark engine reads Parquet, CSV and TREC runs; .npy "
                                   "dumps run with --engine local"),
            ([tmp_path / "half.parquet"], "Spark has no float16: run with --engine local")):
        res = CliRunner().invoke(cli, ["compare", *map(str, args), "--engine", "spark"])
        assert res.exit_code == 2 and message in res.output
        assert len(res.output.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------
# a real standalone cluster: one master, one worker, the driver in a subprocess

STANDALONE_TIMEOUT = 300  # seconds for the whole test, cluster start included


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(log: Path, text: str, proc, deadline: float) -> None:
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"{log.name}: exited with {proc.returncode}:\n"
                                 f"{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{log.name}: no '{text}' in time:\n"
                         f"{log.read_text(errors='replace')[-2000:]}")


def stop(proc) -> None:
    """Stop a daemon started below (its own session) and the executors it started."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its process group
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=20)


DRIVER = """
import json, os, sys, time
from click.testing import CliRunner
from tieeval.cli import cli
commands = json.loads(sys.argv[1])
for i, args in enumerate(commands):
    res = CliRunner().invoke(cli, args + ["--engine", "spark", "--quiet"])
    with open(f"out-{i}.json", "w") as out:
        json.dump([res.exit_code, res.stdout, res.stderr[-3000:]], out)
    if i == 0:  # the parent kills a worker now, and waits for it to be gone
        open("first-done", "w").close()
        while not os.path.exists("worker-killed"):
            time.sleep(0.2)
"""


def start_daemon(spark_class, args, log: Path, env) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([str(spark_class), *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


@pytest.mark.skipif(os.environ.get("TIEEVAL_SPARK_STANDALONE") != "1",
                    reason="set TIEEVAL_SPARK_STANDALONE=1 to start a Spark standalone master "
                           "and two workers on 127.0.0.1 and evaluate on them")
def test_standalone_cluster_matches_local(dumps, labelled, tmp_path):
    """``--engine spark`` against ``spark://127.0.0.1:PORT`` with two workers: executors
    in their own JVMs and Python workers, the kernel shipped from the driver. One driver
    (one application) runs labelled (wide and long) and single-positive dumps, then, after
    one worker and its executor are killed, a TREC run under a what-if, ``check`` on a dump
    with its saved ranking and ``diff``: each gives the local engine's output."""
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    env.pop("SPARK_HOME", None)  # the pip install's own
    deadline = time.monotonic() + STANDALONE_TIMEOUT
    # a saved ranking (a stable sort of each row) and a tied TREC run
    wide = pq.read_table(dumps / "wide.parquet")
    ranking = [np.argsort(-np.asarray(r, dtype=np.float32), kind="stable")
               for r in wide.column("scores").to_pylist()]
    pq.write_table(wide.append_column("ranking", pa.array([r.tolist() for r in ranking],
                                                          pa.list_(pa.int64()))),
                   tmp_path / "ranked.parquet", row_group_size=16)
    rng = np.random.default_rng(11)
    (tmp_path / "run.txt").write_text("".join(
        f"q{q} Q0 d{d} {d + 1} {rng.integers(0, 3) / 2:g} t\n" for q in range(8)
        for d in range(6)))
    (tmp_path / "qrels.txt").write_text("".join(
        f"q{q} 0 d{d} {rng.integers(0, 3)}\n" for q in range(8) for d in range(0, 6, 2)))
    commands = [
        ["compare", str(labelled / "labels.parquet"), str(labelled / "long"),
         str(dumps / "wide.parquet"), "--format", "json"],
        ["compare", str(tmp_path / "run.txt"), "--qrels", str(tmp_path / "qrels.txt"),
         "--cast", "float16", "-m", "ndcg_cut_5", "-m", "map", "--format", "json"],
        ["check", str(tmp_path / "ranked.parquet"), "--format", "json"],
        ["diff", str(dumps / "wide.parquet"), str(tmp_path / "ranked.parquet"), "--format",
         "json"],
    ]
    procs = []
    try:
        master_log = tmp_path / "master.log"
        procs.append(start_daemon(spark_class, [
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
            str(port), "--webui-port", str(free_port())], master_log, env))
        wait_for(master_log, "I have been elected leader", procs[0], deadline)
        logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
        for i, log in enumerate(logs):
            procs.append(start_daemon(spark_class, [
                "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                "--memory", "1g", "--work-dir", str(tmp_path / f"work-{i}")], log, env))
        for log, proc in zip(logs, procs[1:]):
            wait_for(log, "Successfully registered with master", proc, deadline)
        (tmp_path / "driver").mkdir()
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps(commands)], cwd=tmp_path / "driver",
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**env, "TIEEVAL_SPARK_MASTER": master_url}, start_new_session=True)
        procs.append(driver)
        while not (tmp_path / "driver" / "first-done").exists():
            assert driver.poll() is None and time.monotonic() < deadline, \
                driver.stdout.read().decode(errors="replace")[-3000:]  # type: ignore
            time.sleep(0.2)
        for log in logs:  # both workers ran an executor of the application
            assert "Asked to launch executor" in log.read_text(errors="replace")
        os.killpg(procs[1].pid, signal.SIGKILL)  # worker 1 and its executor, killed
        (tmp_path / "driver" / "worker-killed").touch()
        driver.wait(timeout=max(10, deadline - time.monotonic()))
        assert "Registered app tieeval" in master_log.read_text(errors="replace")
        for i, args in enumerate(commands):
            code, stdout, stderr = json.loads((tmp_path / "driver" / f"out-{i}.json"
                                               ).read_text())
            assert code in (0, 1), stderr
            local = CliRunner().invoke(cli, args + ["--quiet"])
            assert (code, stdout) == (local.exit_code, local.stdout), args
        runs = json.loads(json.loads((tmp_path / "driver" / "out-0.json").read_text())[1])
        assert [run.get("relevance", {}).get("source") for run in runs["runs"]] == [
            "labels", "labels", None]
    finally:
        for proc in reversed(procs):
            stop(proc)
