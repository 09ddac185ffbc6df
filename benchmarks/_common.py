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
