"""The Spark engine against the local engine on one machine: whole commands, as a user runs
them (``tieeval compare FILE --engine ENGINE --format json --quiet``), each in a fresh
process, so Spark's start-up (a JVM, a local-mode context, Python workers) is counted.

    python benchmarks/bench_spark.py              # ~10 min on 2 cores: the Markdown table
    python benchmarks/bench_spark.py --repeat 5

The dumps are made here (seeded) in benchmarks/data/spark/: a one-row dump (Spark's fixed
cost), a wide Parquet dump of tied float32 scores, and the same rows in the long layout
(Parquet). Medians of ``--repeat`` runs, and the ratio spark / local of the same run; the
raw times are in benchmarks/data/spark/bench_spark.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "spark"


def tied_scores(rng, rows: int, width: int) -> np.ndarray:
    # a saturated sigmoid in float32: ties at the top, as in the paper's dumps
    logits = rng.normal(8.0, 6.0, size=(rows, width)).astype(np.float32)
    logits[:, 0] += 4.0
    return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)


def make(rows: int, width: int) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261201)
    out = {}
    tiny = DATA / "tiny.parquet"
    if not tiny.exists():
        pq.write_table(pa.table({"scores": pa.array([[0.5, 0.5, 0.1]], pa.list_(pa.float32()))}),
                       tiny)
    out["one row (start-up)"] = tiny
    wide = DATA / f"wide_{rows}x{width}.parquet"
    longp = DATA / f"long_{rows // 10}x{width}.parquet"
    if not wide.exists() or not longp.exists():
        scores = tied_scores(rng, rows, width)
        pq.write_table(pa.table({"scores": pa.FixedSizeListArray.from_arrays(
            pa.array(scores.ravel()), width)}), wide, row_group_size=50_000)
        n = rows // 10
        part = scores[:n]
        pq.write_table(pa.table({
            "instance": np.repeat(np.arange(n), width),
            "position": np.tile(np.arange(width), n),
            "score": part.ravel(),
            "label": np.tile((np.arange(width) == 0).astype(np.int8), n)}), longp)
    out[f"wide {rows:,} x {width} ({wide.stat().st_size / 2**20:.0f} MB)"] = wide
    out[f"long {rows // 10 * width:,} rows ({longp.stat().st_size / 2**20:.0f} MB)"] = longp
    return out


def run(path: Path, engine: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(path), "--engine",
                           engine, "--format", "json", "--quiet"], capture_output=True,
                          text=True, env=env)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{engine} {path}: exit {done.returncode}: {done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--width", type=int, default=101)
    args = parser.parse_args()
    dumps = make(args.rows, args.width)
    raw: dict[str, dict[str, list[float]]] = {}
    for name, path in dumps.items():
        raw[name] = {"local": [], "spark": []}
        for _ in range(args.repeat):  # interleaved: the machine's load hits both alike
            for engine in ("local", "spark"):
                raw[name][engine].append(run(path, engine))
                print(f"{name} {engine}: {raw[name][engine][-1]:.1f} s", file=sys.stderr)
    (DATA / "bench_spark.json").write_text(json.dumps(raw, indent=2))
    print(f"| dump | local (s) | spark (s) | spark / local |  (median of {args.repeat}, "
          f"{os.cpu_count()} cores, Spark local[*])")
    print("| --- | ---: | ---: | ---: |")
    for name, times in raw.items():
        local, spark = statistics.median(times["local"]), statistics.median(times["spark"])
        print(f"| {name} | {local:.1f} | {spark:.1f} | {spark / local:.1f}x |")


if __name__ == "__main__":
    main()
