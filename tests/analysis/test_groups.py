"""Seed averaging: group means, across-seed stds and seed counts against figures computed
here from the score matrices directly (explicit ranks, never tieeval's kernels)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.analysis.groups import average, group_runs
from tieeval.cli import cli
from tieeval.errors import ParameterError


def tied_scores(rng, rows=40, cols=12, tie_share=0.5):
    """float32 scores from a small pool of values, so the top and the positive often tie."""
    pool = np.array([1.0, 1.0, 0.9, 0.5, 0.25], dtype=np.float32)
    scores = rng.choice(pool, size=(rows, cols)).astype(np.float32)
    mask = rng.random(rows) < tie_share
    scores[mask, 0] = 1.0
    return scores


def oracle(scores, k, positive=0):
    """Per-row figures for HR@k and NDCG@k from explicit rank enumeration."""
    n = len(scores)
    pos = scores[np.arange(n), positive]
    a = (scores > pos[:, None]).sum(1)
    b = (scores == pos[:, None]).sum(1)
    order = np.argsort(scores * -1, axis=1)  # what the codebases do
    original = np.argmax(order == positive, axis=1) + 1
    out = {}
    for name, value in (("HR", lambda r: float(r <= k)),
                        ("NDCG", lambda r: 1 / math.log2(r + 1) if r <= k else 0.0)):
        out[name] = {
            "original": np.mean([value(r) for r in original]),
            "first": np.mean([value(r) for r in a + 1]),
            "last": np.mean([value(r) for r in a + b]),
            # uniform tie-break: the rank is uniform on a+1 .. a+b
            "tie_aware": np.mean([np.mean([value(r) for r in range(ai + 1, ai + bi + 1)])
                                  for ai, bi in zip(a, b)]),
        }
    hr_var = []
    for ai, bi in zip(a, b):
        h = np.mean([float(r <= k) for r in range(ai + 1, ai + bi + 1)])
        hr_var.append(h * (1 - h))
    out["HR"]["tie_aware_std"] = math.sqrt(sum(hr_var)) / n
    top = (scores == scores.max(1, keepdims=True)).sum(1)
    out["ties"] = {"top_tie_size": top.mean(), "top_tie_ratio": (top / scores.shape[1]).mean(),
                   "top_tie_frequency": (top > 1).mean(), "positive_tie_size": b.mean(),
                   "positive_tie_frequency": (b > 1).mean()}
    return out


def labelled(scores, k, **labels):
    run = tieeval.evaluate(scores, k=[k])
    run.labels = {key: str(v) for key, v in labels.items()}
    return run


def test_group_means_stds_and_seed_count_match_hand_averages():
    rng = np.random.default_rng(11)
    k = 3
    mats = [tied_scores(rng, rows=30 + 7 * s) for s in range(3)]  # seeds differ in size
    runs = [labelled(m, k, method="M", dataset="D", task="group", seed=s)
            for s, m in enumerate(mats)]
    groups, warnings = group_runs(runs)
    assert warnings == [] and len(groups) == 1
    g = groups[0]
    assert g.seeds == 3 and g.labels == {"method": "M", "dataset": "D", "task": "group"}
    per_seed = [oracle(m, k) for m in mats]
    for name in ("HR", "NDCG"):
        row = g.metric(f"{name}@{k}")
        for column in ("original", "first", "last", "tie_aware"):
            values = [o[name][column] for o in per_seed]
            assert getattr(row, column) == pytest.approx(np.mean(values), abs=1e-12)
            assert row.seed_std(column) == pytest.approx(np.std(values, ddof=1), abs=1e-12)
        # the change is computed from the means, as the paper does
        means = {c: np.mean([o[name][c] for o in per_seed]) for c in ("original", "tie_aware")}
        assert row.change_original_to_tie_aware == pytest.approx(
            (means["tie_aware"] - means["original"]) / means["original"], abs=1e-12)
    # tie-break std of a mean of independent seeds: sqrt(sum of variances) / seeds
    stds = [o["HR"]["tie_aware_std"] for o in per_seed]
    assert g.metric(f"HR@{k}").tie_aware_std == pytest.approx(
        math.sqrt(sum(s * s for s in stds)) / 3, rel=1e-9)
    for stat in ("top_tie_size", "top_tie_ratio", "top_tie_frequency", "positive_tie_size",
                 "positive_tie_frequency"):
        values = [o["ties"][stat] for o in per_seed]
        assert g.ties.means[stat] == pytest.approx(np.mean(values), abs=1e-12)
        assert g.ties.seed_stds[stat] == pytest.approx(np.std(values, ddof=1), abs=1e-12)


def test_groups_split_on_every_label_but_seed_and_keep_first_seen_order():
    rng = np.random.default_rng(2)
    m = tied_scores(rng)
    runs = [labelled(m, 1, method="B", dataset="D", task="user", seed=1),
            labelled(m, 1, method="A", dataset="D", task="user", seed=1),
            labelled(m, 1, method="B", dataset="D", task="user", seed=2),
            labelled(m, 1, method="B", dataset="E", task="user", seed=1),
            labelled(m, 1, method="B", dataset="D", task="group", seed=1)]
    groups, _ = group_runs(runs)
    assert [g.key for g in groups] == [("B", "D", "user"), ("A", "D", "user"),
                                       ("B", "E", "user"), ("B", "D", "group")]
    assert [g.seeds for g in groups] == [2, 1, 1, 1]
    # one seed: no across-seed spread
    assert groups[1].metric("HR@1").tie_aware_seed_std is None
    assert groups[1].ties.seed_stds["top_tie_size"] is None


def test_repeated_or_missing_seeds_warn_but_still_average():
    rng = np.random.default_rng(5)
    m = tied_scores(rng)
    runs = [labelled(m, 1, method="A", seed=1), labelled(m, 1, method="A", seed=1)]
    groups, warnings = group_runs(runs)
    assert groups[0].seeds == 2
    assert len(warnings) == 1 and "seed 1 appears in 2 runs" in warnings[0]
    runs = [labelled(m, 1, method="A"), labelled(m, 1, method="A")]
    _, warnings = group_runs(runs)
    assert len(warnings) == 1 and "2 have no seed label" in warnings[0]


def test_average_refuses_runs_with_different_metrics():
    rng = np.random.default_rng(1)
    m = tied_scores(rng)
    with pytest.raises(ParameterError, match="runs of one group need the same metrics"):
        average([labelled(m, 1, method="A"), labelled(m, 5, method="A")])


def test_average_refuses_a_labelled_and_a_single_positive_run():
    # the same metric rows, but only the labelled run's rows count skipped instances: a
    # group of both used to end in an internal error (int + None)
    rng = np.random.default_rng(2)
    m = tied_scores(rng)
    one_hot = np.zeros(m.shape, dtype=np.int64)
    one_hot[:, 0] = 1
    graded = tieeval.evaluate(m, k=[1], labels=one_hot, metrics=["HR@1", "NDCG@1", "MRR@all"])
    graded.labels = {"method": "A"}
    single = labelled(m, 1, method="A")
    for runs in ([graded, single], [single, graded]):
        with pytest.raises(ParameterError, match="need the same kind of evaluation"):
            average(runs)


def test_group_json_keys_extend_the_single_run_contract():
    rng = np.random.default_rng(3)
    runs = [labelled(tied_scores(rng), 1, method="A", seed=s) for s in (1, 2)]
    groups, _ = group_runs(runs)
    d = groups[0].to_dict()
    assert set(d) == {"labels", "seeds", "paths", "metrics", "ties"}
    assert d["labels"] == {"method": "A", "dataset": None, "task": None}
    assert d["seeds"] == 2
    run_keys = set(runs[0].to_dict()["metrics"][0])
    row = d["metrics"][0]
    assert set(row) == run_keys | {f"{c}_seed_std" for c in
                                   ("original", "first", "last", "tie_aware")}
    assert set(d["ties"]) >= set(runs[0].to_dict()["ties"])
    assert "top_tie_size_seed_std" in d["ties"] and "tie_decided_seed_std" in d["ties"]


def test_compare_json_has_runs_with_labels_and_groups(tmp_path):
    rng = np.random.default_rng(8)
    mats = {}
    for method in ("A", "B"):
        for seed in (1, 2):
            m = tied_scores(rng)
            path = tmp_path / method / f"D_group_seed{seed}.npz"
            path.parent.mkdir(exist_ok=True)
            tieeval.save_scores(path, m)
            mats[(method, seed)] = m
    files = sorted(str(p) for p in tmp_path.glob("*/*.npz"))
    out = CliRunner().invoke(cli, ["compare", *files, "--k", "1", "--template",
                                   "{method}/{dataset}_{task}_seed{seed}.npz",
                                   "--format", "json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert [r["labels"] for r in doc["runs"]] == [
        {"method": m, "dataset": "D", "task": "group", "seed": str(s)}
        for m in ("A", "B") for s in (1, 2)]
    assert [g["labels"]["method"] for g in doc["groups"]] == ["A", "B"]
    for g in doc["groups"]:
        method = g["labels"]["method"]
        hr = [oracle(mats[(method, s)], 1)["HR"]["tie_aware"] for s in (1, 2)]
        row = g["metrics"][0]
        assert (row["metric"], row["k"]) == ("HR", 1)
        assert row["tie_aware"] == pytest.approx(np.mean(hr), abs=1e-12)
        assert row["tie_aware_seed_std"] == pytest.approx(np.std(hr, ddof=1), abs=1e-12)
        assert g["seeds"] == 2
