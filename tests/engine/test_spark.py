"""The Spark engine gives bit-for-bit the local engine's results (Spark local mode, offline).

One SparkSession for the module and tiny data keep this under a minute. Skipped, with the
reason shown by ``pytest -ra``, only when pyspark or Java is missing
(``pip install "tieeval[spark]"``; Java 17 or later).
"""

from __future__ import annotations

import json
import shutil

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

from tieeval.cli import cli  # noqa: E402
from tieeval.engine import spark as tspark
from tieeval.engine.local import evaluate_path
from tieeval.errors import InputError
from tieeval.io.base import ReadOptions


@pytest.fixture(scope="module")
def spark():
    session = tspark.session("tieeval-tests")
    yield session
    session.stop()


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
    long = long.take(pa.array(rng.permutation(len(inst))))
    (tmp / "long").mkdir()
    half = len(long) // 2
    pq.write_table(long.slice(0, half), tmp / "long" / "part-0.parquet")
    pq.write_table(long.slice(half), tmp / "long" / "part-1.parquet")
    pcsv.write_csv(long, tmp / "long.csv")
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


def test_relevance_labels_are_refused_from_the_schema_and_the_rows(spark):
    wide = spark.createDataFrame([([0.5, 0.2], [2, 0])], "scores array<float>, labels array<int>")
    with pytest.raises(InputError, match=r"x: a dump with relevance fields \(labels\): run "
                                         "with --engine local"):
        tspark.evaluate(wide, path="x")
    # a long label column is known to hold relevance labels only once its rows are read
    long = spark.createDataFrame([(1, 0, 0.5, 2), (1, 1, 0.2, 0)],
                                 "instance long, position long, score double, label long")
    with pytest.raises(InputError, match="instance 1: label 2 in column 'label', so it "
                                         "holds relevance labels: run with --engine local"):
        tspark.evaluate(long, path="y")


def test_remote_uris_are_read_by_spark_only(spark, dumps, tmp_path, monkeypatch):
    """``--engine spark hdfs://...``: nothing is looked up on the local disk; a stand-in
    session maps the URI to the test's files, as a cluster's file system would."""
    pq.write_table(pa.table({"scores": [[0.5, 0.5]], "labels": [[1, 0]]}),
                   tmp_path / "labelled.parquet")
    roots = {"hdfs://namenode/": dumps, "s3a://bucket/": tmp_path}

    class Reader:
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
    monkeypatch.setattr(tspark, "session", lambda *args, **kwargs: Session())
    monkeypatch.setattr("tieeval.io.open.open_dump", local)
    res = CliRunner().invoke(cli, ["compare", "s3a://bucket/labelled.parquet", "--engine",
                                   "spark"])
    assert res.exit_code == 2
    assert "relevance fields (labels): run with --engine local" in res.output


def test_file_uris_are_local_paths(spark, dumps):
    path = dumps / "wide.parquet"
    got = tspark.evaluate_path(path.as_uri(), spark=spark)
    assert same(got) == same(evaluate_path(str(path)))
