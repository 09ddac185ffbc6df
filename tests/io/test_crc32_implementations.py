"""Both CRC-32 implementations tieeval may pick (the deflate package's libdeflate through
ctypes, zlib's) are zlib's function bit for bit, on every kind of buffer the readers hand
it; the environment variable asks for zlib's; a library that answers wrongly is not
used."""

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from tieeval.io import crc32 as crc_module

FOUND = {"deflate": crc_module._deflate(), "zlib": zlib.crc32}
AVAILABLE = [name for name, fn in FOUND.items() if fn is not None]


@pytest.mark.parametrize("name", AVAILABLE)
def test_each_implementation_is_zlibs_crc32(name):
    fn = FOUND[name]
    rng = np.random.default_rng(7)
    for n in (0, 1, 3, 64, 1000, 123_457, (1 << 20) + 5):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        want = zlib.crc32(data.tobytes())
        assert fn(data.tobytes()) == want  # bytes
        assert fn(memoryview(data)) == want  # a writable view
        assert fn(memoryview(data.tobytes())) == want  # a read-only view
        scores = rng.random(n // 4 + 1).astype(np.float32)
        assert fn(memoryview(scores).cast("B")) == zlib.crc32(scores.tobytes())
        assert fn(memoryview(scores)) == zlib.crc32(scores.tobytes())  # itemsize 4
        half = n // 2  # chained, as the reader extends a CRC piece by piece
        assert fn(memoryview(data)[half:], fn(memoryview(data)[:half])) == want
        assert fn(data.tobytes()[:0], 12345) == 12345


def test_the_chosen_implementation_is_a_working_one():
    assert crc_module.implementation() in AVAILABLE
    assert crc_module._works(crc_module.crc32)


def test_a_library_giving_wrong_answers_is_not_used():
    assert not crc_module._works(lambda data, value=0: zlib.crc32(data, value) ^ 1)
    assert not crc_module._works(lambda data, value=0: zlib.adler32(data, value))
    assert crc_module._works(zlib.crc32)


# isal and libdeflate, once names of implementations, are unknown names now
@pytest.mark.parametrize("asked", ["zlib", "deflate", "libdeflate", "isal", "unknown", ""])
def test_the_environment_variable_picks_one(asked):
    env = {**os.environ, "TIEEVAL_CRC32": asked}
    out = subprocess.run(
        [sys.executable, "-c",
         "from tieeval.io import crc32 as c; print(c.implementation())"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == ("deflate" if asked != "zlib" and "deflate" in AVAILABLE else "zlib")


@pytest.mark.parametrize("asked", ["zlib", "deflate"])
def test_a_damaged_stored_npz_is_refused_whatever_the_implementation(tmp_path, asked):
    if asked not in AVAILABLE:
        pytest.skip(f"{asked} is not on this machine")
    rng = np.random.default_rng(8)
    path = tmp_path / "d.npz"
    np.savez(path, scores=rng.random((3000, 9)).astype(np.float32))
    data = bytearray(path.read_bytes())
    data[-200] ^= 0x01  # a low bit in the member's bytes, before the central directory
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    env = {**os.environ, "TIEEVAL_CRC32": asked}
    good = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(path),
                           "--format", "json"], env=env, capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    res = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(bad),
                          "--format", "json"], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""  # an input error, no figure
    assert res.stderr == (f"Error: {bad}: corrupted file (member scores.npy: bad CRC-32, "
                          "its bytes are not the ones written)\n")


def test_the_deflate_package_is_called_through_ctypes():
    """The deflate package's own ``crc32`` holds the GIL; its extension's libdeflate,
    called through ctypes, does not (threads reading different rows check at once)."""
    pytest.importorskip("deflate")
    fn = crc_module._deflate()
    if fn is None:  # a build that does not export libdeflate's functions (Windows)
        pytest.skip("this deflate build does not export libdeflate_crc32")
    assert fn.__name__ == "libdeflate_crc32"
    assert fn(b"123456789") == 0xCBF43926


def test_without_the_deflate_package_zlibs_is_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "deflate", None)  # an import of it fails
    assert crc_module._deflate() is None
    assert crc_module._choose(None) == ("zlib", zlib.crc32)
