"""The CRC-32 implementations a stored NPZ can be checked with, on this machine.

    python benchmarks/bench_crc32.py [--mb 400] [--repeat 7]

tieeval checks a stored NPZ member's CRC-32 on the bytes as the reader feeds them, 1 MB
pieces in the threads that read them (``tieeval/io/npy.py``), with the fastest
implementation it finds (``tieeval/io/crc32.py``): ISA-L's (the ``isal`` package),
the system's libdeflate (through ctypes), zlib's. This prints, for each one present, the
median throughput of one thread over ``--mb`` MB of random float32 in those 1 MB pieces
(already in memory: the CRC's own cost, no reading), and checks that each gives zlib's
CRC bit for bit. ``TIEEVAL_CRC32`` does not matter here: every implementation is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib

import numpy as np

from tieeval.io import crc32 as crc_module

PIECE = 1 << 20  # tieeval.io.npy.CRC_PIECE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    data = np.random.default_rng(0).random(args.mb * PIECE // 4, dtype=np.float32)
    view = memoryview(data).cast("B")
    found = {"zlib": zlib.crc32, "libdeflate": crc_module._libdeflate(),
             "isal": crc_module._isal()}  # zlib's first: the others' ratios are to it
    want = zlib.crc32(view)
    print(f"{args.mb} MB in 1 MB pieces, one thread, medians of {args.repeat}; tieeval "
          f"uses {crc_module.implementation()}\n")
    print("| implementation | GB/s | x zlib | same CRC as zlib |")
    print("| --- | ---: | ---: | --- |")
    speeds: dict = {}
    for name, fn in found.items():
        if fn is None:
            print(f"| {name} | not on this machine | | |")
            continue
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            crc = 0
            for lo in range(0, len(view), PIECE):
                crc = fn(view[lo:lo + PIECE], crc)
            times.append(time.perf_counter() - t0)
        speeds[name] = len(view) / statistics.median(times) / 1e9
        print(f"| {name} | {speeds[name]:.1f} | {speeds[name] / speeds['zlib']:.2f} | "
              f"{crc == want} |", flush=True)


if __name__ == "__main__":
    main()
