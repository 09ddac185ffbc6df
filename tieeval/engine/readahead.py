"""Reading the next batch while the current one is evaluated.

Reading a batch (a positioned read of an NPY or stored NPZ, a Parquet row group decoded
by pyarrow, an inflated NPZ member) spends most of its time outside the GIL, as do the
kernels' sorts and counts; one background thread that fetches batch i + 1 while batch i is
evaluated overlaps the two. Batches arrive in the same order, with the same contents, and
an error raised while reading is raised where that batch would have been read: results
cannot change, only the time. At most one batch is read ahead, so memory grows by one
batch at most.
"""

from __future__ import annotations

from typing import Iterator, TypeVar

T = TypeVar("T")
_END = object()
MIN_AHEAD_BYTES = 4 << 20  # below this many bytes per batch the thread costs more than it saves


def read_ahead(batches: Iterator[T]) -> Iterator[T]:
    """``batches``, each fetched in a background thread while the previous one is used.

    The first batch is read in the caller; a batch of fewer than
    :data:`MIN_AHEAD_BYTES` bytes (``nbytes``), or a machine with one core, keeps reading
    in the caller. The source generator is closed in the caller's thread, after any read
    in flight has finished.
    """
    from tieeval.kernels.threads import threads

    first = next(batches, _END)
    if first is _END:
        return
    # batches are yielded from a one-item list, so that this frame holds none of them
    # while the consumer works (a local name would keep the last one alive)
    box = [first]
    del first
    if threads() < 2 or int(getattr(box[0], "nbytes", 0) or 0) < MIN_AHEAD_BYTES:
        yield box.pop()  # type: ignore[misc]
        yield from batches
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tieeval-read")
    pending = None
    try:
        while True:
            pending = pool.submit(next, batches, _END)
            yield box.pop()  # type: ignore[misc]
            box.append(pending.result())
            pending = None
            if box[0] is _END:
                return
    finally:
        if pending is not None:  # let a read in flight finish before closing its source
            try:
                pending.result()
            except BaseException:  # noqa: BLE001 - the consumer's own error wins
                pass
        pool.shutdown(wait=True)
        close = getattr(batches, "close", None)
        if close is not None:
            close()
