"""What the timing scripts share: where the data lives, the median of repeated runs, and the
Markdown table of timings relative to one baseline row.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and
they import this module as ``_common``.
"""

from __future__ import annotations

import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")

# Fresh processes run with Python's bytecode cache on, as an installed package does (pip
# compiles it at install): with PYTHONDONTWRITEBYTECODE set, every run would compile
# tieeval's modules from source again (0.1-0.3 s of each CLI run). The cache goes under
# data/ so that timing never writes next to the sources.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(DATA, "pycache"))


def warm_up() -> None:
    """Run the CLI once on a single-positive and a labelled dump, so that the bytecode of
    every module the timed runs import is cached before the first timed run."""
    import subprocess
    import sys

    import numpy as np
    os.makedirs(DATA, exist_ok=True)
    scores = np.arange(60, dtype=np.float32).reshape(6, 10) % 7
    for name, arrays in (("warm_up_single.npz", {"scores": scores}),
                         ("warm_up_labels.npz", {"scores": scores,
                                                 "labels": (scores > 4).astype(np.int8)})):
        path = os.path.join(DATA, name)
        if not os.path.exists(path):
            np.savez(path, **arrays)
        subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "-q", "-f", "json"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def median_time(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn()``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def print_timings(results: dict[str, float], base: float, baseline: str) -> None:
    """``| what | seconds | relative to BASELINE |``, one row per entry of ``results``."""
    print(f"| what | seconds | relative to {baseline} |")
    print("| --- | ---: | ---: |")
    for name, t in results.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")
