"""Sorting rows on every core inside one process.

numpy's ``argsort`` releases the GIL, and each row is sorted on its own, so blocks of rows
can be sorted by threads and the per-row orders are exactly those of one call: the
Original column does not change, only the time. Worker processes of ``--jobs`` sort on
one thread each (:func:`set_threads`), so that cores are not oversubscribed.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from typing import Any, Callable, Iterable, Iterator, TypeVar

from tieeval.util.stopping import Token, checkpoint, running

T = TypeVar("T")
U = TypeVar("U")  # a mapped function's result

_THREADS: int | None = None  # None: one per available core
_POOL: dict[int, Any] = {}
_LOCK = threading.Lock()
_LOCAL = threading.local()  # .inline: this thread evaluates a whole batch (map_batches)
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
    if getattr(_LOCAL, "inline", False):
        return 1
    env = os.environ.get("TIEEVAL_SORT_THREADS")
    if env is not None and env.strip().isdigit() and int(env) >= 1:
        return int(env)
    return _THREADS if _THREADS is not None else available_cores()


def _pool(count: int) -> Any:
    from concurrent.futures import ThreadPoolExecutor
    with _LOCK:
        if count not in _POOL:
            _POOL[count] = ThreadPoolExecutor(max_workers=count,
                                              thread_name_prefix="tieeval-sort")
        return _POOL[count]


def map_blocks(fn: Callable[..., Any], blocks: list[Any],
               sizes: list[Any] | None = None) -> list[Any]:
    """``[fn(block) for block in blocks]``, on several threads when there are several
    blocks of real work; results in block order."""
    count = min(threads(), len(blocks))
    if count <= 1 or (sizes is not None and sum(sizes) < 2 * MIN_BLOCK_SCORES):
        return [fn(block) for block in blocks]
    return list(_pool(count).map(fn, blocks))


def map_batches(fn: Callable[[T], U], items: Iterable[T]) -> Iterator[U]:
    """``fn(item)`` for each of ``items`` (an iterator, consumed in order), at most one
    item per sort thread in flight (:func:`_map`)."""
    return _map(fn, items, threads())


def map_tasks(fn: Callable[[T], U], items: list[T]) -> Iterator[U]:
    """``fn(item)`` for each of ``items``, all queued on the sort threads at once (each
    thread takes the next item as soon as it is free; :func:`_map`). Items are cheap (a
    task that reads its own batch), so only the threads' own work is in memory."""
    return _map(fn, items, None)


def _map(fn: Callable[[T], U], items: Iterable[T], ahead: int | None) -> Iterator[U]:
    """``fn(item)`` for each of ``items`` on the sort threads, at most ``ahead`` in flight
    (None: all queued at once): results are yielded in item order, and not kept here once
    yielded. Inside ``fn``, :func:`threads` is 1 (a batch's own sorts stay in its thread).
    An error is raised where its item's result would be yielded; the items not started
    are dropped, those running stop at their next
    :func:`~tieeval.util.stopping.checkpoint` (as on an interrupt, or when the consumer
    stops) and are waited for. A single item, or a single thread, runs in the caller, its
    own sorts on every thread."""
    count = threads()
    rest = iter(items)
    head = list(itertools.islice(rest, 2))
    if len(head) <= 1 or count <= 1:
        for item in itertools.chain(_drain(head), rest):
            yield fn(item)
        return

    token = Token()

    def inline(item: T) -> U:
        _LOCAL.inline = True
        try:
            with running(token):
                checkpoint()  # queued before the caller stopped: not started at all
                return fn(item)
        finally:
            _LOCAL.inline = False
    pool = _pool(count)
    pending: deque[Any] = deque()
    try:
        for item in itertools.chain(_drain(head), rest):
            pending.append(pool.submit(inline, item))
            if ahead is not None and len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # an error, an interrupt or a consumer that stopped: those running stop
        token.stop()
        _settle(list(pending))


def _settle(futures: list[Any]) -> None:
    """Cancel the futures not started and wait for those running, stopped (their errors
    dropped: the first error is already raised, or the consumer stopped)."""
    for future in futures:
        future.cancel()
    for future in futures:
        if not future.cancelled():
            try:
                future.result()
            except BaseException:  # noqa: BLE001 - the first error is already raised
                pass


def _drain(items: list[Any]) -> Iterator[Any]:
    """The items of a list, each dropped from it as it is yielded (no batch is held longer
    than its turn)."""
    while items:
        yield items.pop(0)
