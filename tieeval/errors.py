"""Exceptions raised by tieeval.

Every error a user can cause is a :class:`TieevalError`; the command line turns it into one
``Error: ...`` line on stderr and exit code 2. Anything else escaping is a bug.
"""



def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped (``\\n``): a
    message that quotes a damaged file's names or bytes stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class TieevalError(Exception):
    """Base class: an error the user can fix (bad input or bad arguments). Its message is
    always one line (see :func:`one_line`)."""

    def __str__(self) -> str:
        return one_line(super().__str__())


class InputError(TieevalError):
    """A score dump is missing, unreadable, malformed or holds values that cannot be ranked."""


class ParameterError(TieevalError, ValueError):
    """An argument is out of range or of the wrong type (for example K < 1)."""


class MissingExtraError(TieevalError):
    """An optional dependency is not installed (e.g. matplotlib for ``--plot``)."""
