"""In-memory arrays are cut into batches as a file of the same rows is read, so the
working memory is bounded by a batch; the figures are those of the file, bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.io import base
from tieeval.io.base import Dump


def _cli(path, *args) -> dict:
    result = CliRunner().invoke(cli, ["compare", str(path), *args, "--meta", "method=api", "-q",
                                       "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"][0]


def _as_json(result) -> dict:
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


def _count_batches(monkeypatch) -> list:
    """The batch counts of the in-memory dumps evaluated from now on."""
    counts: list = []
    original = Dump.batches

    def batches(self, batch_rows=None):
        if self.format != "array":
            yield from original(self, batch_rows)
            return
        counts.append(0)
        for batch in original(self, batch_rows):
            counts[-1] += 1
            yield batch
    monkeypatch.setattr(Dump, "batches", batches)
    return counts


def test_arrays_are_evaluated_in_batches_with_the_file_figures(tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    scores = (rng.integers(0, 4, size=(500, 9)) / 4).astype(np.float32)  # many ties
    positive = rng.integers(0, 9, size=500)
    path = str(tmp_path / "s.npz")
    np.savez(path, scores=scores, positive=positive)
    counts = _count_batches(monkeypatch)
    monkeypatch.setattr(base, "TARGET_BATCH_BYTES", 9 * 4 * 64)  # 64 rows per batch
    got = tieeval.evaluate(scores, positive=positive, path=path, k=[1, 3],
                           run_labels={"method": "api"})
    assert counts == [8]
    assert _as_json(got) == _cli(path, "--k", "1", "--k", "3")


def test_ragged_labelled_arrays_in_batches_keep_items_and_rankings(tmp_path, monkeypatch):
    rng = np.random.default_rng(12)
    lengths = rng.integers(1, 9, size=300)
    rows = [(rng.integers(0, 3, size=n) / 2).astype(np.float64) for n in lengths]
    labels = [rng.integers(-1, 3, size=n) for n in lengths]
    items = [rng.integers(0, 6, size=n) for n in lengths]  # duplicates within rows
    # what a codebase ranked: by score, ties in a random order
    ranking = [np.lexsort((rng.random(r.size), -r)) for r in rows]
    path = str(tmp_path / "r.parquet")
    pq.write_table(pa.table({
        "scores": pa.array([list(r) for r in rows], pa.list_(pa.float64())),
        "labels": pa.array([list(r) for r in labels], pa.list_(pa.int64())),
        "items": pa.array([list(r) for r in items], pa.list_(pa.int64())),
        "ranking": pa.array([list(r) for r in ranking], pa.list_(pa.int64()))}), path)
    counts = _count_batches(monkeypatch)
    monkeypatch.setattr(base, "TARGET_BATCH_BYTES", 8 * 40)  # about 40 rows per batch
    metrics = ["NDCG@3", "MAP@5", "HR@2", "MRR"]
    flags = [a for m in metrics for a in ("-m", m)]
    for original in (None, "given"):
        got = tieeval.evaluate(rows, labels=labels, items=items, ranking=ranking,
                               metrics=metrics, path=path, original=original,
                               run_labels={"method": "api"})
        assert counts[-1] > 3
        more = [] if original is None else ["--original", original]
        assert _as_json(got) == _cli(path, *flags, *more)
