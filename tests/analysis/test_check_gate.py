"""The default gate of ``tieeval check`` and its new thresholds: the share of HR@K outcomes
the tie-break decides, the first-last spread, and a change beyond tie-break noise."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tieeval.analysis.check import (
    DEFAULT_GATE,
    SIGMA_FLOOR,
    default_thresholds,
    parse_threshold,
    run_checks,
)
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.records.results import MetricRow, RunResult, TieStats
from tieeval.report.check import to_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SATURATED = os.path.join(ROOT, "sample_scores", "sigmoid_saturated.parquet")
TIE_FREE = os.path.join(ROOT, "sample_scores", "tie_free.parquet")


def invoke(*args):
    return CliRunner().invoke(cli, ["check", *args])


def _run(original, first, last, tie_aware, std, decided=None):
    row = MetricRow("NDCG", 10, original, first, last, tie_aware, std, 100)
    ties = TieStats(1.0, 0.01, 0.0, 1.0, 0.0, decided or {})
    return RunResult("run.npz", 100, 5, 5, "float32", [row], ties)


def _decided_hr(path, k):
    """Share of rows whose HR@K first and last differ, from the scores: the positive is in
    the top K when ties break in its favour (a < K) but not when they break against it
    (a + b > K), a = candidates above it, b = tied with it, itself included."""
    table = pq.read_table(path)
    scores = np.asarray(table.column("scores").to_pylist(), dtype=np.float64)
    pos = np.asarray(table.column("positive").to_pylist())
    s = scores[np.arange(len(pos)), pos][:, None]
    a = (scores > s).sum(axis=1)
    b = (scores == s).sum(axis=1)
    return float(np.mean((a < k) & (a + b > k)))


def test_default_gate_fails_the_saturated_dump_and_names_the_thresholds():
    r = invoke(SATURATED)
    assert r.exit_code == 1
    assert DEFAULT_GATE in r.stderr
    lines = r.stdout.splitlines()
    decided = _decided_hr(SATURATED, 1)
    assert decided > 0.05
    assert f"HR@1 decided by the tie-break {decided * 100:.2f}% > max 5.00%" in lines[0]
    for option in ("--max-tie-decided 5.00%", "--max-spread 10.00%",
                   "--max-change-sigma 3.00"):
        assert any(line.startswith(f"Failed: {option} ") and "to relax it pass e.g." in line
                   for line in lines), option


def test_default_gate_passes_the_tie_free_dump():
    r = invoke(TIE_FREE)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-2] == "all 17 checks passed"
    assert r.stdout.splitlines()[-1].startswith("Original = np.argsort(scores * -1)")
    assert _decided_hr(TIE_FREE, 10) == 0


def test_default_gate_json_adds_keys_only():
    r = invoke(SATURATED, "--format", "json")
    doc = json.loads(r.stdout)
    kinds = {c["check"] for c in doc["checks"]}
    assert kinds == {"max_tie_decided", "max_spread", "max_change_sigma"}
    for c in doc["checks"]:
        assert {"path", "check", "metric", "measured", "bound", "passed"} <= set(c)
    decided = [c for c in doc["checks"] if c["check"] == "max_tie_decided"]
    assert [c["metric"] for c in decided] == ["HR@1", "HR@5", "HR@10"]
    for c in decided:
        k = int(c["metric"].split("@")[1])
        assert c["measured"] == pytest.approx(_decided_hr(SATURATED, k), abs=1e-12)


def test_spread_and_sigma_follow_their_definitions():
    run = _run(original=0.50, first=0.60, last=0.30, tie_aware=0.40, std=0.02)
    spread, sigma = run_checks([run], [parse_threshold("max_spread", "75%"),
                                       parse_threshold("max_change_sigma", "5")])
    assert spread.measured == pytest.approx(0.30 / 0.40) and spread.passed  # inclusive
    assert sigma.measured == pytest.approx(0.10 / 0.02) and sigma.passed
    assert sigma.change == pytest.approx(-0.2)
    (tight,) = run_checks([run], [parse_threshold("max_change_sigma", "4.9")])
    assert not tight.passed
    assert "NDCG@10 change -20.00%: in tie-break std 5.00 > max 4.90" in to_text([tight])


def test_sigma_ignores_changes_within_the_floor():
    # |change| = 0.5 % of the original: tie-break noise or not, below the 1 % floor
    run = _run(original=0.800, first=0.81, last=0.79, tie_aware=0.796, std=1e-6)
    (o,) = run_checks([run], [parse_threshold("max_change_sigma", "3")])
    assert 0.004 / 0.8 < SIGMA_FLOOR and o.passed
    assert "in tie-break std 4000.00, yet |change| <= 1" in to_text([o])


def test_tie_decided_per_k_and_bounds():
    run = _run(0.5, 0.5, 0.5, 0.5, 0.0, decided={1: 0.2, 10: 0.05})
    outcomes = run_checks([run], [parse_threshold("max_tie_decided", "5%")])
    assert [(str(o.metric), o.passed) for o in outcomes] == [("HR@1", False),
                                                            ("HR@10", True)]
    with pytest.raises(ParameterError, match="takes a bound only"):
        parse_threshold("max_tie_decided", "HR@1=5%")
    with pytest.raises(ParameterError, match="standard deviations"):
        parse_threshold("max_change_sigma", "3%")


def test_max_change_is_max_inflation_under_its_new_name():
    run = _run(original=0.80, first=0.8, last=0.6, tie_aware=0.60, std=0.0)
    new, old = run_checks([run], [parse_threshold("max_change", "NDCG@10=25%"),
                                  parse_threshold("max_inflation", "NDCG@10=25%")])
    assert new.measured == old.measured == pytest.approx(0.25) and new.passed and old.passed
    assert new.to_dict()["check"] == "max_change" and old.to_dict()["check"] == "max_inflation"
    r = invoke(TIE_FREE, "--max-change", "NDCG@10=5%")
    assert r.exit_code == 0 and "NDCG@10 change +0.00%" in r.stdout
    assert len(default_thresholds()) == 3
