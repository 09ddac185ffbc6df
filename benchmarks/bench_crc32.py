"""The CRC-32 implementations a stored NPZ can be checked with, on this machine.

    python benchmarks/bench_crc32.py [--mb 400] [--repeat 7]

tieeval checks a stored NPZ member's CRC-32 on the bytes as the reader feeds them, 1 MB
pieces in the threads that read them (``tieeval/io/npy.py``), with libdeflate's as the
``deflate`` package builds it (the ``fast`` extra, through ctypes) where it is installed,
zlib's otherwise (``tieeval/io/crc32.py``). This prints, for each one present, the median
throughput over ``--mb`` MB of random float32 in those 1 MB pieces, cycling over 4 MB of
them (in cache, as a piece is just after it is read: the CRC's own cost, no reading), on
one thread and on two threads at once (each its own pieces: an implementation that holds
the GIL gains nothing from the second), and checks that each gives zlib's CRC bit for
bit.
``TIEEVAL_CRC32`` does not matter here: every implementation is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tieeval.io import crc32 as crc_module

PIECE = 1 << 20  # tieeval.io.npy.CRC_PIECE
HOT = 4  # pieces cycled over: 4 MB, in cache


def timed(fn, views: list, pieces: int) -> tuple[float, int]:
    """Seconds for ``pieces`` CRC-32 calls over ``views`` in turn, and the CRC chained."""
    t0 = time.perf_counter()
    crc = 0
    for i in range(pieces):
        crc = fn(views[i % len(views)], crc)
    return time.perf_counter() - t0, crc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    pieces = [memoryview(rng.random(PIECE // 4, dtype=np.float32)).cast("B")
              for _ in range(2 * HOT)]  # the first HOT for one thread, the rest for another
    # zlib's first: the other's ratio is to it
    found = {"zlib": zlib.crc32, "deflate": crc_module._deflate()}
    want = zlib.crc32(b"".join(bytes(pieces[i % HOT]) for i in range(2 * HOT)))
    print(f"{args.mb} MB in 1 MB pieces (4 MB cycled, in cache), medians of {args.repeat}; "
          f"tieeval uses {crc_module.implementation()}\n")
    print("| implementation | GB/s, one thread | x zlib | GB/s, two threads | "
          "same CRC as zlib |")
    print("| --- | ---: | ---: | ---: | --- |")
    speeds: dict = {}
    with ThreadPoolExecutor(2) as pool:
        for name, fn in found.items():
            if fn is None:
                print(f"| {name} | not on this machine | | | |")
                continue
            one, two = [], []
            for _ in range(args.repeat):
                one.append(timed(fn, pieces[:HOT], args.mb)[0])
                t0 = time.perf_counter()  # each thread half of the pieces: the same bytes
                list(pool.map(timed, (fn, fn), (pieces[:HOT], pieces[HOT:]),
                              (args.mb // 2, args.mb // 2)))
                two.append(time.perf_counter() - t0)
            crc = timed(fn, pieces[:HOT], 2 * HOT)[1]
            speeds[name] = args.mb * PIECE / statistics.median(one) / 1e9
            both = (args.mb // 2) * 2 * PIECE / statistics.median(two) / 1e9
            print(f"| {name} | {speeds[name]:.1f} | {speeds[name] / speeds['zlib']:.2f} | "
                  f"{both:.1f} | {crc == want} |", flush=True)

if __name__ == "__main__":
    main()
