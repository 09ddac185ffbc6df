"""Exceptions raised by tieeval.

Every error a user can cause is a :class:`TieevalError`; the command line turns it into one
``Error: ...`` line on stderr and exit code 2. Anything else escaping is a bug.

Messages show values as Python prints them: numpy 2 scalars repr as ``np.float64(0.5)``,
which means nothing to a user who passed ``0.5`` (or whose file holds it). Values are
converted with :func:`plain` where a message is built, and every message is cleaned of any
numpy scalar repr that still reaches it (a value inside a list, an argument passed through).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from types import FrameType

from tieeval.util.escaping import escape

# np.float64(0.5), np.int64(-1), np.str_('x'), np.True_ (numpy >= 2 scalar reprs)
_NUMPY_REPR = re.compile(
    r"\bnp\.(?:float|int|uint|complex|longdouble|clongdouble|str_|bytes_|datetime64|"
    r"timedelta64)\w*\(((?:[^()'\"]|'[^']*'|\"[^\"]*\")*)\)")
_NUMPY_BOOL = re.compile(r"\bnp\.(True|False)_")


def plain(value: object) -> object:
    """``value`` as a plain Python object when it is a numpy scalar, else unchanged: what a
    message shows with ``!r``. A float keeps the digits its own dtype prints
    (``np.float32(0.9)`` -> ``0.9``, not float64's ``0.8999999761581421``).

    >>> import numpy as np
    >>> plain(np.float32(0.9)), plain(np.int64(-1)), plain("x")
    (0.9, -1, 'x')
    """
    item = getattr(value, "item", None)
    if item is None or type(value).__module__ != "numpy" or getattr(value, "ndim", 1) != 0:
        return value
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind == "f":
        return float(str(value))  # the shortest repr of the value in its own dtype
    return item()


def plain_text(message: str) -> str:
    """``message`` with numpy scalar reprs written as Python's (``np.float64(0.5)`` -> 0.5).

    >>> plain_text("got np.float64(-1.0) and [np.int64(2)], np.str_('x'), np.True_")
    "got -1.0 and [2], 'x', True"
    """
    return _NUMPY_BOOL.sub(r"\1", _NUMPY_REPR.sub(r"\1", message))


def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped (``\\n``): a
    message that quotes a damaged file's names or bytes stays one line, and none of it
    reads as a workflow command (see :func:`tieeval.util.escaping.escape`)."""
    return escape(text)


class TieevalError(Exception):
    """Base class: an error the user can fix (bad input or bad arguments). Its message is
    always one line (see :func:`one_line`)."""

    def __str__(self) -> str:
        return one_line(super().__str__())

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (plain_text(args[0]), *args[1:])
        super().__init__(*args)


class InputError(TieevalError, ValueError):
    """A score dump is missing, unreadable, malformed or holds values that cannot be ranked
    (a ``ValueError`` too, as :class:`ParameterError` is: both are bad values passed in)."""


class ParameterError(TieevalError, ValueError):
    """An argument is out of range or of the wrong type (for example K < 1)."""


class OutputError(TieevalError):
    """An output file cannot be written where asked: the target is a device, a folder or an
    input, its folder is missing or not writable, or the disk is full."""


class MissingExtraError(TieevalError):
    """An optional dependency is not installed (e.g. matplotlib for ``--plot``)."""


class TieevalWarning(UserWarning):
    """A figure holds but needs a note (a cutoff K larger than some rows' candidate list,
    where HR and NDCG saturate). The same text is in the result's ``warnings``; the
    command line prints that list and silences this category, so nothing prints twice."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str) -> None:
    """Emit ``message`` as a :class:`TieevalWarning` attributed to the first caller
    outside tieeval (the user's line, not the kernel's)."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, TieevalWarning, stacklevel=level)
