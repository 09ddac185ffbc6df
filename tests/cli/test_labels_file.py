"""``--labels FILE.npy``: relevance labels from a separate ``.npy`` beside a score matrix.

The figures must be those of the same labels stored in the dump (an NPZ with a ``labels``
member, read by the other path) and, for the tie-aware NDCG, scikit-learn's tie-averaged
``ndcg_score``; bad label files are refused with one ``Error:`` line and exit code 2.
"""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.io.base import RelevanceReadOptions
from tieeval.io.open import open_dump

ROWS, COLS = 120, 9


@pytest.fixture
def files(tmp_path):
    """Scores on four levels (heavy ties) and graded labels with explicit negatives, as an
    NPY matrix, a Parquet list column and the NPZ that stores both."""
    rng = np.random.default_rng(39)
    scores = rng.integers(0, 4, (ROWS, COLS)).astype(np.float32)
    labels = rng.choice([-1, 0, 0, 0, 1, 2, 3], size=(ROWS, COLS)).astype(np.int16)
    labels[:3] = np.minimum(labels[:3], 0)  # rows without a relevant item: skipped
    np.save(tmp_path / "scores.npy", scores)
    np.save(tmp_path / "labels.npy", labels)
    np.savez(tmp_path / "both.npz", scores=scores, labels=labels)
    pq.write_table(pa.table({"scores": pa.array(list(scores), pa.list_(pa.float32()))}),
                   tmp_path / "scores.parquet", row_group_size=50)
    return tmp_path, scores, labels


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def figures(*args):
    result = invoke("compare", *args, "-m", "NDCG@5", "-m", "MAP", "-m", "SNDCG@5",
                    "-m", "V-AUC", "--format", "json")
    assert result.exit_code == 0, result.output
    return [{k: row[k] for k in ("metric", "k", "original", "first", "last", "tie_aware",
                                 "instances", "skipped")}
            for row in json.loads(result.stdout)["runs"][0]["metrics"]]


@pytest.mark.parametrize("dump,extra", [("scores.npy", ()),
                                        ("scores.parquet", ()),
                                        ("scores.npy", ("--jobs", "2", "--batch-rows", "16"))])
def test_labels_file_gives_the_figures_of_labels_in_the_dump(files, dump, extra):
    folder, _, labels = files
    stored = figures(folder / "both.npz")
    assert figures(folder / dump, "--labels", folder / "labels.npy", *extra) == stored
    without = int((labels.max(axis=1) <= 0).sum())  # rows with no relevant item
    assert without >= 3
    assert stored[0]["skipped"] == without and stored[0]["instances"] == ROWS - without


def test_tie_aware_ndcg_equals_sklearn(files):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    folder, scores, labels = files
    row = figures(folder / "scores.npy", "--labels", folder / "labels.npy")[0]
    gains = np.maximum(labels, 0).astype(np.float64)
    values = [sklearn_metrics.ndcg_score(g[None, :], s[None, :].astype(np.float64), k=5,
                                         ignore_ties=False)
              for s, g in zip(scores, gains) if g.sum() > 0]
    assert row["tie_aware"] == pytest.approx(math.fsum(values) / len(values), rel=1e-12)


def test_python_reading_options_take_the_labels_file(files):
    folder, scores, labels = files
    by_file = tieeval.evaluate_path(
        str(folder / "scores.npy"), metrics=["NDCG@5"],
        options=RelevanceReadOptions(labels_file=str(folder / "labels.npy")))
    in_memory = tieeval.evaluate(scores, labels=labels, metrics=["NDCG@5"])
    assert by_file.metrics[0].tie_aware == pytest.approx(in_memory.metrics[0].tie_aware,
                                                         rel=1e-12)
    # a worker process gets the part whole and reads its rows of labels itself
    dump = open_dump(str(folder / "scores.npy"),
                     RelevanceReadOptions(labels_file=str(folder / "labels.npy")))
    part = pickle.loads(pickle.dumps(dump.parts[0]))
    batch = part.read_rows(5, 9)
    assert np.array_equal(batch.labels, labels[5:9])


def test_check_and_diff_take_the_labels_file(files):
    folder, _, _ = files
    labels = ("--labels", folder / "labels.npy")
    ok = invoke("check", folder / "scores.npy", *labels, "--min", "NDCG@5=0.01")
    assert ok.exit_code == 0, ok.output
    diff = invoke("diff", folder / "scores.npy", folder / "scores.parquet", *labels,
                  "-m", "NDCG@5", "--format", "json")
    assert diff.exit_code == 0, diff.output
    (row,) = json.loads(diff.stdout)["metrics"]
    # the same scores and labels on both sides, the figures compare gives
    tie_aware = figures(folder / "both.npz")[0]["tie_aware"]
    assert row["a"] == row["b"] == pytest.approx(tie_aware, rel=1e-12)
    assert row["difference"] == 0


def _bad_files(folder, labels):
    nan = labels.astype(np.float64)
    nan[7, 4] = np.nan
    np.save(folder / "nan.npy", nan)
    np.save(folder / "narrow.npy", labels[:, :-1])
    np.save(folder / "short.npy", labels[:-1])
    np.save(folder / "text.npy", labels.astype(str))
    np.save(folder / "flat.npy", labels[:, 0])
    np.save(folder / "objects.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    np.savez(folder / "archive.npz", labels=labels)
    (folder / "cut.npy").write_bytes((folder / "labels.npy").read_bytes()[:-5])


@pytest.mark.parametrize("dump,args,fragment", [
    ("scores.npy", ("--labels", "nan.npy"), "nan.npy: row 7: label nan (labels must be "
                                            "finite)"),
    ("scores.npy", ("--labels", "narrow.npy"), f"narrow.npy: {COLS - 1} labels per row, but "),
    ("scores.npy", ("--labels", "short.npy"), f"short.npy: {ROWS - 1} rows of labels, but "),
    ("scores.npy", ("--labels", "text.npy"), "text.npy: --labels needs labels that are "
                                             "numbers or booleans, got <U"),
    ("scores.npy", ("--labels", "flat.npy"), "flat.npy: --labels needs a 2-D (instances, "
                                             "candidates) array"),
    ("scores.npy", ("--labels", "objects.npy"), "objects.npy: holds pickled Python objects"),
    ("scores.npy", ("--labels", "archive.npz"), "archive.npz: --labels takes a single .npy"),
    ("scores.npy", ("--labels", "cut.npy"), "cut.npy: corrupted or truncated file"),
    ("scores.npy", ("--labels", "missing.npy"), "missing.npy: no such file"),
    ("both.npz", ("--labels", "labels.npy"), "both.npz: has its own relevance field "
                                             "'labels'; give relevance one way"),
    ("scores.npy", ("--labels", "labels.npy", "--positive-index", "1"),
     "--positive-index does not apply with --labels"),
    ("scores.npy", ("--labels", "labels.npy", "--qrels", "labels.npy"),
     "--labels does not apply to TREC runs"),
    ("scores.npy", ("--labels", "labels.npy", "--engine", "spark"),
     "--labels is read by the local engine only"),
    ("scores.npy", ("--labels", "-"), "--labels -: standard input is read only as a dump"),
])
def test_bad_labels_files_are_one_line_errors(files, monkeypatch, dump, args, fragment):
    folder, _, labels = files
    _bad_files(folder, labels)
    monkeypatch.chdir(folder)
    result = invoke("compare", dump, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_single_positive_field_and_the_long_layout_are_refused(files, monkeypatch):
    folder, scores, labels = files
    monkeypatch.chdir(folder)
    pq.write_table(pa.table({"scores": pa.array(list(scores), pa.list_(pa.float32())),
                             "positive": np.zeros(ROWS, dtype=np.int64)}), "positive.parquet")
    result = invoke("compare", "positive.parquet", "--labels", "labels.npy")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: positive.parquet: has a single-positive field 'positive'; give relevance "
        "one way (drop --labels or the field)")
    long = pa.table({"instance": np.repeat(np.arange(2), 3), "position": np.tile([0, 1, 2], 2),
                     "score": np.ones(6), "label": np.tile([1, 0, 0], 2)})
    pq.write_table(long, "long.parquet")
    result = invoke("compare", "long.parquet", "--labels", "labels.npy")
    assert result.exit_code == 2
    assert "--labels applies to wide dumps" in result.stderr.splitlines()[-1]
