"""The C heap of a process that evaluates a dump: freed memory kept for the next batch.

A pass allocates and frees the same temporaries batch after batch (a batch's keys, orders
and per-row sums, from a few hundred KB to a few MB each, in every batch thread). Under
glibc's defaults the mmap threshold adapts to the largest block freed so far and the heap
is handed back to the system whenever its free top exceeds twice that threshold, so each
batch faults its temporaries in afresh: the kernel zeroes the same pages again and again
(40,000-50,000 page faults on a 100,000 x 200 graded dump, 200,000-270,000 on a
10,000,000 x 101 one, a tenth to a fifth of the run's time on the latter).

:func:`keep_freed_heap` fixes the mmap threshold at :data:`MMAP_BYTES` (larger arrays are
still mapped and unmapped whole, as the readers' batch buffers are) and the trim threshold
at :data:`TRIM_BYTES`, so freed heap pages stay mapped and are reused by the next batch.
The peak resident size does not change (``benchmarks/bench_memory.py``: the heap is reused,
not grown); a trim threshold of 1 GB, tried first, let a 10M-row Parquet dump's peak
creep up by 11 MB over the 1M-row one's, where 64 MB keeps it flat and saves the same
page faults. It is the process's choice, so the command line and its worker processes make
it; the library leaves the allocator of a program that imports it alone.
"""

from __future__ import annotations

MMAP_BYTES = 4 << 20  # blocks at least this large are mapped on their own
TRIM_BYTES = 64 << 20  # the heap's free top is returned to the system beyond this

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
_M_MMAP_THRESHOLD = -3
_kept = False  # whether this process set them (its workers then do too)


def keep_freed_heap() -> bool:
    """Set glibc's mmap and trim thresholds (see the module docstring); whether they were
    set (False elsewhere: another C library, another system)."""
    import ctypes

    from tieeval.util.libc import function
    mallopt = function("mallopt", ctypes.c_int, ctypes.c_int)
    if mallopt is None:
        return False
    global _kept
    _kept = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) & bool(mallopt(_M_TRIM_THRESHOLD,
                                                                         TRIM_BYTES))
    return _kept


def kept() -> bool:
    """Whether :func:`keep_freed_heap` set the thresholds in this process."""
    return _kept


__all__ = ["keep_freed_heap", "kept", "MMAP_BYTES", "TRIM_BYTES"]
