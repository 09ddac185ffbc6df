"""The records of the paper's tables and figure: a :class:`PaperTable` of sections, blocks,
rows and cells (plain floats), and the :class:`FigurePanel` points of Figure 1.

Assembling them from run groups is :mod:`tieeval.analysis.paper`; rendering them is
:mod:`tieeval.report.paper` and :mod:`tieeval.report.plot`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tieeval.records.groups import GroupResult


@dataclass(frozen=True)
class Column:
    """One sub-column repeated under every method.

    ``kind`` says how a value reads: ``value`` (a metric in [0, 1]), ``change`` (a relative
    change, a fraction), ``size`` (a count), ``fraction`` (a share shown as a percentage)
    or ``row`` (the row decides, as in Table 4).
    """

    key: str
    title: str
    kind: str


@dataclass
class Cell:
    """One figure: a seed mean, its across-seed std (None: one seed or a change), seeds."""

    value: float | None
    seed_std: float | None = None
    seeds: int = 0  # 0: no run of this method in this setting


@dataclass
class Row:
    """One table row: a metric (``metric``/``k`` set, and ``gamma`` for a signed metric of
    labelled runs) or a tie statistic (``statistic``). ``title`` is the metric label
    (``SNDCG@10``) without its gamma, which the renderers add."""

    title: str
    cells: dict[str, list[Cell]]  # method -> one cell per column
    metric: str | None = None
    k: int | None = None
    statistic: str | None = None
    kind: str | None = None  # for Table 4: "size" or "fraction"
    gamma: float | None = None


@dataclass
class Block:
    dataset: str | None
    rows: list[Row]


@dataclass
class Section:
    task: str | None
    blocks: list[Block]


@dataclass
class PaperTable:
    number: int
    title: str
    row_header: str  # "Metric" or "Statistic"
    methods: list[str]
    columns: list[Column]
    sections: list[Section]
    groups: list[GroupResult] = field(default_factory=list)
    change_note: str | None = None

    def rows(self) -> Iterator[tuple[str | None, str | None, Row]]:
        """Every row with its setting: ``(task, dataset, row)``."""
        for section in self.sections:
            for block in section.blocks:
                for row in block.rows:
                    yield section.task, block.dataset, row

    @property
    def labelled(self) -> bool:
        """Whether the runs are labelled (their metric rows carry ``gamma``)."""
        return any(m.labelled for g in self.groups for m in g.metrics)

    def cell(self, task: str | None, dataset: str | None, row_title: str, method: str, column: str,
             gamma: float | None = None) -> Cell:
        """Look up one cell, e.g. ``cell("group", "Mafengwo", "HR@1", "ConsRec", "tie_aware")``;
        ``gamma`` picks the row of a signed metric (``cell(..., "SNDCG@10", ..., gamma=0.5)``)."""
        index = [c.key for c in self.columns].index(column)
        for t, d, row in self.rows():
            if t == task and d == dataset and row.title == row_title and row.gamma == gamma:
                return row.cells[method][index]
        raise KeyError((task, dataset, row_title, gamma))


@dataclass
class FigurePoint:
    method: str
    top_tie_size: float
    inflation: float
    seeds: int


@dataclass
class FigurePanel:
    """One (task, dataset) setting of Figure 1; ``r`` is Pearson on log10 tie sizes."""

    task: str | None
    dataset: str | None
    points: list[FigurePoint]
    r: float | None
