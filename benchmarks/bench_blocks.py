"""The single-positive count block's size: ``evaluate_path`` at several sizes, against the floor.

    python benchmarks/bench_blocks.py [--scale 5] [--repeat 5] [--sizes 17,18,19,20]
                                      [--only sampled-free,allitem-free-npz,...]

The single-positive kernel counts a batch in blocks of about
``tieeval.kernels.counts.BLOCK_SCORES`` scores (the row maximum, ``>`` and ``==`` the
positive, ``==`` the maximum, each pass over a block in cache), each block read just
before it is counted. Each size ``2**s`` of ``--sizes`` is set in this process and
``tieeval.evaluate_path`` (default ``jobs``) timed on ``bench_floor.py``'s dumps (written
once, scaled by ``--scale``: sampled 200,000 x 101 and all-item 4,000 x 10,000, tied and
tie-free; ``-npz`` the same dump as a stored NPZ), in interleaved rounds with the floor
on that format (``bench_floor.py``'s, which counts blocks of 2**18 scores of the memory
map). Printed per dump: each size's median seconds and the median of its per-round
ratios to the floor, then each size against the one tieeval uses. The CRC-32 of a stored
NPZ is the one ``TIEEVAL_CRC32`` picks (as installed by default).

The machine is small and shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from _common import interleaved, warm_up

DUMPS = {  # name: (bench_floor dump, rows at scale 1, columns, tied, stored NPZ)
    "sampled-tied": ("sampled", 200_000, 101, True, False),
    "sampled-free": ("sampled", 200_000, 101, False, False),
    "allitem-tied": ("all-item", 4_000, 10_000, True, False),
    "allitem-free": ("all-item", 4_000, 10_000, False, False),
    "sampled-free-npz": ("sampled", 200_000, 101, False, True),
    "allitem-free-npz": ("all-item", 4_000, 10_000, False, True),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="17,18,19,20",
                    help="powers of two of the block's scores (comma-separated)")
    ap.add_argument("--only", default=",".join(DUMPS), help="comma-separated dump names")
    args = ap.parse_args()
    import bench_floor

    import tieeval
    from tieeval.io.crc32 import implementation
    from tieeval.kernels import counts
    sizes = [int(s) for s in args.sizes.split(",")]
    ours = counts.BLOCK_SCORES.bit_length() - 1
    against = [s for s in sizes if s != ours] if ours in sizes else []
    warm_up()
    print(f"tieeval {tieeval.__version__}, a stored NPZ's CRC-32 by {implementation()}, "
          f"{len(os.sched_getaffinity(0))} cores, tieeval's block 2**{ours} scores; "
          f"medians of {args.repeat}\n")
    print("| dump | floor s | " + " | ".join(f"2**{s} s (x floor)" for s in sizes)
          + "".join(f" | 2**{s} / 2**{ours}" for s in against) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in sizes)
          + "".join(" | ---:" for _ in against) + " |")
    for name in args.only.split(","):
        dump, rows, cols, tied, npz = DUMPS[name]
        path = bench_floor.write(dump, int(rows * args.scale), cols, tied)
        floor = bench_floor.floor
        if npz:
            path, floor = bench_floor.as_npz(path), bench_floor.floor_npz

        def at(size, path=path):
            def run():
                counts.BLOCK_SCORES = 1 << size
                tieeval.evaluate_path(path)
            return run
        runs = {"floor": lambda path=path, floor=floor: floor(path)}
        runs.update({str(s): at(s) for s in sizes})
        try:
            times = interleaved(runs, args.repeat)
        finally:
            counts.BLOCK_SCORES = 1 << ours
        cells = [f"{statistics.median(times['floor']):.3f}"]
        for s in sizes:
            ratio = statistics.median(t / f for t, f in zip(times[str(s)], times["floor"]))
            cells.append(f"{statistics.median(times[str(s)]):.3f} ({ratio:.2f}x)")
        for s in against:
            pairs = zip(times[str(s)], times[str(ours)])
            cells.append(f"{statistics.median(a / b for a, b in pairs):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
