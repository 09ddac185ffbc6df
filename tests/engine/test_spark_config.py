"""The Spark engine's configuration and error messages, without starting Spark: where the
settings come from and in which order, which masters get a loopback driver, a master that is
down found in seconds, and Spark's exceptions as one line naming the file, URL or limit."""

from __future__ import annotations

import socket
import time

import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.engine import spark_errors, spark_session
from tieeval.engine.request import EngineRefusal, EvalOptions
from tieeval.errors import ParameterError


def environ(tmp_path, defaults: str | None = None, **more) -> dict:
    folder = tmp_path / "conf"
    folder.mkdir(exist_ok=True)
    if defaults is not None:
        (folder / "spark-defaults.conf").write_text(defaults)
    return {"SPARK_CONF_DIR": str(folder), **more}


def test_tieeval_defaults_bind_a_local_driver_to_loopback(tmp_path):
    got = spark_session.settings((), environ(tmp_path))
    assert got.master == "local[*]" and got.master_source == "tieeval's default"
    assert got.conf["spark.driver.host"] == "127.0.0.1"
    assert got.conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert got.conf["spark.sql.shuffle.partitions"] == "8"
    assert got.conf["spark.sql.execution.arrow.maxRecordsPerBatch"] == "4096"
    assert got.conf["spark.ui.showConsoleProgress"] == "false"


def test_a_remote_master_leaves_the_driver_address_to_spark(tmp_path):
    """The regression: a remote master with the driver bound to 127.0.0.1 can never reach
    it."""
    for master in ("yarn", "spark://spark-master.example:7077", "k8s://https://10.0.0.1:6443"):
        got = spark_session.settings((), environ(tmp_path, TIEEVAL_SPARK_MASTER=master))
        assert got.master == master and not got.loopback
        assert "spark.driver.host" not in got.conf
        assert "spark.driver.bindAddress" not in got.conf
    for master in ("local[2]", "spark://127.0.0.1:7077", "spark://localhost:7077"):
        got = spark_session.settings((), environ(tmp_path, TIEEVAL_SPARK_MASTER=master))
        assert got.loopback and got.conf["spark.driver.host"] == "127.0.0.1"


def test_precedence_command_line_over_environment_over_defaults_file(tmp_path):
    defaults = ("# a comment\n"
                "spark.master            spark://defaults:7077\n"
                "spark.sql.shuffle.partitions=64\n"
                "spark.executor.memory: 4g\n"
                "spark.driver.host   10.1.2.3\n")
    env = environ(tmp_path, defaults)
    got = spark_session.settings((), env)
    # the file is read by Spark itself: tieeval only keeps its own defaults off its keys
    assert got.master == "spark://defaults:7077"
    assert got.master_source.endswith("spark-defaults.conf")
    assert "spark.sql.shuffle.partitions" not in got.conf
    assert "spark.driver.host" not in got.conf
    assert got.conf["spark.sql.execution.arrow.maxRecordsPerBatch"] == "4096"
    # PYSPARK_SUBMIT_ARGS over the file, TIEEVAL_SPARK_MASTER over both
    env["PYSPARK_SUBMIT_ARGS"] = ("--master spark://submit:7077 --conf "
                                  "spark.sql.execution.arrow.maxRecordsPerBatch=99 "
                                  "pyspark-shell")
    got = spark_session.settings((), env)
    assert (got.master, got.master_source) == ("spark://submit:7077", "PYSPARK_SUBMIT_ARGS")
    assert "spark.sql.execution.arrow.maxRecordsPerBatch" not in got.conf
    env["TIEEVAL_SPARK_MASTER"] = "spark://env:7077"
    assert spark_session.settings((), env).master == "spark://env:7077"
    # the command line over everything
    got = spark_session.settings(["spark.master=local[3]", "spark.sql.shuffle.partitions=5",
                                  "spark.sql.shuffle.partitions=6"], env)
    assert (got.master, got.master_source) == ("local[3]", "--spark-conf spark.master")
    assert got.conf["spark.sql.shuffle.partitions"] == "6"  # the last one, as spark-submit


def test_read_defaults_takes_every_java_properties_separator(tmp_path):
    path = tmp_path / "spark-defaults.conf"
    path.write_text("a.b 1\n  c.d=2\ne.f: 3\n! bang comment\n#x y\n\ng.h\tspaced value \n")
    assert spark_session.read_defaults(str(path)) == {"a.b": "1", "c.d": "2", "e.f": "3",
                                                      "g.h": "spaced value"}
    assert spark_session.read_defaults(str(tmp_path / "none.conf")) == {}


def test_malformed_spark_conf_is_one_line():
    with pytest.raises(ParameterError, match="expected KEY=VALUE"):
        spark_session.parse_conf(["spark.sql.shuffle.partitions"])
    with pytest.raises(ParameterError, match="start with 'spark.'"):
        spark_session.parse_conf(["shuffle=3"])
    res = CliRunner().invoke(cli, ["compare", "x.parquet", "--engine", "spark",
                                   "--spark-conf", "nonsense"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "Error: --spark-conf 'nonsense': expected KEY=VALUE, e.g. "
        "spark.sql.shuffle.partitions=200"]


def test_spark_conf_needs_the_spark_engine():
    with pytest.raises(EngineRefusal, match="spark_conf configures the Spark engine"):
        EvalOptions(spark_conf={"spark.sql.shuffle.partitions": "3"})
    assert EvalOptions(engine="spark", spark_conf=["spark.a=1"]).spark_conf == (("spark.a", "1"),)
    res = CliRunner().invoke(cli, ["compare", "x.parquet", "--spark-conf", "spark.a=1"])
    assert res.exit_code == 2 and "--spark-conf configures the Spark engine" in res.output
    # the Python API takes it too, with the API's spelling in the message
    with pytest.raises(EngineRefusal, match="spark_conf configures the Spark engine"):
        EvalOptions.from_keywords(spark_conf={"spark.a": "1"})
    assert EvalOptions.from_keywords(engine="spark", spark_conf=["spark.a=1"]).spark_conf == (
        ("spark.a", "1"),)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_master_that_is_down_fails_in_seconds_and_is_named(tmp_path):
    port = closed_port()
    got = spark_session.settings([f"spark.master=spark://127.0.0.1:{port}"], environ(tmp_path))
    start = time.monotonic()
    with pytest.raises(spark_session.SparkUnavailable) as info:
        spark_session.probe_master(got)
    assert time.monotonic() - start < 10
    assert str(info.value) == (f"cannot reach the Spark master spark://127.0.0.1:{port} "
                               "(Connection refused; the master is set by --spark-conf "
                               "spark.master): is it running?")
    # masters of several hosts (standalone HA) are down only when every one is
    assert spark_session.master_hosts("spark://a:1,b:2,c") == [("a", 1), ("b", 2), ("c", 7077)]
    assert spark_session.master_hosts("k8s://https://h:6443") == [("h", 6443)]
    assert spark_session.master_hosts("yarn") == spark_session.master_hosts("local[*]") == []


# ---------------------------------------------------------------------------------------
# Spark's exceptions, as Py4J and pyspark raise them (text taken from Spark 4.x traces)

def spark_exception(text: str, module: str = "py4j.protocol", name: str = "Py4JJavaError"):
    kind = type(name, (Exception,), {"__module__": module})
    return kind(text)


TRACE = "\n\tat org.apache.spark.SomeClass.method(SomeClass.scala:1)" * 40


@pytest.mark.parametrize("text,path,expected", [
    ("An error occurred while calling o40.parquet.\n: java.lang.RuntimeException: "
     "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not "
     "found" + TRACE, "s3a://bucket/x.parquet",
     "s3a://bucket/x.parquet: this Spark cannot read s3a:// paths: the S3 (hadoop-aws) "
     "connector is not installed; add it, e.g. --spark-conf spark.jars.packages="
     "org.apache.hadoop:hadoop-aws:<Spark's Hadoop version> (see docs/scale.md)"),
    ("An error occurred while calling o40.parquet.\n: java.lang.RuntimeException: "
     "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.gs.GoogleHadoopFileSystem "
     "not found" + TRACE,
     "gs://b/x.parquet", "gs://b/x.parquet: this Spark cannot read gs:// paths: the Google "
     "Cloud Storage (gcs-connector) connector is not installed; add it, e.g. --spark-conf "
     "spark.jars.packages=com.google.cloud.bigdataoss:gcs-connector:VERSION (and "
     "spark.hadoop.fs.gs.impl=com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem) "
     "(see docs/scale.md)"),
    ("An error occurred while calling o40.parquet.\n: org.apache.hadoop.fs."
     'UnsupportedFileSystemException: No FileSystem for scheme "abfss"' + TRACE,
     "abfss://c@a.dfs.core.windows.net/x", "abfss://c@a.dfs.core.windows.net/x: this Spark "
     "cannot read abfss:// paths: the Azure (hadoop-azure) connector is not installed; add "
     "it, e.g. --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-azure:<Spark's "
     "Hadoop version> (see docs/scale.md)"),
    ("An error occurred while calling o40.parquet.\n: java.net.ConnectException: Call From "
     "vm/127.0.0.1 to namenode:8020 failed on connection exception: java.net.Connect"
     "Exception: Connection refused; For more details see:  http://wiki.apache.org/hadoop/"
     "ConnectionRefused" + TRACE, "hdfs://namenode:8020/x",
     "hdfs://namenode:8020/x: cannot reach namenode:8020 (Connection refused)"),
    ("An error occurred while calling o95.collectToPython.\n: org.apache.spark.Spark"
     "Exception: Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times: "
     "org.apache.spark.SparkFileNotFoundException: [FAILED_READ_FILE.FILE_NOT_EXIST] "
     "Encountered error while reading file file:///data/run/part-1.parquet. File does not "
     "exist. It is possible the underlying files have been updated." + TRACE, "/data/run",
     "file:///data/run/part-1.parquet: the file does not exist (was it deleted or moved "
     "while Spark read it?)"),
    ("An error occurred while calling o95.collectToPython.\n: org.apache.spark.Spark"
     "Exception: Job aborted due to stage failure: [FAILED_READ_FILE.NO_HINT] Encountered "
     "error while reading file file:///data/run/part-0.parquet.  SQLSTATE: KD001" + TRACE
     + "\nCaused by: org.apache.parquet.io.ParquetDecodingException: Can not read value at "
     "0 in block -1 in file file:/data/run/part-0.parquet" + TRACE, "/data/run",
     "file:///data/run/part-0.parquet: Spark could not read the file (ParquetDecoding"
     "Exception: Can not read value at 0 in block -1 in file file:/data/run/part-0.parquet)"),
    ("An error occurred while calling o95.collectToPython.\n: java.lang.OutOfMemoryError: "
     "Java heap space" + TRACE, "big.parquet",
     "big.parquet: Spark's JVM ran out of memory (Java heap space): raise spark.driver.memory "
     "or spark.executor.memory (--spark-conf KEY=VALUE), or lower --batch-rows"),
    ("Job aborted due to stage failure: ExecutorLostFailure (executor 3 exited caused by one "
     "of the running tasks) Reason: Container killed by YARN for exceeding physical memory "
     "limits. 5.5 GB of 5.5 GB physical memory used." + TRACE, "hdfs:///x",
     "hdfs:///x: a Spark executor was killed for using more memory than its container "
     "allows (the Python workers' memory counts too): raise spark.executor.memoryOverhead "
     "or spark.executor.pyspark.memory (--spark-conf KEY=VALUE), or lower --batch-rows"),
])
def test_spark_exceptions_are_one_line_naming_the_file_url_or_limit(text, path, expected,
                                                                     monkeypatch):
    # no JVM to ask (another test's session may be running in this process)
    monkeypatch.setattr(spark_errors, "_hadoop_version", lambda: "<Spark's Hadoop version>")
    got = spark_errors.describe(spark_exception(text), path)
    assert got == expected and "\n" not in got


def test_a_python_worker_memory_error_names_the_python_memory_settings():
    text = ("Traceback (most recent call last):\n  File \"worker.py\", line 1, in main\n"
            "MemoryError\n")
    got = spark_errors.describe(spark_exception(text, "pyspark.errors.exceptions.captured",
                                                "PythonException"), "x.parquet")
    assert got.startswith("x.parquet: a Spark Python worker ran out of memory: raise "
                          "spark.executor.pyspark.memory")


def test_an_unresponsive_master_is_named_from_the_jvm_log():
    exc = spark_exception("An error occurred while calling None.org.apache.spark.sql.classic."
                          "SparkSession.")
    log = ["26/12/01 17:32:26 ERROR StandaloneSchedulerBackend: Application has been killed. "
           "Reason: All masters are unresponsive! Giving up."]
    assert spark_errors.describe(exc, None, "spark://m:7077", "TIEEVAL_SPARK_MASTER", log) == (
        "cannot reach the Spark master spark://m:7077 (all masters are unresponsive; the "
        "master is set by TIEEVAL_SPARK_MASTER)")


def test_unknown_spark_failures_are_still_one_line_and_other_errors_are_left_alone():
    got = spark_errors.describe(spark_exception("An error occurred while calling o1.x.\n: "
                                                "org.apache.spark.SparkException: boom" + TRACE))
    assert got == ("Spark failed (SparkException: boom); rerun with TIEEVAL_DEBUG=1 for "
                   "Spark's trace")
    assert spark_errors.describe(ValueError("not Spark's")) is None
    with pytest.raises(spark_errors.SparkFailure, match="cannot reach nn:1"):
        with spark_errors.mapped_errors("hdfs://nn:1/x"):
            raise spark_exception("Call From a to nn:1 failed on connection exception: "
                                  "java.net.ConnectException: Connection refused;")
    with pytest.raises(KeyError):
        with spark_errors.mapped_errors("x"):
            raise KeyError("a bug stays a bug")
