"""A saved ranking shorter than a metric reads (``--original given`` with a top-N list)
leaves only that metric's Original empty, with a note; every other figure is printed.

Oracles: the saved ranking read back in the test for the Original of the metrics it
answers (is the positive among its top K? at which place?), and the run under
``--original argsort`` for First, Last and Tie-aware, which no ranking rule changes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval import save_scores
from tieeval.cli import cli
from tieeval.engine.local import evaluate_path, iter_instance_values
from tieeval.io.open import open_dump

ROWS, N, DEPTH = 40, 30, 8


def _dump(tmp_path, labels=False):
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 4, (ROWS, N)).astype(np.float32)  # ties everywhere
    ranking = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
    path = tmp_path / ("lab.npz" if labels else "pos.npz")
    lab = None
    if labels:
        lab = (rng.random((ROWS, N)) < 0.2).astype(np.int64)
        lab[:, 0] = 1
        save_scores(path, scores, labels=lab, ranking=ranking)
    else:
        save_scores(path, scores, ranking=ranking)  # the positive: column 0
    return str(path), ranking, lab


def _place(ranking, item):
    """1-based place of ``item`` in each row's list (0: not listed)."""
    hit = ranking == item
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)


def test_single_positive_leaves_only_the_unanswered_originals_empty(tmp_path):
    path, ranking, _ = _dump(tmp_path)
    metrics = ["HR@5", "NDCG@8", "MRR", "AUC"]
    with pytest.warns(UserWarning) as caught:
        run = evaluate_path(path, metrics, original="given")
    by_argsort = evaluate_path(path, metrics)
    place = _place(ranking, 0)
    assert run.metric("HR@5").original == pytest.approx(np.mean((place >= 1) & (place <= 5)))
    ndcg = np.where(place >= 1, 1 / np.log2(np.maximum(place, 1) + 1), 0.0)
    assert run.metric("NDCG@8").original == pytest.approx(ndcg.mean(), abs=1e-12)
    for name in ("MRR", "AUC"):
        row, other = run.metric(name), by_argsort.metric(name)
        assert row.original is None and row.change_original_to_tie_aware is None
        assert (row.first, row.last, row.tie_aware, row.tie_aware_std) == (
            other.first, other.last, other.tie_aware, other.tie_aware_std)
        assert row.to_dict()["original"] is None
    notes = [str(w.message) for w in caught if "left empty" in str(w.message)]
    assert len(notes) == 1 and notes == [n for n in run.warnings if "left empty" in n]
    assert f"'ranking' lists {DEPTH} of {N} candidates, but MRR needs the top {N}" in notes[0]
    assert "the Original of MRR, AUC is left empty" in notes[0]


def test_labelled_rows_leave_only_the_unanswered_originals_empty(tmp_path):
    path, ranking, lab = _dump(tmp_path, labels=True)
    metrics = ["Recall@5", "HR@10", "MAP"]
    with pytest.warns(UserWarning, match="the Original of HR@10, MAP is left empty"):
        run = evaluate_path(path, metrics, original="given")
    by_argsort = evaluate_path(path, metrics)
    listed = np.take_along_axis(lab, ranking, axis=1)
    recall = listed[:, :5].sum(axis=1) / lab.sum(axis=1)
    assert run.metric("Recall@5").original == pytest.approx(recall.mean(), abs=1e-12)
    for name in ("HR@10", "MAP"):
        row, other = run.metric(name), by_argsort.metric(name)
        assert row.original is None
        assert (row.first, row.last, row.tie_aware) == (other.first, other.last,
                                                         other.tie_aware)


def test_per_instance_originals_are_nan_where_unanswered(tmp_path):
    path, ranking, _ = _dump(tmp_path)
    from tieeval.metrics.metric import Metric
    metrics = [Metric("HR", 5), Metric("MRR")]
    got = {}
    for _, values in iter_instance_values(open_dump(path), metrics, original="given"):
        for m, v in values.items():
            got.setdefault(str(m), []).append(v.original)
    place = _place(ranking, 0)
    assert np.array_equal(np.concatenate(got["HR@5"]), ((place >= 1) & (place <= 5)) * 1.0)
    assert np.isnan(np.concatenate(got["MRR"])).all()


def test_compare_prints_every_other_figure_and_the_note(tmp_path):
    path, _, _ = _dump(tmp_path)
    res = CliRunner().invoke(cli, ["compare", path, "--original", "given", "-m", "AUC",
                                   "-m", "HR@8", "-f", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["runs"][0]["metrics"]
    assert rows[0]["metric"] == "AUC" and rows[0]["original"] is None
    assert all(math.isfinite(rows[0][c]) for c in ("first", "last", "tie_aware"))
    assert rows[1]["metric"] == "HR" and rows[1]["original"] is not None
    assert "AUC needs the top 30" in res.stderr and "left empty" in res.stderr
    table = CliRunner().invoke(cli, ["compare", path, "--original", "given", "-m", "AUC",
                                     "-q"])
    assert table.exit_code == 0, table.output
    auc = next(line for line in table.stdout.splitlines() if line.strip().startswith("AUC"))
    assert auc.split()[1] == "n/a"


@pytest.mark.parametrize("command", [["diff"], ["rank"]])
def test_diff_and_rank_name_the_original_they_cannot_compare(tmp_path, command):
    # diff pairs each instance's Original, rank orders by Original: an empty one is an
    # input error naming the metric, not a crash on NaN or None
    path, _, _ = _dump(tmp_path)
    res = CliRunner().invoke(cli, [*command, path, path, "--original", "given", "-m", "MRR",
                                   "-q"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1
    assert "MRR" in res.stderr and "saved ranking lists too few candidates" in res.stderr
    # what the ranking answers is compared as before
    res = CliRunner().invoke(cli, [*command, path, path, "--original", "given", "-m", "HR@8",
                                   "-q"])
    assert res.exit_code == 0, res.output
