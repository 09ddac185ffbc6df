"""``--format`` and ``--output``, and writing a result: the choices, default, help and
renderer come from the report layer's registry (:mod:`tieeval.report.registry`); no
command compares format names. With ``--output FILE`` stdout carries nothing, which keeps
the data apart from messages where stderr is merged into stdout (under ``spark-submit``)."""

from __future__ import annotations

import sys

import click

from tieeval.cli.app import BEFORE_RUN, OUTPUT_KEY, CliError, stdout_error
from tieeval.cli.app import run_inputs as _inputs
from tieeval.report.registry import describe, formats, renderer
from tieeval.sink import atomic_output, check_output_path, write_all


class Stdout:
    """stdout for data: every write is complete or becomes :func:`stdout_error`.

    Text goes to the descriptor itself, written until every byte is out: Python's buffered
    stdout can drop the rest of a short write (a file that reaches a full disk or a size
    limit part-way) without raising, and the command would end with exit 0 and a truncated
    file. A stream without a descriptor (a test's capture) is written and flushed as is."""

    def __init__(self, stream):
        self._stream = stream

    def _fd(self) -> int | None:
        try:
            return self._stream.fileno()
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            return None

    def write(self, text):
        fd = self._fd()
        try:
            if fd is None:
                return self._stream.write(text)
            self._stream.flush()  # what was printed before goes first
            data = text.encode(self._stream.encoding or "utf-8", self._stream.errors or "strict")
            write_all(fd, data)
            return len(text)
        except OSError as exc:
            raise stdout_error(exc) from None

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as exc:
            raise stdout_error(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


class FileStream:
    """An ``--output`` file (a sink's temporary file until the renderer is done) as a text
    stream: UTF-8, every write checked, never a terminal."""

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


class TextOutput:
    """The report layer's :class:`~tieeval.report.registry.Output` on :class:`Stdout` or a
    :class:`FileStream`. Text is written as click writes it (``color`` None: escape codes
    dropped where stdout is no terminal; True: kept, in a file)."""

    def __init__(self, stream, color: bool | None = None):
        self._stream, self._color = stream, color

    def write(self, text: str) -> None:
        click.echo(text, nl=False, file=self._stream, color=self._color)

    def console(self):
        """Terminal width and colour only on a terminal (rich would wrap at 80 columns
        elsewhere: 120 columns, no colour)."""
        from rich.console import Console
        try:
            tty = self._stream.isatty()
        except (OSError, ValueError):
            tty = False
        return Console(file=self._stream, width=None if tty else 120,
                       color_system="auto" if tty else None)

    def stream(self):
        return self._stream


def format_option(kind: str):
    """``--format`` / ``-f`` with the formats of results of ``kind`` (the first is the
    default), each described in the help; and ``--output`` / ``-o``, where they go, refused
    before the evaluation if bad (see :mod:`tieeval.sink`). The format chosen says whether
    a progress bar may be drawn (see tieeval.cli.progress)."""
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

    def output(ctx, param, value):
        if value is not None and value != "-":
            ctx.meta[OUTPUT_KEY] = value
            ctx.meta.setdefault(BEFORE_RUN, []).append(lambda ctx: check_output_path(
                value, inputs=_inputs(ctx), what="the output"))
        return value

    def decorate(f):
        f = click.option("--output", "-o", "output", type=click.Path(),
                         default=None, metavar="FILE", expose_value=False,
                         callback=output,
                         help="Write the output to FILE instead of stdout (whole or not at "
                              "all; never over an input). '-' is stdout.")(f)
        return click.option("--format", "-f", "fmt", type=click.Choice(names),
                            default=names[0], show_default=True, callback=chosen,
                            help=f"Output: {describe(kind)}")(f)
    return decorate


def render(kind: str, fmt: str, result) -> None:
    """Write ``result`` (of ``kind``) in ``fmt`` on stdout, or to the ``--output`` file."""
    ctx = click.get_current_context(silent=True)
    path = ctx.meta.get(OUTPUT_KEY) if ctx is not None else None
    if path is not None:
        with atomic_output(path, inputs=_inputs(ctx), what="the output") as out:
            renderer(kind, fmt).render(result, TextOutput(FileStream(out), color=True))
    elif sys.stdout is None:
        raise CliError("cannot write the output to stdout: it is closed")
    else:
        renderer(kind, fmt).render(result, TextOutput(Stdout(sys.stdout)))
