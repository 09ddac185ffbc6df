"""Time labelled rows end to end: tieeval's CLI against scikit-learn's ndcg_score.

    python benchmarks/bench_graded.py [--rows 100000] [--cols 101] [--repeat 5]
                                      [--sklearn-rows 5000]

Writes seeded dumps to benchmarks/data/: a labelled NPZ (float32 sigmoid-saturated scores,
so the top of most rows is tied; graded labels 0-4 on ten candidates per row, the rest 0),
the same score matrix as an NPY (a single-positive dump: the positive in column 0), and a
TREC run of 200 queries x 1,000 documents (``bench_trec.py``'s generator: scores rounded
to 0.01, so tied; graded qrels 0-3, about 200 judged documents per query, some never
retrieved). Then, in rounds that run
each contestant in turn (a fresh process each, as a user runs it; medians of
``--repeat``):

* ``tieeval compare -m NDCG@10`` on the labelled NPZ (read, the sparse block table, all
  four columns, the tie-break sd, tie statistics);
* ``tieeval compare`` with the default labelled metrics (HR, Recall, NDCG at 1, 5, 10; MRR;
  MAP);
* ``tieeval compare -m NDCG@10`` on the single-positive NPY of the same matrix: the
  per-score ratio labelled / single-positive;
* ``tieeval compare --qrels`` on the TREC run (default metrics);
* scikit-learn ``ndcg_score(..., k=10, ignore_ties=False)``, the tie-averaged NDCG
  (McSherry & Najork; tieeval's tie-aware column), end to end in a fresh process (python,
  imports, ``np.load``, the score): it loops over rows in Python, so it runs on the first
  ``--sklearn-rows`` rows and the score part is scaled per row.

The machine is small and shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from _common import DATA, interleaved, warm_up
from bench_trec import make_files


def make_dump(rows: int, cols: int, seed: int = 0) -> str:
    path = os.path.join(DATA, f"graded_{rows}x{cols}_float32.npz")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    z = rng.normal(8.0, 6.0, size=(rows, cols)).astype(np.float32)
    labels = np.zeros((rows, cols), dtype=np.int8)
    labels[:, :10] = rng.integers(0, 5, size=(rows, 10))
    z += labels.astype(np.float32)  # relevant items tend to score higher
    scores = (1.0 / (1.0 + np.exp(-z))).astype(np.float32)  # saturates at 1.0: ties
    np.savez(path, scores=scores, labels=labels)
    return path


def single_positive(path: str) -> str:
    """The labelled dump's score matrix as an NPY: a single-positive dump (column 0)."""
    out = path[:-4] + "_scores.npy"
    if not os.path.exists(out):
        with np.load(path) as f:
            np.save(out, f["scores"])
    return out


def cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "tieeval", "compare", *args, "-q", "-f", "json"],
                   check=True, stdout=subprocess.DEVNULL)


SKLEARN = """
import sys, time
import numpy as np
from sklearn.metrics import ndcg_score
with np.load(sys.argv[1]) as f:
    s, y = f["scores"][:int(sys.argv[2])], f["labels"][:int(sys.argv[2])]
keep = y.sum(axis=1) > 0  # scikit-learn scores rows without a relevant item as 0
t0 = time.perf_counter()
ndcg_score(y[keep].astype(np.float64), s[keep].astype(np.float64), k=10, ignore_ties=False)
print(time.perf_counter() - t0)
"""


def sklearn_end_to_end(path: str, rows: int, total: int) -> float | None:
    """Wall time of a fresh process running ndcg_score on the first ``rows`` rows, with
    the score part scaled to ``total`` rows (start-up and the read counted once)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SKLEARN, path, str(rows)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return None
    score = float(done.stdout.strip())
    return wall - score + score * total / rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cols", type=int, default=101)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sklearn-rows", type=int, default=5_000)
    args = parser.parse_args()
    warm_up()

    path = make_dump(args.rows, args.cols)
    npy = single_positive(path)
    run, qrels = make_files(200, 1000)  # bench_trec.py's run generator, smaller
    m = min(args.sklearn_rows, args.rows)
    runs = {
        "ndcg": lambda: cli(path, "-m", "NDCG@10"),
        "default": lambda: cli(path),
        "single": lambda: cli(npy, "-m", "NDCG@10"),
        "trec": lambda: cli("--qrels", qrels, run),
        "sklearn": lambda: sklearn_end_to_end(path, m, args.rows),
    }
    times = interleaved(runs, args.repeat, self_timed=("sklearn",))
    if any(t is None for t in times["sklearn"]):
        print("scikit-learn not installed: skipped", file=sys.stderr)
        times["sklearn"] = [float("nan")] * args.repeat
    med = {k: statistics.median(v) for k, v in times.items()}
    scores = args.rows * args.cols
    with np.load(path) as f:
        s = f["scores"]
        tied = float(np.mean((s == s.max(axis=1, keepdims=True)).sum(1) > 1))

    print(f"\n{args.rows:,} x {args.cols} float32, graded labels 0-4, {tied:.0%} of rows with "
          f"a tied top score, numpy {np.__version__}; CLI end to end, medians of "
          f"{args.repeat} rounds\n")
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| tieeval NDCG@10 | {med['ndcg']:.3f} | 1.00x |")
    print(f"| tieeval default labelled metrics (11 rows) | {med['default']:.3f} | "
          f"{med['default'] / med['ndcg']:.2f}x |")
    print(f"| scikit-learn ndcg_score(k=10, ignore_ties=False), scaled from {m:,} rows | "
          f"{med['sklearn']:.3f} | {med['sklearn'] / med['ndcg']:.1f}x slower than "
          f"tieeval NDCG@10, {med['sklearn'] / med['default']:.1f}x than the defaults |")
    print(f"| tieeval NDCG@10, single-positive (column 0) on the same matrix | "
          f"{med['single']:.3f} | labelled / single-positive per score = "
          f"{med['ndcg'] / med['single']:.2f}x |")
    print(f"| tieeval TREC run 200 x 1,000, default metrics | {med['trec']:.3f} | |")
    print(f"\nper score: labelled {med['ndcg'] / scores * 1e9:.1f} ns, single-positive "
          f"{med['single'] / scores * 1e9:.1f} ns")


if __name__ == "__main__":
    main()
