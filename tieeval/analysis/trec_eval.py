"""Results as trec_eval prints them: ``measure  qid  value`` lines in trec_eval's names.

:func:`trec_eval_lines` turns a run's results (and, for ``-q``-style output, its per-query
values) into plain :class:`TrecLine` records in trec_eval's order: each query's block, the
queries in the dump's order (a TREC run's queries are sorted as trec_eval sorts them), the
measures in trec_eval's measure-table order (:data:`tieeval.metrics.spellings.TREC_MEASURES`),
then the ``runid`` line and the ``all`` lines. :mod:`tieeval.report.trec_eval` prints them.

One column of tieeval's four is printed: ``original`` (the default) is trec_eval's own
ranking for a TREC run, so the lines are a drop-in for trec_eval's; ``tie_aware``, ``first``
or ``last`` print the same lines for the expected, best or worst tie-break.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tieeval.engine.consumers import Collected
from tieeval.engine.local import collect_instance_values
from tieeval.errors import ParameterError
from tieeval.io.base import ReadOptions, RelevanceReadOptions
from tieeval.io.open import open_dump
from tieeval.metrics.conventions import atol_grades
from tieeval.metrics.metric import COLUMNS
from tieeval.metrics.registry import REGISTRY
from tieeval.metrics.spellings import (
    RELSTRING,
    TREC_MEASURES,
    trec_eval_name,
    trec_measure,
    trec_order,
)
from tieeval.records.results import RunResult
from tieeval.records.trec_eval import TrecLine

ALL = "all"


#: the relevance options under which tieeval's values are trec_eval's definitions
_TREC_OPTIONS = {"gain": "linear", "discount": "log2", "ap_norm": "R", "short_list": "pad",
                 "recall_norm": "relevant", "precision_norm": "K", "relevant_scores": "any"}


def trec_names_apply(run: RunResult) -> bool:
    """True when the run's options are trec_eval's definitions (linear gain, log2
    discount, AP over R), so that trec_eval's names describe its values."""
    rel = run.relevance or {}
    return all(rel.get(key, value) == value for key, value in _TREC_OPTIONS.items())


def measure_name(metric: str, k, gamma: float | None, trec_names: bool = True) -> str:
    """trec_eval's name of a metric (``ndcg_cut_10``), else tieeval's (``V-AUC``,
    ``MRR@10``; a signed metric's gamma as ``SNDCG@10_g0.5``)."""
    spec = REGISTRY[metric]
    name = trec_eval_name(spec, k) if trec_names and gamma is None else None
    if name is not None:
        return name
    label = spec.name if k is None else f"{spec.name}@{k}"
    return label if gamma is None else f"{label}_g{gamma:g}"


#: relstring's place in trec_eval's measure order (:func:`trec_order`'s keys)
_RELSTRING_ORDER = (next(i for i, m in enumerate(TREC_MEASURES) if m.name == RELSTRING), 0.0)


def _flag(metric: str, k, name: str) -> bool:
    """The trec_eval measure's flag ``name`` (``integer``, ``summary_only``); False for
    metrics trec_eval does not name."""
    measure = trec_measure(REGISTRY[metric], k)
    return measure is not None and bool(getattr(measure, name))


@dataclass
class QueryValues:
    """Per-query values of one run: ``qids`` in the dump's order and, per output row
    ``(metric name, k, gamma)``, one value per query under each column (NaN: undefined)."""

    qids: list[str]
    values: dict


def query_values(path: str, metrics, *, options: ReadOptions | None = None,
                 **kwargs) -> QueryValues:
    """Every query's (instance's) values of the dump at ``path``: one pass over it.

    ``kwargs``: ``nan_policy``, ``batch_rows``, ``relevance``, ``what_if``, ``original``
    (as :func:`tieeval.engine.local.collect_instance_values`). A TREC run's queries are
    named by their qid, a long dump's instances by their id, other dumps' rows by their
    1-based row number. Under a trec_eval convention (in ``relevance``) a TREC run's
    grades are read as trec_eval reads them, as the evaluation reads them.
    """
    grades = atol_grades(kwargs.get("relevance"))
    if grades is not None and isinstance(options, RelevanceReadOptions) \
            and options.trec_grades is None:
        options = dataclasses.replace(options, trec_grades=grades)
    kernel, values, ids = collect_instance_values(open_dump(path, options), metrics, **kwargs)
    return query_table(Collected(kernel, values, ids))


def query_table(collected: Collected) -> QueryValues:
    """The :class:`QueryValues` of every instance's values gathered in a pass (see
    :func:`query_values`)."""
    kernel, values, ids = collected.kernel, collected.values, collected.ids
    rows = len(values[0].original) if values else 0
    qids = [str(i) for i in ids] if ids is not None else [str(i + 1) for i in range(rows)]
    out: dict = {}
    for entry, v in zip(kernel.entries, values):
        defined = np.ones(rows, dtype=bool) if v.defined is None else np.asarray(v.defined)
        out[(entry.metric.name, entry.metric.k, entry.gamma)] = {
            c: np.where(defined, np.asarray(getattr(v, c), dtype=np.float64), np.nan)
            for c in COLUMNS}
    return QueryValues(qids, out)


def sequential_mean(mean: float, values: np.ndarray) -> float:
    """``mean`` as trec_eval computes it from the per-query ``values``: added one query after
    the other in its query order, in doubles, then divided by their number.

    tieeval's means are exact sums rounded once; trec_eval's sequential sum can differ in the
    last bit, which decides the fourth decimal it prints when the mean lies on a rounding
    boundary (0.01875 is 0.018750000000000003 summed trec_eval's way: it prints 0.0188).
    Only a mean that *is* the plain average of the values is re-added (within 1e-12); any
    other (a sum such as num_rel, a geometric mean, a mean over some queries) is kept."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or np.isnan(values).any():
        return mean
    total = float(np.cumsum(values)[-1])  # cumsum adds in order, as trec_eval's loop does
    again = total / values.size
    return again if abs(again - mean) <= 1e-12 * max(1.0, abs(mean)) else mean


#: Measures whose per-query value trec_eval resets for a query the run misses under
#: ``-c`` only when the measure is named exactly so (trec_eval.c compares the printed
#: name): given with parameters (``utility.1,-1,0,0``, ``rbp_resid.p=0.9``), trec_eval
#: keeps their value on its bogus one-document ranking (-1, 1.0), which tieeval does not
#: compute.
BOGUS_KEPT = ("utility", "rbp_resid")


def bogus_values_kept(run: RunResult, names: dict | None) -> list[str]:
    """The printed names of :data:`BOGUS_KEPT` among ``names`` when ``run`` averages in
    queries the run misses (``-c``) and has one: trec_eval's lines would then differ
    (not under ``-J``, which drops the bogus document)."""
    queries = (run.relevance or {}).get("queries") or {}
    if queries.get("missing_queries") != "zero" or not queries.get("qrels_only") \
            or queries.get("judged_only"):
        return []
    return [name for name in (names or {}).values()
            if any(name.startswith(measure + "_") for measure in BOGUS_KEPT)]


def complete_num_rel(run: RunResult, qrels_path: str | None) -> int | None:
    """trec_eval's ``num_rel`` 'all' line under ``-c`` when ``-l`` is above 1, else None.

    With ``-c`` trec_eval does not add the queries' num_rel up: it counts again every
    judgement above 0 in the whole qrels file (m_num_rel.c, te_calc_avg_num_rel), whatever
    ``-l`` says, so ``-c -l 2`` prints the number of judgements >= 1 while every query's
    line counts those >= 2. Below ``-l 2`` the two counts agree and tieeval's sum stands."""
    rel = run.relevance or {}
    queries = rel.get("queries") or {}
    if qrels_path is None or queries.get("missing_queries") != "zero" \
            or (rel.get("relevance_level") or 1) <= 1:
        return None
    from tieeval.io.trec import read_qrels
    return sum(value > 0 for judged in read_qrels(qrels_path, atol_grades(rel)).values()
               for value in judged.values())


def _relstring_code(label: float, judged: bool) -> str:
    """One document's character of trec_eval's relstring (m_relstring.c): its judgement
    0-9, ``>`` above 9, ``.`` judged below 0 (trec_eval's "in the pool, unjudged"), ``-``
    in no qrels line."""
    if judged:
        level = int(label)  # trec_eval reads judgements as whole numbers (a C long)
        return ">" if level > 9 else str(level)
    return "." if label < 0 else "-"


def relstrings(run: RunResult, path: str, qrels_path: str, length: int,
               cleared: bool = True) -> dict[str, str]:
    """trec_eval's relstring of every query of the TREC run ``run``, read from ``path``
    (its file; a run read from standard input is named ``<stdin>``): the judgements of
    its top ``length`` documents in trec_eval's order (the Original column's), after
    ``-M`` cut the ranking (``depth``) and ``-J`` dropped the unjudged documents, as
    :func:`_relstring_code` writes them. A query only the qrels hold, averaged in under
    ``-c``, is ranked by trec_eval as one bogus document in no qrels line
    (trec_eval.c's ``bogus_ranking``), whose string it then clears (``''``) when the
    measure is named ``relstring`` (``cleared``), not ``relstring_N``: there ``'-'``, or
    ``''`` under ``-J``, which drops the bogus document.

    The run and qrels are read again (the pass's per-query values are numbers): only a
    ``--per-query`` output that asks for relstring pays for it."""
    from tieeval.io.trec import load

    rel = run.relevance or {}
    queries = rel.get("queries") or {}
    judged_only = bool(queries.get("judged_only"))
    depth = rel.get("depth")
    qids, _, labels, offsets, _, query_set, _, judged, _, _ = load(
        path, qrels_path, queries.get("missing_queries") or "skip", judged_only,
        None if depth is None else int(depth),  # -J -M: cut at depth before -J
        atol_grades(rel))
    limit = length if depth is None else min(length, int(depth))
    missing = set(query_set.qrels_only)
    out: dict[str, str] = {}
    for i, qid in enumerate(str(q) for q in qids):
        if qid in missing:
            out[qid] = "" if cleared or judged_only or limit == 0 else "-"
            continue
        lo = int(offsets[i])
        hi = min(int(offsets[i + 1]), lo + limit)
        out[qid] = "".join(_relstring_code(float(label), bool(j))
                           for label, j in zip(labels[lo:hi], judged[lo:hi]))
    return out


def trec_eval_lines(run: RunResult, column: str = "original",
                    per_query: QueryValues | None = None,
                    runid: bool = True, print_queries: bool = True,
                    num_rel: int | None = None, summary: bool = True,
                    names: dict | None = None,
                    relstring: tuple[str, dict] | None = None) -> list[TrecLine]:
    """The lines trec_eval prints for ``run`` (``-q`` style when ``per_query`` is given and
    ``print_queries``): per-query blocks, then ``runid`` (when ``runid``: trec_eval prints it
    only when the measure is requested, ``-m runid`` or a nickname holding it) and the
    ``all`` lines, whose means are added up as trec_eval adds them when ``per_query`` is
    given (:func:`sequential_mean`); ``num_rel``: the 'all' line of num_rel when trec_eval
    prints another count than the queries' sum (:func:`complete_num_rel`); ``summary=False``:
    no ``runid`` and no ``all`` lines (trec_eval ``-n``: m_runid.c and meas_print_final.c
    print nothing without its summary flag); ``names``: ``{(metric, k): name}``, the names
    trec_eval prints for metrics given with their parameters spelled out (``rbp_p=0.9``);
    ``relstring``: ``(its printed name, {qid: string})`` (:func:`relstrings`), a line of
    each query's block, at relstring's place in trec_eval's measure order. Undefined
    values (a query the metric skips, a mean over no query) are left out."""
    if column not in COLUMNS:
        raise ParameterError(f"column must be one of {', '.join(COLUMNS)}, got {column!r}")
    trec_names = trec_names_apply(run)
    given = names or {}

    def name_of(metric: str, k, gamma) -> str:
        printed = given.get((metric, k)) if gamma is None and trec_names else None
        return printed or measure_name(metric, k, gamma, trec_names)

    rows = sorted(run.metrics, key=lambda r: trec_order(REGISTRY[r.metric], r.k))
    nan = _zero_division(run)
    lines: list[TrecLine] = []
    if per_query is not None and print_queries:
        wanted = [(r.metric, r.k, r.gamma) for r in rows
                  if not _flag(r.metric, r.k, "summary_only")]
        # relstring's line (None) goes before the first measure trec_eval prints after it
        before = sum(1 for metric, k, _ in wanted
                     if trec_order(REGISTRY[metric], k) < _RELSTRING_ORDER)
        block: list[tuple | None] = [*wanted[:before], None, *wanted[before:]]
        for i, qid in enumerate(per_query.qids):
            for item in block:
                if item is None:
                    if relstring is not None and qid in relstring[1]:
                        lines.append(TrecLine(relstring[0], qid, f"'{relstring[1][qid]}'"))
                    continue
                metric, k, gamma = item
                found = per_query.values.get((metric, k, gamma))
                if found is None:
                    continue
                value = float(found[column][i])
                if (metric, k, qid) in nan:
                    value = math.nan  # trec_eval's 0/0, printed -nan
                elif np.isnan(value):
                    continue
                lines.append(TrecLine(name_of(metric, k, gamma), qid, value,
                                      _flag(metric, k, "integer")))
    if not summary:
        return lines
    if runid:
        lines.append(TrecLine("runid", ALL, _runid(run)))
    for row in rows:
        value = getattr(row, column)
        if (row.metric, row.k) in nan:
            value = math.nan  # a query's 0/0 makes trec_eval's mean -nan
        elif value is None or np.isnan(value):
            continue
        else:
            found = (per_query.values.get((row.metric, row.k, row.gamma))
                     if per_query is not None else None)
            if found is not None:
                value = sequential_mean(float(value), found[column])
            if num_rel is not None and row.metric == "NumRel":
                value = num_rel
        lines.append(TrecLine(name_of(row.metric, row.k, row.gamma), ALL, float(value),
                              _flag(row.metric, row.k, "integer")))
    return lines


def _zero_division(run: RunResult) -> set:
    """Where trec_eval prints ``-nan`` for ``run``: ``(metric, k, qid)`` for a query that
    ``-J`` left without a ranked document and a measure dividing 0 by 0 there
    (:meth:`~tieeval.metrics.measures.base.Measure.nan_without_ranked`), and ``(metric,
    k)`` for the mean over the queries, which such a query makes NaN. A query the run's
    means leave out (no relevant document, ``--no-relevant skip``) leaves the mean alone."""
    out: set = set()
    if not run.zero_division:
        return out
    options = run.relevance or {}
    counted = options.get("no_relevant", "skip") == "zero"
    for row in run.metrics:
        spec = REGISTRY[row.metric]
        for qid, big_r in run.zero_division.items():
            if spec.nan_without_ranked(row.k, big_r, options):
                out.add((row.metric, row.k, qid))
                if big_r > 0 or counted:
                    out.add((row.metric, row.k))
    return out


def _runid(run: RunResult) -> str:
    """trec_eval's runid: the run's tag (the ``tag`` label of a TREC run, or its method
    under --group-by-tag), else the file name."""
    import os
    return (run.run_labels.get("tag") or run.run_labels.get("method")
            or os.path.basename(run.path))


def runs_lines(runs: Iterable[RunResult], column: str = "original",
               per_query: Iterable[QueryValues | None] | None = None,
               runid: bool = True, print_queries: bool = True,
               qrels_path: str | None = None, summary: bool = True,
               names: dict | None = None,
               relstring: tuple[str, int, list[str]] | None = None) -> list[TrecLine]:
    """Every run's lines, one run after the other (``runid``: with its runid line;
    ``qrels_path``: the TREC runs' qrels, for :func:`complete_num_rel`; ``summary`` and
    ``names``: as :func:`trec_eval_lines`; ``relstring``: ``(printed name, N, each run's
    file)``, each query's relstring line, read by :func:`relstrings`)."""
    runs = list(runs)
    queries = list(per_query) if per_query is not None else [None] * len(runs)
    paths = relstring[2] if relstring is not None else [None] * len(runs)
    return [line for run, q, path in zip(runs, queries, paths)
            for line in trec_eval_lines(
                run, column, q, runid, print_queries,
                complete_num_rel(run, qrels_path) if summary else None, summary, names,
                None if relstring is None or qrels_path is None or q is None
                or path is None or not print_queries
                else (relstring[0], relstrings(run, path, qrels_path, relstring[1],
                                               relstring[0] == RELSTRING)))]
