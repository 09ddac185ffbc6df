"""A progress bar on stderr for long runs: rows, MB/s and ETA (rich; CLI only).

The engine never imports this module: it calls a plain ``progress(rows, nbytes)`` callback,
and this module turns those calls into a rich bar. The bar is drawn only when stderr is a
terminal and ``--quiet`` is off, and it is transient, so stdout stays data only and a log
of stderr holds no bar frames.
"""


from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


def wanted(quiet: bool, stream=None) -> bool:
    """A bar is drawn only on a terminal and without --quiet."""
    stream = sys.stderr if stream is None else stream
    try:
        return not quiet and stream.isatty()
    except (AttributeError, ValueError):
        return False


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
        name = dump.path if len(dump.path) <= 28 else "..." + dump.path[-25:]
        # Bytes of input drive the bar, the speed and the ETA; rows are counted alongside
        # (the long layout does not know its instance count before reading).
        task = self._progress.add_task(name, total=max(1, dump.nbytes), rows=0)
        state = {"rows": 0}

        progress = self._progress

        def advance(rows: int, nbytes: int) -> None:
            state["rows"] += rows
            progress.update(task, advance=nbytes, rows=state["rows"])
        return advance
