"""``--format`` and ``--output``, and writing a result: the choices, default, help and
renderer come from the report layer's registry (:mod:`tieeval.report.registry`); no
command compares format names. With ``--output FILE`` stdout carries nothing, which keeps
the data apart from messages where stderr is merged into stdout (under ``spark-submit``)."""

from __future__ import annotations

import click

from tieeval.cli.app import BEFORE_RUN, OUTPUT_KEY
from tieeval.cli.app import run_inputs as _inputs
from tieeval.cli.common import data_stdout, stdout_console, write
from tieeval.report.registry import describe, formats, renderer


class StdoutOutput:
    """The report layer's :class:`~tieeval.report.registry.Output` on stdout."""

    def write(self, text: str) -> None:
        write(text)

    def console(self):
        return stdout_console()

    def stream(self):
        return data_stdout()  # every write checked, as write() does


class FileOutput:
    """The report layer's :class:`~tieeval.report.registry.Output` on an ``--output``
    file (a sink's temporary file until the renderer is done); its own text stream, UTF-8,
    every write checked."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, binary):
        self._binary = binary

    def write(self, text: str) -> None:
        self._binary.write(text.encode("utf-8"))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def console(self):
        from rich.console import Console
        # as on a pipe: no colour, wide enough that rich never wraps a row
        return Console(file=self, width=120, color_system=None)

    def stream(self):
        return self


def _remember(ctx, param, value):
    if value is not None and value != "-":
        ctx.meta[OUTPUT_KEY] = value
        ctx.meta.setdefault(BEFORE_RUN, []).append(check_output_option)
    return value


def format_option(kind: str):
    """``--format`` / ``-f`` with the formats of results of ``kind`` (the first is the
    default), each described in the help; and ``--output`` / ``-o``, where they go. The
    format chosen says whether a progress bar may be drawn (see tieeval.cli.progress)."""
    names = formats(kind)

    def chosen(ctx, param, value):
        if value is not None:
            from tieeval.cli.progress import NO_BAR_FORMAT
            picked = renderer(kind, value)
            ctx.meta[NO_BAR_FORMAT] = not picked.progress_bar
            before = picked.before  # a file the format writes besides its output: refused
            if before is not None:  # before the evaluation too
                ctx.meta.setdefault(BEFORE_RUN, []).append(lambda ctx: before())
        return value

    def decorate(f):
        f = click.option("--output", "-o", "output", type=click.Path(),
                         default=None, metavar="FILE", expose_value=False,
                         callback=_remember,
                         help="Write the output to FILE instead of stdout (whole or not at "
                              "all; never over an input). '-' is stdout.")(f)
        return click.option("--format", "-f", "fmt", type=click.Choice(names),
                            default=names[0], show_default=True, callback=chosen,
                            help=f"Output: {describe(kind)}")(f)
    return decorate


def check_output_option(ctx) -> None:
    """Refuse a bad ``--output`` before the evaluation (see :mod:`tieeval.sink`)."""
    path = ctx.meta.get(OUTPUT_KEY)
    if path is not None:
        from tieeval.sink import check_output_path
        check_output_path(path, inputs=_inputs(ctx), what="the output")


def render(kind: str, fmt: str, result) -> None:
    """Write ``result`` (of ``kind``) in ``fmt`` on stdout, or to the ``--output`` file."""
    ctx = click.get_current_context(silent=True)
    path = ctx.meta.get(OUTPUT_KEY) if ctx is not None else None
    if path is None:
        renderer(kind, fmt).render(result, StdoutOutput())
        return
    from tieeval.sink import atomic_output
    with atomic_output(path, inputs=_inputs(ctx), what="the output") as out:
        renderer(kind, fmt).render(result, FileOutput(out))
