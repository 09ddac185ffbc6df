"""``--relevant-scores positive`` (``relevant_scores=``): a relevant item scored <= 0 is not
relevant to Precision, Recall, MRR and MAP (torchmetrics' ``preds > 0`` filter), and
nothing else changes. The figures with the option are checked against torchmetrics and
against every tie order in tests/metrics/test_library_conventions.py; here, that the
default is the figures without it, that the sign of a score means nothing without it,
what the option leaves alone, the single-positive path, and the command line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.metrics.options import parse_rel_metric

METRICS = ["HR@3", "Recall@3", "Precision@3", "MRR", "MRR@4", "MAP", "MAP@3", "NDCG@3",
           "RPrec", "AUC"]
GATED = ("Recall@3", "Precision@3", "MRR", "MRR@4", "MAP", "MAP@3")


def _data(seed=31, rows=40, n=8):
    rng = np.random.default_rng(seed)
    scores = rng.choice(np.array([-1.0, -0.0, 0.0, 0.5, 1.0]), (rows, n))
    labels = rng.choice([0, 0, 1, 2], (rows, n))
    labels[4] = np.where(scores[4] <= 0, 1, 0)  # relevant items all scored <= 0
    labels[5] = 0
    return scores, labels


def _metrics(run):
    return [m.to_dict() for m in run.metrics]


def test_any_is_the_default_and_a_score_sign_means_nothing_without_the_option():
    scores, labels = _data()
    base = tieeval.evaluate(scores, labels=labels, metrics=METRICS, original="stable")
    same = tieeval.evaluate(scores, labels=labels, metrics=METRICS, original="stable",
                            relevant_scores="any")
    assert same.to_dict() == base.to_dict()
    assert "relevant_scores" not in base.to_dict()["relevance"]
    # shifted by 2, every score is > 0 and the ties and the order are the same (exact in
    # float64): without the option every figure is the same, and with it too
    up = scores + 2.0
    assert (up > 0).all()
    shifted = tieeval.evaluate(up, labels=labels, metrics=METRICS, original="stable")
    assert _metrics(shifted) == _metrics(base)
    on = tieeval.evaluate(up, labels=labels, metrics=METRICS, original="stable",
                          relevant_scores="positive")
    assert _metrics(on) == _metrics(base)


def test_positive_changes_its_four_metrics_only():
    scores, labels = _data()
    base = tieeval.evaluate(scores, labels=labels, metrics=METRICS, original="stable")
    gated = tieeval.evaluate(scores, labels=labels, metrics=METRICS, original="stable",
                             relevant_scores="positive")
    assert gated.to_dict()["relevance"]["relevant_scores"] == "positive"
    assert gated.to_dict()["ties"] == base.to_dict()["ties"]  # the dump's own labels
    for b, g in zip(base.metrics, gated.metrics):
        label = b.label
        assert g.instances == b.instances, label  # rows are defined by every relevant item
        if label in GATED:
            assert g.to_dict() != b.to_dict(), label
            if not label.startswith("MAP"):  # fewer hits, a later first one: never higher
                for c in ("original", "first", "last", "tie_aware"):
                    assert getattr(g, c) <= getattr(b, c), (label, c)
        else:
            assert g.to_dict() == b.to_dict(), label
    # a row whose relevant items are all scored <= 0 scores 0 in each of them
    rows = tieeval.evaluate(scores[4:5], labels=labels[4:5], metrics=list(GATED),
                            relevant_scores="positive")
    for m in rows.metrics:
        assert (m.original, m.first, m.last, m.tie_aware) == (0.0, 0.0, 0.0, 0.0), m.label


def test_recall_divides_by_every_relevant_item():
    # R = 4, two of them scored <= 0: Recall@2 is 2/4, and AP over the ones scored > 0
    scores = np.array([[0.9, 0.5, 0.3, 0.0, -0.0, -0.2]])
    labels = np.array([[1, 1, 0, 1, 0, 1]])
    run = tieeval.evaluate(scores, labels=labels, metrics=["Recall@2", "MAP@all", "MRR@4"],
                           relevant_scores="positive")
    assert run.metric("Recall@2").original == 0.5
    assert run.metric("MAP").original == 1.0
    assert run.metric("MRR@4").original == 1.0
    plain = tieeval.evaluate(scores, labels=labels, metrics=["MAP@all"])
    assert plain.metric("MAP").original == pytest.approx((1 + 1 + 3 / 4 + 4 / 6) / 4)


def test_single_positive_rows_take_the_option():
    # one positive per row: MRR with the option is the labelled path's on a one-hot label
    # (the sort-free kernel does not filter); HR and NDCG stay the sort-free kernel's
    rng = np.random.default_rng(5)
    scores = rng.choice(np.array([-1.0, -0.0, 0.0, 0.5, 1.0]), (60, 7))
    pos = rng.integers(0, 7, 60)
    onehot = np.zeros(scores.shape, dtype=np.int64)
    onehot[np.arange(60), pos] = 1
    metrics = ["HR@3", "NDCG@3", "MRR"]
    single = tieeval.evaluate(scores, positive=pos, metrics=metrics, original="stable",
                              relevant_scores="positive")
    labelled = tieeval.evaluate(scores, labels=onehot, metrics=metrics, original="stable",
                                relevant_scores="positive")
    plain = tieeval.evaluate(scores, positive=pos, metrics=metrics, original="stable")
    assert _metrics(single) == _metrics(labelled)
    for name in ("HR@3", "NDCG@3"):  # the sort-free kernel's, to the last bits
        for c in ("original", "first", "last", "tie_aware", "tie_aware_std"):
            assert getattr(single.metric(name), c) == pytest.approx(
                getattr(plain.metric(name), c), abs=1e-12), (name, c)
    stable = np.argsort(scores * -1, axis=1, kind="stable")
    rank = np.argmax(stable == pos[:, None], axis=1) + 1
    kept = scores[np.arange(60), pos] > 0
    assert single.metric("MRR").original == pytest.approx(np.mean(np.where(kept, 1 / rank, 0)),
                                                          abs=1e-12)


def test_the_option_names_its_metrics_and_values():
    assert str(parse_rel_metric("MAP(relevant_scores=positive)@10")) == (
        "MAP(relevant_scores=positive)@10")
    with pytest.raises(ParameterError, match="relevant_scores='positive' does not apply to HR"):
        parse_rel_metric("HR(relevant_scores=positive)@10")
    with pytest.raises(ParameterError, match="relevant_scores must be one of any, positive"):
        tieeval.evaluate(np.eye(3), labels=np.eye(3), relevant_scores="nonzero")
    # the torchmetrics convention sets it; given explicitly, the value given wins
    scores, labels = _data()
    tm = tieeval.evaluate(scores, labels=labels, k=[3], convention="torchmetrics")
    assert tm.to_dict()["relevance"]["relevant_scores"] == "positive"
    back = tieeval.evaluate(scores, labels=labels, k=[3], convention="torchmetrics",
                            relevant_scores="any")
    assert "relevant_scores" not in back.to_dict()["relevance"]
    assert back.metric("Recall@3").tie_aware > tm.metric("Recall@3").tie_aware


def test_command_line(tmp_path):
    scores, labels = _data()
    path = tmp_path / "signed.npz"
    np.savez(path, scores=scores, labels=labels)
    args = ["compare", str(path), "-m", "Recall@3", "-m", "MAP", "--original", "stable",
            "--format", "json"]
    result = CliRunner().invoke(cli, [*args, "--relevant-scores", "positive"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["relevance"]["relevant_scores"] == "positive"
    want = tieeval.evaluate(scores, labels=labels, metrics=["Recall@3", "MAP"],
                            original="stable", relevant_scores="positive")
    assert run["metrics"] == [m.to_dict() for m in want.metrics]
    bad = CliRunner().invoke(cli, [*args, "--relevant-scores", "nonzero"])
    assert bad.exit_code == 2 and bad.stdout == ""
    assert bad.stderr.rstrip().splitlines()[-1] == (
        "Error: Invalid value for '--relevant-scores': 'nonzero' is not one of 'any', "
        "'positive'.")
