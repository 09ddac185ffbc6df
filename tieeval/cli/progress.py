"""A progress bar on stderr for long runs: rows, MB/s and ETA (rich; CLI only).

The engine never imports this module: it calls a plain ``progress(rows, nbytes)`` callback,
turned here into a rich bar, transient, so that stdout stays data only and a log of stderr
holds no bar frames. Where it is drawn: :func:`wanted`. Not under a format read by a
program, the runner or a browser, nor in CI, unless ``--progress`` asks: where stdout and
stderr are one terminal (``script``, a runner's pty) the bar's frames and clearing codes
would land among the output's lines, in front of a workflow command.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from tieeval.util.escaping import escape

if TYPE_CHECKING:
    from rich.progress import Progress

# click's per-invocation scratch: --progress / --no-progress (True, False; absent: the
# default), and whether the --format chosen is one without a bar
ASKED = "tieeval.progress"
NO_BAR_FORMAT = "tieeval.progress.no_bar_format"
# set (to anything but "", "0" or "false") by CI services; GitHub Actions sets both
CI_VARIABLES = ("CI", "GITHUB_ACTIONS")


def _remember(ctx, param, value):
    if value is not None:
        ctx.meta[ASKED] = value
    return value


def progress_option(f):
    """``--progress/--no-progress``: draw the bar, or never (default: see :func:`wanted`)."""
    return click.option("--progress/--no-progress", "progress", default=None,
                        expose_value=False, callback=_remember,
                        help="Draw the progress bar on stderr (a terminal) even under a "
                             "machine-read format (json, csv, github, junit, trec_eval, "
                             "html) or in CI (CI or GITHUB_ACTIONS set), or never. Default: "
                             "drawn on a terminal for the other formats, outside CI.")(f)


def in_ci(environ=None) -> bool:
    """Whether a CI service runs this process (``CI`` or ``GITHUB_ACTIONS`` set)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name, "").strip().lower() not in ("", "0", "false")
               for name in CI_VARIABLES)


def wanted(quiet: bool, stream=None) -> bool:
    """Whether the bar is drawn: never with --quiet or --no-progress, nor when ``stream``
    (stderr) is not a terminal; with --progress on any terminal; else only when the
    format chosen allows it and no CI variable is set."""
    stream = sys.stderr if stream is None else stream
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    asked = meta.get(ASKED)
    if quiet or asked is False:
        return False
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    return bool(asked) or not (meta.get(NO_BAR_FORMAT) or in_ci())


class ProgressBar:
    """``with ProgressBar(enabled) as bar: evaluate_dump(..., progress=bar.task(dump))``."""

    def __init__(self, enabled: bool, console=None):
        self.enabled = enabled
        self._console = console
        self._progress: Progress | None = None

    def __enter__(self) -> "ProgressBar":
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(bar_width=20),
                TextColumn("{task.fields[rows]:>12,} rows"), TransferSpeedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(),
                console=self._console or Console(stderr=True), transient=True)
            self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def task(self, dump):
        """A ``progress(rows, nbytes)`` callback for one opened dump (None when off)."""
        if self._progress is None:
            return None
        path = escape(dump.path)  # a description is rich markup, and one line
        name = escape(path if len(path) <= 28 else "..." + path[-25:], "rich")
        # Bytes of input drive the bar, the speed and the ETA; rows are counted alongside
        # (the long layout does not know its instance count before reading).
        task = self._progress.add_task(name, total=max(1, dump.nbytes), rows=0)
        state = {"rows": 0}

        progress = self._progress

        def advance(rows: int, nbytes: int) -> None:
            state["rows"] += rows
            progress.update(task, advance=nbytes, rows=state["rows"])
        return advance
