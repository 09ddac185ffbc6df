"""Evaluated runs in every format (``compare`` and ``ties``): each run in detail
(:mod:`tieeval.report.runs`) or the paper's table (:mod:`tieeval.report.paper`), labelled as
a what-if analysis when one was applied (:mod:`tieeval.report.whatif`)."""

from __future__ import annotations

from typing import Iterable

from tieeval.records.runs import RunTables
from tieeval.report import paper as paper_report
from tieeval.report import runs as runs_report
from tieeval.report import whatif as whatif_report
from tieeval.report.format import csv_text
from tieeval.report.registry import Output, register


def _paper(result: RunTables):
    if result.paper is None:
        raise ValueError(f"table {result.table} needs RunTables.paper")
    return result.paper()


@register("runs", "table", "a rich table for the terminal")
@register("ties", "table", "a rich table for the terminal")
def tables_table(result: RunTables, out: Output) -> None:
    what_if = result.active_what_if
    if what_if is not None:
        out.console().print(whatif_report.note(what_if), style="bold yellow")
    if result.table == "runs":
        runs_report.render_tables(result.runs, out.console())
    else:
        paper_report.render_paper_table(_paper(result), out.stream(), result.seed_std)


@register("runs", "json", "runs and seed-averaged groups, whatever --table says",
          machine_readable=True)
@register("ties", "json", "runs and seed-averaged groups, with their metrics",
          machine_readable=True)
def tables_json(result: RunTables, out: Output) -> None:
    out.write(runs_report.to_json(result.runs, result.groups, result.active_what_if))


@register("runs", "csv", "one line per run and metric (per method and row for Tables 1, 3 "
          "and 4)", machine_readable=True)
@register("ties", "csv", "one line per method and statistic", machine_readable=True)
def tables_csv(result: RunTables, out: Output) -> None:
    out.write(csv_text(*csv_table(result)))


def csv_table(result: RunTables) -> tuple[tuple[str, ...], Iterable[dict]]:
    """The CSV's ``(fields, rows)``, each row a dict of plain values (unformatted): the
    chosen table's, with a ``what_if`` column when one is active. Every tabular text
    format writes these rows."""
    if result.table == "runs":
        fields, rows = runs_report.csv_fields(result.runs), runs_report.csv_rows(result.runs)
    else:
        table = _paper(result)
        fields, rows = tuple(paper_report.csv_fields(table)), paper_report.csv_rows(table)
    what_if = result.active_what_if
    if what_if is not None:  # the what-if's description on every row
        text = what_if.describe()
        fields, rows = (*fields, "what_if"), ({**row, "what_if": text} for row in rows)
    return fields, rows


def _document(result: RunTables, out: Output, note, runs_text, paper_text) -> None:
    """A text document (Markdown, LaTeX): the what-if's ``note``, then the runs or the
    paper's table."""
    if result.active_what_if is not None:
        out.write(note(result.active_what_if))
    if result.table == "runs":
        out.write(runs_text(result.runs))
    else:
        out.write(paper_text(_paper(result), result.seed_std))


@register("runs", "markdown")
@register("ties", "markdown")
def tables_markdown(result: RunTables, out: Output) -> None:
    _document(result, out, whatif_report.markdown_note, runs_report.to_markdown,
              paper_report.to_markdown)


@register("runs", "latex", "booktabs")
@register("ties", "latex", "booktabs")
def tables_latex(result: RunTables, out: Output) -> None:
    _document(result, out, whatif_report.latex_note, runs_report.to_latex,
              paper_report.to_latex)
