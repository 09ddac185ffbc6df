"""Optional fused count kernel (numba), installed with ``pip install "tieeval[fast]"``.

One pass over each row gives ``a`` (> positive), ``b`` (== positive), and the row maximum
with its count, where the numpy path needs four passes. Comparisons are the same ``>`` and
``==`` on the stored dtype, so the counts are identical (tests compare both paths). Rows
holding a NaN are left to the numpy path, which owns the NaN policies and their messages.

numpy alone stays a complete path, and the default one: the fused kernel is used only with
``TIEEVAL_KERNEL=numba`` (when numba is installed). Importing numba and loading the
compiled kernel costs about 0.3 s and 130 MB: chosen by the dump's size, it made a 4 GB
dump's peak memory twice a 400 MB dump's, where streaming keeps it independent of the row
count (``benchmarks/bench_memory.py``). It spends less CPU per score than the numpy
counts, which, with batches on every core, came within 3% of it on a quiet 2-core machine.
"""


from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

_KERNEL = None
_TRIED = False
_ON = False  # set per run by use()
# Worth compiling (or loading from numba's cache) only for batches at least this large.
MIN_SCORES = 1 << 20
DTYPES = (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64)


def _build() -> Any:
    from numba import njit

    def counts(scores: np.ndarray, positive: np.ndarray, a: np.ndarray, b: np.ndarray,
               top: np.ndarray) -> int:  # pragma: no cover - compiled
        rows, cols = scores.shape
        for i in range(rows):
            row = scores[i]
            p = row[positive[i]]
            m = row[0]
            ca = 0
            cb = 0
            nan = 0
            # branch-free, so LLVM vectorises it; the row stays in L1 for the second loop
            for j in range(cols):
                x = row[j]
                ca += x > p
                cb += x == p
                nan += x != x
                m = max(m, x)
            if nan:  # NaN: let the numpy path handle this batch
                return i
            cm = 0
            for j in range(cols):
                cm += row[j] == m
            a[i] = ca
            b[i] = cb
            top[i] = cm
        return -1

    return njit(cache=True, nogil=True, fastmath=False)(counts)


def kernel() -> Any:
    """The compiled kernel, or None when numba is missing or disabled."""
    global _KERNEL, _TRIED
    if not _TRIED:
        _TRIED = True
        if os.environ.get("TIEEVAL_KERNEL", "").lower() != "numpy":
            try:
                _KERNEL = _build()
            except ImportError:
                _KERNEL = None
    return _KERNEL


def available() -> bool:
    return kernel() is not None


def wanted(nbytes: int) -> bool:
    """Whether a run over ``nbytes`` of input should use the fused kernel: only when
    ``TIEEVAL_KERNEL=numba`` asks for it (see above), whatever the size."""
    mode = os.environ.get("TIEEVAL_KERNEL", "").lower()
    return mode == "numba" and importlib.util.find_spec("numba") is not None


def use(on: bool) -> None:
    """Turn the fused kernel on or off for the following batches of this process."""
    global _ON
    _ON = bool(on)


def active() -> bool:
    return _ON


def dense_abt(scores: np.ndarray, positive: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(a, b, top)`` for a dense batch, or None where the numpy path must run instead."""
    if not _ON or scores.size < MIN_SCORES or scores.dtype.type not in DTYPES or \
            not scores.dtype.isnative:
        return None
    k = kernel()
    if k is None:
        return None
    rows = scores.shape[0]
    a = np.empty(rows, dtype=np.int64)
    b = np.empty(rows, dtype=np.int64)
    top = np.empty(rows, dtype=np.int64)
    if k(scores, positive, a, b, top) >= 0:
        return None
    return a, b, top
