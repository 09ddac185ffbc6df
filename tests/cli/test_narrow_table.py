"""At 80 columns the run table keeps each metric on one line: shorter headers, then the
% change columns left out, never a wrapped "Tie-aware ± sd" cell."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

import tieeval
from tieeval.report.runs import render_tables


def _rendered(run, width: int) -> list[str]:
    out = io.StringIO()
    render_tables([run], Console(width=width, file=out, color_system=None))
    return out.getvalue().splitlines()


def _runs(rng):
    scores = np.round(rng.random((40, 30)), 1)
    yield tieeval.evaluate(scores, k=(1, 5, 10, 20))
    labels = rng.integers(-1, 3, size=scores.shape)
    labels[:, 0] = 2
    yield tieeval.evaluate(scores, labels=labels,
                           metrics=["NDCG@10", "MAP@20", "SNDCG@20", "Recall@10"])


@pytest.mark.parametrize("width", [80, 72])
def test_every_metric_row_stays_on_one_line_at_80_columns(width, rng):
    for run in _runs(rng):
        lines = _rendered(run, width)
        assert max(map(len, lines)) <= width
        # the metric table's body: from below its rule to the blank line above the caption
        start = next(i for i, line in enumerate(lines) if "━━━" in line) + 1
        body = lines[start:start + next(i for i, line in enumerate(lines[start:])
                                        if not line.strip())]
        assert len(body) == len(run.metrics), lines  # one line per metric, none wrapped
        for row in run.metrics:
            mine = [line for line in body if line.strip().startswith(row.display + " ")]
            assert len(mine) == 1, (row.display, lines)
            # the whole cell on the row's line: the mean and its sd, both unwrapped
            cell = f"{row.tie_aware:.4f} ± {row.tie_aware_std:.4f}"
            assert cell in mine[0], (cell, mine[0])
            assert f"{row.original:.4f}" in mine[0] and f"{row.last:.4f}" in mine[0]


def test_wide_terminal_keeps_the_full_headers(rng):
    run = next(_runs(rng))
    wide = _rendered(run, 120)
    assert any("% Chg orig→tie" in line and "% Chg first→last" in line for line in wide)
    narrow = _rendered(run, 80)
    assert not any("% Chg" in line for line in narrow)
    assert any("%o→t: % change original → tie-aware" in line for line in narrow)
