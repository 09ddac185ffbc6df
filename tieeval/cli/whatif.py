"""``--cast`` and ``--tolerance``: precision what-ifs shared by ``compare``, ``diff`` and
``rank``, and writing their results labelled as what-if analyses in every format."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys

import click

from tieeval.analysis.whatif import (
    CASTS,
    WhatIf,
    check_tolerance,
    evaluate_dump_what_if,
)
from tieeval.cli.common import write
from tieeval.cli.run_labels import evaluate_labelled, meta_dict
from tieeval.errors import TieevalError
from tieeval.io.base import ReadOptions
from tieeval.io.open import open_dump
from tieeval.report import whatif as whatif_report
from tieeval.run_labels import resolve_labels


class ToleranceType(click.ParamType):
    name = "ATOL"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return check_tolerance(value.strip() if isinstance(value, str) else value)
        except TieevalError as exc:
            self.fail(str(exc), param, ctx)


def whatif_options(f):
    """``--cast`` and ``--tolerance``."""
    f = click.option("--tolerance", type=ToleranceType(), default=None,
                     help="What-if: count scores within ATOL of the positive (and of the row "
                          "maximum, for the tie statistics) as tied, e.g. --tolerance 1e-6. "
                          "Output is labelled as a what-if analysis.")(f)
    f = click.option("--cast", type=click.Choice(CASTS), default=None,
                     help="What-if: round the scores to this precision (nearest, ties to "
                          "even) before judging ties; bfloat16 is emulated in float32. "
                          "Output is labelled as a what-if analysis.")(f)
    return f


def make_what_if(cast, tolerance) -> WhatIf | None:
    what_if = WhatIf(cast, tolerance)
    return what_if if what_if.active else None


def require_local_engine(read_kwargs, what: str) -> None:
    """What-ifs and diffs run in this process: refuse ``--engine spark`` rather than
    silently ignoring it."""
    engine = read_kwargs.get("engine", "local")
    if engine not in (None, "local"):
        raise click.UsageError(f"{what} run on the local engine only (got --engine {engine})")


def read_options_from(read_kwargs) -> ReadOptions:
    """The :class:`ReadOptions` the shared reading options ask for: each field from the
    ``<field>_column`` option (``--scores-column``) or the option of its own name."""
    given = {}
    for f in dataclasses.fields(ReadOptions):
        for key in (f"{f.name}_column", f.name):
            if key in read_kwargs:
                given[f.name] = read_kwargs[key]
                break
    return ReadOptions(**given)


def evaluate_runs(files, metrics, *, what_if: WhatIf | None = None, meta=(), template=None,
                  quiet=False, **read_kwargs):
    """Labelled runs as :func:`tieeval.cli.run_labels.evaluate_labelled` gives, under
    ``what_if`` when it is active (each run then reports a ``what_if`` key)."""
    if what_if is None or not what_if.active:
        return evaluate_labelled(files, metrics, meta=meta, template=template, quiet=quiet,
                                 **read_kwargs)
    require_local_engine(read_kwargs, "--cast and --tolerance")
    overrides = meta_dict(meta)
    if template is not None:  # a path that does not fit fails before any file is read
        for path in files:
            if os.path.exists(path):
                resolve_labels(path, {}, meta=overrides, template=template)
    options = read_options_from(read_kwargs)
    runs = []
    for path in files:
        run = evaluate_dump_what_if(open_dump(path, options), metrics, what_if,
                                    nan_policy=read_kwargs.get("nan_policy", "raise"),
                                    batch_rows=read_kwargs.get("batch_rows"))
        if not quiet:
            for warning in run.warnings:
                click.echo(f"Warning: {warning}", err=True)
        run.labels = resolve_labels(run.path, run.labels, meta=overrides, template=template)
        runs.append(run)
    return runs


def _captured(fn, *args, **kwargs) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args, **kwargs)
    return buf.getvalue()


def write_labelled_output(write_output, runs, groups, *, what_if: WhatIf | None, fmt: str,
                          **kwargs) -> None:
    """``write_output(runs, groups, fmt=fmt, **kwargs)``, labelled when ``what_if`` is
    active: a note above tables, Markdown and LaTeX, a ``what_if`` column in CSV, and a
    top-level ``what_if`` key in JSON (every run also carries one)."""
    if what_if is None or not what_if.active:
        write_output(runs, groups, fmt=fmt, **kwargs)
        return
    if fmt == "json":
        import json
        doc = json.loads(_captured(write_output, runs, groups, fmt=fmt, **kwargs))
        head = {k: doc.pop(k) for k in ("tieeval_version", "numpy_version", "numpy_simd",
                                        "machine") if k in doc}
        write(json.dumps({**head, "what_if": what_if.to_dict(), **doc}, indent=2,
                         allow_nan=False) + "\n")
    elif fmt == "csv":
        write(whatif_report.add_csv_column(_captured(write_output, runs, groups, fmt=fmt,
                                                     **kwargs), what_if))
    elif fmt == "markdown":
        write(whatif_report.markdown_note(what_if))
        write_output(runs, groups, fmt=fmt, **kwargs)
    elif fmt == "latex":
        write(whatif_report.latex_note(what_if))
        write_output(runs, groups, fmt=fmt, **kwargs)
    else:
        stdout_console().print(whatif_report.note(what_if), style="bold yellow")
        write_output(runs, groups, fmt=fmt, **kwargs)


def stdout_console():
    """The console for data on stdout: terminal width and colour only on a terminal."""
    from rich.console import Console
    out = sys.stdout
    tty = out.isatty()
    return Console(file=out, width=None if tty else 120, color_system="auto" if tty else None)
