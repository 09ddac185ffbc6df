"""Rendering of ``tieeval diff`` (B versus A) and ``tieeval rank`` (methods ranked by
tie-aware value beside their original ranking): rich tables, Markdown, CSV and JSON.

Every writer consumes the same rows; JSON and CSV never pass through rich and keep floats
unrounded.
"""

from __future__ import annotations

from tieeval.records.diff import COMPARISON_KEYS, DiffResult, Ranking, RankResult
from tieeval.records.results import environment
from tieeval.records.whatif import WhatIf
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
from tieeval.report.runs import original_title, rules_footer
from tieeval.report.whatif import markdown_note, note, print_unwrapped
from tieeval.util.escaping import escape

DIFF_CSV_FIELDS = (("a_path", "b_path", "metric", "k") + COMPARISON_KEYS + ("winner",)
                   + tuple(f"original_{k}" for k in COMPARISON_KEYS + ("winner",))
                   + ("winner_changed", "what_if"))
# added columns go last, after a labelled run's gamma and instances, so that no existing
# column moves
DIFF_CSV_ADDED = ("significant", "original_significant", "original_rule")
RANK_CSV_FIELDS = ("dataset", "task", "metric", "k", "method", "tie_aware_rank", "tie_aware",
                   "tie_aware_std", "original_rank", "original", "change", "seeds", "what_if",
                   "original_rule")


# ---------------------------------------------------------------------------------------
# cells

def fmt_diff(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.4f}"


def fmt_p(p: float | None) -> str:
    """A p-value with four decimals; ``<0.0001`` below that."""
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _column_cells(result: DiffResult, column: str) -> list[list[str]]:
    rows = []
    for row in result.rows:
        c = getattr(row, column)
        diff = fmt_diff(c.difference)
        if column == "tie_aware":
            diff = f"{diff} ± {fmt_value(c.difference_std)}"
        ci = ("n/a" if c.ci_low is None or c.ci_high is None
              else f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]")
        rows.append([row.display, fmt_value(c.a), fmt_value(c.b), diff, ci,
                     fmt_p(c.p_value_t), fmt_p(c.p_value_randomization),
                     c.winner if c.significant else "n.s."])  # a winner only if significant
    return rows


def _headers(result: DiffResult, column: str) -> list[str]:
    level = f"{result.confidence * 100:g}% CI"
    diff = "B − A ± sd" if column == "tie_aware" else "B − A"
    return ["Metric", "A", "B", diff, level, "p (t-test)", "p (sign-flip)", "Winner"]


def column_title(result: DiffResult, column: str) -> str:
    """A table's title; the Original one names the rule its numbers come from."""
    if column == "tie_aware":
        return "Tie-aware (expectation under uniform random tie-breaking)"
    return original_title(result.original_rules)


def describe_sides(result: DiffResult) -> list[str]:
    lines = []
    for key, side in (("A", result.a), ("B", result.b)):
        method = side.run_labels.get("method")
        name = f" ({method})" if method and method != side.path else ""
        lines.append(f"{key} = {side.path}{name}")
    how = ("matched by instance id" if result.alignment == "instance"
           else "matched by row order")
    lines.append(f"{counted(result.instances, 'instance')}, {how}")
    return lines


def randomization_note(result: DiffResult) -> str:
    if result.randomization_exact:
        return ("p (sign-flip): exact paired randomization test over all "
                f"2^{result.instances} sign vectors")
    seed = "no seed" if result.seed is None else f"seed {result.seed}"
    return (f"p (sign-flip): paired randomization test, {result.permutations} Monte Carlo "
            f"sign vectors ({seed})")


def _outcome(c, column: str) -> str:
    """``B wins under original`` when significant, else ``no significant difference under
    original (p 0.6712 t-test, 0.6650 sign-flip)``."""
    if c.significant:
        return f"{'wins' if c.winner == 'B' else 'loses'} under {column}"
    return (f"no significant difference under {column} (p {fmt_p(c.p_value_t)} t-test, "
            f"{fmt_p(c.p_value_randomization)} sign-flip)")


def significance_verdict(row) -> str:
    """What the two columns conclude at the chosen confidence: ``B loses under original,
    wins under tie-aware`` when both are significant."""
    o, t = _outcome(row.original, "original"), _outcome(row.tie_aware, "tie-aware")
    if row.original.significant:  # B named once, first
        return f"B {o}{', ' if row.tie_aware.significant else '; '}{t}"
    return f"{o}; {'B ' if row.tie_aware.significant else ''}{t}"


def verdict_lines(result: DiffResult) -> list[str]:
    """One line per metric whose significant winner changes between the columns; one
    summary line when none does."""
    changed = [r for r in result.rows if r.significance_changed]
    if not changed:
        return [f"Same verdict under original and tie-aware for every metric at "
                f"{confidence_text(result)} confidence."]
    return [f"{r.display}: {significance_verdict(r)}" for r in changed]


def confidence_text(result: DiffResult) -> str:
    return f"{result.confidence * 100:g}%"


def winner_note(result: DiffResult) -> str:
    """How the Winner column reads."""
    alpha = f"{1 - result.confidence:.6g}"
    return (f"Winner: named only when both tests give p < {alpha} ({confidence_text(result)}"
            " confidence); n.s.: no significant difference.")


def worse_line(result: DiffResult, row) -> str:
    """The ``--fail-if-worse`` line: ``Failed: --fail-if-worse NDCG@10: B is significantly
    worse than A under tie-aware, B − A = -0.0420 (p 0.0003 t-test, 0.0002 sign-flip <
    0.05, 95% confidence)``."""
    c = row.tie_aware
    return (f"Failed: --fail-if-worse {row.display}: B is significantly worse than A under "
            f"tie-aware, B − A = {fmt_diff(c.difference)} (p {fmt_p(c.p_value_t)} t-test, "
            f"{fmt_p(c.p_value_randomization)} sign-flip < {1 - result.confidence:.6g}, "
            f"{confidence_text(result)} confidence)")


# ---------------------------------------------------------------------------------------
# the renderers of diff results, by format

def _print_table(console, title: str, headers: list[str], rows: list[list[str]], left: int,
                 no_wrap: bool = False) -> None:
    """A rich table printed unwrapped: column ``left`` left-aligned (on one line with
    ``no_wrap``), the others right-aligned."""
    from rich import box
    from rich.table import Table

    table = Table(title=escape(title, "rich"), box=box.SIMPLE_HEAVY, title_style="bold")
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == left else "right",
                         no_wrap=no_wrap and i == left)
    for cells in rows:
        table.add_row(*(escape(cell, "rich") for cell in cells))
    print_unwrapped(console, table)


@register("diff", "table", "a rich table for the terminal")
def diff_table(result: DiffResult, out: Output) -> None:
    console = out.console()
    if result.what_if.active:
        console.print(note(result.what_if), style="bold yellow")
    for line in describe_sides(result):
        console.print(escape(line, "rich"))
    for column in ("tie_aware", "original"):
        title = column_title(result, column) + (" — what-if" if result.what_if.active else "")
        _print_table(console, title, _headers(result, column), _column_cells(result, column),
                     0, no_wrap=True)
    for line in verdict_lines(result):
        console.print(escape(line, "rich"),
                      style=None if line.startswith("Same verdict") else "bold", soft_wrap=True)
    console.print(escape(winner_note(result), "rich"), style="dim", soft_wrap=True)
    console.print(randomization_note(result), style="dim")


@register("diff", "json", machine_readable=True)
def diff_json(result: DiffResult, out: Output) -> None:
    out.write(json_text({**environment(), **result.to_dict()}))


@register("diff", "csv", machine_readable=True)
def diff_csv(result: DiffResult, out: Output) -> None:
    """One line per metric; the original column's fields carry an ``original_`` prefix."""
    what_if = result.what_if.describe() if result.what_if.active else ""
    lines = []
    for row in result.rows:
        d = row.to_dict()
        lines.append({"a_path": result.a.path, "b_path": result.b.path, "metric": d["metric"],
                      "k": d["k"], **{k: d[k] for k in COMPARISON_KEYS}, "winner": d["winner"],
                      **{f"original_{k}": v for k, v in d["original"].items()},
                      "winner_changed": d["winner_changed"], "what_if": what_if,
                      "significant": d["significant"],
                      "original_rule": "; ".join(result.original_rules)})
        if row.labelled:
            lines[-1].update(gamma=row.gamma, instances=row.instances)
    fields = DIFF_CSV_FIELDS
    if any(row.labelled for row in result.rows):  # labelled runs: gamma and pairs counted
        fields = fields + ("gamma", "instances")
    out.write(csv_text(fields + DIFF_CSV_ADDED, lines))


@register("diff", "markdown")
def diff_markdown(result: DiffResult, out: Output) -> None:
    parts = []
    if result.what_if.active:
        parts.append(markdown_note(result.what_if))
    parts.append("  \n".join(md_escape(line) for line in describe_sides(result)) + "\n\n")
    for column in ("tie_aware", "original"):
        parts.append(f"**{md_escape(column_title(result, column))}**\n\n")
        parts.append(md_table(_headers(result, column), _column_cells(result, column)) + "\n\n")
    parts.append("\n".join(f"- {md_escape(line)}" for line in verdict_lines(result)) + "\n\n")
    parts.append(f"_{md_escape(winner_note(result))}_  \n_{randomization_note(result)}_\n")
    out.write("".join(parts))


# ---------------------------------------------------------------------------------------
# the renderers of rank results, by format

def ranking_title(r: Ranking) -> str:
    """``dataset · task · SNDCG@10 γ=0.5``: the setting, then the metric (and its gamma)."""
    where = " · ".join(x for x in (r.dataset, r.task) if x)
    title = metric_title(r.label, r.gamma)
    return f"{where} · {title}" if where else title


def _rank_cells(r: Ranking, seeds: bool) -> list[list[str]]:
    rows = []
    for e in r.entries:
        # the move: ↑2 (up two places), ↓1, = (unchanged)
        move = f"↑{e.change}" if e.change > 0 else f"↓{-e.change}" if e.change < 0 else "="
        cells = [str(e.tie_aware_rank), e.method,
                 f"{fmt_value(e.tie_aware)} ± {fmt_value(e.tie_aware_std)}",
                 fmt_value(e.original), str(e.original_rank), move]
        if seeds:
            cells.append(str(e.seeds))
        rows.append(cells)
    return rows


def _rank_headers(seeds: bool) -> list[str]:
    return ["Rank", "Method", "Tie-aware ± sd", "Original", "Orig. rank", "Move",
            *(["Seeds"] if seeds else [])]


def _any_seeds(rankings: list[Ranking]) -> bool:
    return any(e.seeds > 1 for r in rankings for e in r.entries)


def rank_summary(rankings: list[Ranking]) -> str:
    changed = sum(r.changed for r in rankings)
    return (f"The ranking changes between original and tie-aware in {changed} of "
            f"{counted(len(rankings), 'ranking')}. Move: places gained (↑) or lost (↓) once ties "
            "are broken fairly.")


def rank_footer(rankings: list[Ranking]) -> str:
    """What the Original values and ranks were ranked by (see :func:`rules_footer`)."""
    return rules_footer(e.original_rule or "argsort" for r in rankings for e in r.entries)


def _active(result: RankResult) -> WhatIf | None:
    what_if = result.what_if
    return what_if if what_if is not None and what_if.active else None


@register("rank", "table", "a rich table for the terminal")
def rank_table(result: RankResult, out: Output) -> None:
    console, rankings, what_if = out.console(), result.rankings, _active(result)
    if what_if is not None:
        console.print(note(what_if), style="bold yellow")
    seeds = _any_seeds(rankings)
    for r in rankings:
        title = ranking_title(r) + (" — what-if" if what_if is not None else "")
        _print_table(console, title, _rank_headers(seeds), _rank_cells(r, seeds), 1)
    console.print(rank_summary(rankings), style="dim")
    console.print(rank_footer(rankings), style="dim", soft_wrap=True)


@register("rank", "json", machine_readable=True)
def rank_json(result: RankResult, out: Output) -> None:
    active = _active(result)
    out.write(json_text({**environment(),
                         "what_if": active.to_dict() if active is not None else None,
                         "rankings": [r.to_dict() for r in result.rankings]}))


@register("rank", "csv", machine_readable=True)
def rank_csv(result: RankResult, out: Output) -> None:
    """One line per method and ranking; labelled runs gain a ``gamma`` column after ``k``."""
    rankings, what_if = result.rankings, _active(result)
    text = what_if.describe() if what_if is not None else ""
    fields: tuple[str, ...] = RANK_CSV_FIELDS
    if any(r.labelled for r in rankings):
        at = fields.index("k") + 1
        fields = fields[:at] + ("gamma",) + fields[at:]
    out.write(csv_text(fields, ({"dataset": r.dataset, "task": r.task, "metric": r.metric,
                                  "k": r.k, "gamma": r.gamma, **e.to_dict(), "what_if": text}
                                 for r in rankings for e in r.entries)))


@register("rank", "markdown")
def rank_markdown(result: RankResult, out: Output) -> None:
    parts, rankings, what_if = [], result.rankings, _active(result)
    if what_if is not None:
        parts.append(markdown_note(what_if))
    seeds = _any_seeds(rankings)
    for r in rankings:
        parts.append(f"**{md_escape(ranking_title(r))}**\n\n")
        parts.append(md_table(_rank_headers(seeds), _rank_cells(r, seeds)) + "\n\n")
    parts.append(f"_{rank_summary(rankings)}_\n\n_{md_escape(rank_footer(rankings))}_\n")
    out.write("".join(parts))
