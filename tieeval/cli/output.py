"""``--format`` and writing a result: the choices, default and help come from the report
layer's registry (:mod:`tieeval.report.registry`), and so does the renderer; no command
compares format names."""

from __future__ import annotations

import click

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


def format_option(kind: str):
    """``--format`` / ``-f`` with the formats of results of ``kind`` (the first is the
    default), each described in the help."""
    names = formats(kind)

    def decorate(f):
        return click.option("--format", "-f", "fmt", type=click.Choice(names),
                            default=names[0], show_default=True,
                            help=f"Output: {describe(kind)}")(f)
    return decorate


def render(kind: str, fmt: str, result) -> None:
    """Write ``result`` (of ``kind``) in ``fmt`` on stdout."""
    renderer(kind, fmt).render(result, StdoutOutput())
