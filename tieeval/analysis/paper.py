"""The paper's tables and figure, assembled from run groups as plain rows of floats.

* Table 1: per method First | Last | % Change (first -> last);
* Table 3: per method Original | Tie-aware | % Change (original -> tie-aware);
* Table 4: per method the top-score tie statistics, plus the positive's own tie figures;
* Figure 1: per (task, dataset) setting, one point per method: average top-score tie size
  against inflation (the mean relative drop original -> tie-aware over the metrics), with
  the Pearson correlation on the log tie sizes.

Rows are grouped by task, then dataset, then metric (or statistic); methods are columns.
Tasks, datasets and methods keep the order in which their first run was given. A metric
row is keyed by (metric, K, gamma): a signed metric of labelled runs evaluated at several
``--gamma`` values gives one row per gamma (``Row.gamma``; the renderers title it
``SNDCG@10 γ=0.5``). Nothing here formats a number: :mod:`tieeval.report.paper` renders
these records.
"""


from __future__ import annotations

import math

import numpy as np

from tieeval.analysis.groups import GroupResult
from tieeval.errors import ParameterError
from tieeval.records.paper import (  # noqa: F401 - the table records, where they were
    Block,
    Cell,
    Column,
    FigurePanel,
    FigurePoint,
    PaperTable,
    Row,
    Section,
)


def _ordered(values) -> list:
    return list(dict.fromkeys(values))


def _method_name(group: GroupResult) -> str:
    return group.run_labels.get("method") or "(no method)"


def _settings(groups: list[GroupResult]):
    """Tasks in first-seen order, each with its datasets in first-seen order."""
    tasks = _ordered(g.run_labels.get("task") for g in groups)
    return [(task, _ordered(g.run_labels.get("dataset") for g in groups
                            if g.run_labels.get("task") == task)) for task in tasks]


TABLE1_COLUMNS = [Column("first", "First", "value"), Column("last", "Last", "value"),
                  Column("change_first_to_last", "% Change", "change")]
TABLE3_COLUMNS = [Column("original", "Original", "value"),
                  Column("tie_aware", "Tie-aware", "value"),
                  Column("change_original_to_tie_aware", "% Change", "change")]
TABLE4_STATISTICS = [("top_tie_size", "Avg. top-score tie size", "size"),
                     ("top_tie_ratio", "Avg. top-score tie ratio", "fraction"),
                     ("top_tie_frequency", "Top-score tie frequency", "fraction"),
                     ("positive_tie_size", "Avg. positive tie size", "size"),
                     ("positive_tie_frequency", "Positive tie frequency", "fraction")]


def _sections(groups, rows) -> tuple[list[str], list[Section]]:
    """The groups' methods, and per task a block per dataset of the rows that
    ``rows(groups_there)`` makes, ``groups_there`` mapping each method to its group in
    that setting (None when it has none)."""
    if not groups:
        raise ParameterError("no runs to tabulate")
    index = {(g.run_labels.get("task"), g.run_labels.get("dataset"), _method_name(g)): g
             for g in groups}
    methods = _ordered(_method_name(g) for g in groups)
    sections = [Section(task, [Block(dataset, rows({m: index.get((task, dataset, m))
                                                    for m in methods}))
                               for dataset in datasets])
                for task, datasets in _settings(groups)]
    return methods, sections


def _metric_table(number, title, columns, change_note, groups) -> PaperTable:
    # (metric, K, gamma): labelled runs give a signed metric once per gamma
    layout = _ordered((m.metric, m.k, getattr(m, "gamma", None), m.label)
                      for g in groups for m in g.metrics)

    def cells(group, name, k, gamma) -> list[Cell]:
        row = None if group is None else next(
            (m for m in group.metrics
             if m.metric == name and m.k == k and getattr(m, "gamma", None) == gamma), None)
        if row is None:
            return [Cell(None) for _ in columns]
        return [Cell(getattr(row, c.key), None if c.kind == "change" else row.seed_std(c.key),
                     group.seeds) for c in columns]

    def rows(there) -> list[Row]:
        return [Row(label, {method: cells(group, name, k, gamma)
                            for method, group in there.items()},
                    metric=name, k=k, gamma=gamma)
                for name, k, gamma, label in layout]
    methods, sections = _sections(groups, rows)
    return PaperTable(number, title, "Metric", methods, list(columns), sections, list(groups),
                      change_note)


def table1(groups: list[GroupResult]) -> PaperTable:
    """Table 1: the positive first vs. last in its tied block, per method."""
    return _metric_table(1, "First vs. last feasible position of the positive in its tied "
                            "block", TABLE1_COLUMNS, "% Change = (Last - First) / First, "
                            "from the means", groups)


def table3(groups: list[GroupResult]) -> PaperTable:
    """Table 3: original (the codebase's np.argsort) vs. tie-aware, per method."""
    return _metric_table(3, "Performance under the original protocol vs. tie-aware "
                            "evaluation", TABLE3_COLUMNS, "% Change = (Tie-aware - Original) "
                            "/ Original, from the means", groups)


def table4(groups: list[GroupResult]) -> PaperTable:
    """Table 4: top-score tie statistics per method, plus the positive's own ties."""
    def rows(there) -> list[Row]:
        return [Row(title, {method: [Cell(None)] if group is None else
                            [Cell(group.ties.means[key], group.ties.seed_stds[key],
                                  group.seeds)]
                            for method, group in there.items()},
                    statistic=key, kind=kind)
                for key, title, kind in TABLE4_STATISTICS]
    methods, sections = _sections(groups, rows)
    return PaperTable(4, "Top-score tie statistics", "Statistic", methods,
                      [Column("value", "", "row")], sections, list(groups))


def paper_table(number: int, groups: list[GroupResult]) -> PaperTable:
    """Table ``number`` (1, 3 or 4) of the paper from run groups."""
    builders = {1: table1, 3: table3, 4: table4}
    if number not in builders:
        raise ParameterError(f"table must be one of {', '.join(map(str, builders))}, "
                             f"got {number!r}")
    return builders[number](groups)


# ---------------------------------------------------------------------------------------
# Figure 1

def inflation(group: GroupResult) -> float | None:
    """Mean relative drop ``(original - tie_aware) / original`` over the group's metrics.

    Computed from the seed means; metrics without both means, or whose original mean is 0,
    have no relative drop and are left out (None when every metric is).
    """
    changes = [row.change_original_to_tie_aware for row in group.metrics]
    drops = [-change for change in changes if change is not None]
    return math.fsum(drops) / len(drops) if drops else None


def pearson(x, y) -> float | None:
    """Pearson correlation of two equally long sequences; None below 3 points or when
    either has no spread."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ParameterError("pearson needs two 1-D sequences of equal length")
    if len(x) < 3:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    sx, sy = math.sqrt(float(dx @ dx)), math.sqrt(float(dy @ dy))
    if sx == 0 or sy == 0:
        return None
    return float(dx @ dy) / (sx * sy)


def figure1(groups: list[GroupResult]) -> list[FigurePanel]:
    """Figure 1's data: per setting, tie size vs. inflation per method, and Pearson r.

    Groups without a defined inflation, or with a top-score tie size below 1 (never
    happens for a real dump), are left out of the panel.
    """
    if not groups:
        raise ParameterError("no runs to tabulate")
    panels = []
    for task, datasets in _settings(groups):
        for dataset in datasets:
            points = []
            for g in groups:
                if g.run_labels.get("task") != task or g.run_labels.get("dataset") != dataset:
                    continue
                infl = inflation(g)
                size = g.ties.means["top_tie_size"]
                if infl is None or not size >= 1:
                    continue
                points.append(FigurePoint(_method_name(g), size, infl, g.seeds))
            r = pearson([math.log10(p.top_tie_size) for p in points],
                        [p.inflation for p in points]) if points else None
            panels.append(FigurePanel(task, dataset, points, r))
    return panels
