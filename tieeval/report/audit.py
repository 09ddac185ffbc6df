"""Rendering of ``tieeval audit``: each published claim against last, tie-aware, first and
original, with its verdict; a rich table, Markdown, CSV or JSON."""

from __future__ import annotations

from tieeval.records.audit import FLAGGED, UNMATCHED, VERDICTS, AuditItem, AuditResult
from tieeval.records.results import environment
from tieeval.report.format import (
    counted,
    csv_text,
    fmt_value,
    json_text,
    md_escape,
    md_table,
    metric_title,
)
from tieeval.report.registry import Output, register
from tieeval.report.runs import rules_footer
from tieeval.report.whatif import print_unwrapped
from tieeval.util.escaping import escape

AUDIT_HEADERS = ["Line", "Run", "Metric", "Published", "Last", "Tie-aware ± sd", "First",
                 "Original", "Verdict", "Where"]
AUDIT_CSV_FIELDS = ("line", "method", "dataset", "task", "metric", "k", "value", "text",
                    "verdict", "detail", "tolerance", "spread", "last", "tie_aware",
                    "tie_aware_std", "first", "original", "matches_original", "seeds",
                    "original_rule")
_STYLE = {"impossible": "bold red", "tie-break only": "bold yellow", "consistent": "green",
          UNMATCHED: "dim"}


def where_cell(item: AuditItem) -> str:
    """Where the claim sits: ``above tie-aware; matches original``-style text."""
    v = item.verdict
    if v is None:
        return "no run has these labels"
    return v.detail + ("; matches original" if v.matches_original else "")


def cells(item: AuditItem) -> list[str]:
    c, v = item.claim, item.verdict
    head = [str(c.line), " / ".join(x for x in (c.method, c.dataset, c.task) if x),
            metric_title(c.label, item.gamma), c.text]
    if v is None:
        return head + ["", "", "", "", item.status, where_cell(item)]
    original = "n/a" if v.original is None else fmt_value(v.original)
    return head + [fmt_value(v.last), f"{fmt_value(v.tie_aware)} ± {fmt_value(v.tie_aware_std)}",
                   fmt_value(v.first), original, item.status, where_cell(item)]


def counts(items: list[AuditItem]) -> dict[str, int]:
    out = {name: 0 for name in VERDICTS + (UNMATCHED,)}
    for item in items:
        out[item.status] += 1
    return out


def summary(items: list[AuditItem]) -> str:
    """``2 of 5 claims flagged (1 impossible, 1 tie-break only); 3 consistent``."""
    n = counts(items)
    judged = len(items) - n[UNMATCHED]
    flagged = sum(n[v] for v in FLAGGED)
    text = (f"{flagged} of {counted(judged, 'claim')} flagged ({n['impossible']} impossible, "
            f"{n['tie-break only']} tie-break only); {n['consistent']} consistent")
    if n[UNMATCHED]:
        text += f"; {n[UNMATCHED]} unmatched (ignored)"
    return text


LEGEND = ("impossible: above First (or below Last) beyond the printed rounding; "
          "tie-break only: above Tie-aware by more than max(2 sd, rounding), reachable only "
          "by a tie-break favouring the positive; consistent: otherwise. Figures are seed "
          "means of the matching runs.")


def audit_footer(items: list[AuditItem]) -> str:
    """What the Original column was ranked by (see :func:`rules_footer`)."""
    return rules_footer(i.original_rule for i in items if i.original_rule)


# ---------------------------------------------------------------------------------------
# the renderers of audit results, by format

@register("audit", "table", "a rich table for the terminal")
def audit_table(result: AuditResult, out: Output) -> None:
    from rich import box
    from rich.table import Table

    items, console = result.items, out.console()

    table = Table(title="Published claims against the dumps", box=box.SIMPLE_HEAVY,
                  title_style="bold")
    for i, header in enumerate(AUDIT_HEADERS):
        number = i == 0 or 3 <= i <= 7
        table.add_column(header, justify="right" if number else "left",
                         no_wrap=number or header == "Verdict")
    for item in items:
        table.add_row(*(escape(cell, "rich") for cell in cells(item)),
                      style=_STYLE[item.status])
    print_unwrapped(console, table)
    console.print(summary(items))
    console.print(LEGEND, style="dim")
    console.print(audit_footer(items), style="dim", soft_wrap=True)


@register("audit", "json", machine_readable=True)
def audit_json(result: AuditResult, out: Output) -> None:
    n = counts(result.items)
    out.write(json_text({**environment(), "claims_file": result.claims_path,
                         "flagged": sum(n[v] for v in FLAGGED), "counts": n,
                         "claims": [i.to_dict() for i in result.items]}))


@register("audit", "csv", machine_readable=True)
def audit_csv(result: AuditResult, out: Output) -> None:
    """One line per claim; a ``gamma`` column after ``k`` when a claim has one (a labelled
    run's row, or a gamma in the claims file)."""
    fields: tuple[str, ...] = AUDIT_CSV_FIELDS
    if any(item.has_gamma for item in result.items):
        at = fields.index("k") + 1
        fields = fields[:at] + ("gamma",) + fields[at:]
    out.write(csv_text(fields, (item.to_dict() for item in result.items)))


@register("audit", "markdown")
def audit_markdown(result: AuditResult, out: Output) -> None:
    items = result.items
    out.write(md_table(AUDIT_HEADERS, [cells(i) for i in items]) + "\n\n"
              + md_escape(summary(items)) + "\n\n_" + md_escape(LEGEND) + "_\n\n_"
              + md_escape(audit_footer(items)) + "_\n")
