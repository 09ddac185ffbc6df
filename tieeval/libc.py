"""The C library's own functions that Python does not expose (glibc's heap controls),
looked up once: None where there is no such function (another C library, another
system)."""

from __future__ import annotations

import sys
from functools import lru_cache


@lru_cache(maxsize=None)
def function(name: str, *argtypes):
    """The C library's ``name`` with the given ctypes argument types, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        found = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # no C library to ask, or one without it (musl)
        return None
    found.argtypes = list(argtypes)
    return found


__all__ = ["function"]
