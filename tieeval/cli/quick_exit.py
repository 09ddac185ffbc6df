"""End the ``tieeval`` program without the interpreter's teardown.

When a command has returned, Python still frees every module and object one by one before
the process ends: 0.05-0.1 s after a short run (a third of ``tieeval compare`` on a small
dump, beyond numpy's own start), work nobody sees. :func:`end` does what that teardown
does that can be seen, in the same order — waits for the threads still running, runs the
exit handlers (temporary files removed, worker processes stopped, Spark's JVM ended) and
writes out stdout and stderr — then ends the process with the command's exit code.

Only the program does this (the console script and ``python -m tieeval``): :func:`tieeval.cli.main`,
which a script or a test may call, returns or raises as before.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def end(code) -> None:
    """End the process now with exit ``code`` (``SystemExit.code``), after the threads and
    the exit handlers are done and the standard streams flushed. Returns, for Python's
    usual exit, when ``code`` is a message (Python prints it) or a stream cannot be written
    (Python reports it as it does for any program)."""
    if code is None:
        code = 0
    if not isinstance(code, int):
        return
    shutdown = getattr(threading, "_shutdown", None)  # what the interpreter's exit calls
    # after a stopping signal (exit 128 + N) the threads' work is unwanted and was told to
    # stop: they are not waited for, since a signal that landed while the main thread held
    # a future's lock (Python 3.10) would leave a pool thread waiting on it forever
    if shutdown is not None and code < 128:
        shutdown()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
