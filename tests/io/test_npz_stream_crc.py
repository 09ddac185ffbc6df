"""A stored NPZ member's CRC-32 is computed on the rows as the pass reads them and checked
before any result: damage that still decodes to valid numbers is refused on every path."""

import zipfile
import zlib

import numpy as np
import pytest

from tieeval import evaluate_path
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
    gap.feed(20, data[20:])  # a gap: the member is streamed at the check
    assert gap.next == -1
    gap.check()
    bad = StreamCrc(str(path), "m", 0, len(data), want ^ 1)
    with pytest.raises(InputError, match="member m: bad CRC-32"):
        bad.check()
    assert _stream_crc(str(path), "m", 0, len(data)) == want
