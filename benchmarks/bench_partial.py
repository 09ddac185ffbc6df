"""The sparse table's two ways of preparing rows for its searches, by row length.

    python benchmarks/bench_partial.py [--repeat 5]

A table cut at a depth (every metric has a cutoff K) searches each row only above its
K-th largest score. tieeval sorts a row whole (``np.sort``) or, for rows at least
``tieeval.kernels.sparse_blocks._PARTIAL_WIDTH`` long, partitions it at that score and
sorts the K places above it (``np.partition``, a sort of K scores and a count of the
scores equal to it). This times both, as tieeval calls them (each on a copy of the rows),
and prints them in nanoseconds a score (the median of the
rounds), for float32 rows of several lengths, without ties and with 10 % of each row
tied at 1.0 (a saturated top), K = 10, about 2M scores a matrix, one thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

os.environ["TIEEVAL_SORT_THREADS"] = "1"  # one thread: the cost a score, not the cores

from tieeval.kernels import sparse_blocks  # noqa: E402


def whole(s: np.ndarray) -> None:
    """The rows sorted whole, as the table's searches read them below the threshold."""
    rows, width = s.shape
    n = np.full(rows, width, dtype=np.int64)
    sparse_blocks._sorted_rows(s.ravel(), n, np.arange(rows + 1, dtype=np.int64) * width)


def partial(s: np.ndarray, depth: int) -> None:
    """The rows partitioned at the depth, as from the threshold on."""
    sparse_blocks._top_sorted_rows(s.ravel(), s.shape[0], s.shape[1], depth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--depth", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}; rows partitioned from {sparse_blocks._PARTIAL_WIDTH} "
          f"scores on (K = {args.depth})\n")
    print("| row length | top tied | sort, ns a score | partition, ns a score | sort / partition |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for width in (200, 400, 800, 1600, 2048, 3200, 5000, 10000):
        for tied in (0.0, 0.1):
            s = rng.random((max(1, 2_000_000 // width), width), dtype=np.float32)
            s[s > 1 - tied] = 1.0
            a, b = [], []
            for _ in range(args.repeat):  # each copies the rows it sorts, as in a batch
                t = time.perf_counter()
                whole(s)
                a.append(time.perf_counter() - t)
                t = time.perf_counter()
                partial(s, args.depth)
                b.append(time.perf_counter() - t)
            ta, tb = statistics.median(a) / s.size * 1e9, statistics.median(b) / s.size * 1e9
            print(f"| {width:,} | {tied:.0%} | {ta:.1f} | {tb:.1f} | {ta / tb:.2f}x |")


if __name__ == "__main__":
    main()
