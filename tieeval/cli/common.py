"""Shared command-line machinery: error mapping, option types, shared options, output."""

from __future__ import annotations

import os
import re
import sys

import click

from ..engine import DEFAULT_KS, evaluate_dump
from ..errors import TieevalError
from ..io import DEFAULT_BATCH_ROWS, ReadOptions, open_dump
from ..metrics import Metric, default_metrics, metric_names
from ..report import render_tables, to_csv, to_json, to_markdown
from ..ties import NAN_POLICIES

EXIT_CHECK_FAILED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class CliError(click.ClickException):
    """A usage or input error: ``Error: message`` on stderr, exit code 2."""

    exit_code = EXIT_INPUT


class InternalError(click.ClickException):
    exit_code = EXIT_INTERNAL


_MULTI_VALUE = ("--k", "-k")
_NUMBERISH = re.compile(r"^[+-]?\d[\d,]*$")


def expand_multi_value(args: list[str]) -> list[str]:
    """Let ``--k 1 5 10`` mean ``--k 1 --k 5 --k 10``: numbers after ``--k`` belong to it."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        out.append(arg)
        i += 1
        if arg == "--":
            out.extend(args[i:])
            break
        if arg in _MULTI_VALUE:
            if i < len(args):  # the first value, whatever it is (so bad K gets a K error)
                out.append(args[i])
                i += 1
            while i < len(args) and _NUMBERISH.match(args[i]):
                out.extend([arg, args[i]])
                i += 1
    return out


class Command(click.Command):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, expand_multi_value(list(args)))


class KList(click.ParamType):
    """One or more cutoffs: ``10`` or ``1,5,10``; each a whole number >= 1."""

    name = "K"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        ks = []
        for part in str(value).split(","):
            part = part.strip()
            try:
                k = int(part)
            except ValueError:
                self.fail(f"K must be a whole number >= 1, got {part!r}", param, ctx)
            if k < 1:
                self.fail(f"K must be >= 1, got {k}", param, ctx)
            ks.append(k)
        return ks


class MetricType(click.ParamType):
    name = "METRIC"

    def convert(self, value, param, ctx):
        if isinstance(value, Metric):
            return value
        try:
            return Metric.parse(value)
        except TieevalError as exc:
            self.fail(str(exc), param, ctx)


class Group(click.Group):
    command_class = Command

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TieevalError as exc:
            raise CliError(str(exc)) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit,
                KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:  # a bug: say so, never let it pass as exit 1
            if os.environ.get("TIEEVAL_DEBUG"):
                raise
            raise InternalError(f"internal error ({type(exc).__name__}: {exc}); rerun with "
                                "TIEEVAL_DEBUG=1 for a traceback and please report it") from None


def _flatten_ks(k_values) -> list[int]:
    ks: list[int] = []
    for group in k_values:
        for k in group:
            if k not in ks:
                ks.append(k)
    return ks or list(DEFAULT_KS)


def read_options(f):
    """Options shared by every command that reads dumps."""
    f = click.option("--positive-index", type=int, default=None, metavar="N",
                     help="Column of the positive when the dump has no positive field "
                          "(default 0; negative N counts from the end).")(f)
    f = click.option("--positive-column", default="positive", show_default=True,
                     metavar="NAME", help="Name of the per-row positive index field.")(f)
    f = click.option("--scores-column", default="scores", show_default=True, metavar="NAME",
                     help="Name of the score field (NPZ array or Parquet column).")(f)
    f = click.option("--nan-policy", type=click.Choice(NAN_POLICIES), default="raise",
                     show_default=True,
                     help="'raise': a NaN score is an input error; 'worst': NaN ranks below "
                          "every score and NaNs tie with each other.")(f)
    f = click.option("--batch-rows", type=click.IntRange(min=1), default=DEFAULT_BATCH_ROWS,
                     show_default=True, help="Rows per batch (memory vs. speed).")(f)
    return f


def metric_options(f):
    f = click.option("--metric", "-m", "metrics", type=MetricType(), multiple=True,
                     help="Metric to report, repeatable (e.g. -m NDCG@10 -m MRR); "
                          f"names: {', '.join(metric_names())}. Overrides --k.")(f)
    f = click.option("--k", "-k", "k_values", type=KList(), multiple=True,
                     help="Cutoffs: --k 1 5 10, --k 1,5,10 or --k 1 --k 5. Default: 1 5 10.")(f)
    return f


def chosen_metrics(k_values, metrics) -> list[Metric]:
    if metrics:
        return list(dict.fromkeys(metrics))
    return default_metrics(_flatten_ks(k_values))


def write(text: str) -> None:
    click.echo(text, nl=False)


def stderr_console():
    from rich.console import Console
    return Console(stderr=True)


def emit(results, fmt: str) -> None:
    if fmt == "json":
        write(to_json(results))
    elif fmt == "csv":
        write(to_csv(results))
    elif fmt == "markdown":
        write(to_markdown(results))
    else:
        from rich.console import Console
        out = sys.stdout
        console = Console(file=out, width=None if out.isatty() else 120,
                          color_system="auto" if out.isatty() else None)
        render_tables(results, console)


def evaluate_files(paths, metrics, *, scores_column, positive_column, positive_index,
                   nan_policy, batch_rows, quiet=False):
    options = ReadOptions(scores=scores_column, positive=positive_column,
                          positive_index=positive_index)
    results = []
    for path in paths:
        dump = open_dump(path, options)
        result = evaluate_dump(dump, metrics, nan_policy=nan_policy, batch_rows=batch_rows)
        if not quiet:
            for warning in result.warnings:
                click.echo(f"Warning: {warning}", err=True)
        results.append(result)
    return results


