"""Command-line start-up: how long a fresh ``tieeval`` process takes on a small dump, and what
it imports.

    python benchmarks/bench_startup.py [--repeat 20] [--against DIR]

Each command runs ``--repeat`` times in a fresh process, the rounds interleaving the
commands (and, with ``--against DIR``, the same commands run with ``PYTHONPATH=DIR``, for
instance an older checkout: both in the same rounds, so that the ratios hold on a noisy
machine). Printed: the median wall time of each, the ratio to the floor (a fresh
interpreter importing numpy, what any numpy script pays), and the modules each imports
(counted once, from ``python -X importtime``). The dump is a seeded 10,000 x 101 float32 NPY
(4 MB), written to benchmarks/data/ once.

The commands: ``tieeval --help``, ``tieeval compare --help``, ``tieeval compare DUMP -f
json`` and ``tieeval compare DUMP`` (the default table, stdout a pipe).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from _common import DATA, HERE

ROOT = os.path.dirname(HERE)
NUMPY = [sys.executable, "-c", "import numpy"]


def dump() -> str:
    path = os.path.join(DATA, "startup_10000x101.npy")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        rng = np.random.default_rng(0)
        np.save(path + ".tmp.npy", rng.normal(size=(10_000, 101)).astype(np.float32))
        os.replace(path + ".tmp.npy", path)
    return path


def commands(path: str) -> dict:
    cli = [sys.executable, "-m", "tieeval"]
    return {"tieeval --help": cli + ["--help"],
            "tieeval compare --help": cli + ["compare", "--help"],
            "compare small.npy -f json": cli + ["compare", path, "-q", "-f", "json"],
            "compare small.npy (table)": cli + ["compare", path, "-q"]}


def env_for(tree: str) -> dict:
    """The environment of a run importing the tieeval package in ``tree`` (every run starts
    in this folder: ``python -m`` puts the working folder first on the path, and a
    checkout's root would shadow ``tree``)."""
    return dict(os.environ, PYTHONPATH=tree)


def modules(cmd: list, env: dict) -> tuple[int, list[str]]:
    """How many modules ``cmd`` imports, and which of the optional heavy ones."""
    err = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=HERE,
                         capture_output=True, text=True).stderr
    names = [line.split("|")[-1].strip() for line in err.splitlines()
             if line.startswith("import time:") and "self [us]" not in line]
    heavy = sorted({n.split(".")[0] for n in names
                    if n.split(".")[0] in ("pyarrow", "scipy", "pyspark", "rich", "pandas",
                                           "torch", "numba", "matplotlib")})
    return len(names), heavy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--against", default=None,
                    help="a folder holding another tieeval package, run in the same rounds")
    args = ap.parse_args()
    path = dump()
    trees = {"this": ROOT}
    if args.against:
        trees["against"] = os.path.abspath(args.against)
    runs = {("floor", "this"): (NUMPY, env_for(ROOT))}
    for name, cmd in commands(path).items():
        for tree, folder in trees.items():
            runs[(name, tree)] = (cmd, env_for(folder))
    for cmd, env in runs.values():  # bytecode cached before the first timed run
        subprocess.run(cmd, env=env, cwd=HERE, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    times: dict = {key: [] for key in runs}
    for _ in range(args.repeat):
        for key, (cmd, env) in runs.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=HERE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=True)
            times[key].append(time.perf_counter() - t0)
    load = os.getloadavg()
    print(f"numpy {np.__version__}, medians of {args.repeat} interleaved rounds, load "
          f"average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    head = "| command | " + " | ".join(
        f"{tree} s (x floor) | {tree} modules" for tree in trees)
    if "against" in trees:
        head += " | this / against |"
    print(head if head.endswith("|") else head + " |")
    print("| --- |" + " ---: | ---: |" * len(trees) + (" ---: |" if "against" in trees else ""))
    floor = times[("floor", "this")]
    empty = 2 * len(trees) - 1 + ("against" in trees)
    print(f"| python -c 'import numpy' (the floor) | {statistics.median(floor):.3f} |"
          + " |" * empty)
    for name in commands(path):
        cells = []
        for tree in trees:
            t = times[(name, tree)]
            ratio = statistics.median(a / b for a, b in zip(t, floor))
            count, heavy = modules(*runs[(name, tree)])
            cells += [f"{statistics.median(t):.3f} ({ratio:.2f}x)",
                      f"{count}" + (f" ({', '.join(heavy)})" if heavy else "")]
        if "against" in trees:
            pairs = zip(times[(name, "this")], times[(name, "against")])
            cells.append(f"{statistics.median(a / b for a, b in pairs):.2f}x")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
