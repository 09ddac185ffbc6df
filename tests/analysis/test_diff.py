"""``tieeval diff`` and ``tieeval rank``: paired comparisons and rankings of runs.

Oracles: per-instance values computed here from the definition (the positive's rank uniform
over its tied block, enumerated rank by rank; the original rank from ``np.argsort`` in this
file), ``scipy.stats.ttest_rel`` and its confidence interval, the closed forms of the t
distribution for two instances (df = 1), brute-force enumeration of
sign vectors, and ``scipy.stats.permutation_test`` for the Monte Carlo test.
"""

from __future__ import annotations

import csv
import doctest
import io
import itertools
import json
import math
import os
import shlex
import subprocess
import sys

import guide
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scipy import stats

import tieeval
import tieeval.analysis.diff
import tieeval.records.diff
from tieeval.analysis.diff import diff_paths, rank_groups, verdict_text, winner_of
from tieeval.analysis.groups import group_runs
from tieeval.analysis.stats import sign_flip_p_value
from tieeval.cli import cli
from tieeval.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIFF_KEYS = {"metric", "k", "a", "b", "difference", "difference_std", "p_value_t",
             "p_value_randomization", "ci_low", "ci_high"}


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_doctests():
    assert doctest.testmod(tieeval.analysis.diff).failed == 0
    assert doctest.testmod(tieeval.records.diff).failed == 0  # verdict_text's examples


# ---------------------------------------------------------------------------------------
# independent per-instance values


def rank_value(name, k, r):
    if name == "HR":
        return float(r <= k)
    if name == "NDCG":
        return 1.0 / math.log2(r + 1) if r <= k else 0.0
    return 1.0 / r


def instance_values(scores, name, k):
    """Tie-aware value, its tie-break variance and the original value, row by row."""
    ta, var, orig = [], [], []
    for row in scores:
        p = row[0]
        a = int(np.sum(row > p))
        b = int(np.sum(row == p))
        vals = [rank_value(name, k, r) for r in range(a + 1, a + b + 1)]
        mean = math.fsum(vals) / b
        ta.append(mean)
        var.append(math.fsum((v - mean) ** 2 for v in vals) / b)
        r_orig = int(np.flatnonzero(np.argsort(row * -1) == 0)[0]) + 1
        orig.append(rank_value(name, k, r_orig))
    return np.array(ta), np.array(var), np.array(orig)


def tied_scores(rng, n, cols=6, levels=3):
    """Scores from a few levels, so the positive (column 0) is often tied."""
    return rng.integers(0, levels, size=(n, cols)).astype(np.float32) / levels


def save(tmp_path, name, scores, **arrays):
    path = tmp_path / f"{name}.npz"
    np.savez(path, scores=scores, **arrays)
    return str(path)


def exact_sign_flip(d):
    obs = abs(math.fsum(d))
    count = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        if abs(math.fsum(s * x for s, x in zip(signs, d))) >= obs - 1e-12:
            count += 1
    return count / 2 ** len(d)


# ---------------------------------------------------------------------------------------
# paired tests


@pytest.mark.parametrize("metric", ["HR@1", "NDCG@3", "MRR"])
def test_small_diff_against_scipy_and_enumeration(tmp_path, rng, metric):
    sa, sb = tied_scores(rng, 12), tied_scores(rng, 12, levels=4)
    a, b = save(tmp_path, "A", sa), save(tmp_path, "B", sb)
    r = diff_paths(a, b, [metric]).rows[0]
    name, k = (metric.split("@") + [None])[:2]
    k = None if k is None else int(k)
    ta, va, oa = instance_values(sa, name, k)
    tb, vb, ob = instance_values(sb, name, k)
    for col, xa, xb, var in (("tie_aware", ta, tb, va + vb),
                             ("original", oa, ob, np.zeros(12))):
        c = getattr(r, col)
        d = xb - xa
        assert c.a == pytest.approx(xa.mean(), abs=1e-12)
        assert c.b == pytest.approx(xb.mean(), abs=1e-12)
        assert c.difference == pytest.approx(d.mean(), abs=1e-12)
        assert c.difference_std == pytest.approx(math.sqrt(var.sum()) / 12, abs=1e-12)
        if np.all(d == d[0]):
            continue  # scipy gives NaN for constant differences
        res = stats.ttest_rel(xb, xa)
        assert c.p_value_t == pytest.approx(res.pvalue, rel=1e-9)
        ci = res.confidence_interval(0.95)
        assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-9)
        assert c.p_value_randomization == pytest.approx(exact_sign_flip(d), abs=1e-12)


def test_monte_carlo_randomization_against_scipy(tmp_path, rng):
    sa, sb = tied_scores(rng, 60), tied_scores(rng, 60)
    sb[:25, 0] = 1.0  # B's positive on top more often
    a, b = save(tmp_path, "A", sa), save(tmp_path, "B", sb)
    result = diff_paths(a, b, ["NDCG@3"], permutations=4000, seed=5)
    assert not result.randomization_exact
    ta, _, _ = instance_values(sa, "NDCG", 3)
    tb, _, _ = instance_values(sb, "NDCG", 3)
    ref = stats.permutation_test((tb, ta), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=20000,
                                 random_state=1).pvalue
    got = result.rows[0].tie_aware.p_value_randomization
    se = math.sqrt(max(ref * (1 - ref), 1e-4) / 4000)
    assert abs(got - ref) < 5 * se + 1e-3
    # same seed, same p-value; the seed is reported
    again = diff_paths(a, b, ["NDCG@3"], permutations=4000, seed=5)
    assert again.rows[0].tie_aware.p_value_randomization == got
    assert result.to_dict()["randomization"] == {"exact": False, "permutations": 4000,
                                                 "seed": 5}


def test_grouped_sign_flip_matches_enumeration(rng):
    # 22 differences from a few values (as HR and NDCG give): the exact p-value by
    # enumerating all 2^22 sign vectors, in integers (values are multiples of 1/4).
    q = rng.choice([-2, -1, 0, 1, 3], size=22)
    sums = np.zeros(1, dtype=np.int64)
    for v in q:
        sums = np.concatenate((sums + v, sums - v))
    exact = np.count_nonzero(np.abs(sums) >= abs(int(q.sum()))) / sums.size
    got = sign_flip_p_value(q / 4.0, permutations=20000, seed=3)
    assert abs(got - exact) < 5 * math.sqrt(exact * (1 - exact) / 20000) + 1e-4
    assert sign_flip_p_value(q / 4.0, 20000, 3) == got  # seeded
    # constant non-zero differences: only the identity and the all-minus flip reach it
    assert sign_flip_p_value(np.full(40, 0.5), 999, 0) == pytest.approx(1 / 1000, abs=2e-3)


def test_winner_change_and_json_contract(tmp_path):
    # A: positive tied with three others at the top in every row -> original (argsort puts
    # the lower column index first, so the positive) 1.0, tie-aware 0.25.
    # B: positive second, untied -> 0 under both.
    n = 8
    sa = np.zeros((n, 5), dtype=np.float32)
    sa[:, :4] = 1.0
    sb = np.tile(np.array([0.5, 0.9, 0.1, 0.2, 0.3], dtype=np.float32), (n, 1))
    sb[:3, 0] = 1.0  # B's positive first in three rows
    a, b = save(tmp_path, "A", sa), save(tmp_path, "B", sb)
    result = invoke("diff", a, b, "-m", "HR@1", "-m", "MRR", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {"tieeval_version", "numpy_version", "a", "b", "alignment", "instances",
            "metrics", "what_if", "randomization", "confidence"} <= set(doc)
    assert doc["alignment"] == "row order" and doc["instances"] == n
    assert doc["a"]["path"] == a and doc["b"]["method"] == "B"
    hr = doc["metrics"][0]
    assert DIFF_KEYS <= set(hr) and DIFF_KEYS - {"metric", "k"} <= set(hr["original"])
    assert (hr["metric"], hr["k"]) == ("HR", 1)
    assert hr["a"] == 0.25 and hr["b"] == 3 / 8 and hr["difference"] == 0.125
    assert hr["difference_std"] == pytest.approx(math.sqrt(n * 0.25 * 0.75) / n)
    assert hr["original"]["a"] == 1.0 and hr["original"]["difference"] == -0.625
    assert hr["original"]["difference_std"] == 0.0
    assert hr["winner"] == "B" and hr["original"]["winner"] == "A"
    assert hr["winner_changed"] is True
    assert hr["verdict"] == "B loses under original, wins under tie-aware"
    # Neither column's difference is significant at 95% (8 instances: exact sign-flip
    # p = 2/32 under original, far above 0.05 under tie-aware), so the table names no
    # winner, while the JSON keeps the sign and says it is not significant.
    assert hr["significant"] is False and hr["original"]["significant"] is False
    table = invoke("diff", a, b, "-m", "HR@1").stdout
    assert "HR@1: B loses under original, wins under tie-aware" not in table
    assert [line.split()[-1] for line in table.splitlines()
            if line.strip().startswith("HR@1 ")] == ["n.s.", "n.s."]
    assert "exact paired randomization test over all 2^8 sign vectors" in table


def test_verdict_words():
    assert verdict_text("B", "A") == "B wins under original, loses under tie-aware"
    assert verdict_text("tie", "B") == "B ties under original, wins under tie-aware"
    assert verdict_text("B", "B") == "B wins under both original and tie-aware"
    assert [winner_of(x) for x in (0.1, -0.1, 0.0)] == ["B", "A", "tie"]


def test_csv_and_markdown(tmp_path, rng):
    a = save(tmp_path, "A", tied_scores(rng, 10))
    b = save(tmp_path, "B", tied_scores(rng, 10))
    out = invoke("diff", a, b, "--k", "1", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["metric"], r["k"]) for r in rows] == [("HR", "1"), ("NDCG", "1"), ("MRR", "")]
    assert {"original_difference", "original_p_value_t", "winner_changed", "what_if",
            "p_value_randomization", "ci_low"} <= set(rows[0])
    doc = json.loads(invoke("diff", a, b, "--k", "1", "--format", "json").stdout)
    assert float(rows[2]["difference"]) == doc["metrics"][2]["difference"]
    md = invoke("diff", a, b, "--k", "1", "--format", "markdown").stdout
    assert "| Metric | A | B | B − A ± sd |" in md and "**Original" in md


# ---------------------------------------------------------------------------------------
# alignment


def test_alignment_by_instance_ids(tmp_path, rng):
    sa, sb = tied_scores(rng, 30), tied_scores(rng, 30)
    ids = np.arange(100, 130)
    perm = rng.permutation(30)
    a = save(tmp_path, "A", sa, instance=ids)
    b_shuffled = save(tmp_path, "Bs", sb[perm], instance=ids[perm])
    b_plain = save(tmp_path, "B", sb)
    by_id = diff_paths(a, b_shuffled, ["NDCG@3", "HR@1"])
    by_row = diff_paths(a, b_plain, ["NDCG@3", "HR@1"])
    assert by_id.alignment == "instance" and by_row.alignment == "row order"
    for x, y in zip(by_id.rows, by_row.rows):
        assert x.tie_aware == y.tie_aware and x.original == y.original
    # string ids in Parquet, rows in another order
    table = pa.table({"scores": pa.array(sb[perm].tolist(), type=pa.list_(pa.float32())),
                      "instance": pa.array([f"u{i}" for i in perm])})
    pq.write_table(table, tmp_path / "B.parquet")
    a_str = save(tmp_path, "Astr", sa, instance=np.array([f"u{i}" for i in range(30)]))
    from_parquet = diff_paths(a_str, str(tmp_path / "B.parquet"), ["NDCG@3", "HR@1"])
    assert [r.tie_aware for r in from_parquet.rows] == [r.tie_aware for r in by_row.rows]


def test_two_instances_aligned_by_id_closed_forms(tmp_path):
    # Two instances (df = 1, the Cauchy distribution), B's rows stored in the other order:
    # aligned by id, the tie-aware t p-value is 2 atan2(1, |t|) / pi with
    # t = (d0 + d1) / |d0 - d1|, the interval mean -+ tan(0.95 pi / 2) |d0 - d1| / 2, and
    # difference_std = sqrt(sum of both runs' tie-break variances) / 2.
    sa = np.array([[1, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=np.float32)
    sb = np.array([[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]], dtype=np.float32)
    a = save(tmp_path, "A", sa, instance=np.array([7, 3]))
    b = save(tmp_path, "B", sb[::-1], instance=np.array([3, 7]))
    result = diff_paths(a, b, ["NDCG@3"])
    assert result.alignment == "instance"
    c = result.rows[0].tie_aware
    ta, va, _ = instance_values(sa, "NDCG", 3)
    tb, vb, _ = instance_values(sb, "NDCG", 3)
    d0, d1 = tb - ta
    t = (d0 + d1) / abs(d0 - d1)
    assert c.p_value_t == pytest.approx(2 * math.atan2(1.0, abs(t)) / math.pi, rel=1e-12)
    half = math.tan(0.95 * math.pi / 2) * abs(d0 - d1) / 2
    assert (c.ci_low, c.ci_high) == pytest.approx(((d0 + d1) / 2 - half, (d0 + d1) / 2 + half),
                                                  rel=1e-12)
    assert c.difference_std == pytest.approx(math.sqrt(math.fsum(va) + math.fsum(vb)) / 2,
                                             rel=1e-12)
    # the exact sign flip over four sign vectors: |d0 + d1| is reached by the identity, the
    # all-minus flip and, since |d0 - d1| > |d0 + d1| here, the two mixed ones
    assert abs(d0 - d1) > abs(d0 + d1)
    assert c.p_value_randomization == 1.0


def test_long_layout_ids_align(tmp_path, rng):
    # A long (tidy) table carries its instance ids in the batches; rows in any order.
    sa, sb = tied_scores(rng, 12), tied_scores(rng, 12)
    n, c = sb.shape
    order = rng.permutation(n * c)
    table = pa.table({"instance": np.repeat(np.arange(n), c)[order],
                      "position": np.tile(np.arange(c), n)[order],
                      "score": sb.ravel()[order]})
    pq.write_table(table, tmp_path / "B_long.parquet")
    a = save(tmp_path, "A", sa, instance=np.arange(n))
    got = diff_paths(a, str(tmp_path / "B_long.parquet"), ["NDCG@3"])
    want = diff_paths(a, save(tmp_path, "B", sb), ["NDCG@3"])
    assert got.alignment == "instance"
    assert got.rows[0].tie_aware == want.rows[0].tie_aware


def test_alignment_errors(tmp_path, rng):
    s = tied_scores(rng, 5)
    a = save(tmp_path, "A", s, instance=np.arange(5))
    cases = {
        "missing": (save(tmp_path, "B1", s, instance=np.array([0, 1, 2, 3, 9])),
                    r"A\.npz: instance id 4 \(row 4\) is not in .*B1\.npz; 1 id\(s\)"),
        "duplicate": (save(tmp_path, "B2", s, instance=np.array([0, 1, 2, 2, 4])),
                      r"B2\.npz: instance id 2 appears more than once \(rows 2 and 3\)"),
        "kinds": (save(tmp_path, "B3", s, instance=np.array(list("abcde"))),
                  r"instance ids are integers in one and strings in the other"),
        "count": (save(tmp_path, "B4", tied_scores(rng, 4)),
                  r"A\.npz has 5 instances but .*B4\.npz has 4; diff needs the same"),
        "candidates": (save(tmp_path, "B5", tied_scores(rng, 5, cols=7)),
                       r"row 0 has 6 candidates in .*A\.npz but 7 in .*B5\.npz"),
    }
    for name, (b, pattern) in cases.items():
        with pytest.raises(InputError, match=pattern):
            diff_paths(a, b, ["HR@1"])
        result = invoke("diff", a, b)
        assert result.exit_code == 2, name
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("Error: ")


def test_ragged_rows_must_match(tmp_path):
    def parquet(name, rows):
        pq.write_table(pa.table({"scores": pa.array(rows, type=pa.list_(pa.float64()))}),
                       tmp_path / name)
        return str(tmp_path / name)
    a = parquet("a.parquet", [[1.0, 0.5], [0.2, 0.3, 0.1]])
    b = parquet("b.parquet", [[1.0, 0.5], [0.2, 0.3]])
    with pytest.raises(InputError, match=r"row 1 has 3 candidates in .*a\.parquet but 2"):
        diff_paths(a, b, ["HR@1"])


def test_only_one_side_has_ids_warns(tmp_path, rng):
    s = tied_scores(rng, 6)
    a = save(tmp_path, "A", s, instance=np.arange(6))
    b = save(tmp_path, "B", s)
    result = invoke("diff", a, b, "--k", "1", "--format", "json")
    assert result.exit_code == 0
    assert "has instance ids ('instance') but" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["alignment"] == "row order"
    assert all(m["difference"] == 0 for m in doc["metrics"])


def test_diff_needs_exactly_two_files(tmp_path, rng):
    a = save(tmp_path, "A", tied_scores(rng, 3))
    result = invoke("diff", a, a, a)
    assert result.exit_code == 2
    assert "diff compares exactly two dumps (A B), got 3; use 'tieeval rank" in result.output


def test_diff_what_if_is_labelled(tmp_path):
    a = save(tmp_path, "A", np.array([[1.0, 1.0 + 1e-12, 0.0]] * 3))
    b = save(tmp_path, "B", np.array([[1.0, 0.5, 0.0]] * 3))
    doc = json.loads(invoke("diff", a, b, "-m", "HR@1", "--cast", "float32",
                            "--format", "json").stdout)
    assert doc["what_if"]["cast"] == "float32"
    assert doc["metrics"][0]["a"] == 0.5  # tied after the cast
    assert "WHAT-IF ANALYSIS" in invoke("diff", a, b, "--cast", "float32").stdout
    plain = json.loads(invoke("diff", a, b, "-m", "HR@1", "--format", "json").stdout)
    assert plain["what_if"] is None and plain["metrics"][0]["a"] == 0.0


# ---------------------------------------------------------------------------------------
# rank


def test_rank_methods_with_seed_means(tmp_path, rng):
    n = 40
    paths = []
    truth = {}
    for method, ties in (("sat", 30), ("mid", 10), ("clean", 0)):
        for seed in (1, 2):
            s = rng.random((n, 6)).astype(np.float32)
            s[:ties, :3] = 1.0  # positive tied three ways at the top
            path = tmp_path / f"{method}_{seed}.npz"
            tieeval.save_scores(path, s, method=method, dataset="D", task="group", seed=seed)
            paths.append(str(path))
            ta, _, orig = instance_values(s, "HR", 1)
            truth.setdefault(method, []).append((ta.mean(), orig.mean()))
    result = invoke("rank", *paths, "-m", "HR@1", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (ranking,) = doc["rankings"]
    assert (ranking["dataset"], ranking["task"], ranking["metric"], ranking["k"]) == (
        "D", "group", "HR", 1)
    means = {m: (np.mean([t for t, _ in v]), np.mean([o for _, o in v]))
             for m, v in truth.items()}
    want_ta = sorted(means, key=lambda m: -means[m][0])
    want_orig = sorted(means, key=lambda m: -means[m][1])
    assert [e["method"] for e in ranking["methods"]] == want_ta
    for e in ranking["methods"]:
        assert e["tie_aware"] == pytest.approx(means[e["method"]][0], abs=1e-12)
        assert e["original"] == pytest.approx(means[e["method"]][1], abs=1e-12)
        assert e["tie_aware_rank"] == want_ta.index(e["method"]) + 1
        assert e["original_rank"] == want_orig.index(e["method"]) + 1
        assert e["change"] == e["original_rank"] - e["tie_aware_rank"]
        assert e["seeds"] == 2
    assert ranking["changed"] == (want_ta != want_orig)
    table = invoke("rank", *paths, "-m", "HR@1").stdout
    assert "D · group · HR@1" in table and "Seeds" in table


def test_rank_groups_by_setting(tmp_path):
    runs = []
    for method, dataset, top in (("A", "X", 0.9), ("B", "X", 0.1), ("A", "Y", 0.1),
                                 ("B", "Y", 0.9)):
        s = np.array([[top, 0.5, 0.2]] * 4)
        r = tieeval.evaluate(s, k=[1], path=f"{method}_{dataset}")
        r.labels = {"method": method, "dataset": dataset}
        runs.append(r)
    groups, _ = group_runs(runs)
    rankings = rank_groups(groups)
    assert [(r.dataset, r.label) for r in rankings][:2] == [("X", "HR@1"), ("X", "NDCG@1")]
    x, y = rankings[0], rankings[3]
    assert [e.method for e in x.entries] == ["A", "B"]
    assert [e.method for e in y.entries] == ["B", "A"]
    assert not x.changed


def test_rank_markdown_and_csv(tmp_path):
    a = tmp_path / "sat.npz"
    b = tmp_path / "clean.npz"
    np.savez(a, scores=np.array([[1.0, 1.0, 1.0, 0.0]] * 4))
    np.savez(b, scores=np.array([[0.5, 0.9, 0.1, 0.0]] * 4))
    md = invoke("rank", a, b, "-m", "HR@1", "--format", "markdown").stdout
    assert "| 1 | clean | 0.0000 ± 0.0000 |" not in md  # clean never hits @1
    assert "| 1 | sat | 0.3333 ± 0.2357 | 1.0000 | 1 | = |" in md
    rows = list(csv.DictReader(io.StringIO(invoke("rank", a, b, "-m", "HR@1",
                                                  "--format", "csv").stdout)))
    assert [(r["method"], r["tie_aware_rank"], r["original_rank"]) for r in rows] == [
        ("sat", "1", "1"), ("clean", "2", "2")]


def signed_methods(tmp_path):
    """Two labelled methods (labels [1, -1, 0] in every row) whose SHR@1 order depends on
    gamma. A: in two of four rows the positive is alone on top (SHR@1 = 1); in the other
    two it ties at the top with the explicit negative, so SHR@1 is 1 or -gamma with
    probability 1/2 each, and 1 under np.argsort (the lower column index first). Its means:
    tie-aware (1 + 1 + 2 (1 - gamma) / 2) / 4 = (3 - gamma) / 4, original 1. B: an
    unjudged candidate alone on top in every row: SHR@1 = 0 under every column."""
    labels = np.tile([1, -1, 0], (4, 1))
    a = np.array([[1.0, 0.5, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    b = np.tile([0.5, 0.1, 1.0], (4, 1))
    paths = []
    for name, s in (("A", a), ("B", b)):
        np.savez(tmp_path / f"{name}.npz", scores=s, labels=labels,
                 method=np.array(name), dataset=np.array("D"))
        paths.append(tmp_path / f"{name}.npz")
    return paths


def test_rank_labels_each_ranking_with_its_gamma(tmp_path):
    paths = signed_methods(tmp_path)
    result = invoke("rank", *paths, "-m", "SHR@1", "-m", "MRR", "--gamma", "0", "5",
                    "--format", "json")
    assert result.exit_code == 0, result.output
    rankings = json.loads(result.stdout)["rankings"]
    assert [(r["metric"], r["k"], r["gamma"]) for r in rankings] == [
        ("SHR", 1, 0.0), ("SHR", 1, 5.0), ("MRR", None, None)]
    assert list(rankings[0])[:6] == ["dataset", "task", "metric", "k", "gamma", "changed"]
    # gamma 0: A (3/4) above B (0), as under original; gamma 5: A falls to (3 - 5)/4 < 0
    for r, gamma in zip(rankings, (0.0, 5.0)):
        ta = {e["method"]: e["tie_aware"] for e in r["methods"]}
        assert ta == {"A": (3 - gamma) / 4, "B": 0.0}
        assert {e["method"]: e["original"] for e in r["methods"]} == {"A": 1.0, "B": 0.0}
    moves = [[(e["method"], e["tie_aware_rank"], e["original_rank"], e["change"])
              for e in r["methods"]] for r in rankings[:2]]
    assert moves == [[("A", 1, 1, 0), ("B", 2, 2, 0)], [("B", 1, 2, 1), ("A", 2, 1, -1)]]
    assert [r["changed"] for r in rankings[:2]] == [False, True]
    # every writer says which gamma a ranking is for
    table = invoke("rank", *paths, "-m", "SHR@1", "--gamma", "0", "5").stdout
    assert "D · SHR@1 γ=0" in table and "D · SHR@1 γ=5" in table
    md = invoke("rank", *paths, "-m", "SHR@1", "--gamma", "0,5", "--format", "markdown").stdout
    assert "**D · SHR@1 γ=0**" in md and "**D · SHR@1 γ=5**" in md
    rows = list(csv.DictReader(io.StringIO(invoke("rank", *paths, "-m", "SHR@1", "--gamma",
                                                  "0", "5", "--format", "csv").stdout)))
    assert [(r["gamma"], r["method"], r["tie_aware_rank"]) for r in rows] == [
        ("0.0", "A", "1"), ("0.0", "B", "2"), ("5.0", "B", "1"), ("5.0", "A", "2")]
    # single-positive runs keep their JSON and CSV: no gamma
    np.savez(tmp_path / "s.npz", scores=np.array([[1.0, 0.5]]))
    plain = json.loads(invoke("rank", tmp_path / "s.npz", "-m", "HR@1", "--format",
                              "json").stdout)
    assert "gamma" not in plain["rankings"][0]
    assert "gamma" not in invoke("rank", tmp_path / "s.npz", "-m", "HR@1", "--format",
                                 "csv").stdout


def test_rank_groups_carry_gamma(tmp_path):
    runs = []
    for path in signed_methods(tmp_path):
        with np.load(path) as f:
            run = tieeval.evaluate_labels(f["scores"], f["labels"], metrics=["SHR@1"],
                                          gamma=[0, 5])
        run.labels = {"method": path.stem}
        runs.append(run)
    groups, _ = group_runs(runs)
    rankings = rank_groups(groups)
    assert [(r.label, r.gamma, r.labelled) for r in rankings] == [
        ("SHR@1", 0.0, True), ("SHR@1", 5.0, True)]
    assert [e.method for e in rankings[1].entries] == ["B", "A"]


def test_python_m_diff_subprocess(tmp_path, rng):
    a = save(tmp_path, "A", tied_scores(rng, 5))
    proc = subprocess.run([sys.executable, "-m", "tieeval", "diff", a, a, "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert all(m["difference"] == 0 and m["p_value_t"] == 1.0 for m in doc["metrics"])


# ---------------------------------------------------------------------------------------
# the README's examples of diff, rank and audit are real


README = guide.all_text()  # the README, then every page of the user guide


def readme_example(command: str) -> tuple[list[str], list[str]]:
    """The README block starting ``$ tieeval <command> ...``: its arguments and its lines."""
    start = README.index(f"$ tieeval {command} ")
    block = README[start:README.index("```", start)].splitlines()
    return shlex.split(block[0])[3:], [line.rstrip() for line in block[1:]]


def _run_in_root(args):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return CliRunner().invoke(cli, args, terminal_width=200)
    finally:
        os.chdir(cwd)


def test_readme_diff_example():
    args, shown = readme_example("diff")
    result = _run_in_root(["diff", *args])
    assert result.exit_code == 0
    out = [line.rstrip() for line in result.stdout.splitlines()]
    # the tie-aware table and the verdicts do not depend on numpy's order among ties
    tie_table = shown[:shown.index(next(s for s in shown if "Original (np.argsort" in s))]
    for line in tie_table + [s for s in shown if "under original" in s]:
        if line.strip():
            assert line in out, line


def _md_cells(lines, keep):
    return [[c.strip() for c in line.strip("|").split("|")][:keep]
            for line in lines if line.startswith("| ") and "---" not in line]


def test_readme_rank_and_audit_examples():
    for command, keep in (("rank", 3), ("audit", 7)):
        args, shown = readme_example(command)
        result = _run_in_root([command, *args])
        assert result.exit_code == (1 if command == "audit" else 0)
        out = result.stdout.splitlines()
        assert _md_cells(out, keep) == _md_cells(shown, keep)
        if command == "audit":
            verdicts = [row[8] for row in _md_cells(out, 9)]
            assert verdicts == [row[8] for row in _md_cells(shown, 9)]
