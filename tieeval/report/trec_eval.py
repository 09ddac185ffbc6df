"""trec_eval's text output: ``measure<TAB>qid<TAB>value`` lines, byte for byte as trec_eval
prints them (meas_print_single.c, meas_print_final.c): the name left-justified to 22
characters, a tab, the query id, a tab, and the value as ``%6.4f``, or as a whole number for
the counts (``num_ret``, ``num_rel``...); ``runid`` prints its text."""

from __future__ import annotations

import math

from tieeval.records.trec_eval import TrecLine


def trec_value(line: TrecLine) -> str:
    """The value as trec_eval prints it: ``%6.4f``, ``%ld`` of the truncated count, or
    the runid's text."""
    value = line.value
    if isinstance(value, str):
        return value
    if line.integer and math.isfinite(value):
        return str(int(value))  # C's (long) cast truncates toward zero, as int() does
    return f"{value:6.4f}"


def to_trec_eval(lines: list[TrecLine]) -> str:
    """The lines as trec_eval's text, one per line."""
    return "".join(f"{line.measure:<22}\t{line.qid}\t{trec_value(line)}\n" for line in lines)
