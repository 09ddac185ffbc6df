"""The command line keeps freed C-heap memory for the next batch (tieeval.engine.heap)."""

from __future__ import annotations

import ctypes
import platform
import subprocess
import sys

import pytest

from tieeval.engine import heap

glibc = pytest.mark.skipif(not sys.platform.startswith("linux")
                           or platform.libc_ver()[0] != "glibc", reason="glibc only")

# A batch's temporaries: arrays of 1-3 MB allocated and freed out of order, 50 batches.
# Each batch touches 7.8 MB (about 1,900 pages), 95,000 pages over the loop.
_BATCHES = """
import resource, sys
import numpy as np
from tieeval.engine.heap import keep_freed_heap, kept
if sys.argv[1] == "keep":
    assert keep_freed_heap() and kept()
def batch():
    a = np.ones(300_000)
    b = np.ones(120_000)
    del a
    c = np.ones(200_000)
    d = np.ones(350_000)
    del b, c, d
batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _BATCHES, mode], capture_output=True,
                         text=True, check=True).stdout
    return int(out)


@glibc
def test_batches_reuse_freed_heap_pages_once_kept():
    """With the thresholds set, repeated batches of temporaries fault in (almost) no new
    page: the freed heap is reused, not returned to the system and zeroed again."""
    assert _faults("keep") < 1_000  # of the 95,000 pages the batches touch


@glibc
def test_keep_freed_heap_sets_glibcs_thresholds():
    assert heap.keep_freed_heap() is True
    assert heap.kept()


def test_without_mallopt_nothing_is_set(monkeypatch):
    """Another C library (or none to load): the heap is left as it is, and the workers
    are told so."""
    from tieeval.util import libc

    def no_library(*args, **kwargs):
        raise OSError("no C library")
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    monkeypatch.setattr(heap, "_kept", False)
    libc.function.cache_clear()  # looked up afresh, without a C library
    try:
        assert libc.function("mallopt", ctypes.c_int, ctypes.c_int) is None
        assert heap.keep_freed_heap() is False
        assert not heap.kept()
    finally:
        libc.function.cache_clear()


def test_the_command_line_keeps_the_heap_and_its_workers_do_as_it_does(tmp_path):
    """``tieeval`` sets the thresholds before a command runs; a ``-j`` worker process,
    started with the parent's choice, sets them too."""
    import numpy as np
    dump = tmp_path / "s.npy"
    np.save(dump, np.random.default_rng(0).random((40, 7)).astype(np.float32))
    code = ("import sys; from tieeval.cli import main; from tieeval.engine import heap\n"
            "try:\n"
            f"    main(['compare', {str(dump)!r}, '-q', '-f', 'json'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(heap.kept(), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert proc.stderr.strip() == str(expected)
    worker = ("from tieeval.engine import heap, parallel; parallel._worker_init(False, {}); "
              "print(heap.kept())")
    for keep in (True, False):
        out = subprocess.run([sys.executable, "-c", worker.format(keep)], capture_output=True,
                             text=True, check=True).stdout
        assert out.strip() == str(keep and expected)


def test_a_function_the_c_library_lacks_is_none():
    from tieeval.util import libc
    assert libc.function("tieeval_no_such_function") is None
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert libc.function("malloc_trim", ctypes.c_size_t) is not None
