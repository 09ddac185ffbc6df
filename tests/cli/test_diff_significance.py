"""``tieeval diff`` names a winner only when the difference is significant, and
``--fail-if-worse`` turns a significant loss into exit 1 for CI.

Oracles: tie-free scores whose per-instance HR@1 is fixed by construction (the positive
first or second), ``scipy.stats.ttest_rel`` for the t-test and a brute-force enumeration of
every sign vector for the sign-flip test (up to 20 instances the test is exact).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from tieeval.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def hits_dump(tmp_path, name, hits):
    """Tie-free rows: the positive (column 0) first where ``hits`` is 1, second otherwise,
    so that HR@1 of row i is ``hits[i]`` under every column."""
    hits = np.asarray(hits)
    scores = np.tile(np.array([0.5, 0.9, 0.1, 0.2], dtype=np.float32), (hits.size, 1))
    scores[hits == 1, 0] = 1.0
    path = tmp_path / f"{name}.npz"
    np.savez(path, scores=scores)
    return str(path)


def exact_sign_flip(d):
    """The share of all 2**n sign vectors whose signed sum reaches the observed one in
    size. Every vector is counted: its sum is one of the first half's 2**(n//2) signed
    sums plus one of the second half's, each pair added by numpy (2**20 vectors in
    milliseconds instead of seconds of Python loops)."""
    d = [float(x) for x in d]
    obs = abs(math.fsum(d))
    half = len(d) // 2

    def signed_sums(part):
        return np.array([math.fsum(s * x for s, x in zip(signs, part))
                         for signs in itertools.product((1, -1), repeat=len(part))])
    sums = signed_sums(d[:half])[:, None] + signed_sums(d[half:])[None, :]
    return int(np.count_nonzero(np.abs(sums) >= obs - 1e-12)) / 2 ** len(d)


def oracle_p(a_hits, b_hits):
    a, b = np.asarray(a_hits, float), np.asarray(b_hits, float)
    return stats.ttest_rel(b, a).pvalue, exact_sign_flip(b - a)


# B ahead on 4 rows, behind on 3: mean +0.1, far from significant
A_CLOSE = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
B_CLOSE = [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
# B ahead on 10 of 12 rows, never behind
A_FAR = [0] * 10 + [1, 0]
B_FAR = [1] * 10 + [1, 0]


def test_no_winner_named_when_difference_not_significant(tmp_path):
    p_t, p_flip = oracle_p(A_CLOSE, B_CLOSE)
    assert p_t > 0.05 and p_flip > 0.05  # the construction: no significant difference
    a, b = hits_dump(tmp_path, "A", A_CLOSE), hits_dump(tmp_path, "B", B_CLOSE)
    res = invoke("diff", a, b, "-m", "HR@1")
    assert res.exit_code == 0, res.output
    rows = [line for line in res.stdout.splitlines() if line.strip().startswith("HR@1 ")]
    assert len(rows) == 2 and all(line.split()[-1] == "n.s." for line in rows)
    assert "Same verdict under original and tie-aware for every metric at 95% confidence." \
        in res.stdout
    assert "n.s.: no significant difference" in res.stdout
    md = invoke("diff", a, b, "-m", "HR@1", "-f", "markdown").stdout
    assert md.count("| n.s. |\n") == 2 and "| B |\n" not in md
    # JSON keeps its contract (winner = sign of the mean difference) and adds significant
    doc = json.loads(invoke("diff", a, b, "-m", "HR@1", "-f", "json").stdout)
    row = doc["metrics"][0]
    assert row["difference"] == pytest.approx(0.1) and row["winner"] == "B"
    assert row["significant"] is False and row["original"]["significant"] is False
    assert row["p_value_t"] == pytest.approx(p_t, rel=1e-9)
    assert row["p_value_randomization"] == pytest.approx(p_flip, abs=1e-12)
    line = next(csv.DictReader(io.StringIO(invoke("diff", a, b, "-m", "HR@1", "-f",
                                                  "csv").stdout)))
    assert line["winner"] == "B" and line["significant"] == "false" \
        and line["original_significant"] == "false"


def test_winner_named_when_both_tests_significant(tmp_path):
    p_t, p_flip = oracle_p(A_FAR, B_FAR)
    assert p_t < 0.05 and p_flip < 0.05
    a, b = hits_dump(tmp_path, "A", A_FAR), hits_dump(tmp_path, "B", B_FAR)
    res = invoke("diff", a, b, "-m", "HR@1")
    rows = [line for line in res.stdout.splitlines() if line.strip().startswith("HR@1 ")]
    assert len(rows) == 2 and all(line.split()[-1] == "B" for line in rows)
    doc = json.loads(invoke("diff", a, b, "-m", "HR@1", "-f", "json").stdout)
    assert doc["metrics"][0]["significant"] is True
    assert doc["metrics"][0]["original"]["significant"] is True


def test_significance_follows_the_confidence_option(tmp_path):
    # 6 rows ahead, 2 behind: p between 0.05 and 0.5 under both tests
    a_hits, b_hits = [0] * 6 + [1, 1], [1] * 6 + [0, 0]
    p_t, p_flip = oracle_p(a_hits, b_hits)
    assert 0.05 < min(p_t, p_flip) and max(p_t, p_flip) < 0.5
    a, b = hits_dump(tmp_path, "A", a_hits), hits_dump(tmp_path, "B", b_hits)
    strict = json.loads(invoke("diff", a, b, "-m", "HR@1", "-f", "json").stdout)
    loose = json.loads(invoke("diff", a, b, "-m", "HR@1", "-f", "json",
                              "--confidence", "0.5").stdout)
    assert strict["metrics"][0]["significant"] is False
    assert loose["metrics"][0]["significant"] is True and loose["confidence"] == 0.5


def test_significance_needs_both_tests(tmp_path):
    # Three instances, B ahead by 1 on each: the t-test of a constant difference gives
    # p = 0, but the exact sign-flip test cannot go below 2 / 2**3 = 0.25.
    a, b = hits_dump(tmp_path, "A", [0, 0, 0]), hits_dump(tmp_path, "B", [1, 1, 1])
    assert exact_sign_flip([1, 1, 1]) == 0.25
    doc = json.loads(invoke("diff", a, b, "-m", "HR@1", "-f", "json").stdout)
    row = doc["metrics"][0]
    assert row["p_value_t"] == 0.0 and row["p_value_randomization"] == 0.25
    assert row["significant"] is False


def test_verdict_line_says_no_significant_difference_under_one_column(tmp_path):
    # A: the positive tied with 3 others at the top of every row (argsort puts it first:
    # original HR@1 = 1, tie-aware 1/4); B: positive first, untied, in 16 of 20 rows.
    n = 20
    sa = np.ones((n, 4), dtype=np.float32)
    b_hits = [1] * 16 + [0] * 4
    np.savez(tmp_path / "A.npz", scores=sa)
    b = hits_dump(tmp_path, "B", b_hits)
    d_orig = np.array(b_hits, float) - 1.0  # 0 on 16 rows, -1 on 4
    assert exact_sign_flip(d_orig) > 0.05  # original: B behind, not significantly
    d_tie = np.array(b_hits, float) - 0.25
    assert stats.ttest_rel(np.array(b_hits, float), np.full(n, 0.25)).pvalue < 0.05
    assert exact_sign_flip(d_tie) < 0.05  # tie-aware: B ahead, significantly
    res = invoke("diff", tmp_path / "A.npz", b, "-m", "HR@1")
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if x.startswith("HR@1:"))
    assert line.startswith("HR@1: no significant difference under original (p ")
    assert line.endswith("sign-flip); B wins under tie-aware")


def test_fail_if_worse_exits_1_on_a_significant_loss(tmp_path):
    a, b = hits_dump(tmp_path, "A", B_FAR), hits_dump(tmp_path, "B", A_FAR)  # B worse
    res = CliRunner().invoke(cli, ["diff", a, b, "-m", "NDCG@1", "--fail-if-worse", "HR@1",
                                   "-f", "json"])
    assert res.exit_code == 1
    doc = json.loads(res.stdout)  # the whole document is still written
    assert [(m["metric"], m["k"]) for m in doc["metrics"]] == [("NDCG", 1), ("HR", 1)]
    err = res.stderr.splitlines()
    assert len(err) == 1
    assert err[0].startswith("Failed: --fail-if-worse HR@1: B is significantly worse than A "
                             "under tie-aware, B − A = -0.8333 (p ")
    assert "95% confidence" in err[0]


def test_fail_if_worse_passes_a_loss_that_is_not_significant(tmp_path):
    # B behind by 0.1, not significantly; B ahead, significantly
    a, b = hits_dump(tmp_path, "A", B_CLOSE), hits_dump(tmp_path, "B", A_CLOSE)
    res = CliRunner().invoke(cli, ["diff", a, b, "--fail-if-worse", "HR@1", "-f", "json"])
    assert res.exit_code == 0 and res.stderr == ""
    assert json.loads(res.stdout)["metrics"][0]["difference"] == pytest.approx(-0.1)
    a, b = hits_dump(tmp_path, "A2", A_FAR), hits_dump(tmp_path, "B2", B_FAR)
    res = CliRunner().invoke(cli, ["diff", a, b, "--fail-if-worse", "HR@1"])
    assert res.exit_code == 0 and res.stderr == ""


def test_fail_if_worse_names_each_failed_metric(tmp_path):
    a, b = hits_dump(tmp_path, "A", B_FAR), hits_dump(tmp_path, "B", A_FAR)
    res = CliRunner().invoke(cli, ["diff", a, b, "--fail-if-worse", "HR@1",
                                   "--fail-if-worse", "NDCG@1", "--fail-if-worse", "HR@5"])
    assert res.exit_code == 1
    err = res.stderr.splitlines()
    # HR@5 is 1 for every row of both runs: no difference, no failure
    assert [line.split(":")[1].split()[-1] for line in err] == ["HR@1", "NDCG@1"]


def test_fail_if_worse_refuses_a_metric_not_compared_or_unknown(tmp_path):
    a, b = hits_dump(tmp_path, "A", A_FAR), hits_dump(tmp_path, "B", B_FAR)
    res = CliRunner().invoke(cli, ["diff", a, b, "--fail-if-worse", "Recall@5"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("Error: --fail-if-worse Recall@5: not among the metrics "
                                 "compared") and res.stderr.count("\n") == 1
    res = CliRunner().invoke(cli, ["diff", a, b, "--fail-if-worse", "NOPE@3"])
    assert res.exit_code == 2 and "--fail-if-worse" in res.stderr
    assert "Traceback" not in res.output


def test_fail_if_worse_example_of_the_guide_is_real(monkeypatch):
    # docs/commands.md shows the command and its stderr line: both must be what tieeval does
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    page = (root / "docs" / "commands.md").read_text(encoding="utf-8")
    at = page.index("--fail-if-worse NDCG@10 > diff.txt")
    command = page[page.rindex("\n", 0, at) + 1:at].split() + ["--fail-if-worse", "NDCG@10"]
    shown = page[at:].split("\n")[2].strip()
    res = CliRunner().invoke(cli, command[1:])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [shown]
