"""The HTML a notebook shows for a result (``_repr_html_``): plain tables, no styles or
scripts, with the numbers formatted as the terminal table formats them. Each function is
registered with :func:`tieeval.records.display.register_html`, which the records ask."""

from __future__ import annotations

from tieeval.records.display import register_html
from tieeval.records.results import RunResult
from tieeval.report.format import counted, fmt_value
from tieeval.report.runs import (
    METRIC_HEADERS,
    describe_run,
    footer,
    metric_cells,
    metric_notes,
    tie_rows,
)
from tieeval.util.escaping import escape


def _table(headers: list[str], rows: list[list[str]], caption: str = "") -> str:
    head = "".join(f"<th>{escape(h, 'html')}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c, 'html')}</td>" for c in row) + "</tr>"
                   for row in rows)
    cap = f"<caption>{escape(caption, 'html')}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@register_html("run")
def run_html(run: RunResult) -> str:
    """One run: its metric table (captioned with the path and shape), its notes, its tie
    statistics, its warnings, and the line naming the rule behind the Original column
    with numpy's version, as the terminal prints them."""
    return "<div>" + _run_parts(run) + _footer([run]) + "</div>"


def _run_parts(run: RunResult) -> str:
    parts = [_table(METRIC_HEADERS, metric_cells(run),
                    f"{run.path}: {describe_run(run)}")]
    parts += [f"<p>{escape(note, 'html')}</p>" for note in metric_notes(run)]
    parts.append(_table(["Tie statistic", "Value"], [list(r) for r in tie_rows(run)]))
    if run.warnings:
        parts.append("<ul>" + "".join(f"<li>{escape(w, 'html')}</li>" for w in run.warnings)
                     + "</ul>")
    return "".join(parts)


def _footer(runs: list[RunResult]) -> str:
    """The rule behind the Original figures of ``runs`` and the versions, in small type."""
    return f"<p><small>{escape(footer(runs), 'html')}</small></p>"


@register_html("group")
def group_html(group) -> str:
    """A seed group: the seed-averaged rows (mean over seeds) and each seed's run."""
    name = ", ".join(f"{k}={v}" for k, v in group.run_labels.items() if v is not None)
    rows = [[row.display, *(fmt_value(v) for v in
                            (row.original, row.first, row.last, row.tie_aware))]
            for row in group.metrics]
    head = _table(["Metric", "Original", "First", "Last", "Tie-aware"], rows,
                  f"{name or 'group'}: mean over {counted(group.seeds, 'seed')}")
    return ("<div>" + head + "".join(_run_parts(r) for r in group.runs)
            + _footer(list(group.runs)) + "</div>")


@register_html("diff")
def diff_html(result) -> str:
    """B versus A: who was compared, then the tie-aware and the original comparison
    tables, as the terminal shows them."""
    from tieeval.report.diff import _column_cells, _headers, column_title, describe_sides
    parts = [f"<p>{escape(line, 'html')}</p>" for line in describe_sides(result)]
    parts += [_table(_headers(result, column), _column_cells(result, column),
                     column_title(result, column)) for column in ("tie_aware", "original")]
    return "<div>" + "".join(parts) + "</div>"
