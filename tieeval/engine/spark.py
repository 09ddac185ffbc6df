"""Run tieeval inside Spark: the same numpy kernel per Arrow batch, merged on the driver.

``pip install "tieeval[spark]"`` (pyspark; Spark needs Java 17 or later). Nothing else in
tieeval imports this module, and it imports pyspark only when called.

* Wide layout (a ``scores`` array column, optional ``positive``): every partition runs
  :func:`tieeval.kernels.single.batch_counts` on each Arrow batch inside ``DataFrame.mapInArrow`` and
  yields its :class:`~tieeval.kernels.single.Accumulator` state (JSON, big integers as strings).
* Long layout (``instance``, ``position``, ``score``, ``label``): rows are repartitioned by
  instance and sorted within partitions by (instance, position), then grouped per instance by
  the same streaming code as the local reader, so each instance is the row the codebase saw.

The driver merges the partial sums exactly, so the result is bit-for-bit the local engine's,
whatever the partitioning. Local mode binds to 127.0.0.1 and runs workers on this Python.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import sys
import warnings

import numpy as np

from tieeval.errors import InputError, ParameterError, TieevalError
from tieeval.io.base import ReadOptions, RelevanceLabelsFound, local_path, remote_uri
from tieeval.io.checks import (
    positive_index_conflict,
    require_scores_column,
    table_layout,
)
from tieeval.io.open import open_dump
from tieeval.io.parquet import parquet_batch
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.choose import choose_kernel, spec_for
from tieeval.kernels.counts import check_nan_policy
from tieeval.metrics.metric import DEFAULT_KS, Metric, default_metrics
from tieeval.metrics.options import RelOptions
from tieeval.results import RunResult


def spark_refusal(why: str) -> str:
    """The message of everything ``--engine spark`` leaves to the local engine."""
    return ("--engine spark evaluates HR@K, NDCG@K and MRR of single-positive dumps; "
            f"{why}: run with --engine local")


def refuse_spark(paths, options, metrics, relevance: RelOptions | None) -> None:
    """``--engine spark`` evaluates the single-positive protocol only: refuse labelled
    dumps, TREC runs and the general metrics before any Spark work starts.

    Local paths (and ``file://`` URIs) are opened here, reading only footers and headers.
    A URI only Spark can open (``hdfs://``, ``s3a://``, ...) is not: the Spark engine
    refuses relevance fields from the DataFrame's schema instead
    (:func:`tieeval.engine.spark.evaluate`), and a long label column holding relevance labels
    from the rows. Field names renamed on the command line (``--labels-column``) ask for
    relevance labels, so they are refused up front.
    """
    why = None
    if getattr(options, "qrels", None) is not None:
        why = "TREC runs (--qrels)"
    elif relevance is not None:
        why = "the options of labelled rows (--gain, --discount, --gamma, --both, ...)"
    elif metrics is not None and not all(m.single_positive for m in metrics):
        other = next(m for m in metrics if not m.single_positive)
        why = f"{other} is not one of them"
    if why is None:
        from tieeval.io.base import local_path, remote_uri
        from tieeval.io.open import open_dump
        from tieeval.io.relevance import field_names
        renamed = [f"--{kind}-column {name}" for kind, name in field_names(options).items()
                   if name != kind]
        for path in paths:
            if remote_uri(path):
                if renamed:
                    why = f"relevance fields ({', '.join(renamed)})"
                    break
                continue
            info = getattr(open_dump(local_path(path), options), "relevance", None)
            if info is not None:
                why = f"{path}: a dump with relevance fields ({', '.join(info.fields)})"
                break
    if why is not None:
        raise ParameterError(spark_refusal(why))


class SparkUnavailable(TieevalError):
    """pyspark or Java is missing, so the Spark engine cannot run."""


def _require():
    """Import pyspark, or explain in one line what is missing."""
    try:
        importlib.import_module("pyspark.sql")
    except ImportError:
        raise SparkUnavailable("the Spark engine needs pyspark: pip install 'tieeval[spark]'"
                               ) from None
    java_home = os.environ.get("JAVA_HOME")
    if not (shutil.which("java") or (java_home and os.path.exists(
            os.path.join(java_home, "bin", "java")))):
        raise SparkUnavailable("the Spark engine needs Java 17 or later: no java on PATH "
                               "and JAVA_HOME is not set")


def session(app_name: str = "tieeval"):
    """The active SparkSession, or a new one.

    Under spark-submit (or any already-configured session) the cluster's settings are kept.
    Otherwise a local session is made that works offline: ``local[*]``, the driver bound to
    127.0.0.1, no UI, and Python workers running this interpreter.
    """
    _require()
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (builder.master(os.environ.get("TIEEVAL_SPARK_MASTER", "local[*]"))
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "8")
                   .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")
                   .config("spark.python.worker.reuse", "true"))
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: say so in one line
        text = str(exc).strip().splitlines()
        raise SparkUnavailable(f"could not start Spark ({text[0] if text else type(exc).__name__}"
                               "); is Java 17 or later installed?") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------
# what runs on the executors

def _partition_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _state_batch(acc: Accumulator | None, error: str | None = None):
    import pyarrow as pa
    text = json.dumps({"error": error} if error is not None else acc.to_state())
    return pa.RecordBatch.from_arrays([pa.array([text], pa.string())], names=["state"])


def _wide_partition(path, options, has_positive, kernel):
    def run(batches):
        where = f"{path} (Spark partition {_partition_id()})"
        part_kernel = type(kernel)(kernel.spec.at(where))
        acc = part_kernel.new()
        start = 0
        try:
            for record in batches:
                if record.num_rows == 0:
                    continue
                batch = parquet_batch(where, options, record, has_positive, start)
                part_kernel.add(acc, batch)
                start += record.num_rows
        except TieevalError as exc:
            yield _state_batch(None, str(exc))
            return
        yield _state_batch(acc)
    return run


def _long_partition(path, options, has_label, kernel, batch_rows):
    from tieeval.io.long import _rows_from, sorted_batches

    def run(batches):
        cols = {"instance": "instance", "position": "position", "score": "score",
                "label": "label"}
        acc = kernel.new()
        try:
            chunks = (_rows_from(path, record, cols, has_label, 0)
                      for record in batches if record.num_rows)
            for batch in sorted_batches(path, chunks, options, batch_rows):
                kernel.add(acc, batch)
        except TieevalError as exc:
            yield _state_batch(None, str(exc))
            return
        except RelevanceLabelsFound as exc:  # graded, signed or multi-positive labels
            yield _state_batch(None, spark_refusal(str(exc)))
            return
        yield _state_batch(acc)
    return run


# ---------------------------------------------------------------------------------------
# the driver

_NUMPY_OF_SPARK = {"FloatType": np.float32, "DoubleType": np.float64, "ByteType": np.int8,
                   "ShortType": np.int16, "IntegerType": np.int32, "LongType": np.int64}


def _numpy_dtype(path: str, spark_type, what: str) -> np.dtype:
    name = type(spark_type).__name__
    if name not in _NUMPY_OF_SPARK:
        raise InputError(f"{path}: {what} must hold numbers, got {spark_type.simpleString()}")
    return np.dtype(_NUMPY_OF_SPARK[name])


def evaluate(dataframe, metrics=None, *, k=DEFAULT_KS, layout: str = "auto",
             options: ReadOptions | None = None, nan_policy: str = "raise",
             path: str = "<dataframe>", metadata: dict | None = None,
             batch_rows: int = 4096) -> RunResult:
    """Evaluate a Spark DataFrame of scores; the same :class:`RunResult` as the local engine.

    ``dataframe`` holds the wide layout (array column ``options.scores``, optional integer
    ``options.positive``) or the long layout (``instance``, ``position``, ``score`` and
    optional ``label`` columns, names from ``options``); ``layout='auto'`` picks by the
    columns, as the local reader does. ``metrics`` (Metric objects or names) overrides ``k``.
    """
    _require()
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    from tieeval.io.relevance import field_names
    options = options or ReadOptions()
    if layout != "auto":
        options = dataclasses.replace(options, layout=layout)
    check_nan_policy(nan_policy)
    chosen = (default_metrics(list(k)) if metrics is None else
              [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics])
    other = [m for m in chosen if not m.single_positive]
    if other:
        raise ParameterError(spark_refusal(f"{other[0]} is not one of them"))
    kernel = choose_kernel(spec_for(None, chosen, nan_policy=nan_policy, path=path))
    names = dataframe.columns
    cols = options.long_columns
    schema = {f.name: f.dataType for f in dataframe.schema.fields}
    if table_layout(options, names) == "wide":
        require_scores_column(path, options, names)
        # the schema decides, as the local reader's does: relevance fields run locally
        present = [name for name in field_names(options).values() if name in names]
        if present:
            raise InputError(spark_refusal(f"{path}: a dump with relevance fields "
                                           f"({', '.join(present)})"))
        stype = schema[options.scores]
        if not isinstance(stype, ArrayType):
            raise InputError(f"{path}: column '{options.scores}' must be a list of numbers per "
                             f"row, got {stype.simpleString()}")
        dtype = _numpy_dtype(path, stype.elementType, f"column '{options.scores}'")
        has_positive = options.positive in names
        if has_positive and options.positive_index is not None:
            raise positive_index_conflict(path, options.positive, "column")
        selected = dataframe.select(options.scores, *([options.positive] if has_positive else []))
        run = _wide_partition(path, options, has_positive, kernel)
    else:
        for key in ("instance", "position", "score"):
            if cols[key] not in names:
                raise InputError(f"{path}: long layout: no column '{cols[key]}' (found: "
                                 f"{', '.join(names)}; rename with --{key}-column)")
        dtype = _numpy_dtype(path, schema[cols["score"]], f"column '{cols['score']}'")
        has_label = cols["label"] in names
        if has_label and options.positive_index is not None:
            raise positive_index_conflict(path, cols["label"], "column")
        picked = [F.col(cols[key]).alias(key) for key in ("instance", "position", "score")]
        if has_label:
            picked.append(F.col(cols["label"]).alias("label"))
        selected = (dataframe.select(*picked)
                    .repartition("instance")
                    .sortWithinPartitions("instance", "position"))
        run = _long_partition(path, options, has_label, kernel, batch_rows)
    with warnings.catch_warnings():
        # pyspark warns about pandas versions it has not certified; mapInArrow needs none
        warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support",
                                category=FutureWarning)
        states = [json.loads(row.state) for row in
                  selected.mapInArrow(run, "state string").collect()]
    errors = [s["error"] for s in states if "error" in s]
    if errors:
        raise InputError(errors[0])
    total = kernel.new()
    for state in states:
        total.merge(Accumulator.from_state(state))
    return kernel.result(total, path, dtype, dict(metadata or {}))


def _spark_cast(column: str, dtype: str):
    from pyspark.sql import functions as F
    if dtype == "float16":
        raise InputError("Spark has no float16; use --score-dtype float32")
    return F.col(column).cast("float" if dtype == "float32" else "double")


def evaluate_path(path: str, metrics=None, *, options: ReadOptions | None = None,
                  nan_policy: str = "raise", spark=None) -> RunResult:
    """``tieeval compare --engine spark PATH``: a Parquet file or dataset directory, or a
    long-layout CSV, read by Spark; the result (JSON, tables) is the local engine's.

    The schema, metadata and warnings come from the same local checks as the local engine
    (only file footers and headers are read here); Spark reads the rows.
    """
    options = options or ReadOptions()
    if remote_uri(path):
        # hdfs://, s3a://, ...: only Spark can see it; the DataFrame's schema is checked
        spark = spark or session()
        if path.lower().endswith((".csv", ".csv.gz")):
            dtype = options.score_dtype or "float64"
            cols = options.long_columns
            frame = (spark.read.option("header", True).option("inferSchema", True).csv(path)
                     .withColumn(cols["score"], _spark_cast(cols["score"], dtype)))
        else:
            frame = spark.read.parquet(path)
        return evaluate(frame, metrics, options=options, nan_policy=nan_policy, path=path)
    dump = open_dump(local_path(path), options)  # the local engine's checks and messages
    if dump.format in ("npy", "npz"):
        raise InputError(f"{path}: the Spark engine reads Parquet and CSV; .{dump.format} "
                         "dumps run with --engine local")
    info = getattr(dump, "relevance", None)
    if info is not None:  # refuse before Spark starts (evaluate would, from the schema)
        raise InputError(spark_refusal(f"{path}: a dump with relevance fields "
                                       f"({', '.join(info.fields)})"))
    spark = spark or session()
    if dump.format == "csv":
        import pyspark.sql.types as T

        from tieeval.io.long import csv_columns
        if str(dump.dtype) == "float16":
            raise InputError(f"{path}: Spark has no float16; use --score-dtype float32")
        cols = options.long_columns
        header, int_ids = csv_columns(dump)
        score_type = T.FloatType() if str(dump.dtype) == "float32" else T.DoubleType()
        types = {cols["instance"]: T.LongType() if int_ids else T.StringType(),
                 cols["position"]: T.LongType(), cols["score"]: score_type,
                 cols["label"]: T.DoubleType()}
        schema = T.StructType([T.StructField(name, types.get(name, T.StringType()), True)
                               for name in header])
        frame = spark.read.option("header", True).schema(schema).csv(path)
    else:
        frame = spark.read.parquet(path)
    layout = dump.layout
    result = evaluate(frame, metrics, layout=layout, options=options, nan_policy=nan_policy,
                      path=dump.path, metadata=dump.metadata)
    result.warnings[:0] = [w for w in dump.warnings if "regrouped" not in w]
    return result
