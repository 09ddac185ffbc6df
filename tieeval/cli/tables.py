"""Evaluated runs as the chosen table (per-run detail or the paper's Tables 1, 3, 4), shared
by ``compare`` and ``ties``; the formats are the report layer's (``runs`` and ``ties``)."""

from __future__ import annotations

import click

from tieeval.analysis.groups import group_runs
from tieeval.cli.app import say
from tieeval.records.runs import RunTables
from tieeval.report.registry import renderer

TABLE_CHOICES = ("runs", "1", "3", "4")


def seed_std_option(f):
    return click.option("--seed-std/--no-seed-std", "seed_std", default=True,
                        show_default=True,
                        help="Show '± across-seed sd' next to seed means in Tables 1, 3 "
                             "and 4.")(f)


def default_table(table: str | None, n_files: int, kind: str, fmt: str) -> str:
    """``runs`` (each run in detail) for one file; for several, Table 3 in the formats
    people read (table, markdown, latex) and the per-run rows in the machine-readable ones
    (csv: pipelines keep one line per run and metric, with its path; JSON always has runs
    and groups)."""
    if table is not None:
        return table
    return "runs" if n_files == 1 or renderer(kind, fmt).machine_readable else "3"


def warn(lines, quiet: bool) -> None:
    if not quiet:
        for line in lines:
            say(f"Warning: {line}")


def run_tables(runs, groups, table: str, *, seed_std: bool = True, what_if=None,
               trec_lines=None) -> RunTables:
    """The runs and their groups as ``table`` shows them: the paper's tables and Figure 1
    are assembled only when a renderer asks for them (JSON never does), and their module
    is imported only then (a run's own lines, as trec_eval's, never need it)."""
    def paper_table(number):
        from tieeval.analysis.paper import paper_table
        return paper_table(number, groups)

    def figure():
        from tieeval.analysis.paper import figure1
        return figure1(groups)
    paper = None if table == "runs" else (lambda: paper_table(int(table)))
    return RunTables(runs, groups, table, seed_std, what_if, paper, trec_lines,
                     tables=paper_table, figure=figure)


def grouped(runs, quiet: bool):
    groups, warnings = group_runs(runs)
    warn(warnings, quiet)
    return groups
