"""C functions that Python does not expose, looked up once: the C library's own (glibc's
heap controls) or a shared library's (libdeflate's CRC-32); None where there is no such
function (another C library, another system, a library not installed)."""

from __future__ import annotations

import sys
from functools import lru_cache


@lru_cache(maxsize=None)
def function(name: str, *argtypes, restype=None, library: str | None = None):
    """``name`` with the given ctypes argument types (and ``restype``, where given), from
    the shared library ``library`` (None: the C library, on Linux), or None."""
    if library is None and not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        found = getattr(ctypes.CDLL(library), name)
    except (OSError, AttributeError):  # no such library, or one without it (musl)
        return None
    found.argtypes = list(argtypes)
    if restype is not None:
        found.restype = restype
    return found


__all__ = ["function"]
