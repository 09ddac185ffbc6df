"""Writing evaluated runs as the chosen table (per-run detail or the paper's Tables 1, 3,
4) in the chosen format, shared by ``compare`` and ``ties``."""

from __future__ import annotations

import click

from tieeval.analysis.groups import group_runs
from tieeval.analysis.paper import paper_table
from tieeval.cli.common import data_stdout, emit, stdout_console, write
from tieeval.report import paper as paper_report
from tieeval.report import runs as runs_report
from tieeval.report import whatif as whatif_report

FORMATS = ("table", "json", "csv", "markdown", "latex")
TABLE_CHOICES = ("runs", "1", "3", "4")


COMPARE_FORMATS = (*FORMATS, "trec_eval")


def _format_option(formats, more: str = ""):
    def decorate(f):
        return click.option("--format", "-f", "fmt", type=click.Choice(formats),
                            default="table", show_default=True,
                            help="Output: a rich table for the terminal; json (runs and "
                                 "seed-averaged groups, whatever --table says), csv, "
                                 f"markdown or latex (booktabs){more}.")(f)
    return decorate


format_option = _format_option(FORMATS)
compare_format_option = _format_option(
    COMPARE_FORMATS, "; trec_eval: trec_eval's 'measure qid value' lines in its names "
                     "(P_10, ndcg_cut_10), a drop-in for its output (see --column and "
                     "--per-query)")


def seed_std_option(f):
    return click.option("--seed-std/--no-seed-std", "seed_std", default=True,
                        show_default=True,
                        help="Show '± across-seed sd' next to seed means in Tables 1, 3 "
                             "and 4.")(f)


def default_table(table: str | None, n_files: int, fmt: str = "table") -> str:
    """``runs`` (each run in detail) for one file; for several, Table 3 in the formats
    people read (table, markdown, latex) and the per-run rows in csv (pipelines keep one
    line per run and metric, with its path; JSON always has runs and groups)."""
    if table is not None:
        return table
    return "runs" if n_files == 1 or fmt in ("csv", "json") else "3"


def warn(lines, quiet: bool) -> None:
    if not quiet:
        for line in lines:
            click.echo(f"Warning: {line}", err=True)


def write_output(runs, groups, *, table: str, fmt: str, seed_std: bool = True,
                 what_if=None) -> None:
    """Print ``runs`` (and their ``groups``) as ``table`` in ``fmt`` on stdout; under an
    active ``what_if`` every format says so: a note above tables, Markdown and LaTeX, a
    ``what_if`` column in CSV, and a ``what_if`` key in JSON."""
    active = what_if is not None and what_if.active
    if fmt == "json":
        write(runs_report.to_json(runs, groups, what_if if active else None))
        return
    if active and fmt == "markdown":
        write(whatif_report.markdown_note(what_if))
    elif active and fmt == "latex":
        write(whatif_report.latex_note(what_if))
    elif active and fmt == "table":
        stdout_console().print(whatif_report.note(what_if), style="bold yellow")
    if table == "runs":
        if fmt == "latex":
            write(runs_report.to_latex(runs))
        elif fmt == "csv":
            text = runs_report.to_csv(runs)
            write(whatif_report.add_csv_column(text, what_if) if active else text)
        else:
            emit(runs, fmt)
        return
    assembled = paper_table(int(table), groups)
    if fmt == "csv":
        text = paper_report.to_csv(assembled)
        write(whatif_report.add_csv_column(text, what_if) if active else text)
    elif fmt == "markdown":
        write(paper_report.to_markdown(assembled, seed_std))
    elif fmt == "latex":
        write(paper_report.to_latex(assembled, seed_std))
    else:
        paper_report.render_paper_table(assembled, data_stdout(), seed_std)


def grouped(runs, quiet: bool):
    groups, warnings = group_runs(runs)
    warn(warnings, quiet)
    return groups
