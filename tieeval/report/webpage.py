"""``tieeval compare --format html``: one self-contained HTML page to attach to a review
(docs/output.md, "HTML report", describes it). The module is named for what it writes, as
``--format`` lists formats by module name and the default, listed first, stays ``table``.
The page fetches nothing: the style is inline, the figure's text is drawn as paths
(matplotlib's SVG default), and the SVG's metadata block, whose RDF names URLs, is left
out.
"""

from __future__ import annotations

import os
import re

from tieeval.errors import MissingExtraError, TieevalError
from tieeval.records.paper import FigurePanel, PaperTable
from tieeval.records.results import RunResult
from tieeval.records.runs import RunTables
from tieeval.report.paper import MISSING, _body, _leading_headers, caption, notes
from tieeval.report.registry import Output, register
from tieeval.report.runs import (
    METRIC_HEADERS,
    describe_run,
    footer,
    metric_cells,
    metric_notes,
    tie_rows,
)
from tieeval.report.whatif import note as what_if_note
from tieeval.util.escaping import escape

PAPER_TABLES = (1, 3, 4)

# The page never scrolls sideways: a table wider than the screen scrolls inside its own
# box (.scroll), its first column staying in view; a value's "± sd" goes under the value
# when the column is short of room, and long names (paths) break anywhere. On a phone
# (40em and less) the margins and cells are tighter, so that a run's table shows its
# Tie-aware column without scrolling at 390 px.
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 96em; padding: 0 1.5em; color: #1b1f24; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
h1, h2, h3, p, figcaption, footer { overflow-wrap: anywhere; }
table { border-collapse: separate; border-spacing: 0; margin: 0.6em 0;
        font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e4e8ec; }
.paper-table table { font-size: 0.92em; }
.paper-table th, .paper-table td { padding: 0.25em 0.35em; }
.w { white-space: nowrap; }
td { white-space: nowrap; }
td.num { white-space: normal; }
.sd { white-space: nowrap; }
th { background: #f4f6f8; font-weight: 600; text-align: center; }
td { text-align: right; }
td.label, th.label { text-align: left; }
tr.task td { font-weight: 600; text-align: left; background: #fafbfc; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: 0.3em 0; }
p.note, p.caption { color: #57606a; font-size: 0.9em; margin: 0.3em 0; }
p.what-if { border: 2px solid #bf8700; background: #fff8c5; padding: 0.6em; font-weight: 600; }
.scroll { overflow-x: auto; max-width: 100%; }
table.metrics .label:first-child { position: sticky; left: 0; z-index: 1; }
table.metrics td.label:first-child { background: #fff; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
footer { margin-top: 3em; color: #57606a; font-size: 0.85em; }
@media (max-width: 40em) {
  body { margin: 1em auto; padding: 0 0.6em; }
  table { font-size: 0.85em; }
  th, td, .paper-table th, .paper-table td { padding: 0.2em 0.3em; }
}
"""


def _e(text) -> str:
    return escape(text, "html")


def _head(text) -> str:
    """A column heading, free to wrap between its words but not inside one (Tie-aware)."""
    return " ".join(f'<span class="w">{_e(word)}</span>' for word in str(text).split(" "))


def _cell_text(text: str) -> str:
    """A figure's text, its ``± sd`` (if any) kept whole and free to go under the value."""
    value, sep, sd = str(text).partition(" ± ")
    if not sep:
        return _e(text)
    return f'{_e(value)} <span class="sd">± {_e(sd)}</span>'


def _value_attr(value: float | None) -> str:
    return "" if value is None else f' data-value="{value!r}"'


def _metric_table(run: RunResult) -> str:
    head = "".join((f'<th class="label">{_e(h)}</th>' if i == 0 else f"<th>{_head(h)}</th>")
                   for i, h in enumerate(METRIC_HEADERS))
    rows = []
    for row, (name, *texts) in zip(run.metrics, metric_cells(run)):
        sd = "" if row.tie_aware_std is None else f' data-sd="{row.tie_aware_std!r}"'
        values = (row.original, row.first, row.last, row.tie_aware,
                  row.change_original_to_tie_aware, row.change_first_to_last)
        cells = [f'<td class="label" data-metric="{_e(row.label)}">{_e(name)}</td>']
        cells += [f'<td class="num"{_value_attr(value)}{sd if i == 3 else ""}>'
                  f"{_cell_text(text)}</td>"
                  for i, (value, text) in enumerate(zip(values, texts))]
        rows.append(f'<tr data-gamma="{_e(getattr(row, "gamma", None))}">'
                    + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="metrics"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _run_section(run: RunResult) -> str:
    notes_html = "".join(f'<p class="note">{_e(n)}</p>' for n in metric_notes(run))
    ties = "".join(f'<tr><td class="label">{_e(label)}</td><td>{_e(value)}</td></tr>'
                   for label, value in tie_rows(run))
    return (f'<section class="run"><h3>{_e(run.path)}</h3>'
            f'<p class="caption">{_e(describe_run(run))}</p>{_metric_table(run)}{notes_html}'
            f'<div class="scroll"><table class="ties"><caption>Tie statistics</caption>'
            f"<tbody>{ties}</tbody></table></div></section>")


def paper_table_html(table: PaperTable, show_std: bool = True) -> str:
    """One of the paper's tables: the methods over their sub-columns, rows by task,
    dataset and metric (or statistic), then its notes."""
    lead = _leading_headers(table)
    per = len(table.columns)
    width = len(lead) + per * len(table.methods)
    top = "".join(f'<th class="label" rowspan="{2 if per > 1 else 1}">{_e(h)}</th>'
                  for h in lead)
    top += "".join(f'<th colspan="{per}">{_head(m)}</th>' for m in table.methods)
    heads = f"<tr>{top}</tr>"
    if per > 1:
        heads += "<tr>" + "".join(f"<th>{_head(c.title)}</th>" for c in table.columns) \
            * len(table.methods) + "</tr>"
    body = []
    for kind, item in _body(table, show_std, "±", MISSING):
        if kind == "task":
            body.append(f'<tr class="task"><td colspan="{width}">{_e(item)}</td></tr>')
        elif kind == "row":
            cells = [f'<td class="label">{_e(c)}</td>' for c in item[:len(lead)]]
            cells += [f'<td class="num">{_cell_text(c)}</td>' for c in item[len(lead):]]
            body.append("<tr>" + "".join(cells) + "</tr>")
    notes_html = "".join(f'<p class="note">{_e(n)}</p>' for n in notes(table, show_std))
    return (f'<section class="paper-table" id="table{table.number}">'
            f"<h3>{_e(caption(table))}</h3>"
            f'<div class="scroll"><table><thead>{heads}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            f"{notes_html}</section>")


_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


def figure_svg(panels: list[FigurePanel]) -> str:
    """Figure 1 as an inline ``<svg>`` element (matplotlib draws it into a temporary
    file, read back without its XML prolog, doctype and metadata)."""
    import tempfile

    from tieeval.report.plot import draw_figure1

    with tempfile.TemporaryDirectory(prefix="tieeval-html-") as folder:
        path = os.path.join(folder, "figure1.svg")
        draw_figure1(panels, path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
    return _METADATA.sub("", text[text.index("<svg"):]).strip()


def _figure_section(result: RunTables) -> str:
    title = "<h2>Figure 1: inflation against top-score tie size</h2>"
    if result.figure is None:
        return ""
    try:
        svg = figure_svg(result.figure())
    except MissingExtraError:
        return (f'{title}<p class="note missing-figure">Figure 1 is not drawn: it needs '
                "matplotlib, which is not installed here (pip install "
                "'tieeval[plot]').</p>")
    except TieevalError as exc:
        return f'{title}<p class="note missing-figure">Figure 1 is not drawn: {_e(exc)}</p>'
    return (f'{title}<figure>{svg}<figcaption><p class="note">Inflation under the original '
            "protocol (the mean relative drop from Original to tie-aware over the metrics) "
            "against the average top-score tie size, log axis, per setting; Pearson r on "
            "the log sizes.</p></figcaption></figure>")


def _paper_section(result: RunTables) -> str:
    # the paper's tables say more than the runs only for several runs, or run labels
    # (dataset, task, seed) beyond the method the file name gives
    if result.tables is None or (len(result.runs) <= 1 and not any(
            run.run_labels.get(key) is not None for run in result.runs
            for key in ("dataset", "task", "seed"))):
        return ""
    parts = ["<h2>The paper's tables</h2>"]
    for number in PAPER_TABLES:
        try:
            parts.append(paper_table_html(result.tables(number), result.seed_std))
        except TieevalError as exc:
            parts.append(f'<p class="note">Table {number} is not shown: {_e(exc)}</p>')
    return "".join(parts)


@register("runs", "html", "one self-contained HTML page: the tables, the tie statistics "
                          "and Figure 1", progress_bar=False)
def runs_html(result: RunTables, out: Output) -> None:
    runs = result.runs
    what_if = result.active_what_if
    title = "tieeval report: " + (runs[0].path if len(runs) == 1 else f"{len(runs)} runs")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
             f"<header><h1>{_e(title)}</h1>",
             '<p class="note">Original: the metric as the codebases compute it; First / '
             "Last: the positive ranked first / last among its ties; Tie-aware: the "
             "exact expectation under uniform random tie-breaking, ± its standard "
             "deviation.</p></header>"]
    if what_if is not None:
        parts.append(f'<p class="what-if">{_e(what_if_note(what_if))}</p>')
    parts.append("<h2>Runs</h2>")
    parts += [_run_section(run) for run in runs]
    parts.append(_paper_section(result))
    parts.append(_figure_section(result))
    parts.append(f"<footer><p>{_e(footer(runs))}</p></footer></body></html>")
    out.write("\n".join(p for p in parts if p) + "\n")
