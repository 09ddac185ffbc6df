"""``tieeval check`` judges a dump that carries its codebase's ranking by that ranking, and
its default gate asks only for what the ranking can answer.

Oracles: closed forms on constructed rows (the positive in a tied block of 4 at the top:
tie-aware HR@1 = 1/4 per row, tie-break variance 3/16), ``np.argsort`` itself for what the
argsort rule ranks first, and the saved ranking read back in the test for the given rule.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval import save_scores
from tieeval.cli import cli
from tieeval.io.saved_ranking import SavedRanking, saved_ranking
from tieeval.metrics.metric import Metric

N = 40
TIED = 4


def invoke(*args):
    return CliRunner().invoke(cli, ["check", *[str(a) for a in args]])


def optimistic_dump(path):
    """Every row: candidates 0-3 tied at the top, 4-7 below. The positive is the
    candidate np.argsort ranks first in a quarter of the rows and another tied one in the
    rest; the saved ranking breaks every tie in the positive's favour (positive first)."""
    row = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=np.float32)
    order = np.argsort(row * -1)  # the argsort rule, on this very platform
    assert set(order[:TIED].tolist()) == set(range(TIED))
    positive = np.array([order[0] if i % TIED == 0 else order[1] for i in range(N)])
    scores = np.tile(row, (N, 1))
    ranking = np.array([[p] + [c for c in order if c != p] for p in positive])
    save_scores(path, scores, positive=positive, ranking=ranking)
    argsort_hr1 = float(np.mean(positive == order[0]))
    return argsort_hr1


def test_saved_ranking_is_the_default_rule_and_the_verdict_flips(tmp_path):
    path = tmp_path / "optimistic.npz"
    argsort_hr1 = optimistic_dump(path)
    assert argsort_hr1 == 1 / TIED
    std = math.sqrt(N * (1 / TIED) * (1 - 1 / TIED)) / N  # of the mean tie-aware HR@1
    given_sigma = (1.0 - 1 / TIED) / std  # the saved ranking puts the positive first
    assert given_sigma > 3  # 10.95: far beyond tie-break noise
    gate = ["-m", "HR@1", "--max-change-sigma", "3"]
    by_ranking = invoke(path, *gate)
    assert by_ranking.exit_code == 1, by_ranking.output
    assert "Note: " in by_ranking.stderr and "--original given" in by_ranking.stderr
    lines = by_ranking.stdout.splitlines()
    assert lines[0].startswith(f"FAIL {path}: HR@1 change -75.00%: in tie-break std "
                               f"{given_sigma:.2f} > max 3.00 (original 1.0000, tie-aware "
                               "0.2500")
    assert lines[-1].startswith("Original (--original given) = the ranking the dump carries")
    doc = json.loads(invoke(path, *gate, "-f", "json").stdout)
    assert doc["runs"][0]["original_rule"] == "given"
    assert doc["checks"][0]["original_rule"] == "given"
    assert doc["checks"][0]["measured"] == pytest.approx(given_sigma, rel=1e-12)
    # the same dump under np.argsort: Original equals tie-aware, the check passes
    by_argsort = invoke(path, *gate, "--original", "argsort")
    assert by_argsort.exit_code == 0, by_argsort.output
    assert "original 0.2500, tie-aware 0.2500" in by_argsort.stdout
    assert by_argsort.stdout.splitlines()[-1].startswith("Original = np.argsort(scores * -1)")
    assert "Note: " not in by_argsort.stderr


def _top(tmp_path, name, depth, fmt="npz", candidates=100):
    rng = np.random.default_rng(depth)
    scores = rng.integers(0, 30, (60, candidates)).astype(np.float32)
    full = np.argsort(-scores, axis=1, kind="stable")
    path = tmp_path / f"{name}.{fmt}"
    save_scores(path, scores, ranking=full[:, :depth])
    return path, scores, full[:, :depth]


@pytest.mark.parametrize("fmt", ["npz", "parquet"])
def test_default_gate_asks_only_what_a_top20_ranking_answers(tmp_path, fmt):
    path, scores, ranking = _top(tmp_path, "top20", 20, fmt)
    assert saved_ranking(str(path)) == SavedRanking(20, False)
    res = invoke(path, "-f", "json")
    assert res.exit_code in (0, 1), res.output  # a verdict, not the input error of before
    assert "cannot answer MRR: left out of the checks" in res.stderr
    assert "-m MRR@20" in res.stderr
    doc = json.loads(res.stdout)
    run = doc["runs"][0]
    assert [(m["metric"], m["k"]) for m in run["metrics"]] == [
        ("HR", 1), ("HR", 5), ("HR", 10), ("NDCG", 1), ("NDCG", 5), ("NDCG", 10)]
    assert run["original_rule"] == "given"
    # Original HR@K under the saved ranking: is the positive (column 0) among its top K?
    for k in (1, 5, 10):
        expected = float(np.mean([(ranking[i, :k] == 0).any() for i in range(len(ranking))]))
        got = next(m for m in run["metrics"] if (m["metric"], m["k"]) == ("HR", k))
        assert got["original"] == pytest.approx(expected, abs=1e-15)


def test_a_shallower_ranking_leaves_out_the_cutoffs_beyond_it(tmp_path):
    path, _, _ = _top(tmp_path, "top5", 5)
    res = invoke(path, "-f", "json")
    assert res.exit_code in (0, 1), res.output
    assert "cannot answer HR@10, NDCG@10, MRR" in res.stderr
    run = json.loads(res.stdout)["runs"][0]
    assert [(m["metric"], m["k"]) for m in run["metrics"]] == [
        ("HR", 1), ("HR", 5), ("NDCG", 1), ("NDCG", 5)]


def test_a_whole_saved_ranking_keeps_every_default_metric(tmp_path):
    path, _, _ = _top(tmp_path, "whole", 12, candidates=12)
    assert saved_ranking(str(path)) == SavedRanking(12, True)
    assert SavedRanking(12, True).answers(Metric("MRR"))
    res = invoke(path, "-f", "json")
    assert "left out" not in res.stderr
    run = json.loads(res.stdout)["runs"][0]
    assert ("MRR", None) in [(m["metric"], m["k"]) for m in run["metrics"]]
    assert run["original_rule"] == "given"


def test_explicit_original_argsort_overrides_the_saved_ranking(tmp_path):
    path, _, _ = _top(tmp_path, "top20", 20)
    res = invoke(path, "-f", "json", "--original", "argsort")
    assert res.exit_code in (0, 1) and "Note: " not in res.stderr
    run = json.loads(res.stdout)["runs"][0]
    assert "original_rule" not in run  # the default rule, as compare records it
    assert ("MRR", None) in [(m["metric"], m["k"]) for m in run["metrics"]]


def test_a_metric_named_beyond_the_saved_ranking_is_an_input_error(tmp_path):
    path, _, _ = _top(tmp_path, "top20", 20)
    res = invoke(path, "-m", "MRR", "-q")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1
    assert "MRR@K with K <= 20" in res.stderr


def test_quiet_drops_the_notes_not_the_rule(tmp_path):
    path, _, _ = _top(tmp_path, "top20", 20)
    res = invoke(path, "-q")
    assert res.stderr == ""
    assert res.stdout.splitlines()[-1].startswith("Original (--original given)")


def test_dumps_without_a_ranking_are_checked_as_before_beside_one_with(tmp_path):
    plain = tmp_path / "plain.npz"
    save_scores(plain, np.random.default_rng(3).random((30, 8)).astype(np.float32))
    ranked, _, _ = _top(tmp_path, "top20", 20)
    doc = json.loads(invoke(plain, ranked, "-f", "json", "-q").stdout)
    assert [r["path"] for r in doc["runs"]] == [str(plain), str(ranked)]
    assert "original_rule" not in doc["runs"][0]
    assert doc["runs"][1]["original_rule"] == "given"
    assert {c["path"] for c in doc["checks"]} == {str(plain), str(ranked)}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_looking_for_a_saved_ranking_never_opens_a_fifo(tmp_path):
    # check looks for a saved ranking before reading: a FIFO named like a dump must still
    # be refused at once (exit 2), not block that look-up
    fifo = tmp_path / "scores.npz"
    os.mkfifo(fifo)
    assert saved_ranking(str(fifo)) is None
    proc = subprocess.run([sys.executable, "-m", "tieeval", "check", str(fifo)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1].startswith(f"Error: {fifo}: not a regular file")


def _decided_and_free(tmp_path):
    """Two top-20 dumps of 60 rows x 40 candidates, judged by ``--original given``: in the
    first, the positive sits in a block of 4 tied at the top and the saved ranking lists
    it first (HR@1 is 1 by the ranking, 1/4 tie-aware: the tie-break decides it); in the
    second every score differs (nothing to decide)."""
    rng = np.random.default_rng(5)
    rows, n = 60, 40
    tied = np.tile(np.r_[np.ones(4), np.zeros(n - 4)].astype(np.float32), (rows, 1))
    tied[:, 4:] = -np.arange(1, n - 3, dtype=np.float32)  # below the block, untied
    ranking = np.array([[0, 1, 2, 3, *range(4, 20)]] * rows)
    decided = tmp_path / "decided.npz"
    save_scores(decided, tied, ranking=ranking)  # the positive: column 0, listed first
    free = rng.permuted(np.tile(np.arange(n, dtype=np.float32), (rows, 1)), axis=1)
    tie_free = tmp_path / "free.npz"
    save_scores(tie_free, free, ranking=np.argsort(-free, axis=1)[:, :20])
    return decided, tie_free


@pytest.mark.parametrize("explicit", [True, False])
def test_the_default_gate_judges_what_a_short_ranking_answers(tmp_path, explicit):
    decided, free = _decided_and_free(tmp_path)
    rule = ["--original", "given"] if explicit else []
    res = invoke(decided, *rule, "-f", "json")
    assert res.exit_code == 1, res.output  # judged, and failed: not the input error
    assert "cannot answer MRR: left out of the checks" in res.stderr
    doc = json.loads(res.stdout)
    assert ("MRR", None) not in [(m["metric"], m["k"]) for m in doc["runs"][0]["metrics"]]
    hr1 = next(c for c in doc["checks"] if c["metric"] == "HR@1"
               and c["check"] == "max_change_sigma")
    assert not hr1["passed"] and hr1["change"] == pytest.approx(1 / TIED - 1)
    res = invoke(free, *rule)
    assert res.exit_code == 0, res.output
    assert "cannot answer MRR: left out of the checks" in res.stderr
