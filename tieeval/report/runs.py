"""Rendering of single runs (``tieeval compare``): rich tables, JSON, CSV and Markdown.

JSON and CSV never pass through rich (rich wraps lines when piped); they are written as
plain text with unrounded floats.
"""

from __future__ import annotations

from typing import Iterable

from tieeval.records.results import ORIGINAL_RULE_TEXT, RunResult, environment, report_dict
from tieeval.report.format import (
    counted,
    fmt_change,
    fmt_count,
    fmt_percent,
    fmt_size,
    fmt_value,
    json_text,
    latex_escape,
    md_escape,
    md_table,
)
from tieeval.util.escaping import escape

CSV_FIELDS = ("path", "metric", "k", "original", "first", "last", "tie_aware", "tie_aware_std",
              "change_original_to_tie_aware", "change_first_to_last")
# Rows of labelled dumps (tieeval.kernels.general) also carry these; CSV gains them when present.
REL_CSV_FIELDS = ("gamma", "instances", "skipped")


def tie_rows(run: RunResult) -> list[tuple[str, str]]:
    """The tie statistics as (label, formatted value) pairs, in the paper's order."""
    t = run.ties
    rows = [("Avg. top-score tie size", fmt_size(t.top_tie_size)),
            ("Avg. top-score tie ratio", fmt_percent(t.top_tie_ratio)),
            ("Top-score tie frequency", fmt_percent(t.top_tie_frequency)),
            ("Avg. positive tie size", fmt_size(t.positive_tie_size)),
            ("Positive tie frequency", fmt_percent(t.positive_tie_frequency))]
    rows += [(f"HR@{k} decided by the tie-break", fmt_percent(v))
             for k, v in t.tie_decided.items()]
    return rows


def metric_cells(run: RunResult) -> list[list[str]]:
    # ``display`` adds gamma to signed metrics of labelled dumps (SNDCG@20 γ=0.5); the
    # counts of trec_eval (NumRet...) are sums over the instances, shown as such
    out = []
    for row in run.metrics:
        total = getattr(row, "aggregate", None) == "sum"
        fmt = fmt_count if total else fmt_value
        name = getattr(row, "display", row.label) + (" (sum)" if total else "")
        out.append([name, fmt(row.original), fmt(row.first), fmt(row.last),
                    f"{fmt(row.tie_aware)} ± {fmt(row.tie_aware_std)}",
                    fmt_change(row.change_original_to_tie_aware),
                    fmt_change(row.change_first_to_last)])
    return out


def metric_notes(run: RunResult) -> list[str]:
    """Why a tie-aware figure is n/a, one line per metric row that has no such figure."""
    return [f"{getattr(row, 'display', row.label)}: tie-aware n/a, {reason}"
            for row in run.metrics
            if (reason := getattr(row, "tie_aware_reason", None)) is not None]


METRIC_HEADERS = ["Metric", "Original", "First", "Last", "Tie-aware ± sd",
                  "% Chg orig→tie", "% Chg first→last"]
# A narrow terminal (80 columns) would wrap every "Tie-aware ± sd" cell: the table takes
# the first of these that fits, with shorter headers, then without the % columns (the
# last one is printed whatever the width: the figures themselves never shrink).
NARROWER_HEADERS = [METRIC_HEADERS,
                    ["Metric", "Original", "First", "Last", "Tie-aware ± sd", "%o→t",
                     "%f→l"],
                    ["Metric", "Original", "First", "Last", "Tie-aware ± sd", "%o→t"],
                    METRIC_HEADERS[:5]]


def describe_run(run: RunResult) -> str:
    cands = (str(run.candidates_min) if run.candidates_min == run.candidates_max
             else f"{run.candidates_min}–{run.candidates_max}")
    # labelled dumps and TREC runs (tieeval.kernels.general)
    note = getattr(run, "caption_note", "")
    noun = "candidate" if run.candidates_max == 1 else "candidates"
    return f"{counted(run.instances, 'instance')} × {cands} {noun}, {run.dtype}{note}"


def original_title(rules: Iterable[str]) -> str:
    """The title of an Original column produced by ``rules`` (one per run, repeats
    dropped): ``Original (np.argsort(scores * -1), as the codebases rank)``, ``Original
    (trec_eval's order (score, then docno, descending))``, ``Original (--original given:
    the ranking the dump carries (its 'ranking' field))``."""
    parts = []
    for rule in dict.fromkeys(rules):
        if rule == "argsort":
            parts.append("np.argsort(scores * -1), as the codebases rank")
        elif rule == "trec":
            parts.append(ORIGINAL_RULE_TEXT[rule])
        else:
            parts.append(f"--original {rule}: {ORIGINAL_RULE_TEXT[rule]}")
    return f"Original ({'; '.join(parts)})"


def rules_footer(rules: Iterable[str]) -> str:
    """The footer of an output whose Original figures came from ``rules`` (effective rule
    names, or several joined by ``; ``): each rule in words, numpy's platform for
    ``argsort`` (its order among ties depends on it), and the version."""
    names = list(dict.fromkeys(r for text in rules if text for r in text.split("; ")))
    parts = [_rule_text(rule) for rule in names or ["argsort"]]
    return f"{' '.join(parts)} tieeval {environment()['tieeval_version']}."


def _rule_text(rule: str) -> str:
    if rule == "argsort":
        return _argsort_text()
    if rule == "trec":
        return f"Original = {ORIGINAL_RULE_TEXT[rule]}, as trec_eval ranks."
    return _given_text(rule)


def _argsort_text() -> str:
    env = environment()
    return (f"Original = np.argsort(scores * -1) as the codebases rank: numpy "
            f"{env['numpy_version']} ({env['numpy_simd']}, {env['machine']}); its order "
            "among ties is platform-dependent.")


def _given_text(rule: str) -> str:
    """A rule given with ``--original``, in words (torch's version for ``topk``)."""
    text = ORIGINAL_RULE_TEXT[rule]
    if rule in ("topk", "topk-each"):
        try:
            import torch
        except ImportError:  # pragma: no cover - a topk run was evaluated with torch
            text += " (torch not installed)"
        else:
            text += f" (torch {torch.__version__})"
    return f"Original (--original {rule}) = {text}."


def footer(runs: Iterable[RunResult] = ()) -> str:
    """What the Original column ranks by (each rule the runs used), and the versions."""
    rules = [(getattr(r, "original_rule", None), _is_trec(r)) for r in runs]
    chosen = list(dict.fromkeys(rule for rule, _ in rules if rule is not None))
    trec = any(rule is None and is_trec for rule, is_trec in rules)
    argsort = any(rule is None and not is_trec for rule, is_trec in rules)
    if trec and not argsort and not chosen:
        return rules_footer(["trec"])  # no run was ranked by np.argsort: do not name it
    parts = [_argsort_text()] if argsort or not chosen else []
    if trec:
        parts.append("TREC runs: trec_eval's order (score, then docno, descending)"
                     + (" instead." if not chosen else "."))
    parts += [_given_text(rule) for rule in chosen]
    return f"{' '.join(parts)} tieeval {environment()['tieeval_version']}."


def _is_trec(run: RunResult) -> bool:
    return (getattr(run, "relevance", None) or {}).get("source") == "trec"


def narrow_note(headers: list[str], width: int) -> str:
    """What a narrowed table's headers mean and what it left out ("" for the full one)."""
    if headers == METRIC_HEADERS:
        return ""
    parts = [{"%o→t": "%o→t: % change original → tie-aware",
              "%f→l": "%f→l: first → last"}[h] for h in headers[5:]]
    if len(headers) < 7:
        parts.append(f"{'both ' if len(headers) == 5 else ''}"
                     f"{'% change columns' if len(headers) == 5 else '%f→l'} left out at "
                     f"{width} columns (a wider terminal or --format csv / json has them)")
    return "; ".join(parts)


def natural_width(console, renderable) -> int:
    """The width ``renderable`` takes unwrapped (``console.measure`` caps it at the
    console's)."""
    return console.measure(renderable, options=console.options.update_width(100_000)).maximum


def render_tables(runs: Iterable[RunResult], console) -> None:
    """Print one metric table and one tie-statistics table per run to a rich console."""
    from rich import box
    from rich.table import Table

    runs = list(runs)
    for run in runs:
        cells = metric_cells(run)
        for headers in NARROWER_HEADERS:  # the first that keeps every row on one line
            table = Table(title=escape(run.path, "rich"),
                          caption=escape(describe_run(run), "rich"),
                          box=box.SIMPLE_HEAVY, title_style="bold", caption_justify="left")
            for i, header in enumerate(headers):
                table.add_column(header, justify="left" if i == 0 else "right",
                                 no_wrap=i == 0)
            for row in cells:
                table.add_row(*row[:len(headers)])
            if natural_width(console, table) <= console.width:
                break
        console.print(table)
        note = narrow_note(headers, console.width)
        if note:
            console.print(note, style="dim", markup=False, highlight=False)
        for note in metric_notes(run):
            console.print(note, style="dim", markup=False, highlight=False)
        ties = Table(title="Tie statistics", box=box.SIMPLE, show_header=False,
                     title_justify="left")
        ties.add_column("statistic")
        ties.add_column("value", justify="right")
        for label, value in tie_rows(run):
            ties.add_row(label, value)
        console.print(ties)
    console.print(footer(runs), style="dim")


def to_json(runs: list[RunResult], groups: list | None = None, what_if=None) -> str:
    """The JSON contract; with ``groups`` (seed averages) a ``groups`` list follows ``runs``."""
    return json_text(report_dict(runs, groups, what_if))


def csv_fields(runs) -> tuple:
    labelled = any("gamma" in row.to_dict() for run in runs for row in run.metrics)
    # original_rule goes last, so that no earlier column moves
    return CSV_FIELDS + (REL_CSV_FIELDS if labelled else ()) + ("original_rule",)


def csv_rows(runs: Iterable[RunResult]) -> Iterable[dict]:
    runs = list(runs)
    fields = csv_fields(runs)
    for run in runs:
        for row in run.metrics:
            d = row.to_dict()
            yield {"path": run.path, **{k: d.get(k) for k in fields if k != "path"},
                   "original_rule": run.effective_original_rule}


def to_markdown(runs: list[RunResult]) -> str:
    parts = []
    for run in runs:
        parts.append(f"### {md_escape(run.path)}\n\n{describe_run(run)}\n")
        parts.append(md_table(METRIC_HEADERS, metric_cells(run)) + "\n")
        parts.append(md_table(["Tie statistic", "Value"], [list(r) for r in tie_rows(run)])
                     + "\n")
    parts.append(f"_{footer(runs)}_\n")
    return "\n".join(parts)


def to_latex(runs: list[RunResult]) -> str:
    """One booktabs tabular per run: the metric table, then its tie statistics."""
    parts = []
    for run in runs:
        lines = [f"% {latex_escape(run.path)}: {latex_escape(describe_run(run))}; "
                 r"needs \usepackage{booktabs}",
                 r"\begin{tabular}{l" + "r" * (len(METRIC_HEADERS) - 1) + "}", r"\toprule",
                 " & ".join(latex_escape(h) for h in METRIC_HEADERS) + r" \\", r"\midrule"]
        lines += [" & ".join(latex_escape(c) for c in cells) + r" \\"
                  for cells in metric_cells(run)]
        lines.append(r"\midrule")
        lines += [rf"\multicolumn{{{len(METRIC_HEADERS) - 1}}}{{l}}{{{latex_escape(label)}}} & "
                  f"{latex_escape(value)} " + r"\\" for label, value in tie_rows(run)]
        lines += [r"\bottomrule", r"\end{tabular}"]
        parts.append("\n".join(lines) + "\n")
    parts.append(f"% {latex_escape(footer(runs))}\n")
    return "\n".join(parts)
