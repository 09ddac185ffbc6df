"""Batches evaluated on several threads give the result of one pass, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tieeval
from tieeval.errors import InputError
from tieeval.kernels import threads as sort_threads
from tieeval.kernels.threads import map_batches


@pytest.fixture
def threads_of():
    def run(count, fn):
        sort_threads.set_threads(count)
        try:
            return fn()
        finally:
            sort_threads.set_threads(None)
    return run


def _dump(tmp_path, nan_row=None):
    rng = np.random.default_rng(11)
    scores = (rng.integers(0, 4, size=(900, 40)) / 3).astype(np.float32)
    labels = np.where(rng.random(scores.shape) < 0.1, rng.integers(1, 4, scores.shape), 0)
    labels[rng.random(scores.shape) < 0.03] = -1
    items = rng.integers(0, 35, size=scores.shape)  # duplicate item ids in most rows
    if nan_row is not None:
        scores[nan_row, 5] = np.nan
    path = tmp_path / "lab.npz"
    np.savez(path, scores=scores, labels=labels.astype(np.int8), items=items)
    return str(path)


@pytest.mark.parametrize("metrics", [None, ["NDCG@5", "MAP", "SNDCG@3", "V-AUC", "ERR@5",
                                            "Bpref", "IPrec@0.5"]])
def test_labelled_batches_on_threads_equal_one_pass(tmp_path, threads_of, metrics):
    path = _dump(tmp_path)

    def run():
        return tieeval.evaluate_path(path, metrics=metrics, jobs=1, batch_rows=37).to_dict()
    one = threads_of(1, run)
    assert threads_of(2, run) == one
    assert threads_of(3, run) == one
    # and the whole dump in one batch
    whole = threads_of(1, lambda: tieeval.evaluate_path(path, metrics=metrics, jobs=1,
                                                         batch_rows=10_000).to_dict())
    assert whole == one


def test_an_error_names_its_row_as_in_one_pass(tmp_path, threads_of):
    path = _dump(tmp_path, nan_row=500)

    def message():
        with pytest.raises(InputError) as err:
            tieeval.evaluate_path(path, jobs=1, batch_rows=37)
        return str(err.value)
    got = threads_of(2, message)
    assert got == threads_of(1, message)
    assert "500" in got


def test_map_batches_keeps_order_and_stops_cleanly(threads_of):
    def square(x):
        assert sort_threads.threads() == 1  # a batch's own sorts stay in its thread
        return x * x
    assert threads_of(2, lambda: list(map_batches(square, iter(range(50))))) == [
        x * x for x in range(50)]
    assert threads_of(2, lambda: list(map_batches(square, iter([])))) == []

    def alone(x):
        assert sort_threads.threads() == 2  # a single batch keeps every thread for its sorts
        return -x
    assert threads_of(2, lambda: list(map_batches(alone, iter([3])))) == [-3]

    def boom(x):
        if x == 7:
            raise ValueError("seven")
        return x
    seen: list = []

    def consume():
        with pytest.raises(ValueError, match="seven"):
            for x in map_batches(boom, iter(range(20))):
                seen.append(x)
    threads_of(2, consume)
    assert seen == list(range(7))


@pytest.mark.parametrize("options", [{}, {"original": "stable"}, {"tolerance": 0.2},
                                     {"nan_policy": "worst"}])
def test_single_positive_batches_on_threads_equal_one_pass(tmp_path, threads_of, options):
    rng = np.random.default_rng(12)
    scores = (rng.integers(0, 5, size=(700, 30)) / 4).astype(np.float32)
    scores[rng.random(scores.shape) < 0.01] = np.nan if "nan_policy" in options else 0.5
    items = rng.integers(0, 28, size=scores.shape)
    path = tmp_path / "one.npz"
    np.savez(path, scores=scores, positive=rng.integers(0, 30, size=700), items=items)

    def run(batch_rows):
        return tieeval.evaluate_path(str(path), jobs=1, batch_rows=batch_rows,
                                     **options).to_dict()
    one = threads_of(1, lambda: run(700))
    assert threads_of(2, lambda: run(29)) == one
    assert threads_of(1, lambda: run(29)) == one
