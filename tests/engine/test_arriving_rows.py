"""A matrix dump's batches read block by block as the single-positive kernel counts them
(:class:`tieeval.io.npy.LazyBatch`, :meth:`Batch.blocks`): every row read once, in order,
before the tied rows are sorted; the result of reading each batch at once, bit for bit; a
stored NPZ's CRC-32 fed with the blocks (no second read of the member), and damage, a NaN
or a file cut short in the middle of a batch reported as before."""

from __future__ import annotations

import json
import os
import time
import zipfile

import numpy as np
import pytest
from tiers import SLOW

import tieeval
from tieeval.engine.local import kernel_for
from tieeval.errors import InputError
from tieeval.io import buffers, npy
from tieeval.io.open import open_dump
from tieeval.kernels import counts
from tieeval.kernels import threads as sort_threads
from tieeval.kernels.single import SinglePositiveKernel
from tieeval.records.batch import Batch


@pytest.fixture()
def small_blocks(monkeypatch):
    """Blocks of 5 rows of 23 scores: a batch of a few hundred rows is read in dozens."""
    monkeypatch.setattr(counts, "BLOCK_SCORES", 128)


@pytest.fixture()
def two_threads():
    sort_threads.set_threads(2)  # the pass as tasks (one thread: batches read at once)
    yield
    sort_threads.set_threads(None)


def _dump(tmp_path, suffix, rows=1500, cols=23, seed=3):
    rng = np.random.default_rng(seed)
    scores = (rng.integers(0, 6, size=(rows, cols)) / 5).astype(np.float32)  # many ties
    positive = rng.integers(0, cols, rows)
    path = str(tmp_path / f"d.{suffix}")
    if suffix == "npy":
        np.save(path, scores)
    else:
        np.savez(path, scores=scores, positive=positive)
    return path, scores


def _damaged(path, where):
    """A copy of the stored NPZ ``path`` (beside it, ``bad.npz``) with one low mantissa
    bit of a score flipped, ``where`` (0-1) into its scores member: still a valid float,
    caught only by the member's CRC-32."""
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("scores.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + 128 + int((info.file_size - 128) * where) // 4 * 4] ^= 0x01
    bad = os.path.join(os.path.dirname(path), "bad.npz")
    open(bad, "wb").write(bytes(data))
    return bad


def _bad_crc(bad):
    return (f"{bad}: corrupted file (member scores.npy: bad CRC-32, its bytes are not the "
            "ones written)")


class Spy:
    """The reads of a matrix's scores recorded: ``(first row, end row)`` per read, and in
    ``into`` the reads into a work array instead of the batch; ``readers``, every reader
    opened."""

    def __init__(self, monkeypatch):
        self.calls: list = []
        self.into: list = []
        self.readers: list = []
        read, init = npy.RowReader.read, npy.RowReader.__init__

        def spy_read(reader, out, row):
            if len(reader.spec.shape) == 2:  # the scores, not the positive column
                self.calls.append((row, row + len(out)))
                work = getattr(buffers._WORK, out.dtype.char, None)
                if work is not None and out.base is work:
                    self.into.append((row, row + len(out)))
            return read(reader, out, row)

        def spy_init(reader, spec):
            self.readers.append(reader)
            init(reader, spec)
        monkeypatch.setattr(npy.RowReader, "read", spy_read)
        monkeypatch.setattr(npy.RowReader, "__init__", spy_init)


def _at_once(patch):
    """Every task's batch read whole, as the reader reads it."""
    patch.setattr(npy.MatrixPart, "lazy_rows",
                  lambda part, lo, hi, together=False: part.read_rows(lo, hi))


# every run: each batch size on NPY and NPZ, but one-row batches (300 tasks) on NPY only;
# the slow tier those on NPZ too
@pytest.mark.parametrize("batch_rows, suffix", [
    (b, s) if (b, s) != (1, "npz") else pytest.param(b, s, marks=SLOW)
    for b in (None, 1, 37, 400) for s in ("npy", "npz")])
def test_blocks_read_as_counted_give_the_at_once_result(tmp_path, monkeypatch, small_blocks, suffix,
                                               batch_rows):
    """The tasks' batches read block by block, on one thread and on two, against each
    batch read at once by the reader: the same result, bit for bit, and every row read
    exactly once (batches of one row: 300 rows, each batch one block, as 1,500 would be)."""
    path, scores = _dump(tmp_path, suffix, rows=300 if batch_rows == 1 else 1500)

    def run(count):
        sort_threads.set_threads(count)
        try:
            return tieeval.evaluate_path(path, batch_rows=batch_rows, k=[1, 5, 10]).to_dict()
        finally:
            sort_threads.set_threads(None)
    with monkeypatch.context() as patch:
        _at_once(patch)
        at_once = run(1)
        assert run(2) == at_once
    spy = Spy(monkeypatch)
    assert run(1) == at_once
    one_thread = list(spy.calls)
    spy.calls.clear()
    assert run(2) == at_once
    assert sorted(one_thread) == sorted(spy.calls)  # one thread reads the same blocks
    rows = sorted(spy.calls)
    assert rows[0][0] == 0 and rows[-1][1] == len(scores)
    assert all(hi == nxt for (_, hi), (nxt, _) in zip(rows, rows[1:]))  # once each, no gap
    if batch_rows in (37, 400):
        # blocks of rows, not batches: more reads than tasks (a batch of 1 row is 1 block,
        # and a small dump's automatic batch is its first, read at once)
        assert len(spy.calls) > -(-len(scores) // batch_rows)


def test_blocks_are_read_in_order_within_a_batch_and_the_first_batch_at_once(
        tmp_path, monkeypatch, small_blocks, two_threads):
    """Within a batch the blocks come in row order; the first batch of a dump whose
    positive defaulted to column 0 is read whole first (its rows are checked before
    they are counted)."""
    rng = np.random.default_rng(8)
    scores = rng.random((600, 23)).astype(np.float32)
    scores[:, 0] += 0.5  # a real positive in column 0: no warning
    path = str(tmp_path / "d.npy")
    np.save(path, scores)
    spy = Spy(monkeypatch)
    tieeval.evaluate_path(path, batch_rows=150)
    by_batch: dict = {}
    for lo, hi in spy.calls:
        first = lo // 150 * 150
        by_batch.setdefault(first, []).append((lo - first, hi - first))
    assert sorted(by_batch) == [0, 150, 300, 450]
    assert by_batch[0] == [(0, 150)]  # defaulted positive: the first batch at once
    for first in (150, 300, 450):
        pieces = by_batch[first]
        assert len(pieces) > 1 and pieces[0][0] == 0 and pieces[-1][1] == 150
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))


def test_a_what_if_reads_each_batch_at_once(tmp_path, monkeypatch, small_blocks,
                                            two_threads):
    """A what-if casts the scores before counting: each batch is read whole."""
    path, _ = _dump(tmp_path, "npz")
    spy = Spy(monkeypatch)
    cast = tieeval.evaluate_path(path, batch_rows=300, cast="float16")
    assert sorted(spy.calls) == [(lo, lo + 300) for lo in range(0, 1500, 300)]
    assert cast.to_dict()["metrics"]


def test_the_stored_member_is_not_read_twice(tmp_path, monkeypatch, small_blocks,
                                             two_threads):
    """The CRC-32 chained over the blocks as they are read covers the member: it is not
    streamed again at the end of the pass."""
    path, _ = _dump(tmp_path, "npz", rows=2000)
    streamed: list = []
    real = npy._stream_crc
    monkeypatch.setattr(npy, "_stream_crc",
                        lambda p, name, *a: streamed.append(name) or real(p, name, *a))
    tieeval.evaluate_path(path, batch_rows=250)
    assert "scores.npy" not in streamed


@pytest.mark.parametrize("where", [0.31, 0.5, 0.97])  # bytes into the member
def test_damage_inside_a_batch_is_refused(tmp_path, small_blocks, two_threads, where):
    path, scores = _dump(tmp_path, "npz", rows=2000, seed=9)
    bad = _damaged(path, where)  # a score in the middle of some batch
    with pytest.raises(InputError) as err:
        tieeval.evaluate_path(bad, batch_rows=400)
    assert str(err.value) == _bad_crc(bad)


def test_rows_read_before_the_pass_join_the_chain(tmp_path, small_blocks):
    """Rows read before the pass (a sample) already extend the member's CRC-32; the
    blocks that cover them again hand their bytes over, and the member's chain is
    complete: checked without streaming it."""
    path, _ = _dump(tmp_path, "npz", rows=900)
    dump = open_dump(path)
    part = dump.parts[0]
    next(iter(part.batches(70)))  # a sample of the first 70 rows, as sort_seconds reads
    crc = part.scores.crc
    assert crc.next > crc.start
    kernel = kernel_for(dump, None)
    for task in dump.batch_tasks(300):
        kernel.add(kernel.new(), task())
    assert crc.next == crc.end
    dump.finish()  # no error: the chain's CRC-32 is the member's
    dump.end_pass()


def test_a_nan_in_a_later_block_names_its_row(tmp_path, small_blocks, two_threads):
    rng = np.random.default_rng(4)
    scores = rng.random((3000, 23)).astype(np.float32)
    scores[1733, 3] = np.nan
    path = str(tmp_path / "d.npy")
    np.save(path, scores)
    with pytest.raises(InputError) as err:
        tieeval.evaluate_path(path, batch_rows=500)
    assert str(err.value) == (f"{path}: row 1733: NaN score (pass --nan-policy worst to "
                              "rank NaN below every score)")


@pytest.mark.parametrize("rows, cut", [(2000, 1700), (3000, 2700)])
def test_a_file_cut_short_during_the_pass(tmp_path, monkeypatch, small_blocks, two_threads,
                                          rows, cut):
    """The file shrinks after the batches were planned: the block that is no longer
    there gives the one-line error, and its file is closed -- read into its batch (the
    hints' first 2,048 rows) or into the work array (past them)."""
    path, _ = _dump(tmp_path, "npy", rows=rows)
    dump = open_dump(path)
    tasks = dump.batch_tasks(500)
    with open(path, "r+b") as fh:
        fh.truncate(128 + 23 * 4 * cut)
    kernel = kernel_for(dump, None)
    spy = Spy(monkeypatch)
    with pytest.raises(InputError) as err:
        for task in tasks:
            kernel.add(kernel.new(), task())
    assert str(err.value) == (f"{path}: the file changed while it was read (it ends "
                              "before the array does)")
    assert spy.readers and all(reader.fh.closed for reader in spy.readers)
    assert bool(spy.into) == (cut > 2048)
    dump.end_pass()


def _evict(path):
    """The file's pages out of the page cache (written back first), where the system
    can: False where it cannot (no posix_fadvise)."""
    import os
    if not hasattr(os, "posix_fadvise"):
        return False
    os.sync()  # written back: clean pages can be dropped
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def test_the_page_cache_probe(tmp_path):
    """RowReader.cached: False for a byte of a file just dropped from the page cache
    (where the system says), True once it was read; True where it cannot be asked."""
    import os
    path, _ = _dump(tmp_path, "npy", rows=4000, cols=300)
    reader = open_dump(path).parts[0].scores.reader()
    try:
        middle = os.path.getsize(path) // 2
        if not hasattr(os, "RWF_NOWAIT") or not _evict(path):
            assert reader.cached(middle)  # cannot be asked: as if cached, nothing changes
            return
        for _ in range(5):  # pages just written may still be on their way to the disk
            if not reader.cached(middle):
                break
            time.sleep(0.2)
            _evict(path)
        else:
            pytest.skip("this file system keeps the file's pages (or reads without waiting)")
        reader.fh.seek(middle)
        reader.fh.read(1)
        assert reader.cached(middle)
    finally:
        reader.close()


@pytest.mark.parametrize("suffix", ["npy", "npz"])
def test_a_batch_not_in_the_page_cache_is_read_at_once_by_threads_together(
        tmp_path, monkeypatch, small_blocks, suffix):
    """Several threads at once: a batch whose rows are not in the page cache (the probe
    says so) is read whole, one request, and counted as it is; the result is the same,
    bit for bit, and a stored member's CRC-32 still covers every row (no second stream
    of it). One thread, or rows in the cache: block by block."""
    path, _ = _dump(tmp_path, suffix, rows=2000)
    want = tieeval.evaluate_path(path, batch_rows=250).to_dict()
    monkeypatch.setattr(npy.RowReader, "cached", lambda reader, pos: False)
    streamed: list = []
    real = npy._stream_crc
    monkeypatch.setattr(npy, "_stream_crc",
                        lambda p, name, *a: streamed.append(name) or real(p, name, *a))
    spy = Spy(monkeypatch)
    sort_threads.set_threads(2)
    try:
        assert tieeval.evaluate_path(path, batch_rows=250).to_dict() == want
        assert sorted(spy.calls) == [(lo, lo + 250) for lo in range(0, 2000, 250)]  # whole
        assert "scores.npy" not in streamed
        dump = open_dump(path)
        batch = dump.batch_tasks(250, 1, together=True)[1]()
        assert batch.lazy and batch.start == 250 and batch.rows == 250
        spy.calls.clear()
        blocks = list(batch.blocks(128))
        assert spy.calls == [(250, 500)] and len(blocks) == 50 and not batch.lazy
        dump.end_pass()
    finally:
        sort_threads.set_threads(None)
    sort_threads.set_threads(1)  # one thread: block by block, even from disk
    try:
        spy.calls.clear()
        assert tieeval.evaluate_path(path, batch_rows=250).to_dict() == want
        assert len(spy.calls) > 8
    finally:
        sort_threads.set_threads(None)


def test_damage_in_a_batch_read_at_once_from_disk_is_refused(tmp_path, monkeypatch,
                                                              small_blocks, two_threads):
    path, _ = _dump(tmp_path, "npz", rows=2000, seed=9)
    bad = _damaged(path, 0.6)
    monkeypatch.setattr(npy.RowReader, "cached", lambda reader, pos: False)
    with pytest.raises(InputError) as err:
        tieeval.evaluate_path(bad, batch_rows=400)
    assert str(err.value) == _bad_crc(bad)


@pytest.mark.parametrize("suffix", ["npy", "npz"])
def test_a_worker_reads_its_part_block_by_block(tmp_path, monkeypatch, small_blocks,
                                                suffix):
    """A worker process's part (``--jobs``): its batches are read block by block as they
    are counted, as on the threads of one process; the accumulator is the one of reading
    each batch at once, bit for bit, and every row of the part was read once."""
    from tieeval.engine import parallel
    from tieeval.io import base
    monkeypatch.setattr(base, "PART_BYTES", 23 * 4 * 700)
    monkeypatch.setattr(npy, "PART_BYTES", 23 * 4 * 700)
    path, _ = _dump(tmp_path, suffix, rows=2000)
    dump = open_dump(path)
    assert len(dump.parts) == 3
    kernel = kernel_for(dump, None)
    with monkeypatch.context() as patch:
        _at_once(patch)
        at_once = [parallel._run_part(part, kernel, 150) for part in dump.parts]
    spy = Spy(monkeypatch)
    by_blocks = [parallel._run_part(part, kernel, 150) for part in dump.parts]
    sort_threads.set_threads(None)  # _run_part set one thread, as in a worker
    for (acc, rows, nbytes), (want, want_rows, want_nbytes) in zip(by_blocks, at_once):
        assert json.dumps(acc.to_state(), sort_keys=True) == json.dumps(
            want.to_state(), sort_keys=True)
        assert (rows, nbytes) == (want_rows, want_nbytes)
    rows = sorted(spy.calls)
    assert rows[0][0] == 0 and rows[-1][1] == 2000
    assert all(hi == nxt for (_, hi), (nxt, _) in zip(rows, rows[1:]))  # once each
    batches = [(lo, min(lo + 150, part.hi)) for part in dump.parts
               for lo in range(part.lo, part.hi, 150)]
    assert len(spy.calls) > len(batches)  # blocks, not batches
    # the other workers read at the same time: a batch not in the page cache at once
    spy.calls.clear()
    monkeypatch.setattr(npy.RowReader, "cached", lambda reader, pos: False)
    from_disk = [parallel._run_part(part, kernel, 150) for part in dump.parts]
    sort_threads.set_threads(None)
    assert spy.calls == batches
    for (acc, _, _), (want, _, _) in zip(from_disk, at_once):
        assert json.dumps(acc.to_state(), sort_keys=True) == json.dumps(
            want.to_state(), sort_keys=True)
    dump.end_pass()


def _mixed(rows=400, cols=23, seed=5):
    """Scores whose rows come in runs: tie-free runs (distinct values) and runs where
    the positive (column 0) ties with others, so that a batch has blocks of both."""
    rng = np.random.default_rng(seed)
    scores = rng.permuted(np.tile(np.arange(cols, dtype=np.float32), (rows, 1)), axis=1)
    for lo in range(60, rows, 150):  # 50 rows of ties every 150 rows
        scores[lo:lo + 50] = rng.integers(0, 3, size=(min(50, rows - lo), cols))
    return scores


def _lazy(tmp_path, scores, positive=None):
    """The whole of ``scores`` (saved as NPY, or as a stored NPZ with ``positive``) as one
    batch still to be read, every row of its array -7 until read into it."""
    path = str(tmp_path / ("d.npy" if positive is None else "d.npz"))
    if positive is None:
        np.save(path, scores)
    else:
        np.savez(path, scores=scores, positive=positive)
    part = open_dump(path).parts[0]
    batch = part.lazy_rows(0, part.rows)
    assert batch.lazy
    return batch


def test_blocks_read_into_a_work_array_keep_only_the_tied_rows(tmp_path, monkeypatch,
                                                                small_blocks):
    """``block_counts(keep=False)``: each block read into a reused work array, only the
    rows whose positive is tied put into the batch (they are sorted); where most of a
    block's rows were tied the next block is read into the batch itself. The counts and
    the original ranks are the ones of the whole matrix, bit for bit."""
    scores = _mixed()
    positive = np.zeros(len(scores), dtype=np.int64)
    want = counts.dense_counts(scores, positive)
    monkeypatch.setattr(npy.buffers, "empty", lambda shape, dtype: np.full(shape, -7, dtype))
    spy = Spy(monkeypatch)
    batch = _lazy(tmp_path, scores)
    got = counts.block_counts(batch, keep=False)
    for field in ("a", "b", "n", "top", "original"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert spy.calls == [(lo, min(lo + 5, len(scores)))
                         for lo in range(0, len(scores), 5)]  # 128 // 23
    tied = want.b > 1
    assert np.array_equal(batch.scores[tied], scores[tied])  # every tied row is there
    direct = np.ones(len(scores), dtype=bool)
    for lo, hi in spy.into:
        direct[lo:hi] = False
    assert (batch.scores[~tied & ~direct] == -7.0).all()  # untied rows read elsewhere
    assert np.array_equal(batch.scores[direct], scores[direct])
    assert not direct[0]  # the first block into the work array
    # after a block of mostly tied rows, the next one straight into the batch
    for (lo, hi), (nxt, _) in zip(spy.calls, spy.calls[1:]):
        assert direct[nxt] == (2 * int(tied[lo:hi].sum()) > hi - lo)
    assert direct.any() and (~direct).any()
    spy.into.clear()
    kept = _lazy(tmp_path, scores)
    assert np.array_equal(counts.block_counts(kept).original, want.original)
    assert np.array_equal(kept.scores, scores)  # keep=True: every row in the batch
    assert not spy.into


@pytest.mark.parametrize("rule", ["argsort", "stable", "reverse-stable"])
@pytest.mark.parametrize("dtype, nan_policy", [("float32", "raise"), ("float64", "worst"),
                                               ("int16", "raise")])
@pytest.mark.parametrize("seed", range(3))
def test_the_work_array_under_every_rule_dtype_and_nan_policy(tmp_path, small_blocks, rule,
                                                              dtype, nan_policy, seed):
    """``keep=False`` against the whole matrix counted at once, for positives anywhere
    in their rows, each Original rule that sorts or counts the tied rows, integer and
    float dumps, and NaN ranked worst: the same counts and ranks, bit for bit."""
    rng = np.random.default_rng(seed)
    rows, cols = 700, 23
    scores = _mixed(rows, cols, seed).astype(dtype)
    if nan_policy == "worst":
        scores[rng.random(scores.shape) < 0.03] = np.nan  # NaN positives tie with NaNs
    positive = rng.integers(0, cols, rows)
    want = counts.dense_counts(scores, positive, nan_policy, rule)
    got = counts.block_counts(_lazy(tmp_path, scores, positive), nan_policy, rule,
                              keep=False)
    for field in ("a", "b", "n", "top", "original"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert (want.b > 1).any() and (want.b == 1).any()


@pytest.mark.parametrize("suffix", ["npy", "npz"])
def test_a_work_array_read_gives_the_at_once_result(tmp_path, monkeypatch, small_blocks,
                                                    two_threads, suffix):
    """Batches whose rows are read into a work array (nothing but the counts looks at
    them): the result of reading each batch at once, bit for bit, with the hints of a
    defaulted positive (the first 2,048 rows keep theirs), and a stored member's CRC-32
    chained over the blocks (not streamed again); damage still refused."""
    scores = _mixed(rows=3000)  # column 0 ranks like any candidate: the hints warn
    path = str(tmp_path / f"d.{suffix}")
    if suffix == "npy":
        np.save(path, scores)
    else:
        np.savez(path, scores=scores, positive=np.zeros(3000, dtype=np.int64))
    with monkeypatch.context() as patch:
        _at_once(patch)
        want = tieeval.evaluate_path(path, batch_rows=250)
        at_once = (want.to_dict(), want.warnings)
    streamed: list = []
    real = npy._stream_crc
    monkeypatch.setattr(npy, "_stream_crc",
                        lambda p, name, *a: streamed.append(name) or real(p, name, *a))
    spy = Spy(monkeypatch)
    got = tieeval.evaluate_path(path, batch_rows=250)
    assert (got.to_dict(), got.warnings) == at_once
    assert spy.into  # some blocks went through the work array
    if suffix == "npy":
        assert "ranks like a random candidate" in " ".join(want.warnings)
        assert min(lo for lo, _ in spy.into) >= 2000  # the hints' rows kept (2,048)
    else:
        assert min(lo for lo, _ in spy.into) == 0
        assert "scores.npy" not in streamed
        bad = _damaged(path, 0.75)
        with pytest.raises(InputError) as err:
            tieeval.evaluate_path(bad, batch_rows=250)
        assert str(err.value) == _bad_crc(bad)


def test_what_looks_at_the_scores_after_the_counts_keeps_them():
    """:meth:`SinglePositiveKernel.scores_wanted`: the batches whose scores something
    looks at after the counts keep every row -- the hints' first 2,048 rows of a
    defaulted positive, the duplicate items check, a ranking the dump carries, a what-if
    -- and no other."""
    from dataclasses import replace

    from tieeval.kernels.base import EvalSpec
    from tieeval.kernels.choose import resolve_metrics
    from tieeval.kernels.hints import HINT_ROWS
    spec = EvalSpec(metrics=tuple(resolve_metrics(None, None)), path="d.npy")
    kernel = SinglePositiveKernel(spec)
    acc = kernel.new()
    batch = Batch(np.zeros((4, 3), np.float32), np.zeros(4, np.int64), start=0)
    assert not kernel.scores_wanted(acc, batch)
    defaulted = replace(batch, positive_defaulted=True)
    assert kernel.scores_wanted(acc, defaulted)
    assert kernel.scores_wanted(acc, replace(defaulted, start=HINT_ROWS - 1))
    assert not kernel.scores_wanted(acc, replace(defaulted, start=HINT_ROWS))
    for rule in ("given", "topk"):
        assert SinglePositiveKernel(replace(spec, original=rule)).scores_wanted(acc, batch)
    for rule in ("argsort", "stable", "reverse-stable"):
        assert not SinglePositiveKernel(replace(spec, original=rule)).scores_wanted(
            acc, batch)
    with_items = replace(batch, items=np.zeros((4, 3), np.int64))
    assert not kernel.scores_wanted(acc, with_items)  # no duplicates check asked
    acc.duplicates = object()
    assert kernel.scores_wanted(acc, with_items)


@pytest.mark.parametrize("row", [1733, 2733])  # a batch that keeps its rows, one that does not
def test_a_nan_read_into_the_work_array_names_its_row(tmp_path, small_blocks, two_threads,
                                                       row):
    """Rows past the hints' first 2,048 go through the work array: a NaN there names its
    dump row as before."""
    rng = np.random.default_rng(4)
    scores = rng.random((3000, 23)).astype(np.float32)
    scores[row, 3] = np.nan
    path = str(tmp_path / "d.npy")  # a defaulted positive: the first 2,048 rows kept
    np.save(path, scores)
    with pytest.raises(InputError) as err:
        tieeval.evaluate_path(path, batch_rows=500)
    assert str(err.value) == (f"{path}: row {row}: NaN score (pass --nan-policy worst to "
                              "rank NaN below every score)")
