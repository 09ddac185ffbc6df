"""A dump whose positive defaults to column 0 but whose column 0 is not a positive -- a
full-sort dump saved without ``positive=`` -- gets one warning line with the fix; the
figures never change, and a dump whose positive really is column 0 gets none."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.engine.local import evaluate_path
from tieeval.kernels.hints import HINT_Z, rank_evidence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "sample_scores")


def _hint(warnings):
    return [w for w in warnings if "the positive defaults to column 0" in w]


def _full_sort(rng, rows=400, items=2000, signal=3.0):
    """A model's full-sort scores whose positive sits at a random column, and that column."""
    scores = rng.normal(size=(rows, items)).astype(np.float32)
    positive = rng.integers(0, items, size=rows)
    scores[np.arange(rows), positive] += signal
    return scores, positive


def test_a_full_sort_dump_without_its_positive_warns_with_the_fix(tmp_path):
    scores, positive = _full_sort(np.random.default_rng(0))
    path = tmp_path / "full_sort.npy"
    np.save(path, scores)
    result = evaluate_path(path, metrics=["HR@10"])
    (line,) = _hint(result.warnings)
    for part in ("ranks like a random candidate", "2000 candidates per row",
                 "positive=", "--positive-index"):
        assert part in line
    # the figures are those of column 0, unchanged: an independent count of its rank
    above = (scores > scores[:, :1]).sum(axis=1)
    assert result.metric("HR@10").tie_aware == pytest.approx(np.mean(above < 10), abs=1e-12)
    # with the positive given, the model's real figure and no warning
    fixed = tieeval.evaluate(scores, positive=positive, metrics=["HR@10"])
    real = (scores > scores[np.arange(len(positive)), positive][:, None]).sum(axis=1)
    assert fixed.metric("HR@10").tie_aware == pytest.approx(np.mean(real < 10), abs=1e-12)
    assert not _hint(fixed.warnings)
    r = CliRunner().invoke(cli, ["compare", str(path), "--k", "10"])
    assert r.exit_code == 0
    assert len([ln for ln in r.stderr.splitlines() if "defaults to column 0" in ln]) == 1
    saved = tmp_path / "saved.npz"
    tieeval.save_scores(saved, scores, positive=positive)
    assert not _hint(evaluate_path(saved, metrics=["HR@10"]).warnings)


def test_a_ragged_parquet_dump_with_a_random_column_zero_warns(tmp_path):
    rng = np.random.default_rng(1)
    rows = [rng.random(int(n)) for n in rng.integers(50, 200, size=300)]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int32)
    pq.write_table(pa.table({"scores": pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(np.concatenate(rows)))}), tmp_path / "ragged.parquet")
    assert _hint(evaluate_path(tmp_path / "ragged.parquet", metrics=["MRR"]).warnings)


def test_minus_inf_in_column_zero_of_some_rows_warns(tmp_path):
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(200, 50))
    scores[:, 0] += 3  # a model whose positive is column 0 ...
    scores[:20, 0] = -np.inf  # ... but masked in a tenth of the rows
    np.save(tmp_path / "masked.npy", scores)
    (line,) = _hint(evaluate_path(tmp_path / "masked.npy", metrics=["MRR"]).warnings)
    assert "column 0 is -inf in 20 of the first 200 rows" in line
    assert "ranks like a random candidate" not in line


@pytest.mark.parametrize("name", ["tie_free", "sigmoid_saturated"])
@pytest.mark.parametrize("keep_positive", [True, False])
def test_no_warning_on_the_shipped_samples(tmp_path, name, keep_positive):
    path = os.path.join(SAMPLES, f"{name}.npz")
    if not keep_positive:  # their positive is column 0: the bare matrix warns neither
        with np.load(path) as z:
            np.save(tmp_path / "bare.npy", z["scores"])
        path = tmp_path / "bare.npy"
    for p in (path, os.path.join(SAMPLES, f"{name}.parquet")):
        assert not _hint(evaluate_path(p, metrics=["HR@10"]).warnings)


@pytest.mark.parametrize("seed", range(10))
def test_no_warning_on_a_weak_model_whose_positive_is_column_zero(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    scores = rng.normal(size=(100, 101)).astype(np.float32)
    scores[:, 0] += 0.8  # a weak model: the positive's mean rank about 0.29 of the list
    np.save(tmp_path / "weak.npy", scores)
    assert not _hint(evaluate_path(tmp_path / "weak.npy", metrics=["HR@10"]).warnings)


def test_rank_evidence_against_a_permutation_oracle():
    """Column 0 of random rows: its mean normalised rank is the brute-force one, and z
    stays below the threshold (the hint fires) but for a rare draw; a column 0 that is each
    row's top: z is far above it."""
    rng = np.random.default_rng(5)
    missed = 0
    for _ in range(300):
        rows = list(rng.integers(0, 5, size=(60, 12)).astype(np.float64))  # with ties
        mean, z, used = rank_evidence(rows)
        # the mean normalised rank by brute force: column 0's place in every tie order
        brute = np.mean([np.mean([(np.sum(r > r[0]) + k) / (len(r) - 1)
                                  for k in range(np.sum(r == r[0]))]) for r in rows])
        assert mean == pytest.approx(brute, abs=1e-12) and used == 60
        missed += z >= HINT_Z
    assert missed <= 3  # P(z >= 3) is 0.13% for a random column; ties only lower it
    top = [np.r_[10.0, rng.random(30)] for _ in range(30)]
    assert rank_evidence(top)[1] > 3 * HINT_Z  # 0.5 / sqrt((31 / 29) / 12 / 30) = 9.2


@pytest.mark.parametrize("seed", range(4))
def test_evidence_from_counts_is_the_evidence_from_rows(seed):
    # the kernel's own counts give the hint's evidence without a second pass: the same
    # values, bit for bit, NaN rows left out, -inf counted, rows past HINT_ROWS ignored
    from tieeval.kernels.counts import dense_counts
    from tieeval.kernels.hints import add_count_evidence, add_evidence, new_evidence
    rng = np.random.default_rng(seed)
    scores = (rng.integers(0, 9, size=(2500, 13)) / 3).astype(np.float32)
    scores[rng.random(2500) < 0.05, 0] = -np.inf
    scores[rng.random(2500) < 0.05, 4] = np.nan
    for start, lo, hi in ((0, 0, 700), (700, 700, 2500), (1900, 1900, 2500)):
        x = scores[lo:hi]
        c = dense_counts(x, np.zeros(len(x), dtype=np.int64), "worst")
        got, want = new_evidence(), new_evidence()
        add_count_evidence(got, x, c.a, c.b, start, nan_rows=True)
        add_evidence(want, x, None, start)
        assert got == want
