"""trec_eval's text output: ``measure<TAB>qid<TAB>value`` lines, byte for byte as trec_eval
prints them (meas_print_single.c, meas_print_final.c): the name left-justified to 22
characters, a tab, the query id, a tab, and the value (:func:`trec_value`). The texts (a
query id, a runid) are written in their one-line form (:func:`tieeval.util.escaping.escape`):
a line break in them would start a line of its own."""

from __future__ import annotations

import math

from tieeval.records.runs import RunTables
from tieeval.records.trec_eval import TrecLine
from tieeval.report.registry import Output, register
from tieeval.util.escaping import escape


def trec_value(line: TrecLine) -> str:
    """The value as trec_eval prints it: ``%6.4f``, ``%ld`` of a count, or the runid's
    text. A count that is not a whole number -- an expected count over the tie orders
    (First, Last and Tie-aware of a tie block cut by the depth) -- keeps its decimals,
    as ``%6.4f``: the line holds the value the JSON holds."""
    value = line.value
    if isinstance(value, str):
        return escape(value)
    if line.integer and math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    if math.isnan(value):
        return "  -nan"  # glibc's %6.4f of 0.0/0.0 (the sign bit set): trec_eval's -J lines
    return f"{value:6.4f}"


@register("runs", "trec_eval", "trec_eval's 'measure qid value' lines in its names (P_10, "
          "ndcg_cut_10), a drop-in for its output (see --column and --per-query)",
          machine_readable=True, takes=("column", "per_query"))
def runs_trec_eval(result: RunTables, out: Output) -> None:
    if result.trec_lines is None:
        raise ValueError("--format trec_eval needs RunTables.trec_lines")
    out.write("".join(f"{escape(line.measure):<22}\t{escape(line.qid)}\t{trec_value(line)}\n"
                      for line in result.trec_lines()))
