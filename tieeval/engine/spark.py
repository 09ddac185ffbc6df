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
import os
import pickle
import warnings
from typing import Sequence

import numpy as np

from tieeval.engine.arguments import metric_list
from tieeval.engine.consumers import finishing
from tieeval.engine.request import EvalOptions, NamedRows, request_kernel, request_result
from tieeval.engine.spark_errors import mapped_errors
from tieeval.engine.spark_session import (  # noqa: F401 - SparkUnavailable: kept importable
    SparkUnavailable,
    _quiet_pyspark_warnings,
    session,
)
from tieeval.engine.spark_session import require as _require
from tieeval.engine.spark_tasks import (
    ANSWER_SCHEMA,
    BLOCK_COLUMN,
    FILE_COLUMN,
    SPILL_COLUMN,
    Answers,
    batches_task,
    feed,
    file_order,
    gather,
    long_task,
    sortedness_task,
    spill_task,
    wants_of,
    wide_task,
)
from tieeval.errors import InputError
from tieeval.io.base import (
    ReadOptions,
    RelevanceInfo,
    local_path,
    remote_uri,
)
from tieeval.io.long import spill_parts
from tieeval.io.open import open_dump
from tieeval.io.relevance import schema_relevance
from tieeval.io.validate import (
    positive_index_conflict,
    require_scores_column,
    table_layout,
)
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.counts import check_nan_policy
from tieeval.metrics.metric import DEFAULT_KS
from tieeval.metrics.options import RelOptions
from tieeval.records.results import RunResult

# ---------------------------------------------------------------------------------------
# the driver (what runs on the executors: tieeval.engine.spark_tasks)

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


def _collect(selected, run) -> Answers:
    """Run ``run`` on every partition of ``selected``; its answers, sorted."""
    return gather(_rows(selected.mapInArrow(run, ANSWER_SCHEMA)))


def _rows(frame) -> list:
    with warnings.catch_warnings():
        _quiet_pyspark_warnings()  # per job too; mapInArrow needs no pandas
        return frame.collect()


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
    ``layout='auto'`` picks by the columns, as the local reader does. ``metrics``, ``k``,
    ``nan_policy`` and ``relevance`` (one :class:`~tieeval.metrics.options.RelOptions`) as
    for :func:`tieeval.evaluate`.
    ``warnings``: the reader's, put first in the result's, as the local engine does.
    """
    check_nan_policy(nan_policy)
    request = EvalOptions(metric_list(metrics, k), options, relevance, nan_policy,
                      engine="spark", batch_rows=batch_rows)
    with mapped_errors(path):
        result = _evaluate_frame(dataframe, request, layout=layout, path=path,
                                 metadata=metadata, warnings=warnings)
    assert result is not None
    return result


def _evaluate_frame(dataframe, request: EvalOptions, *, layout: str = "auto",
                    path: str = "<dataframe>", metadata: dict | None = None,
                    warnings: list | tuple = (), consumers: Sequence = (),
                    totals: bool = True, dump=None, ordered: bool = False
                    ) -> RunResult | None:
    """A checked ``request`` on a DataFrame: its totals (None without ``totals``) and its
    per-instance values fed to ``consumers`` in the local engine's order (``ordered``:
    the DataFrame reads files, whose ``_metadata`` gives that order; ``dump``: the local
    dump of the same files, if any)."""
    _require()
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    options = request.read or ReadOptions()
    if layout != "auto":
        options = dataclasses.replace(options, layout=layout)
    batch_rows = request.batch_rows or 4096
    wants = wants_of(consumers, totals)
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
        # the schema decides, as the local reader's does (a saved ranking too)
        fields, info = schema_relevance(path, path, options, names,
                                        lambda name: _arrow_type(path, schema[name], name),
                                        with_ranking=True)
        has_positive = options.positive in names
        if has_positive and options.positive_index is not None:
            raise positive_index_conflict(path, options.positive, "column")
        picked = [options.scores, *([options.positive] if has_positive else []),
                  *fields.values()]
        ordered = ordered and wants.values
        if ordered:  # the file split each row comes from: the local engine's row order
            picked += [F.col("_metadata.file_path").alias(FILE_COLUMN),
                       F.col("_metadata.file_block_start").alias(BLOCK_COLUMN)]
        selected = dataframe.select(*picked)
        kernel = request_kernel(NamedRows(path, info), request)
        answers = _collect(selected, wide_task(path, options, has_positive, fields, kernel,
                                               wants, ordered))
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
        selected = dataframe.select(*picked)
        # with values, instances in the local reader's order: by id, or by (spill
        # partition, id) when it regroups an unsorted dump through several spill partitions
        parts = spill_parts(dump) if dump is not None and wants.values else 1
        spilled = parts > 1 and not (ordered and _sorted_by_instance(dataframe, cols))
        order = [SPILL_COLUMN, "instance"] if spilled else ["instance"]
        if spilled:
            spill = StructField(SPILL_COLUMN, LongType(), False)
            selected = selected.mapInArrow(spill_task("instance", parts),
                                           StructType([*selected.schema.fields, spill]))
        selected = (selected.repartitionByRange(*order) if wants.values else
                    selected.repartition("instance")).sortWithinPartitions(*order, "position")
        # a label column that holds relevance labels (answers.again) is read as a labels
        # field, from the start, as the local reader does after RelevanceLabelsFound
        for labels in (None, RelevanceInfo("labels", fields=(cols["label"],))):
            kernel = request_kernel(NamedRows(path, labels), request)
            answers = _collect(selected, long_task(path, options, has_label, kernel,
                                                   batch_rows, labels is not None, wants, spilled))
            if answers.again is None:
                break
    return _finish(kernel, answers, request, consumers, dump or NamedRows(path), path, dtype,
                   metadata, warnings, totals)


def _finish(kernel, answers, request: EvalOptions, consumers, dump, path: str, dtype,
            metadata: dict | None, warnings, totals: bool) -> RunResult | None:
    """The run's result from a job's answers, and the consumers fed in the local order."""
    with finishing(consumers):
        if answers.error is not None:
            raise InputError(answers.error)
        total = kernel.new()  # the exact totals of every partition
        for state in answers.states:
            total.merge(Accumulator.from_state(state))
        if consumers:
            feed(consumers, kernel, dump, answers.pieces)
    if not totals:
        return None
    return request_result(request, kernel, total, dump, path, dtype, dict(metadata or {}),
                          warnings)


def _sorted_by_instance(dataframe, cols) -> bool:
    """Whether a long dump's rows, in file order, are sorted by instance (then the local
    reader streams them, instances by id, whatever its size)."""
    from pyspark.sql import functions as F
    frame = dataframe.select(F.col(cols["instance"]).alias("instance"),
                             F.col("_metadata.file_path").alias(FILE_COLUMN),
                             F.col("_metadata.file_block_start").alias(BLOCK_COLUMN))
    rows = _rows(frame.mapInArrow(sortedness_task("instance"), ANSWER_SCHEMA))
    last = None  # the runs in file order: each sorted, and each after the one before
    for _, (first, final, inside) in sorted(((file_order(r.file), r.block, r.seq),
                                             pickle.loads(r.data)) for r in rows):
        if not inside or (last is not None and first < last):
            return False
        last = final
    return True


def evaluate_path(path: str, metrics=None, *, options: ReadOptions | None = None,
                  nan_policy: str = "raise", spark=None,
                  relevance: RelOptions | None = None) -> RunResult:
    """``tieeval compare --engine spark PATH``: a Parquet file or dataset directory, or a
    long-layout CSV, read by Spark; the result (JSON, tables) is the local engine's.

    The schema, metadata and warnings come from the same local checks as the local engine
    (only file footers and headers are read here); Spark reads the rows. ``relevance``:
    options of labelled metrics, as for :func:`evaluate`. A TREC run (``options`` naming
    qrels) is read by the local reader on the driver and evaluated by the executors.
    """
    request = EvalOptions(metric_list(metrics), options, relevance, nan_policy, engine="spark")
    result = drive(request, path, spark=spark)
    assert result is not None
    return result


def open_for_spark(request: EvalOptions, path: str):
    """The local dump of ``path`` as Spark will read it (its checks, messages, metadata and
    warnings; only footers and headers, or a whole TREC run, are read), or None for a URI
    only Spark can open. NPY/NPZ and float16 dumps are refused here, before Spark starts."""
    if remote_uri(path):
        return None
    options = request.read or ReadOptions()
    dump = open_dump(local_path(path), options)  # the local engine's checks and messages
    if dump.format in ("npy", "npz"):
        raise InputError(f"{path}: the Spark engine reads Parquet, CSV and TREC runs; "
                         f".{dump.format} dumps run with --engine local")
    if str(dump.dtype) == "float16":
        raise InputError(f"{path}: Spark has no float16" + (
            "; use --score-dtype float32" if dump.format == "csv" else
            ": run with --engine local"))
    return dump


def drive(request: EvalOptions, path, consumers: Sequence = (), *, totals: bool = True,
          spark=None, dump=None) -> RunResult | None:
    """One Spark pass for a checked ``request`` over ``path`` (``dump``: its local dump
    from :func:`open_for_spark`, opened here when not given): the totals (None without
    ``totals``) and, when ``consumers`` want them, every instance's values fed to them in
    the local engine's order, as :func:`tieeval.engine.local.drive` feeds them. Spark's
    failures are one-line errors (:mod:`tieeval.engine.spark_errors`)."""
    path = os.fspath(path)
    with mapped_errors(path):
        if dump is None:
            dump = open_for_spark(request, path)
        options = request.read or ReadOptions()
        spark = spark or session(conf=request.spark_conf, batch_rows=request.batch_rows)
        if dump is None:
            # hdfs://, s3a://, ...: only Spark can see it; the DataFrame's schema is checked
            if path.lower().endswith((".csv", ".csv.gz")):
                from pyspark.sql import functions as F
                dtype, score = options.score_dtype or "float64", options.long_columns["score"]
                frame = spark.read.option("header", True).option("inferSchema", True).csv(path)
                if dtype == "float16":
                    raise InputError("Spark has no float16; use --score-dtype float32")
                frame = frame.withColumn(score, F.col(score).cast(
                    "float" if dtype == "float32" else "double"))
            else:
                frame = _read_parquet(spark, path)
            return _evaluate_frame(frame, request, path=path, ordered=True,
                                   consumers=consumers, totals=totals)
        if dump.format == "trec":
            # read whole on the driver (a TREC run and its qrels): its batches evaluated by
            # the executors, the answers merged as for a DataFrame
            dump.settle()
            kernel = request_kernel(dump, request)
            numbered = list(enumerate(dump.batches(kernel.batch_rows(dump, request.batch_rows))))
            slices = max(1, min(len(numbered), spark.sparkContext.defaultParallelism))
            rows = _rows(spark.sparkContext.parallelize(numbered, slices)
                         .mapPartitions(batches_task(kernel, wants_of(consumers, totals)))
                         .map(lambda record: record.to_pylist()[0]))  # dicts, as gather reads
            return _finish(kernel, gather(rows), request, consumers, dump, dump.path,
                           dump.dtype, dump.metadata, dump.warnings, totals)
        if dump.format == "csv":
            import pyarrow as pa
            import pyspark.sql.types as T

            from tieeval.io.long import csv_columns
            cols = options.long_columns
            header, int_ids, label_type = csv_columns(dump)
            score_type = T.FloatType() if str(dump.dtype) == "float32" else T.DoubleType()
            types = {cols["instance"]: T.LongType() if int_ids else T.StringType(),
                     cols["position"]: T.LongType(), cols["score"]: score_type,
                     # the Spark type that reads the labels as the local reader's Arrow type
                     cols["label"]: T.DoubleType() if label_type is None else
                     T.BooleanType() if pa.types.is_boolean(label_type) else
                     T.LongType() if pa.types.is_integer(label_type) else T.DoubleType()}
            schema = T.StructType([T.StructField(name, types.get(name, T.StringType()), True)
                                   for name in header])
            frame = spark.read.option("header", True).schema(schema).csv(path)
        else:
            frame = _read_parquet(spark, path)
        return _evaluate_frame(frame, request, layout=dump.layout, path=dump.path,
                               metadata=dump.metadata, dump=dump, ordered=True,
                               consumers=consumers, totals=totals,
                               warnings=[w for w in dump.warnings if "regrouped" not in w])


# a read option reaches the Parquet reader's Hadoop configuration (as
# spark.hadoop.parquet.page.verify-checksum.enabled=true would, for every read)
PAGE_CHECKSUMS = "parquet.page.verify-checksum.enabled"


def _read_parquet(spark, path: str):
    """Parquet read by Spark with its page checksums verified, as the local reader does:
    a damaged page is an error, never other figures."""
    return spark.read.option(PAGE_CHECKSUMS, "true").parquet(path)
