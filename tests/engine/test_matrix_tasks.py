"""A matrix dump (NPY, stored NPZ) read as tasks, each thread reading and counting its
own batches: the result of one thread reading in order, bit for bit, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import tiered

import tieeval
from tieeval.errors import InputError
from tieeval.io.open import open_dump
from tieeval.kernels import threads as sort_threads
from tieeval.kernels.threads import map_tasks


def _on(count, fn):
    sort_threads.set_threads(count)
    try:
        return fn()
    finally:
        sort_threads.set_threads(None)


@pytest.mark.parametrize("suffix", ["npy", "npz"])
# batches of one row: 150 rows are already 150 tasks, more than any thread count's round
@pytest.mark.parametrize("batch_rows,rows", [(None, 1500), (1, 150), (29, 1500), (5000, 1500)])
def test_tasks_give_the_one_thread_result(tmp_path, suffix, batch_rows, rows):
    rng = np.random.default_rng(3)
    scores = (rng.integers(0, 6, size=(rows, 23)) / 5).astype(np.float32)  # many ties
    path = str(tmp_path / f"d.{suffix}")
    if suffix == "npy":
        np.save(path, scores)
    else:
        np.savez(path, scores=scores, positive=rng.integers(0, 23, rows))

    def run():
        return tieeval.evaluate_path(path, batch_rows=batch_rows, k=[1, 5, 10]).to_dict()
    one = _on(1, run)
    assert _on(2, run) == one
    assert _on(3, run) == one


# batches of one row: 150 rows are already 150 tasks (and two of batch_tasks(100, 2)); that
# case, a second of CPU, in the slow tier
@pytest.mark.parametrize("batch_rows,rows", tiered([(None, 1200), (37, 1200), (5000, 1200),
                                                   (1, 150)], quick=3))
def test_stored_labelled_npz_tasks_give_the_one_thread_result(tmp_path, batch_rows, rows):
    # graded labels and heavy ties: every thread reads its own rows of both members
    rng = np.random.default_rng(5)
    scores = (rng.integers(0, 6, size=(rows, 19)) / 5).astype(np.float32)
    labels = rng.choice([-1, 0, 0, 0, 1, 2, 3], size=scores.shape).astype(np.int8)
    path = str(tmp_path / "d.npz")
    np.savez(path, scores=scores, labels=labels)
    dump = open_dump(path)
    tasks = dump.batch_tasks(100, 2)
    assert tasks is not None
    batches = [task() for task in tasks]
    dump.finish()  # both members' CRC-32 joined from the tasks' pieces
    dump.end_pass()
    assert np.array_equal(np.concatenate([b.labels for b in batches]).reshape(labels.shape),
                          labels)
    metrics = ["NDCG@5", "HR@3", "MRR", "MAP@10"]

    def run():
        return tieeval.evaluate_path(path, metrics, batch_rows=batch_rows).to_dict()
    one = _on(1, run)
    assert _on(2, run) == one
    assert _on(3, run) == one
    # the in-memory evaluation of the same arrays: one batch, no reader
    inline = tieeval.evaluate(scores, labels=labels, metrics=metrics).to_dict()
    assert one["metrics"] == inline["metrics"] and one["ties"] == inline["ties"]


def test_a_compressed_labelled_npz_has_no_tasks(tmp_path):
    path = str(tmp_path / "d.npz")
    np.savez_compressed(path, scores=np.zeros((10, 3), np.float32),
                        labels=np.ones((10, 3), np.int8))
    assert open_dump(path).batch_tasks(4, 2) is None


def test_an_error_names_the_first_bad_row(tmp_path):
    rng = np.random.default_rng(4)
    scores = rng.random((3000, 7)).astype(np.float32)
    scores[2100, 3] = np.nan
    scores[700, 1] = np.nan  # the first NaN in dump order is reported, whatever finishes first
    path = str(tmp_path / "d.npy")
    np.save(path, scores)

    def message():
        with pytest.raises(InputError) as err:
            tieeval.evaluate_path(path, batch_rows=50)
        return str(err.value)
    assert _on(3, message) == _on(1, message)
    assert "row 700" in _on(3, message)


@pytest.mark.parametrize("rows, size, threads", [(1000, 300, 2), (1000, 1000, 2),
                                                 (1001, 100, 3), (7, 1, 2), (10, 3, 1)])
def test_batch_tasks_cover_every_row_once_in_even_rounds(tmp_path, rows, size, threads):
    path = str(tmp_path / "d.npy")
    np.save(path, np.zeros((rows, 3), dtype=np.float32))
    dump = open_dump(path)
    tasks = dump.batch_tasks(size, threads)
    batches = [task() for task in tasks]
    dump.finish()
    dump.end_pass()
    starts = [b.start for b in batches]
    assert starts == sorted(starts)
    assert sum(b.rows for b in batches) == rows
    assert all(b.start + b.rows == nxt for b, nxt in zip(batches, starts[1:] + [rows]))
    assert max(b.rows for b in batches) <= size
    if threads > 1 and rows > size:
        assert len(batches) % threads == 0 or len(batches) == rows
        assert max(b.rows for b in batches) - min(b.rows for b in batches) <= 1


def test_a_long_layout_or_parquet_dump_has_no_tasks(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"scores": [[0.1, 0.2], [0.3, 0.1]]}), path)
    assert open_dump(path).batch_tasks(10, 2) is None


def test_map_tasks_keeps_order_runs_inline_and_raises_in_order():
    def square(x):
        assert sort_threads.threads() == 1  # a task's own sorts stay in its thread
        return x * x
    assert _on(2, lambda: list(map_tasks(square, list(range(40))))) == [
        x * x for x in range(40)]
    assert _on(2, lambda: list(map_tasks(square, []))) == []

    def alone(x):
        assert sort_threads.threads() == 2  # a single task keeps every thread
        return -x
    assert _on(2, lambda: list(map_tasks(alone, [3]))) == [-3]

    def boom(x):
        if x in (5, 30):
            raise ValueError(f"bad {x}")
        return x
    got = []

    def collect():
        for value in map_tasks(boom, list(range(40))):
            got.append(value)
    with pytest.raises(ValueError, match="bad 5"):
        _on(3, collect)
    assert got == [0, 1, 2, 3, 4]
