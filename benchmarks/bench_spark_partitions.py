"""Where the Spark engine's time goes, against the local engine, on one machine.

    python benchmarks/bench_spark_partitions.py [--rows 200000] [--repeat 3]

Writes a seeded single-positive wide Parquet dump (``rows`` x 101 float32, tied top scores,
row groups of 16,384 rows) and a labelled one (graded labels), then reports medians of:

* **local**: ``tieeval.evaluate_path`` (the local engine, every core);
* **spark session**: starting Spark in local mode (``tieeval.engine.spark.session``);
* **spark job**: ``tieeval.engine.spark.evaluate_path`` in a warm session (Spark reads the
  Parquet file, hands Arrow batches of 4,096 rows to Python workers, the kernel runs on
  each, the partial sums come back);
* **python in partitions**: the same partition function run in this process on the same
  Arrow batches (``pyarrow`` reads them): the Arrow -> :class:`Batch` conversion and the
  kernel, i.e. the Python share of a Spark job. The rest of the job is Spark's: the JVM
  reading Parquet, Arrow serialisation to the Python workers, task scheduling.

The dumps go to ``benchmarks/data/`` (gitignored). Never run as a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def write_dumps(rows: int) -> dict[str, str]:
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(20261201)
    paths = {"single": os.path.join(DATA, f"spark_single_{rows}.parquet"),
             "labelled": os.path.join(DATA, f"spark_labelled_{rows}.parquet")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    logits = rng.normal(8, 6, (rows, 101)).astype(np.float32)
    logits[:, 0] += 4
    scores = (1 / (1 + np.exp(-logits))).astype(np.float32)  # saturates: ties at 1.0f
    flat = pa.array(scores.ravel())
    offsets = pa.array(np.arange(0, scores.size + 1, 101, dtype=np.int32))
    column = pa.ListArray.from_arrays(offsets, flat)
    pq.write_table(pa.table({"scores": column, "positive": np.zeros(rows, dtype=np.int64)}),
                   paths["single"], row_group_size=16384)
    labels = rng.choice(np.array([0, 0, 0, 1, 2], dtype=np.int8), size=scores.shape)
    pq.write_table(pa.table({"scores": column, "labels": pa.ListArray.from_arrays(
        offsets, pa.array(labels.ravel()))}), paths["labelled"], row_group_size=16384)
    return paths


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def python_share(path: str, repeat: int) -> float:
    """The partition function of a Spark job, run here on the same Arrow batches."""
    from tieeval.engine import spark_tasks
    from tieeval.engine.local import request_kernel
    from tieeval.engine.request import EvalOptions
    from tieeval.io.base import ReadOptions
    from tieeval.io.open import open_dump
    from tieeval.io.relevance import schema_relevance

    options = ReadOptions()
    schema = pq.read_schema(path)
    fields, _ = schema_relevance(path, path, options, schema.names,
                                 lambda name: schema.field(name).type, with_ranking=True)
    kernel = request_kernel(open_dump(path), EvalOptions(engine="spark"))
    batches = list(pq.ParquetFile(path).iter_batches(batch_size=4096))
    run = spark_tasks.wide_task(path, options, "positive" in schema.names, fields, kernel,
                                spark_tasks.Wants(), False)
    return timed(lambda: list(run(iter(batches))), repeat)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    paths = write_dumps(args.rows)
    import tieeval
    from tieeval.engine import spark as tspark
    start = time.perf_counter()
    session = tspark.session("bench")
    started = time.perf_counter() - start
    print(f"Spark session start: {started:.1f} s; {args.rows:,} rows x 101 float32, "
          f"medians of {args.repeat}", file=sys.stderr)
    print("| dump | local | spark job | python in partitions | spark / local |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, path in paths.items():
        local, expected = timed(lambda p=path: tieeval.evaluate_path(p, jobs=0), args.repeat)
        tspark.evaluate_path(path, spark=session)  # the first job pays for warm-up
        spark, got = timed(lambda p=path: tspark.evaluate_path(p, spark=session), args.repeat)
        assert got.to_dict() == expected.to_dict()  # type: ignore[attr-defined]
        share = python_share(path, args.repeat)
        print(f"| {name} | {local:.2f} s | {spark:.2f} s | {share:.2f} s | "
              f"{spark / local:.1f}x |")
    session.stop()


if __name__ == "__main__":
    main()
