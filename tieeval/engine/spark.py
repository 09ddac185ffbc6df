"""Run tieeval inside Spark: the same kernels per Arrow batch, merged on the driver.

``pip install "tieeval[spark]"`` (pyspark; Spark needs Java 17 or later). Nothing else in
tieeval imports this module, and it imports pyspark only when called.

The kernel is chosen once, on the driver, from the DataFrame's schema and the options
(:func:`tieeval.kernels.choose.spec_for`, as the local engine does), and shipped to the
executors (kernels are picklable values). Every partition runs it on each Arrow batch inside
``DataFrame.mapInArrow`` and yields its :class:`~tieeval.kernels.accumulator.Accumulator`
state (JSON, big integers as strings).

* Wide layout (a ``scores`` array column, optional ``positive``, or relevance fields
  ``labels``, ``positives`` / ``negatives`` and ``items``): each Arrow batch becomes the
  :class:`~tieeval.io.base.Batch` the local reader builds, relevance fields filled by the
  same code (:func:`tieeval.io.relevance.fill_from_arrow`).
* Long layout (``instance``, ``position``, ``score``, ``label``): rows are repartitioned by
  instance and sorted within partitions by (instance, position), then grouped per instance by
  the same streaming code as the local reader, so each instance is the row the codebase saw.
  A ``label`` column is read as one positive per instance until a partition finds relevance
  labels (graded, signed, several positives or none); the driver then runs the job again
  with the general kernel, as the local engine starts over.

The driver merges the partial sums exactly, so the result is bit-for-bit the local engine's,
whatever the partitioning. Local mode binds to 127.0.0.1 and runs workers on this Python.
TREC runs (``--qrels``) and NPY/NPZ dumps are left to the local engine.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any, cast

import numpy as np

from tieeval.engine.arguments import metric_list
from tieeval.engine.request import (  # noqa: F401 - refuse_spark: kept importable here
    Request,
    refuse_spark,
    spark_refusal,
)
from tieeval.engine.spark_errors import mapped_errors
from tieeval.engine.spark_session import (  # noqa: F401 - SparkUnavailable: kept importable
    DEFAULT_BATCH_ROWS,
    SparkUnavailable,
    session,
)
from tieeval.engine.spark_session import require as _require
from tieeval.errors import InputError, TieevalError
from tieeval.io.base import (
    ReadOptions,
    RelevanceInfo,
    RelevanceLabelsFound,
    local_path,
    remote_uri,
)
from tieeval.io.open import open_dump
from tieeval.io.parquet import parquet_batch
from tieeval.io.relevance import fill_from_arrow, schema_relevance
from tieeval.io.validate import (
    positive_index_conflict,
    require_scores_column,
    table_layout,
)
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.choose import choose_kernel, spec_for
from tieeval.kernels.counts import check_nan_policy
from tieeval.metrics.metric import DEFAULT_KS
from tieeval.metrics.options import RelOptions
from tieeval.results import RunResult

# ---------------------------------------------------------------------------------------
# what runs on the executors

def _partition_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _state_batch(acc: Accumulator | None, error: str | None = None, again: str | None = None):
    """One partition's answer: its accumulator state, an input error, or (``again``) the
    reason the driver must run the job again with relevance labels."""
    import pyarrow as pa
    # every answer without an error or an again carries the partition's accumulator
    state = ({"error": error} if error is not None else {"again": again} if again is not None
             else cast(Accumulator, acc).to_state())
    return pa.RecordBatch.from_arrays([pa.array([json.dumps(state)], pa.string())],
                                      names=["state"])


def _wide_partition(path, options, has_positive, fields, kernel):
    """``fields``: ``{kind: column}`` of the relevance fields to attach (may be empty)."""
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
                if fields:
                    fill_from_arrow(where, batch, fields, record)
                part_kernel.add(acc, batch)
                start += record.num_rows
        except TieevalError as exc:
            yield _state_batch(None, str(exc))
            return
        yield _state_batch(acc)
    return run


def _long_partition(path, options, has_label, kernel, batch_rows, relevance):
    """``relevance``: the label column holds relevance labels (else one positive per
    instance, until an instance says otherwise)."""
    from tieeval.io.long import _rows_from, sorted_batches

    def run(batches):
        cols = {"instance": "instance", "position": "position", "score": "score",
                "label": "label"}
        acc = kernel.new()
        try:
            chunks = (_rows_from(path, record, cols, has_label, 0)
                      for record in batches if record.num_rows)
            for batch in sorted_batches(path, chunks, options, batch_rows, relevance):
                kernel.add(acc, batch)
        except TieevalError as exc:
            yield _state_batch(None, str(exc))
            return
        except RelevanceLabelsFound as exc:  # graded, signed or multi-positive labels
            yield _state_batch(None, again=str(exc))
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


def _arrow_type(path: str, spark_type, name: str):
    """The Arrow type Spark hands ``mapInArrow`` for a column of ``spark_type``."""
    from pyspark.sql.pandas.types import to_arrow_type
    try:
        return to_arrow_type(spark_type)
    except Exception:  # a type Arrow cannot carry: no relevance field can have it
        raise InputError(f"{path}: column '{name}' has Spark type "
                         f"{spark_type.simpleString()}, which no relevance field has") from None


def _collect(selected, run) -> list[dict]:
    with warnings.catch_warnings():
        # pyspark warns about pandas versions it has not certified; mapInArrow needs none
        warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support",
                                category=FutureWarning)
        return [json.loads(row.state) for row in
                selected.mapInArrow(run, "state string").collect()]


def evaluate(dataframe, metrics=None, *, k=DEFAULT_KS, layout: str = "auto",
             options: ReadOptions | None = None, nan_policy: str = "raise",
             path: str = "<dataframe>", metadata: dict | None = None,
             batch_rows: int = 4096, relevance: RelOptions | None = None,
             warnings: list | tuple = ()) -> RunResult:
    """Evaluate a Spark DataFrame of scores; the same :class:`RunResult` as the local engine.

    ``dataframe`` holds the wide layout (array column ``options.scores``; optional integer
    ``options.positive``, or relevance fields: array columns ``labels``,
    ``positives``/``negatives``, ``items``, names from ``options`` when it is a
    :class:`~tieeval.io.base.RelevanceReadOptions`) or the long layout (``instance``,
    ``position``, ``score`` and optional ``label`` columns, names from ``options``);
    ``layout='auto'`` picks by the columns, as the local reader does. ``metrics`` (Metric
    objects or names) overrides ``k``; without it a labelled dump gets HR@K, Recall@K,
    NDCG@K, MRR and MAP. ``relevance``: options of labelled metrics
    (:class:`~tieeval.metrics.options.RelOptions`: gain, discount, gammas, ``both`` ...).
    ``warnings``: the reader's, put first in the result's, as the local engine does.
    """
    check_nan_policy(nan_policy)
    with mapped_errors(path):
        return _evaluate_frame(dataframe, metric_list(metrics, k), layout=layout,
                               options=options, nan_policy=nan_policy, path=path,
                               metadata=metadata, batch_rows=batch_rows, relevance=relevance,
                               warnings=warnings)


def _evaluate_frame(dataframe, chosen, *, layout: str = "auto",
                    options: ReadOptions | None = None, nan_policy: str = "raise",
                    path: str = "<dataframe>", metadata: dict | None = None,
                    batch_rows: int = 4096, relevance: RelOptions | None = None,
                    warnings: list | tuple = ()) -> RunResult:
    """:func:`evaluate` with checked arguments (``chosen``: the metrics or a default set)."""
    _require()
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    options = options or ReadOptions()
    if layout != "auto":
        options = dataclasses.replace(options, layout=layout)

    def kernel_for(info: RelevanceInfo | None):
        return choose_kernel(spec_for(info, chosen, options=relevance, nan_policy=nan_policy,
                                      path=path))

    names = dataframe.columns
    cols = options.long_columns
    schema = {f.name: f.dataType for f in dataframe.schema.fields}
    long = table_layout(options, names) != "wide"
    if not long:
        require_scores_column(path, options, names)
        stype = schema[options.scores]
        if not isinstance(stype, ArrayType):
            raise InputError(f"{path}: column '{options.scores}' must be a list of numbers per "
                             f"row, got {stype.simpleString()}")
        dtype = _numpy_dtype(path, stype.elementType, f"column '{options.scores}'")
        # the schema decides, as the local reader's does
        fields, info = schema_relevance(path, path, options, names,
                                        lambda name: _arrow_type(path, schema[name], name))
        has_positive = options.positive in names
        if has_positive and options.positive_index is not None:
            raise positive_index_conflict(path, options.positive, "column")
        selected = dataframe.select(options.scores, *([options.positive] if has_positive else []),
                                    *fields.values())
        kernel = kernel_for(info)
        states = _collect(selected, _wide_partition(path, options, has_positive, fields, kernel))
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
        kernel = kernel_for(None)
        states = _collect(selected, _long_partition(path, options, has_label, kernel,
                                                    batch_rows, False))
        if any("again" in s for s in states):
            # the label column holds relevance labels: read it as a labels field, from the
            # start, as the local reader does after RelevanceLabelsFound
            kernel = kernel_for(RelevanceInfo("labels", fields=(cols["label"],)))
            states = _collect(selected, _long_partition(path, options, has_label, kernel,
                                                        batch_rows, True))
    errors = [s["error"] for s in states if "error" in s]
    if errors:
        raise InputError(errors[0])
    total = kernel.new()
    for state in states:
        total.merge(Accumulator.from_state(state))
    return kernel.result(total, path, dtype, dict(metadata or {}), warnings)


def _spark_cast(column: str, dtype: str):
    from pyspark.sql import functions as F
    if dtype == "float16":
        raise InputError("Spark has no float16; use --score-dtype float32")
    return F.col(column).cast("float" if dtype == "float32" else "double")


def evaluate_path(path: str, metrics=None, *, options: ReadOptions | None = None,
                  nan_policy: str = "raise", spark=None,
                  relevance: RelOptions | None = None) -> RunResult:
    """``tieeval compare --engine spark PATH``: a Parquet file or dataset directory, or a
    long-layout CSV, read by Spark; the result (JSON, tables) is the local engine's.

    The schema, metadata and warnings come from the same local checks as the local engine
    (only file footers and headers are read here); Spark reads the rows. ``relevance``:
    options of labelled metrics, as for :func:`evaluate`.
    """
    request = Request(metric_list(metrics), options, relevance, nan_policy, engine="spark")
    return evaluate_request(request, path, spark=spark)


def evaluate_request(request: Request, path: str, spark=None) -> RunResult:
    """Run a checked :class:`~tieeval.engine.request.Request` (``engine='spark'``) on
    ``path``; its run labels go over the file's own."""
    with mapped_errors(path):
        result = _evaluate_path(path, request.metrics, options=request.read,
                                nan_policy=request.nan_policy, spark=spark,
                                relevance=request.relevance, batch_rows=request.batch_rows,
                                conf=request.spark_conf)
    result.run_labels = {**result.run_labels, **request.run_labels}
    return result


def _evaluate_path(path: str, metrics, *, options: ReadOptions | None = None,
                   nan_policy: str = "raise", spark=None,
                   relevance: RelOptions | None = None, batch_rows: int | None = None,
                   conf=()) -> RunResult:
    """``batch_rows`` (``--batch-rows``) and ``conf`` (``--spark-conf``) configure the
    session (:func:`tieeval.engine.spark_session.session`) when this call starts it."""
    options = options or ReadOptions()
    more: dict[str, Any] = {"relevance": relevance, "nan_policy": nan_policy,
                            "batch_rows": batch_rows or DEFAULT_BATCH_ROWS}
    if remote_uri(path):
        # hdfs://, s3a://, ...: only Spark can see it; the DataFrame's schema is checked
        spark = spark or session(conf=conf, batch_rows=batch_rows)
        if path.lower().endswith((".csv", ".csv.gz")):
            dtype = options.score_dtype or "float64"
            cols = options.long_columns
            frame = (spark.read.option("header", True).option("inferSchema", True).csv(path)
                     .withColumn(cols["score"], _spark_cast(cols["score"], dtype)))
        else:
            frame = spark.read.parquet(path)
        return _evaluate_frame(frame, metrics, options=options, path=path, **more)
    dump = open_dump(local_path(path), options)  # the local engine's checks and messages
    if dump.format in ("npy", "npz"):
        raise InputError(f"{path}: the Spark engine reads Parquet and CSV; .{dump.format} "
                         "dumps run with --engine local")
    if str(dump.dtype) == "float16":
        raise InputError(f"{path}: Spark has no float16" + (
            "; use --score-dtype float32" if dump.format == "csv" else
            ": run with --engine local"))
    spark = spark or session(conf=conf, batch_rows=batch_rows)
    if dump.format == "csv":
        import pyspark.sql.types as T

        from tieeval.io.long import csv_columns
        cols = options.long_columns
        header, int_ids, label_type = csv_columns(dump)
        score_type = T.FloatType() if str(dump.dtype) == "float32" else T.DoubleType()
        types = {cols["instance"]: T.LongType() if int_ids else T.StringType(),
                 cols["position"]: T.LongType(), cols["score"]: score_type,
                 cols["label"]: _spark_label_type(label_type)}
        schema = T.StructType([T.StructField(name, types.get(name, T.StringType()), True)
                               for name in header])
        frame = spark.read.option("header", True).schema(schema).csv(path)
    else:
        frame = spark.read.parquet(path)
    return _evaluate_frame(frame, metrics, layout=dump.layout, options=options, path=dump.path,
                    metadata=dump.metadata, **more,
                    warnings=[w for w in dump.warnings if "regrouped" not in w])


def _spark_label_type(arrow_type):
    """The Spark type that reads a CSV label column as the local reader's Arrow type."""
    import pyarrow as pa
    import pyspark.sql.types as T
    if arrow_type is not None and pa.types.is_boolean(arrow_type):
        return T.BooleanType()
    if arrow_type is not None and pa.types.is_integer(arrow_type):
        return T.LongType()
    return T.DoubleType()
