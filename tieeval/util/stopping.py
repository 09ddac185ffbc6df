"""Stopping work that runs on a thread other than the main one.

A signal (Ctrl-C, SIGTERM) is handled in the main thread only: the work a sort thread is
doing for the same run (a batch's measures, see :func:`tieeval.kernels.threads.map_batches`)
goes on until it returns, and the main thread, which waits for it before it exits, with it.
Such work runs with a :class:`Token`; the long loops of the measures, the kernels and the
exact sums call :func:`checkpoint` once a step (a tie block, a chunk of rows, a place), which
raises :class:`Stopped` once the token is stopped. In the main thread, or in a thread
without a token, :func:`checkpoint` does nothing: a signal reaches that work itself.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class Stopped(BaseException):
    """The work was stopped (its caller is unwinding from an interrupt or an error): not an
    :class:`Exception`, so that no ``except Exception`` of the work swallows it."""


class Token:
    """What a piece of work running on another thread checks (:func:`checkpoint`)."""

    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


_LOCAL = threading.local()


def checkpoint() -> None:
    """Raise :class:`Stopped` if the work this thread runs for has been stopped."""
    token = getattr(_LOCAL, "token", None)
    if token is not None and token.stopped:
        raise Stopped


@contextmanager
def running(token: Token) -> Iterator[None]:
    """This thread works for ``token`` until the block ends."""
    old = getattr(_LOCAL, "token", None)
    _LOCAL.token = token
    try:
        yield
    finally:
        _LOCAL.token = old


__all__ = ["Stopped", "Token", "checkpoint", "running"]
