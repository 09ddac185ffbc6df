"""One line of trec_eval's output as a record: which measure, which query, which value.

Building the lines from results is :mod:`tieeval.analysis.trec_eval`; printing them is
:mod:`tieeval.report.trec_eval`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrecLine:
    """One printed line: ``measure``, ``qid`` (``all`` for the summary) and ``value`` (a
    float, or text for ``runid``); ``integer`` values print as whole numbers."""

    measure: str
    qid: str
    value: float | str
    integer: bool = False
