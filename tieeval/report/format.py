"""Number and text formatting shared by every renderer."""

from __future__ import annotations

import csv
import io

from tieeval.util.escaping import escape


def fmt_value(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def fmt_count(x: float | None) -> str:
    """A summed count: a whole number as such (1500), a tie-aware expectation of a count
    with four decimals."""
    if x is None:
        return "n/a"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.4f}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` agreeing: ``1 check``, ``2 checks``, ``0 checks`` (``plural``
    when adding an s is not it)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def fmt_change(frac: float | None) -> str:
    """A relative change as a signed percentage (the paper's % Change columns)."""
    return "n/a" if frac is None else f"{frac * 100:+.2f}%"


def fmt_percent(frac: float) -> str:
    return f"{frac * 100:.2f}%"


def fmt_size(x: float) -> str:
    return f"{x:.2f}"


def metric_title(label: str, gamma: float | None = None) -> str:
    """A metric row's title: ``SNDCG@10 γ=0.5`` for a signed metric's gamma row, else the
    label (the form of the run tables, :attr:`tieeval.records.results.MetricRow.display`)."""
    return label if gamma is None else f"{label} γ={gamma:g}"


def csv_cell(value) -> str:
    """A CSV cell: empty for None, ``true``/``false``, floats unrounded (``repr``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return escape(value, "csv")


def csv_text(fields, rows) -> str:
    """A header of ``fields``, then one line per dict of ``rows`` (its ``fields`` only)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(row.get(k)) for k in fields})
    return buf.getvalue()


def md_escape(text: str) -> str:
    """Text for a Markdown table cell or line (see :func:`tieeval.util.escaping.escape`)."""
    return escape(text, "markdown")


def md_table(headers: list[str], rows: list[list[str]], lead: int = 1) -> str:
    """A Markdown table: the ``lead`` first columns left-aligned, the others right."""
    lines = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
             "|" + "|".join([" --- "] * lead + [" ---: "] * (len(headers) - lead)) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def latex_escape(text: str) -> str:
    """Escape text for LaTeX: ``& % $ # _ { } ~ ^ \\`` and a few Unicode signs (γ too, which
    pdflatex cannot typeset as text)."""
    return escape(text, "latex")


def json_text(doc) -> str:
    """``doc`` as indented JSON text, one newline at the end. A string holding ``##[`` (the
    older form of a GitHub Actions workflow command, read anywhere in a line) has its
    second ``#`` written ``\\u0023``: the same string to any JSON reader."""
    import json
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    return text.replace("##[", "#\\u0023[") if "##[" in text else text
