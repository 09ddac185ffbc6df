"""Batch arrays reused from one batch to the next, once nothing refers to them.

A reader that allocates a fresh array per batch leaves memory management to the C
allocator, and glibc's raises its mmap threshold after the first large free: batch-sized
arrays then come from the heap of whichever thread allocated them, where freed blocks are
neither returned to the system nor always reused, so the peak resident size drifts upward
with the number of batches read (one batch more every so often, more often on longer
dumps; ``benchmarks/bench_memory.py``). Reading into buffers handed back by batches no
longer in use keeps the memory at the batches actually in flight, whatever the dump's
length, and spares the page faults of fresh arrays.

A buffer is free when no Python object refers to it or to a view of it (its reference
count): numpy views keep their base alive, so a batch still being evaluated, or any array
made from it without a copy, keeps its buffer out of reuse.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays are cheap to allocate: not pooled
KEEP = 8  # buffers kept at most (the batches in flight: read-ahead, batch threads)

_LOCK = threading.Lock()
_FREE: list[np.ndarray] = []


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-order array of ``shape`` and ``dtype``, in the smallest free
    buffer that holds it (a dump's last, shorter batch reuses a full one: a fresh array
    there would add a batch to the peak at the very end)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype=dtype)
    with _LOCK:
        best = None
        for i in range(len(_FREE)):
            size = _FREE[i].nbytes
            # 2: the list's reference and getrefcount's own argument; nothing else
            if nbytes <= size <= 2 * nbytes and sys.getrefcount(_FREE[i]) == 2 and (
                    best is None or size < _FREE[best].nbytes):
                best = i
        buf = np.empty(nbytes, dtype=np.uint8) if best is None else _FREE.pop(best)
        _FREE.append(buf)
        del _FREE[:-KEEP]
    return buf[:nbytes].view(dtype).reshape(shape)


def release() -> None:
    """Forget the buffers (the end of a pass): those still in use live on with their
    batches, the others are freed."""
    with _LOCK:
        _FREE.clear()


def release_freed() -> None:
    """Return the C heap's free pages to the system after a phase of large temporaries
    (glibc's ``malloc_trim(0)``; nothing elsewhere).

    Arrays freed under glibc's raised mmap threshold (see the module docstring) stay in
    the heap, resident, wherever a live block sits above them; the arrays allocated next
    (a pass's batches) then add to that instead of reusing it, and the peak counts both.
    """
    import ctypes

    from tieeval.util.libc import function
    trim = function("malloc_trim", ctypes.c_size_t)
    if trim is not None:
        trim(0)


_WORK = threading.local()


def work(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised work array of ``shape``, the calling thread's own, reused by its
    next call (rows used while they are in the cache and then dropped): a fresh array
    each time would cost its page faults every time."""
    size = math.prod(shape)
    buf = getattr(_WORK, np.dtype(dtype).char, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_WORK, buf.dtype.char, buf)
    return buf[:size].reshape(shape)
