"""Rendering of the paper's tables (:mod:`tieeval.analysis.paper`): rich, Markdown, LaTeX and CSV.

Every writer consumes the same :class:`~tieeval.analysis.paper.PaperTable`; only the cell syntax
differs. Means are shown with ``± across-seed sd`` when a group has several seeds (unless
``show_std`` is False); relative changes are computed from the means and carry no sd.
CSV is tidy (one line per setting, row and method) with unrounded floats.
"""

from __future__ import annotations

from typing import Any

from tieeval._version import __version__
from tieeval.records.paper import Cell, PaperTable
from tieeval.records.results import original_rule_of
from tieeval.report.format import (
    csv_text,
    fmt_change,
    fmt_percent,
    fmt_size,
    fmt_value,
    latex_escape,
    md_escape,
    md_table,
    metric_title,
)
from tieeval.report.runs import footer, natural_width
from tieeval.util.escaping import escape

MISSING = "–"


# ---------------------------------------------------------------------------------------
# text shared by every writer

def fmt_r(r: float | None) -> str:
    """Pearson r for a figure title."""
    return "Pearson r (log size) = n/a" if r is None else f"Pearson r (log size) = {r:.2f}"


def setting_title(task: str | None, dataset: str | None) -> str:
    parts = [p for p in (dataset, None if task is None else f"{task} task") if p]
    return ", ".join(parts) or "all runs"


def group_name(group) -> str:
    return "/".join(v for v in (group.run_labels.get("method"), group.run_labels.get("dataset"),
                                group.run_labels.get("task")) if v) or "(unlabelled)"


_FORMATTERS = {"value": fmt_value, "change": fmt_change, "size": fmt_size,
               "fraction": fmt_percent}


def cell_text(cell: Cell, kind: str, show_std: bool = True, pm: str = "±") -> str | None:
    """A cell as text, or None when the method has no run in this setting."""
    if cell.value is None:
        return None
    fmt = _FORMATTERS[kind]
    text = fmt(cell.value)
    if show_std and cell.seed_std is not None and kind != "change":
        text += f" {pm} {fmt(cell.seed_std)}"
    return text


def seed_note(table: PaperTable, show_std: bool = True) -> str:
    counts = [g.seeds for g in table.groups]
    lo, hi = min(counts), max(counts)
    if hi == 1:
        text = "One run per method and setting (no seed averaging)"
    elif lo == hi:
        text = f"Each figure is the mean over {hi} seeds"
    else:
        fewer = ", ".join(f"{group_name(g)}: {g.seeds}" for g in table.groups
                          if g.seeds < hi)
        text = (f"Each figure is the mean over its run group's seeds ({lo} to {hi}; "
                f"fewer than {hi}: {fewer})")
    if show_std and hi > 1:
        text += "; ± is the across-seed sample standard deviation"
    return text + "."


def notes(table: PaperTable, show_std: bool = True, provenance: bool = True) -> list[str]:
    """The notes under a table; ``provenance`` adds the numpy behind the Original column."""
    out = [seed_note(table, show_std)]
    if table.change_note:
        out.append(table.change_note + ".")
    if provenance and table.number == 3:
        out.append(table_footer(table))
    return out


def table_footer(table: PaperTable) -> str:
    """The rule(s) behind the table's Original column, as ``compare`` names them."""
    return footer([run for g in table.groups for run in g.runs])


def _row_kinds(table: PaperTable, row) -> list[str]:
    return [row.kind if c.kind == "row" else c.kind for c in table.columns]


def _has_datasets(table: PaperTable) -> bool:
    return any(b.dataset is not None for s in table.sections for b in s.blocks)


def _body(table: PaperTable, show_std: bool, pm: str, missing: str):
    """Yield ``("task", title)``, ``("block", None)`` and ``("row", [cells])`` items."""
    with_dataset = _has_datasets(table)
    with_tasks = any(s.task is not None for s in table.sections)
    for section in table.sections:
        if with_tasks:
            yield "task", f"Task: {section.task if section.task is not None else '(none)'}"
        for b, block in enumerate(section.blocks):
            if b:
                yield "block", None
            for j, row in enumerate(block.rows):
                cells = []
                if with_dataset:
                    cells.append((block.dataset or MISSING) if j == 0 else "")
                cells.append(metric_title(row.title, row.gamma))
                kinds = _row_kinds(table, row)
                for method in table.methods:
                    for cell, kind in zip(row.cells[method], kinds):
                        text = cell_text(cell, kind, show_std, pm)
                        cells.append(missing if text is None else text)
                yield "row", cells


def _leading_headers(table: PaperTable) -> list[str]:
    return (["Dataset"] if _has_datasets(table) else []) + [table.row_header]


def caption(table: PaperTable) -> str:
    return f"Table {table.number}. {table.title}"


# ---------------------------------------------------------------------------------------
# rich

def rich_table(table: PaperTable, show_std: bool = True):
    """The table as a rich renderable (for terminals only)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=escape(caption(table), "rich"), box=box.SIMPLE_HEAVY, title_style="bold",
              title_justify="left")
    lead = _leading_headers(table)
    for head in lead:
        t.add_column(escape(head, "rich"), justify="left", no_wrap=True)
    for method in (escape(m, "rich") for m in table.methods):
        for i, c in enumerate(table.columns):
            head = method if not c.title else f"{method}\n{c.title}" if i == 0 else f"\n{c.title}"
            t.add_column(head, justify="right", no_wrap=True)
    width = len(lead) + len(table.methods) * len(table.columns)
    for kind, item in _body(table, show_std, "±", MISSING):
        if kind == "task":
            if t.row_count:
                t.add_section()
            t.add_row(Text(escape(item), style="bold"), *[""] * (width - 1))
        elif kind == "block":
            t.add_section()
        else:
            t.add_row(*(escape(cell, "rich") for cell in item))
    return t


def render_paper_table(table: PaperTable, file, show_std: bool = True) -> None:
    """Print the table and its notes to ``file`` (a terminal, or wide enough when piped
    that rich never wraps a row, which it would at 80 columns)."""
    from rich.console import Console

    renderable = rich_table(table, show_std)
    if file.isatty():
        console = Console(file=file)
    else:
        console = Console(file=file, width=120, color_system=None)
        console.width = max(120, natural_width(console, renderable))
    console.print(renderable)
    for note in notes(table, show_std):
        console.print(escape(note, "rich"), style="dim", highlight=False)


# ---------------------------------------------------------------------------------------
# Markdown

def to_markdown(table: PaperTable, show_std: bool = True) -> str:
    """One Markdown table per task, under its title."""
    lead = _leading_headers(table)
    heads = lead + [f"{method} {c.title}".strip() for method in table.methods
                    for c in table.columns]
    lines = [f"**{md_escape(caption(table))}**", ""]
    rows: list[list[str]] = []
    for kind, item in [*_body(table, show_std, "±", MISSING), ("task", None)]:
        if kind == "task":  # the rows so far are a table (None: the end)
            if rows:
                lines += [md_table(heads, rows, len(lead)), ""]
                rows = []
            if item is not None:
                lines += [f"**{md_escape(item)}**", ""]
        elif kind == "row":
            rows.append(item)
    lines += [f"_{md_escape(n)}_" for n in notes(table, show_std)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# LaTeX (booktabs)

def to_latex(table: PaperTable, show_std: bool = True) -> str:
    lead = _leading_headers(table)
    per = len(table.columns)
    ncols = len(lead) + per * len(table.methods)
    spec = "l" * len(lead) + " " + " ".join(["r" * per] * len(table.methods))
    lines = [f"% {latex_escape(caption(table))} -- tieeval {__version__}; "
             r"needs \usepackage{booktabs}"]
    if table.number == 3:  # provenance stays out of the caption a paper prints
        lines.append(f"% {latex_escape(table_footer(table))}")
    text = table.title + ". " + " ".join(notes(table, show_std, provenance=False))
    lines += [r"\begin{table}[t]", r"\centering", r"\caption{" + latex_escape(text) + "}",
              rf"\label{{tab:tieeval-table{table.number}}}",
              rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if per > 1:
        top = [latex_escape(h) for h in lead]
        rules = []
        for i, method in enumerate(table.methods):
            start = len(lead) + i * per + 1
            top.append(rf"\multicolumn{{{per}}}{{c}}{{{latex_escape(method)}}}")
            rules.append(rf"\cmidrule(lr){{{start}-{start + per - 1}}}")
        lines.append(" & ".join(top) + r" \\")
        lines.append(" ".join(rules))
        sub = [""] * len(lead) + [latex_escape(c.title) for c in table.columns] * len(
            table.methods)
        lines.append(" & ".join(sub) + r" \\")
    else:
        heads = [latex_escape(h) for h in lead] + [latex_escape(m) for m in table.methods]
        lines.append(" & ".join(heads) + r" \\")
    lines.append(r"\midrule")
    first_task = True
    for kind, item in _body(table, show_std, "±", MISSING):
        if kind == "task":
            if not first_task:
                lines.append(r"\midrule")
            first_task = False
            lines.append(rf"\multicolumn{{{ncols}}}{{l}}{{\textit{{{latex_escape(item)}}}}} \\")
        elif kind == "block":
            lines.append(r"\addlinespace")
        else:
            lines.append(" & ".join(latex_escape(c) for c in item) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# CSV (tidy)

def _csv_gamma(table: PaperTable) -> bool:
    """Metric tables of labelled runs gain a ``gamma`` column, as the runs' CSV does."""
    return table.row_header == "Metric" and table.labelled


def csv_fields(table: PaperTable) -> list[str]:
    lead = ["task", "dataset"]
    lead += ["metric", "k"] if table.row_header == "Metric" else ["statistic"]
    lead += ["gamma"] if _csv_gamma(table) else []
    lead += ["method", "seeds"]
    for c in table.columns:
        lead.append(c.key)
        if c.kind != "change":
            lead.append(f"{c.key}_seed_std")
    if _has_original(table):
        lead.append("original_rule")
    return lead


def _has_original(table: PaperTable) -> bool:
    return any(c.key == "original" for c in table.columns)


def csv_rows(table: PaperTable):
    gamma = _csv_gamma(table)
    rule = original_rule_of([run for g in table.groups for run in g.runs])
    for task, dataset, row in table.rows():
        for method in table.methods:
            cells = row.cells[method]
            if all(c.value is None for c in cells):
                continue  # no run of this method in this setting
            out: dict[str, Any] = {"task": task, "dataset": dataset, "method": method,
                                   "seeds": max(c.seeds for c in cells)}
            if row.statistic is None:
                out.update(metric=row.metric, k=row.k)
                if gamma:
                    out["gamma"] = row.gamma
            else:
                out["statistic"] = row.statistic
            for col, cell in zip(table.columns, cells):
                out[col.key] = cell.value
                if col.kind != "change":
                    out[f"{col.key}_seed_std"] = cell.seed_std
            if _has_original(table):
                out["original_rule"] = rule
            yield out


def to_csv(table: PaperTable) -> str:
    return csv_text(csv_fields(table), csv_rows(table))
