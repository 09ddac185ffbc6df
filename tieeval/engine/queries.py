"""A TREC run's query set in its result: which judged queries were evaluated, skipped or
counted as 0 (trec_eval ``-c``), for every engine."""

from __future__ import annotations

from tieeval.io.base import Dump
from tieeval.metrics.options import RelOptions
from tieeval.records.results import RunResult

__all__ = ["trec_query_report"]


def trec_query_report(result: RunResult, dump: Dump, relevance: RelOptions | None) -> None:
    """Put a TREC run's query set in ``result``: ``relevance.queries`` (the counts) and,
    when a query is left out or counted as 0 without results, a ``trec_queries`` data
    warning and a warning line."""
    query_set = getattr(dump, "query_set", None)
    if query_set is None or result.relevance is None:
        return
    summary, warning = query_set.report(getattr(relevance, "relevance_level", None),
                                        getattr(relevance, "no_relevant", "skip"))
    result.relevance["queries"] = summary
    result.zero_division = query_set.zero_division(getattr(relevance, "relevance_level",
                                                           None))
    if warning is not None:
        result.data_warnings = [*(result.data_warnings or []), warning]
        result.warnings.append(warning["message"])
