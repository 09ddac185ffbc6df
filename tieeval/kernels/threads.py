"""Sorting rows on every core inside one process.

numpy's ``argsort`` releases the GIL, and each row is sorted on its own, so blocks of rows
can be sorted by threads and the per-row orders are exactly those of one call: the
Original column does not change, only the time. Worker processes of ``--jobs`` sort on
one thread each (:func:`set_threads`), so that cores are not oversubscribed.
"""

from __future__ import annotations

import os
import threading

_THREADS: int | None = None  # None: one per available core
_POOL: dict = {}
_LOCK = threading.Lock()
MIN_BLOCK_SCORES = 1 << 16  # below this many scores a block is sorted in the caller


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def set_threads(count: int | None) -> None:
    """Threads for row sorts: ``None`` one per core, ``1`` the calling thread only."""
    global _THREADS
    _THREADS = count


def threads() -> int:
    env = os.environ.get("TIEEVAL_SORT_THREADS")
    if env is not None and env.strip().isdigit() and int(env) >= 1:
        return int(env)
    return _THREADS if _THREADS is not None else available_cores()


def _pool(count: int):
    from concurrent.futures import ThreadPoolExecutor
    with _LOCK:
        if count not in _POOL:
            _POOL[count] = ThreadPoolExecutor(max_workers=count,
                                              thread_name_prefix="tieeval-sort")
        return _POOL[count]


def map_blocks(fn, blocks: list, sizes: list | None = None) -> list:
    """``[fn(block) for block in blocks]``, on several threads when there are several
    blocks of real work; results in block order."""
    count = min(threads(), len(blocks))
    if count <= 1 or (sizes is not None and sum(sizes) < 2 * MIN_BLOCK_SCORES):
        return [fn(block) for block in blocks]
    return list(_pool(count).map(fn, blocks))
