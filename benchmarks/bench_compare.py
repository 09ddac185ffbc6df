"""Time `tieeval compare` on a 1,000,000 x 101 float32 dump beside what a user would run.

    python benchmarks/bench_compare.py [--rows 1000000] [--repeat 5] [--sklearn-rows 20000]

Writes a sigmoid-saturated float32 dump (seeded) to benchmarks/data/, then reports medians of
`--repeat` runs of:

* tieeval end to end on the .npy file (read + every metric + tie statistics + original);
* reading the .npy file into memory (np.load);
* one plain numpy pass `(S > S[:, :1]).sum(1)` (the cheapest possible rank count);
* `np.argsort(S * -1, axis=1)` on all rows (what the codebases do);
* scikit-learn's tie-averaged `ndcg_score(..., ignore_ties=False)`, on the first
  `--sklearn-rows` rows and scaled per row (it loops over rows in Python);
* ranx NDCG@10 when ranx is installed (scaled the same way).

The machine is small and noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from _common import DATA, median_time, print_timings


def make_dump(rows: int, cols: int = 101, seed: int = 0) -> str:
    if (rows, cols, seed) == (1_000_000, 101, 0):  # the dump bench_scale.py uses too
        import make_data
        return make_data.write_npy("sampled")
    path = os.path.join(DATA, f"sampled_{rows}x{cols}_seed{seed}_float32.npy")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    for start in range(0, rows, 100_000):
        n = min(100_000, rows - start)
        z = rng.normal(8.0, 6.0, size=(n, cols)).astype(np.float32)
        z[:, 0] += 4.0  # the positive tends to score high
        out[start:start + n] = 1.0 / (1.0 + np.exp(-z))  # float32 sigmoid: saturates at 1.0
    out.flush()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sklearn-rows", type=int, default=20_000)
    args = parser.parse_args()

    import tieeval

    path = make_dump(args.rows)
    S = np.load(path)
    results: dict[str, float] = {}
    results["tieeval compare (end to end, .npy)"] = median_time(
        lambda: tieeval.evaluate_path(path), args.repeat)
    results["np.load (read only)"] = median_time(lambda: np.load(path), args.repeat)
    results["numpy (S > S[:, :1]).sum(1)"] = median_time(
        lambda: (S > S[:, :1]).sum(1), args.repeat)
    results["np.argsort(S * -1, axis=1)"] = median_time(
        lambda: np.argsort(S * -1, axis=1), max(1, args.repeat // 2))

    m = min(args.sklearn_rows, args.rows)
    scale = args.rows / m
    try:
        from sklearn.metrics import ndcg_score
        y_true = np.zeros((m, S.shape[1]))
        y_true[:, 0] = 1.0
        t = median_time(lambda: ndcg_score(y_true, S[:m], k=10, ignore_ties=False), 1)
        results[f"scikit-learn ndcg_score, ties averaged (x{scale:g} from {m} rows)"] = t * scale
    except ImportError:
        print("scikit-learn not installed: skipped", file=sys.stderr)
    try:
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate
        sub = S[:m]
        qrels = Qrels({f"q{i}": {"d0": 1} for i in range(m)})
        run = Run({f"q{i}": {f"d{j}": float(sub[i, j]) for j in range(sub.shape[1])}
                   for i in range(m)})
        t = median_time(lambda: ranx_evaluate(qrels, run, "ndcg@10"), 1)
        results[f"ranx ndcg@10 (x{scale:g} from {m} rows, excl. building dicts)"] = t * scale
    except ImportError:
        print("ranx not installed: skipped", file=sys.stderr)

    base = results["tieeval compare (end to end, .npy)"]
    read_pass = results["np.load (read only)"] + results["numpy (S > S[:, :1]).sum(1)"]
    print(f"\n{args.rows:,} x {S.shape[1]} float32, numpy {np.__version__}, "
          f"median of {args.repeat}\n")
    print_timings(results, base, "tieeval")
    print(f"\ntieeval / (read + one numpy pass) = {base / read_pass:.2f}")


if __name__ == "__main__":
    main()
