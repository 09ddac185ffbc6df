"""The Spark engine in operation (Spark local mode, offline): stdout carries data only, a
file Spark cannot read, a missing connector or a master that is down is one ``Error:`` line
with exit 2, and ``--output`` writes under ``spark-submit``.

Skipped, with the reason shown by ``pytest -ra``, when pyspark or Java is missing. The
subprocess tests start a JVM each (about 25 s on an idle 2-core machine); the others share
one session. ``TIEEVAL_SPARK_SLOW=1`` adds Ctrl-C in the middle of a job and a standalone
master and worker on 127.0.0.1 named by a ``spark-defaults.conf``.
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
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

pyspark = pytest.importorskip("pyspark", reason="pyspark not installed: pip install "
                              "'tieeval[spark]' to run the Spark engine tests")
if shutil.which("java") is None:
    pytest.skip("Java not found: the Spark engine tests need Java 17 or later",
                allow_module_level=True)

from tieeval.cli import cli  # noqa: E402
from tieeval.engine import spark as tspark  # noqa: E402
from tieeval.engine.spark_errors import SparkFailure  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240


@pytest.fixture(scope="module")
def spark():
    """The suite's running session if there is one (left running), else one of our own."""
    from pyspark.sql import SparkSession
    running = SparkSession.getActiveSession()
    session = tspark.session("tieeval-ops-tests")
    yield session
    if running is None:
        session.stop()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A tied wide dump as a dataset of three Parquet files."""
    tmp = tmp_path_factory.mktemp("spark-ops")
    rng = np.random.default_rng(20261201)
    folder = tmp / "run"
    folder.mkdir()
    for part in range(3):
        scores = (rng.integers(0, 4, size=(40, 9)) / 3).astype(np.float32)
        pq.write_table(pa.table({"scores": pa.array(list(scores), pa.list_(pa.float32()))}),
                       folder / f"part-{part}.parquet")
    return folder


def copy_of(dataset, tmp_path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(dataset, target)
    return target


def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text and "\tat " not in text
    return text


def test_a_file_deleted_after_listing_is_named(spark, dataset, tmp_path):
    run = copy_of(dataset, tmp_path)
    frame = spark.read.parquet(str(run))  # listed now, read by the executors later
    (run / "part-1.parquet").unlink()
    with pytest.raises(SparkFailure) as info:
        tspark.evaluate(frame, path=str(run))
    text = one_line(info)
    assert "part-1.parquet: the file does not exist" in text


def test_a_corrupt_file_read_by_the_executors_is_named(spark, dataset, tmp_path):
    run = copy_of(dataset, tmp_path)
    frame = spark.read.parquet(str(run))
    victim = run / "part-2.parquet"
    data = bytearray(victim.read_bytes())
    size = len(data)
    data[4:size - 200] = os.urandom(size - 204)  # the pages, not the footer
    victim.write_bytes(bytes(data))
    with pytest.raises(SparkFailure) as info:
        tspark.evaluate(frame, path=str(run))
    text = one_line(info)
    assert "part-2.parquet" in text and "Spark could not read the file" in text


def test_a_missing_s3_connector_says_which_package(spark):
    with pytest.raises(SparkFailure) as info:
        tspark.evaluate_path("s3a://bucket/run/", spark=spark)
    text = one_line(info)
    assert text.startswith("s3a://bucket/run/: this Spark cannot read s3a:// paths: the S3 "
                           "(hadoop-aws) connector is not installed")
    version = spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    assert f"spark.jars.packages=org.apache.hadoop:hadoop-aws:{version}" in text


def test_an_unreachable_name_node_is_named(spark):
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("ipc.client.connect.max.retries", "0")  # no retries: the test stays short
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SparkFailure) as info:
        tspark.evaluate_path(f"hdfs://127.0.0.1:{port}/scores/run/", spark=spark)
    text = one_line(info)
    assert text.startswith(f"hdfs://127.0.0.1:{port}/scores/run/: cannot reach ")
    assert text.endswith(f":{port} (Connection refused)")


def test_batch_rows_and_spark_conf_reach_a_running_session(spark, dataset):
    request_conf = (("spark.sql.shuffle.partitions", "3"),)
    tspark.session(conf=request_conf, batch_rows=17)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "17"
    runs = []
    for engine in ("local", "spark"):
        res = CliRunner().invoke(cli, ["compare", str(dataset), "--engine", engine, "-f",
                                       "json", "-q", "--batch-rows", "7"])
        assert res.exit_code == 0, res.output
        runs.append(json.loads(res.stdout)["runs"])
    assert runs[0] == runs[1]
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "7"
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")


def test_the_python_api_takes_spark_conf_as_the_command_line_does(spark, dataset):
    """``evaluate_path(..., engine="spark", spark_conf=...)`` sets the session as
    ``--spark-conf`` does, and gives the local engine's figures."""
    import tieeval
    local = tieeval.evaluate_path(str(dataset), ["HR@5", "NDCG@5"])
    got = tieeval.evaluate_path(str(dataset), ["HR@5", "NDCG@5"], engine="spark",
                                spark_conf={"spark.sql.shuffle.partitions": "5"})
    assert spark.conf.get("spark.sql.shuffle.partitions") == "5"
    assert got.to_dict()["metrics"] == local.to_dict()["metrics"]
    spark.conf.set("spark.sql.shuffle.partitions", "8")


def run_cli(*args, env=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tieeval", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def test_stdout_is_data_and_stderr_is_silent(dataset, tmp_path):
    """No JVM banner, log4j lines, progress bars or pyspark warnings: a fresh JVM, as a
    user's command starts it."""
    done = run_cli("compare", dataset, "--engine", "spark", "-f", "json")
    assert done.returncode == 0, done.stderr
    local = CliRunner().invoke(cli, ["compare", str(dataset), "-f", "json"])
    assert json.loads(done.stdout) == json.loads(local.stdout)
    # the dump's own warnings, exactly as the local engine prints them, and nothing else
    assert done.stderr == local.stderr and local.stderr.startswith("Warning: ")


def test_a_master_that_is_down_fails_fast_naming_it(dataset):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    done = run_cli("compare", dataset, "--engine", "spark", timeout=60,
                   env={"TIEEVAL_SPARK_MASTER": f"spark://127.0.0.1:{port}"})
    assert time.monotonic() - start < 30
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"Error: cannot reach the Spark master spark://127.0.0.1:{port} "
                           "(Connection refused; the master is set by TIEEVAL_SPARK_MASTER): "
                           "is it running?\n")


def test_a_jvm_that_cannot_start_says_why_in_one_line(dataset):
    done = run_cli("compare", dataset, "--engine", "spark", "--spark-conf",
                   "spark.driver.memory=lots", timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("Error: Spark's JVM stopped (Invalid maximum heap size: -Xmxlots); "
                           "is Java 17 or later installed, and is the configuration valid?\n")


SLOW = pytest.mark.skipif(os.environ.get("TIEEVAL_SPARK_SLOW") != "1",
                          reason="set TIEEVAL_SPARK_SLOW=1 for the slow Spark tests (Ctrl-C "
                                 "mid-job, a standalone master named by spark-defaults.conf: "
                                 "1-4 min each on 2 cores)")


@SLOW
def test_ctrl_c_mid_job_is_one_line_and_exit_130(tmp_path):
    """SIGINT to the command's process group, as a terminal sends it, while executors run:
    no Py4J traceback, no JVM left behind."""
    rng = np.random.default_rng(5)
    scores = (rng.integers(0, 5, size=(300_000, 101)) / 4).astype(np.float32)
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"scores": pa.FixedSizeListArray.from_arrays(
        pa.array(scores.ravel()), 101)}), big, row_group_size=20_000)
    proc = subprocess.Popen([sys.executable, "-m", "tieeval", "compare", str(big), "--engine",
                             "spark", "-f", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True)
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline and not _python_worker_below(proc.pid):
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.5)
        time.sleep(2)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, out, err) == (130, "", "Error: interrupted\n")


def _python_worker_below(pid: int) -> bool:
    """Whether a pyspark Python worker runs below ``pid`` (a job is running)."""
    children = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True,
                              text=True).stdout.splitlines()
    table = [line.split(None, 2) for line in children if line.strip()]
    below, found = {pid}, True
    while found:
        found = False
        for row in table:
            if len(row) == 3 and int(row[1]) in below and int(row[0]) not in below:
                below.add(int(row[0]))
                found = True
    return any(len(row) == 3 and int(row[0]) in below and "pyspark" in row[2]
               and "daemon" in row[2] for row in table)


def test_spark_submit_output_file_and_quiet_stdout(dataset, tmp_path):
    """Under spark-submit the driver's stderr is merged into stdout: with --quiet stdout is
    the data alone, and with --output the data is in the file."""
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    driver = tmp_path / "tieeval_cli.py"
    driver.write_text("from tieeval.cli import main\nmain()\n")
    out = tmp_path / "result.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": str(ROOT)}
    env.pop("SPARK_HOME", None)
    done = subprocess.run(
        [str(submit), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         str(driver), "compare", str(dataset), "--engine", "spark", "-f", "json", "--quiet",
         "--output", str(out)],
        capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout == ""
    local = CliRunner().invoke(cli, ["compare", str(dataset), "-f", "json"])
    assert json.loads(out.read_text()) == json.loads(local.stdout)


# ---------------------------------------------------------------------------------------
# a standalone master and worker on 127.0.0.1, named by a spark-defaults.conf


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(log: Path, text: str, proc, deadline: float) -> None:
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        time.sleep(0.5)
    raise AssertionError(f"{log.name}: no '{text}' in time")


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=20)


@SLOW
def test_standalone_master_from_spark_defaults_conf(dataset, tmp_path):
    """The master and the shuffle partitions come from SPARK_CONF_DIR's
    spark-defaults.conf, the batch size from --spark-conf: the job runs on the cluster's
    executor with the local engine's figures."""
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    env.pop("SPARK_HOME", None)
    env.pop("TIEEVAL_SPARK_MASTER", None)
    deadline = time.monotonic() + TIMEOUT
    procs = []
    try:
        master_log = tmp_path / "master.log"
        with open(master_log, "wb") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host",
                 "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(master_log, "I have been elected leader", procs[0], deadline)
        worker_log = tmp_path / "worker.log"
        with open(worker_log, "wb") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", master_url,
                 "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port",
                 str(free_port()), "--cores", "2", "--memory", "1g", "--work-dir",
                 str(tmp_path / "work")],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(worker_log, "Successfully registered with master", procs[1], deadline)
        conf = tmp_path / "conf"
        conf.mkdir()
        (conf / "spark-defaults.conf").write_text(
            f"spark.master  {master_url}\nspark.sql.shuffle.partitions 3\n")
        done = subprocess.run(
            [sys.executable, "-m", "tieeval", "compare", str(dataset), "--engine", "spark",
             "-f", "json", "--spark-conf",
             "spark.sql.execution.arrow.maxRecordsPerBatch=16"],
            capture_output=True, text=True, cwd=ROOT,
            timeout=max(10, deadline - time.monotonic()),
            env={**env, "SPARK_CONF_DIR": str(conf)})
        assert done.returncode == 0, done.stderr[-3000:]
        local = CliRunner().invoke(cli, ["compare", str(dataset), "-f", "json"])
        assert json.loads(done.stdout) == json.loads(local.stdout)
        assert done.stderr == local.stderr  # the dump's warnings, nothing of Spark's
        assert "Registered app tieeval" in master_log.read_text(errors="replace")
        assert "Asked to launch executor" in worker_log.read_text(errors="replace")
    finally:
        for proc in reversed(procs):
            _stop(proc)
