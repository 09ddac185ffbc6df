"""Exceptions raised by tieeval.

Every error a user can cause is a :class:`TieevalError`; the command line turns it into one
``Error: ...`` line on stderr and exit code 2. Anything else escaping is a bug.
"""



class TieevalError(Exception):
    """Base class: an error the user can fix (bad input or bad arguments)."""


class InputError(TieevalError):
    """A score dump is missing, unreadable, malformed or holds values that cannot be ranked."""


class ParameterError(TieevalError, ValueError):
    """An argument is out of range or of the wrong type (for example K < 1)."""


class OutputError(TieevalError):
    """An output file cannot be written where asked: the target is a device, a folder or an
    input, its folder is missing or not writable, or the disk is full."""


class MissingExtraError(TieevalError):
    """An optional dependency is not installed (e.g. matplotlib for ``--plot``)."""
