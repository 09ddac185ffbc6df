"""Reading ahead changes when a batch is read, never what the consumer sees."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tieeval
from tieeval.engine.readahead import MIN_AHEAD_BYTES, read_ahead
from tieeval.errors import InputError
from tieeval.kernels import threads as sort_threads


class Item:
    def __init__(self, i: int, nbytes: int):
        self.i, self.nbytes = i, nbytes


def source(count: int, nbytes: int, log: list, fail_at: int | None = None):
    try:
        for i in range(count):
            if i == fail_at:
                raise InputError(f"bad batch {i}")
            log.append((i, threading.current_thread().name))
            yield Item(i, nbytes)
    finally:
        log.append(("closed", threading.current_thread().name))


@pytest.fixture
def two_threads():
    sort_threads.set_threads(2)
    yield
    sort_threads.set_threads(None)


def test_same_items_in_order_read_in_the_background(two_threads):
    log: list = []
    got = [item.i for item in read_ahead(source(7, MIN_AHEAD_BYTES, log))]
    assert got == list(range(7))
    readers = {name for i, name in log if i != "closed"}
    assert any(name.startswith("tieeval-read") for name in readers)
    assert [i for i, _ in log].count("closed") == 1


def test_small_batches_and_one_core_read_in_the_caller(two_threads):
    log: list = []
    assert [x.i for x in read_ahead(source(5, MIN_AHEAD_BYTES - 1, log))] == list(range(5))
    assert {name for _, name in log} == {threading.current_thread().name}
    sort_threads.set_threads(1)
    log.clear()
    assert [x.i for x in read_ahead(source(5, MIN_AHEAD_BYTES, log))] == list(range(5))
    assert {name for _, name in log} == {threading.current_thread().name}
    assert list(read_ahead(source(0, MIN_AHEAD_BYTES, []))) == []


def test_an_error_is_raised_where_its_batch_would_be_read(two_threads):
    log: list = []
    seen = []
    with pytest.raises(InputError, match="bad batch 3"):
        for item in read_ahead(source(6, MIN_AHEAD_BYTES, log, fail_at=3)):
            seen.append(item.i)
    assert seen == [0, 1, 2]


def test_a_consumer_that_stops_early_closes_the_source(two_threads):
    log: list = []
    it = read_ahead(source(100, MIN_AHEAD_BYTES, log))
    assert next(it).i == 0 and next(it).i == 1
    it.close()
    assert log[-1] == ("closed", threading.current_thread().name)
    assert max(i for i, _ in log if i != "closed") <= 2  # at most one batch read ahead


def test_results_identical_with_and_without_reading_ahead(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    scores = (rng.integers(0, 6, size=(3000, 700)) / 5).astype(np.float32)
    path = tmp_path / "s.npy"
    np.save(path, scores)  # 8.4 MB: batches of 4 MB and more read ahead
    sort_threads.set_threads(2)
    try:
        ahead = tieeval.evaluate_path(str(path), jobs=1, batch_rows=1500).to_dict()
        monkeypatch.setattr("tieeval.engine.readahead.MIN_AHEAD_BYTES", 1 << 62)
        inline = tieeval.evaluate_path(str(path), jobs=1, batch_rows=1500).to_dict()
    finally:
        sort_threads.set_threads(None)
    assert ahead == inline
