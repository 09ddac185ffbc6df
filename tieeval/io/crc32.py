"""The CRC-32 of a stored NPZ member's bytes: computed, and joined over adjacent pieces,
so that pieces read out of order (by several threads) still give the CRC-32 of the whole.

:func:`crc32` is the fastest of four implementations of the same function (bit for bit)
that this machine has, tried in this order: libdeflate's as the ``deflate`` package builds
it into its extension module (``pip install "tieeval[fast]"``: a recent libdeflate, with
the wide carry-less multiplications of recent x86 cores, about 18 GB/s a core here),
ISA-L's where the ``isal`` package is installed (about 10 GB/s), libdeflate's where the
system has the ``libdeflate`` shared library (about 9 GB/s with Debian 12's 1.14), zlib's
otherwise (about 3 GB/s; ``benchmarks/bench_crc32.py``, on pieces in cache). Both
libdeflates are called through :mod:`ctypes`, which releases the GIL for the call, so
that threads reading different rows compute their CRC-32s at once (the ``deflate``
package's own ``crc32`` holds it). It is the one cost of a stored NPZ that an NPY does
not pay. The environment variable ``TIEEVAL_CRC32`` (``deflate``, ``isal``,
``libdeflate`` or ``zlib``) asks for one (the others, in order, where it is missing;
zlib's alone for ``zlib``); :func:`implementation` names the one in use. The choice is
made at the first CRC-32, not at import; a library that is found but does not give the
known CRC-32s of a few test strings is not used.

``combine(crc(A), crc(B), len(B)) == crc(A + B)``: zlib's ``crc32_combine``, which Python's
zlib does not expose, written as zlib 1.2.12 does it (multiplication modulo the CRC
polynomial, with the powers ``x**(2**k)`` tabled). Each join costs about 60 small Python
integer multiplications, whatever the lengths.
"""

from __future__ import annotations

import os
import sys
import zlib
from functools import lru_cache
from typing import Any, Callable

import numpy as np

_LIBDEFLATE = {"darwin": ("libdeflate.0.dylib", "libdeflate.dylib"),
               "win32": ("libdeflate.dll", "deflate.dll")}
_KNOWN = ((b"", 0), (b"123456789", 0xCBF43926),  # the CRC-32 check value
          (bytes(range(256)) * 41, zlib.crc32(bytes(range(256)) * 41)))


def _isal() -> Callable | None:
    try:
        from isal.isal_zlib import crc32 as isal_crc32
    except (ImportError, OSError):  # not installed, or its library does not load
        return None
    return isal_crc32


def _libdeflate(libraries: tuple[str, ...] | None = None) -> Callable | None:
    """``libdeflate_crc32`` from the first of ``libraries`` that has it (default: the
    system's shared library), or None."""
    import ctypes

    from tieeval.util.libc import function
    if libraries is None:
        libraries = _LIBDEFLATE.get(sys.platform, ("libdeflate.so.0", "libdeflate.so"))
    for name in libraries:
        fn = function("libdeflate_crc32", ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                      restype=ctypes.c_uint32, library=name)
        if fn is None:
            continue

        def libdeflate_crc32(data: Any, value: int = 0, _fn=fn) -> int:
            # the GIL is released for the call (ctypes does), as zlib's and ISA-L's do
            if isinstance(data, bytes):
                return _fn(value, data, len(data))
            view = np.frombuffer(data, dtype=np.uint8)  # any contiguous buffer, no copy
            return _fn(value, view.ctypes.data, view.nbytes) if view.nbytes else value

        return libdeflate_crc32
    return None


def _deflate() -> Callable | None:
    """``libdeflate_crc32`` from the ``deflate`` package's extension module (0.8 and
    later build libdeflate into it, its functions exported), through ctypes, or None:
    the package not installed, or a build that does not export it (Windows)."""
    try:
        from deflate import _deflate as extension
    except (ImportError, OSError):  # not installed, or its library does not load
        return None
    path = getattr(extension, "__file__", None)
    return _libdeflate((path,)) if path else None


def _works(fn: Callable) -> bool:
    try:
        return all(fn(data) == crc for data, crc in _KNOWN) and \
            fn(b"56789", fn(b"1234")) == 0xCBF43926 and \
            fn(memoryview(bytearray(b"123456789"))) == 0xCBF43926
    except Exception:  # a library that misbehaves is not used  # pragma: no cover
        return False


def _choose(asked: str | None) -> tuple[str, Callable]:
    found = {"deflate": _deflate, "isal": _isal, "libdeflate": _libdeflate}
    order = [] if asked == "zlib" else sorted(found, key=lambda name: name != asked)
    for name in order:
        fn = found[name]()
        if fn is not None and _works(fn):
            return name, fn
    return "zlib", zlib.crc32


_CHOSEN: tuple[str, Callable] | None = None


def _chosen() -> tuple[str, Callable]:
    global _CHOSEN
    if _CHOSEN is None:  # two threads may both choose: the same choice
        _CHOSEN = _choose(os.environ.get("TIEEVAL_CRC32", "").strip().lower() or None)
    return _CHOSEN


def implementation() -> str:
    """The CRC-32 in use: ``deflate``, ``isal``, ``libdeflate`` or ``zlib``."""
    return _chosen()[0]


def crc32(data: Any, value: int = 0) -> int:
    """The CRC-32 of ``data`` (any contiguous buffer), extending ``value``: zlib's
    ``crc32``, computed by the fastest implementation found."""
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
