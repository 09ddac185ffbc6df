"""Evaluated runs as ``compare`` and ``ties`` show them: the runs, their seed groups, and
which table to show, with the views that only some formats need made on demand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tieeval.records.groups import GroupResult
from tieeval.records.paper import FigurePanel, PaperTable
from tieeval.records.results import RunResult
from tieeval.records.trec_eval import TrecLine
from tieeval.records.whatif import WhatIf


@dataclass
class RunTables:
    """``runs`` and their seed ``groups``; ``table`` is ``"runs"`` (each run in detail) or
    the paper's table, ``"1"``, ``"3"`` or ``"4"``, whose ``±`` across-seed sds show when
    ``seed_std``; ``what_if`` labels a what-if analysis (None: the stored scores).

    ``paper`` assembles the paper's table and ``trec_lines`` gives trec_eval's lines; both
    are called by the renderers that need them, so a format that shows neither (JSON
    holds the runs and groups whatever ``table`` says) never computes them. A format that
    shows more than the chosen table (the HTML page) asks ``tables(number)`` for any of
    the paper's tables and ``figure()`` for Figure 1's panels, made on demand as well.
    """

    runs: list[RunResult]
    groups: list[GroupResult]
    table: str = "runs"
    seed_std: bool = True
    what_if: WhatIf | None = None
    paper: Callable[[], PaperTable] | None = None
    trec_lines: Callable[[], list[TrecLine]] | None = None
    tables: Callable[[int], PaperTable] | None = None
    figure: Callable[[], list[FigurePanel]] | None = None

    @property
    def active_what_if(self) -> WhatIf | None:
        """The what-if when one is active, else None."""
        return self.what_if if self.what_if is not None and self.what_if.active else None
