"""This checkout against another one: the same dumps, the same rounds, fresh processes.

    python benchmarks/bench_against.py --against DIR [--repeat 7] [--only sampled,graded,...]
                                       [--cold] [--jobs N]

``DIR`` is another checkout of tieeval (``git worktree add /tmp/old <commit>``). Each
round runs, for this checkout and then for ``DIR`` (``PYTHONPATH`` pointing at it, from a
directory holding neither, so that no other copy is imported):

* the API: a fresh interpreter calls ``tieeval.evaluate_path(DUMP)`` once to import and
  warm up, then times a second call with its own clock;
* the CLI: ``python -m tieeval compare DUMP -q -f json``, wall time, start-up included
  (bytecode cache on, under ``benchmarks/data/pycache``).

Printed per dump: the median seconds of each, and the median of the per-round ratios
(this checkout over ``DIR``): below 1 this checkout is faster. The dumps are
``bench_floor.py``'s sampled 1,000,000 x 101 (tied and tie-free; the default metrics) and
``bench_labelled.py``'s graded 100,000 x 200 (``-m NDCG@10``), written once; with
``--only``, also ``allitem`` (all-item 20,000 x 10,000, tied and tie-free) and ``npz`` (the
two tie-free dumps as stored NPZ, their CRC-32 check included).

``--cold``: the page cache is dropped before every run (``sync``, then 3 written to
``/proc/sys/vm/drop_caches``: root only), so that each run reads the dump from disk; the
API then times its first call (after the import). The environment reaches every run of
both checkouts: ``TIEEVAL_SORT_THREADS=1 python benchmarks/bench_against.py ...`` compares
them on one thread, ``TIEEVAL_CRC32=zlib`` with zlib's CRC-32.

``--jobs N``: both checkouts run with ``N`` worker processes (``evaluate_path(...,
jobs=N)``, ``compare --jobs N``): a pool where the machine would not start one (it starts
none on fewer than 5 cores), to time the workers' reading.

The machine is small and shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _common import HERE

ROOT = os.path.dirname(HERE)
API = """
import sys, time, tieeval
cold, jobs, path = sys.argv[1] == "cold", int(sys.argv[2]), sys.argv[3]
metrics = sys.argv[4:] or None
if not cold:
    tieeval.evaluate_path(path, metrics, jobs=jobs)
t = time.perf_counter()
tieeval.evaluate_path(path, metrics, jobs=jobs)
print(time.perf_counter() - t)
"""


def dumps(only: list[str]) -> list[tuple[str, str, list[str]]]:
    out = []
    if "sampled" in only:
        import bench_floor
        for tied in (True, False):
            out.append((f"sampled {'tied' if tied else 'tie-free'} 1,000,000 x 101",
                        bench_floor.write("sampled", 1_000_000, 101, tied), []))
    if "allitem" in only:
        import bench_floor
        for tied in (True, False):
            out.append((f"all-item {'tied' if tied else 'tie-free'} 20,000 x 10,000",
                        bench_floor.write("all-item", 20_000, 10_000, tied), []))
    if "npz" in only:  # the tie-free dumps as stored NPZ: their CRC-32 check included
        import bench_floor
        for name, rows, cols in (("sampled", 1_000_000, 101), ("all-item", 20_000, 10_000)):
            out.append((f"{name} tie-free {rows:,} x {cols:,}, stored NPZ",
                        bench_floor.as_npz(bench_floor.write(name, rows, cols, False)), []))
    if "graded" in only:
        import bench_labelled
        out.append(("graded 100,000 x 200, NDCG@10", bench_labelled.make_graded(),
                    ["NDCG@10"]))
    return out


def drop_caches() -> None:
    """Empty the page cache (root only): the next read of a dump comes from disk."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as out:
        out.write("3\n")


def api(root: str, path: str, metrics: list[str], cwd: str, cold: bool = False,
        jobs: int = 1) -> float:
    if cold:
        drop_caches()
    got = subprocess.run([sys.executable, "-c", API, "cold" if cold else "warm", str(jobs),
                          path, *metrics], cwd=cwd,
                         env={**os.environ, "PYTHONPATH": root}, capture_output=True,
                         text=True, check=True)
    return float(got.stdout)


def cli(root: str, path: str, metrics: list[str], cwd: str, cold: bool = False,
        jobs: int | None = None) -> float:
    if cold:
        drop_caches()
    options = [x for m in metrics for x in ("-m", m)]
    if jobs is not None:
        options += ["--jobs", str(jobs)]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tieeval", "compare", path, *options, "-q", "-f",
                    "json"], cwd=cwd, env={**os.environ, "PYTHONPATH": root},
                   capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="another checkout of tieeval")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="sampled,graded")
    ap.add_argument("--cold", action="store_true",
                    help="drop the page cache before every run (root only)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="worker processes for both checkouts (default: each's own choice)")
    args = ap.parse_args()
    other = os.path.abspath(args.against)
    if not os.path.isfile(os.path.join(other, "tieeval", "__init__.py")):
        sys.exit(f"{other}: not a checkout of tieeval")
    cwd = tempfile.mkdtemp()  # neither checkout on sys.path[0]
    threads = os.environ.get("TIEEVAL_SORT_THREADS")
    print(f"this checkout ({ROOT}) against {other}; medians of {args.repeat} rounds"
          + ("; page cache dropped before every run" if args.cold else "")
          + (f"; TIEEVAL_SORT_THREADS={threads}" if threads else "")
          + (f"; --jobs {args.jobs}" if args.jobs is not None else "") + "\n")
    print("| dump | API s | API s, other | API ratio | CLI s | CLI s, other | CLI ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, path, metrics in dumps(args.only.split(",")):
        for root in (ROOT, other):  # warm the bytecode caches
            cli(root, path, metrics, cwd)
        times: dict = {}
        for _ in range(args.repeat):
            for tag, root in (("this", ROOT), ("other", other)):
                times.setdefault(("api", tag), []).append(
                    api(root, path, metrics, cwd, args.cold,
                        1 if args.jobs is None else args.jobs))
                times.setdefault(("cli", tag), []).append(
                    cli(root, path, metrics, cwd, args.cold, args.jobs))
        cells = []
        for kind in ("api", "cli"):
            mine, theirs = times[(kind, "this")], times[(kind, "other")]
            ratio = statistics.median(a / b for a, b in zip(mine, theirs))
            cells += [f"{statistics.median(mine):.3f}", f"{statistics.median(theirs):.3f}",
                      f"{ratio:.2f}x"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
