"""The CRC-32 of a stored NPZ member's bytes: computed, and joined over adjacent pieces,
so that pieces read out of order (by several threads) still give the CRC-32 of the whole.

:func:`crc32` is zlib's function, computed by libdeflate's where the ``deflate`` package
builds it into its extension module (``pip install "tieeval[fast]"``: a recent libdeflate,
with the wide carry-less multiplications of recent x86 cores, about 18 GB/s a core here
against zlib's 3 GB/s; ``benchmarks/bench_crc32.py``, on pieces in cache), and by zlib's
otherwise. libdeflate's is called through :mod:`ctypes`, which releases the GIL for the
call, so that threads reading different rows compute their CRC-32s at once (the
package's own ``crc32`` holds it). It is the one cost of a stored NPZ that an NPY does
not pay. ``TIEEVAL_CRC32=zlib`` asks for zlib's; :func:`implementation` names the one in
use. The choice is made at the first CRC-32, not at import; a library that does not give
the known CRC-32s of a few test strings is not used.

``combine(crc(A), crc(B), len(B)) == crc(A + B)``: zlib's ``crc32_combine``, which Python's
zlib does not expose, written as zlib 1.2.12 does it (multiplication modulo the CRC
polynomial, with the powers ``x**(2**k)`` tabled). Each join costs about 60 small Python
integer multiplications, whatever the lengths.
"""

from __future__ import annotations

import os
import zlib
from functools import cache, lru_cache
from typing import Any, Callable

import numpy as np

_KNOWN = ((b"", 0), (b"123456789", 0xCBF43926),  # the CRC-32 check value
          (bytes(range(256)) * 41, zlib.crc32(bytes(range(256)) * 41)))


def _deflate() -> Callable | None:
    """``libdeflate_crc32`` from the ``deflate`` package's extension module (0.8 and
    later build libdeflate into it, its functions exported), through ctypes, or None:
    the package not installed, or a build that does not export it (Windows)."""
    import ctypes

    from tieeval.util.libc import function
    try:
        from deflate import _deflate as extension
    except (ImportError, OSError):  # not installed, or its library does not load
        return None
    path = getattr(extension, "__file__", None)
    fn = path and function("libdeflate_crc32", ctypes.c_uint32, ctypes.c_void_p,
                           ctypes.c_size_t, restype=ctypes.c_uint32, library=path)
    if not fn:
        return None

    def libdeflate_crc32(data: Any, value: int = 0) -> int:
        # the GIL is released for the call (ctypes does), as zlib's is
        if isinstance(data, bytes):
            return fn(value, data, len(data))
        view = np.frombuffer(data, dtype=np.uint8)  # any contiguous buffer, no copy
        return fn(value, view.ctypes.data, view.nbytes) if view.nbytes else value

    return libdeflate_crc32


def _works(fn: Callable) -> bool:
    try:
        return all(fn(data) == crc for data, crc in _KNOWN) and \
            fn(b"56789", fn(b"1234")) == 0xCBF43926 and \
            fn(memoryview(bytearray(b"123456789"))) == 0xCBF43926
    except Exception:  # a library that misbehaves is not used  # pragma: no cover
        return False


def _choose(asked: str | None) -> tuple[str, Callable]:
    fn = None if asked == "zlib" else _deflate()
    return ("deflate", fn) if fn is not None and _works(fn) else ("zlib", zlib.crc32)


@cache  # two threads may both choose: the same choice
def _chosen() -> tuple[str, Callable]:
    return _choose(os.environ.get("TIEEVAL_CRC32", "").strip().lower() or None)


def implementation() -> str:
    """The CRC-32 in use: ``deflate`` (libdeflate's) or ``zlib``."""
    return _chosen()[0]


def crc32(data: Any, value: int = 0) -> int:
    """The CRC-32 of ``data`` (any contiguous buffer), extending ``value``: zlib's
    ``crc32``, computed by libdeflate's where the ``deflate`` package is installed."""
    return _chosen()[1](data, value)

_POLY = 0xEDB88320  # the CRC-32 polynomial, reflected


def _multmodp(a: int, b: int) -> int:
    """``a * b`` modulo the CRC-32 polynomial (bit-reflected, as zlib keeps CRCs)."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if a & (m - 1) == 0:
                break
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return p


def _powers() -> list[int]:
    table = [1 << 30]  # x**1
    for _ in range(31):
        table.append(_multmodp(table[-1], table[-1]))
    return table


_X2N = _powers()  # _X2N[k] = x**(2**k) modulo the polynomial


@lru_cache(maxsize=64)  # a dump's pieces mostly share a few lengths: each is worked out once
def _x2nmodp(n: int, k: int) -> int:
    """``x**(n * 2**k)`` modulo the polynomial."""
    p = 1 << 31  # x**0
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of ``A + B`` from ``crc1 = crc32(A)``, ``crc2 = crc32(B)`` and
    ``len2 = len(B)`` (bytes)."""
    return _multmodp(_x2nmodp(len2, 3), crc1 & 0xFFFFFFFF) ^ (crc2 & 0xFFFFFFFF)
