"""Time graded NDCG on a labelled dump: tieeval against scikit-learn's ndcg_score.

    python benchmarks/bench_graded.py [--rows 100000] [--cols 101] [--repeat 5]
                                      [--sklearn-rows 5000]

Writes a seeded labelled dump to benchmarks/data/ (float32 sigmoid-saturated scores, so the
top of many rows is tied; graded labels 0-4 on ten candidates per row, the rest 0), then
reports medians of ``--repeat`` runs of:

* tieeval NDCG@10 end to end on the .npz (read, one sort per row, all four columns,
  the tie-break sd and tie statistics);
* tieeval's default labelled metrics (HR, Recall, NDCG at 1, 5, 10; MRR; MAP) end to end;
* scikit-learn's ``ndcg_score(..., k=10, ignore_ties=False)``, the tie-averaged NDCG
  (McSherry & Najork; the tie-aware column's expectation), on the first ``--sklearn-rows``
  rows and scaled per row: it loops over rows in Python;
* scikit-learn's ``ndcg_score(..., k=10, ignore_ties=True)`` on all rows (vectorised, but
  it breaks ties by position, so it is one arbitrary tie-break, not an expectation).

Both libraries' means are printed side by side as a check. The machine is small and noisy:
read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
from _common import DATA, median_time, print_timings


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cols", type=int, default=101)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sklearn-rows", type=int, default=5_000)
    args = parser.parse_args()

    import tieeval
    from tieeval.metrics.metric import Metric

    path = make_dump(args.rows, args.cols)
    with np.load(path) as f:
        scores, labels = f["scores"], f["labels"]
    ndcg10 = [Metric("NDCG", 10)]
    results: dict[str, float] = {}
    results["tieeval NDCG@10 (end to end, .npz)"] = median_time(
        lambda: tieeval.evaluate_path(path, ndcg10), args.repeat)
    results["tieeval default labelled metrics (11 rows, end to end)"] = median_time(
        lambda: tieeval.evaluate_path(path), args.repeat)
    ours = tieeval.evaluate_path(path, ndcg10).metric("NDCG@10")
    tied_rows = float(np.mean((scores == scores.max(axis=1, keepdims=True)).sum(1) > 1))

    check = ""
    try:
        from sklearn.metrics import ndcg_score
    except ImportError:
        print("scikit-learn not installed: skipped", file=sys.stderr)
    else:
        keep = labels.sum(axis=1) > 0  # sklearn scores rows without a relevant item as 0
        m = min(args.sklearn_rows, args.rows)
        sub_s = scores[:m][keep[:m]].astype(np.float64)
        sub_l = labels[:m][keep[:m]].astype(np.float64)
        scale = args.rows / m
        t = median_time(lambda: ndcg_score(sub_l, sub_s, k=10, ignore_ties=False), 1)
        results[f"scikit-learn ndcg_score, ties averaged (x{scale:g} from {m} rows)"] = (
            t * scale)
        all_s = scores[keep].astype(np.float64)
        all_l = labels[keep].astype(np.float64)
        results["scikit-learn ndcg_score, ignore_ties=True (all rows)"] = median_time(
            lambda: ndcg_score(all_l, all_s, k=10, ignore_ties=True), args.repeat)
        theirs = ndcg_score(sub_l, sub_s, k=10, ignore_ties=False)
        mine = tieeval.evaluate_labels(scores[:m], labels[:m], metrics=ndcg10)
        check = (f"NDCG@10 tie-aware on the first {m} rows: tieeval "
                 f"{mine.metric('NDCG@10').tie_aware:.15f}, scikit-learn {theirs:.15f}")

    base = results["tieeval NDCG@10 (end to end, .npz)"]
    print(f"\n{args.rows:,} x {args.cols} float32, graded labels 0-4, {tied_rows:.0%} of rows "
          f"with a tied top score, numpy {np.__version__}, median of {args.repeat}\n")
    print_timings(results, base, "tieeval NDCG@10")
    print(f"\ntieeval NDCG@10: original {ours.original:.4f}, first {ours.first:.4f}, "
          f"last {ours.last:.4f}, tie-aware {ours.tie_aware:.4f} ± {ours.tie_aware_std:.4f}")
    if check:
        print(check)
    if not math.isfinite(base):  # pragma: no cover
        sys.exit(1)


if __name__ == "__main__":
    main()
