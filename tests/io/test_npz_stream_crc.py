"""A stored NPZ member's CRC-32 is computed on the rows as the pass reads them and checked
before any result: damage that still decodes to valid numbers is refused on every path."""

import zipfile
import zlib

import numpy as np
import pytest
from tiers import tiered

from tieeval import evaluate_path
from tieeval.engine.local import evaluate_dump
from tieeval.errors import InputError
from tieeval.io.npy import StreamCrc, _stream_crc
from tieeval.io.open import open_dump


def _damaged(tmp_path, member: str, offset: int, **arrays):
    path = tmp_path / "d.npz"
    np.savez(path, **arrays)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member + ".npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    # the last byte of the member: a low mantissa bit of a score, or a label 1 -> 0
    data[start + info.file_size - 1 - offset] ^= 0x01
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    return str(bad)


@pytest.mark.parametrize("batch_rows", [None, 7])
def test_stored_scores_damage_is_refused(tmp_path, batch_rows):
    rng = np.random.default_rng(1)
    scores = rng.random((3000, 9)).astype(np.float64)  # > zipfile's read-ahead
    bad = _damaged(tmp_path, "scores", 2, scores=scores)
    with pytest.raises(InputError, match=r"member scores.npy: bad CRC-32"):
        evaluate_path(bad, batch_rows=batch_rows)


def test_stored_labels_damage_is_refused(tmp_path):
    rng = np.random.default_rng(2)
    scores = rng.random((20000, 8)).astype(np.float32)
    labels = np.ones((20000, 8), dtype=np.int8)
    bad = _damaged(tmp_path, "labels", 0, scores=scores, labels=labels)
    with pytest.raises(InputError, match=r"member labels.npy: bad CRC-32"):
        evaluate_path(bad, metrics=["NDCG@3"])


def test_stored_damage_is_refused_by_workers(tmp_path):
    rng = np.random.default_rng(3)
    scores = rng.random((3000, 6)).astype(np.float64)
    bad = _damaged(tmp_path, "scores", 0, scores=scores)
    dump = open_dump(bad)
    assert dump.parts  # worker processes read copies of the parts: nothing is fed here
    with pytest.raises(InputError, match="bad CRC-32"):
        dump.finish()  # nothing read yet: the whole member is streamed


def test_stream_crc_in_order_gap_and_reread(tmp_path):
    path = tmp_path / "bytes"
    data = bytes(range(256)) * 40
    path.write_bytes(data)
    want = zlib.crc32(data)
    crc = StreamCrc(str(path), "m", 0, len(data), want)
    crc.feed(0, data[:100])
    crc.feed(0, data[:50])  # a sample read again: already counted
    crc.feed(50, data[50:300])  # overlapping: only the new bytes count
    crc.feed(300, data[300:])
    assert crc.crc == want and crc.next == len(data)
    crc.check()
    gap = StreamCrc(str(path), "m", 0, len(data), want)
    gap.feed(0, data[:10])
    gap.feed(20, data[20:])  # a gap: the piece waits, and the member is streamed at
    assert gap.next == 10 and 20 in gap.waiting  # the check
    gap.check()
    bad = StreamCrc(str(path), "m", 0, len(data), want ^ 1)
    with pytest.raises(InputError, match="member m: bad CRC-32"):
        bad.check()
    assert _stream_crc(str(path), "m", 0, len(data)) == want


def test_stream_crc_joins_pieces_read_out_of_order(tmp_path):
    # threads that read their own rows feed the CRC in any order: the chain joins the
    # pieces waiting ahead of it, and gives zlib's CRC-32 of the whole member
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    path = tmp_path / "bytes"
    path.write_bytes(data)
    want = zlib.crc32(data)
    cuts = [0, 1, 7, 4096, 4097, 20_000, 33_333, 50_000]
    pieces = list(zip(cuts[:-1], cuts[1:]))
    for trial in range(20):
        order = rng.permutation(len(pieces))
        crc = StreamCrc(str(path), "m", 0, len(data), want)
        for i in order:
            lo, hi = pieces[i]
            own = zlib.crc32(data[lo:hi]) if trial % 2 else None  # as a reader gives it
            crc.feed(lo, memoryview(data)[lo:hi], own)
        assert crc.next == len(data) and not crc.waiting and crc.crc == want
        crc.check()


def test_stream_crc_overlapping_pieces_fall_back_to_streaming(tmp_path):
    data = bytes(range(256)) * 40
    path = tmp_path / "bytes"
    path.write_bytes(data)
    crc = StreamCrc(str(path), "m", 0, len(data), zlib.crc32(data))
    crc.feed(500, data[500:900])  # waits
    crc.feed(600, data[600:1000])  # overlaps the waiting piece
    crc.feed(0, data[:500])  # the chain reaches them: no chain from overlapping pieces
    assert crc.next == -1
    crc.check()  # streamed: still the right answer


def test_crc32_combine_and_fast_crc_agree_with_zlib():
    from tieeval.io.crc32 import combine, crc32
    rng = np.random.default_rng(6)
    for n1, n2 in [(0, 0), (0, 5), (5, 0), (1, 1), (1000, 123_457), (3, 1 << 20)]:
        a = rng.integers(0, 256, n1, dtype=np.uint8).tobytes()
        b = rng.integers(0, 256, n2, dtype=np.uint8).tobytes()
        assert combine(zlib.crc32(a), zlib.crc32(b), n2) == zlib.crc32(a + b)
        assert crc32(a + b) == zlib.crc32(a + b)
        assert crc32(b, crc32(a)) == zlib.crc32(b, zlib.crc32(a))


@pytest.mark.parametrize("batch_rows", tiered([None, 64, 5]))
def test_stored_npz_read_by_threads_gives_the_in_order_result(tmp_path, batch_rows):
    # batches read and counted by several threads (Dump.batch_tasks): the same figures
    # as the dump read in order by one thread, and the CRC chain complete (no re-read)
    from tieeval.kernels.threads import set_threads
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 5, (3000, 11)).astype(np.float32)
    path = tmp_path / "d.npz"
    np.savez(path, scores=scores)
    set_threads(1)
    try:
        one = evaluate_path(str(path), batch_rows=batch_rows).to_dict()
    finally:
        set_threads(None)
    set_threads(3)
    try:
        dump = open_dump(str(path))
        many = evaluate_dump(dump, batch_rows=batch_rows).to_dict()
        crc = dump.parts[0].scores.crc
        assert crc.verified and crc.next == crc.end
    finally:
        set_threads(None)
    assert many == one
