"""Regression tests for the findings of the fuzzing harness (tests/fuzz/test_fuzz.py), each
checked against the independent reader of tests/fuzz/fuzz_oracle.py or the format's rule."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tieeval

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_oracle  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_npy_header_with_boolean_extents_is_refused(tmp_path):
    """A header whose shape reads ``(True, True)`` is damaged: numpy.load refuses it, and
    tieeval used to read it as a 1 x 1 matrix (True is an int in Python)."""
    path = tmp_path / "a.npy"
    np.save(path, np.array([[0.5, 0.25]], dtype=np.float32))
    data = path.read_bytes().replace(b"'shape': (1, 2)", b"'shape': (True, True)")
    path.write_bytes(data)
    with pytest.raises(fuzz_oracle.Invalid):
        fuzz_oracle.read_npy(str(path))
    with pytest.raises(tieeval.TieevalError, match="bad shape"):
        tieeval.evaluate_path(str(path), ["HR@1"])


def test_trec_run_with_a_byte_order_mark_is_read_without_it(tmp_path):
    """A UTF-8 byte-order mark (as some editors write one) is not part of the first query
    id: it is skipped, with one warning, by the fast reader (pyarrow's CSV parser, which
    drops it) and the line reader alike. trec_eval keeps it in the id, and so silently
    dropped the first query from the evaluation."""
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_bytes(b"\xef\xbb\xbfq0 Q0 d0 1 0.5 sys\nq0 Q0 d1 2 0.4 sys\n"
                    b"q1 Q0 d0 1 0.5 sys\nq1 Q0 d1 2 0.4 sys\n")
    qrels.write_bytes(b"\xef\xbb\xbfq0 0 d0 1\nq1 0 d1 1\n")
    result = tieeval.evaluate_path(str(run), ["HR@1", "MRR"], qrels=str(qrels))
    want = fuzz_oracle.figures(fuzz_oracle.read_trec(str(run), str(qrels)), [1])
    assert want["MRR"][:3] == (0.75, 0.75, 0.75)
    # by hand: q0 ranks its relevant d0 first (HR@1 1, RR 1), q1 its relevant d1 second
    # (HR@1 0, RR 1/2); no ties: HR@1 = (1 + 0) / 2, MRR = (1 + 1/2) / 2
    assert result.metric("HR@1").instances == 2
    for column in ("original", "first", "last", "tie_aware"):
        assert getattr(result.metric("HR@1"), column) == 0.5
        assert getattr(result.metric("MRR"), column) == 0.75
    assert [w for w in result.warnings if "byte-order mark" in w] == [
        f"{run}: the run file starts with a UTF-8 byte-order mark, ignored (trec_eval "
        "would read it as part of the first query id)",
        f"{qrels}: the qrels file starts with a UTF-8 byte-order mark, ignored (trec_eval "
        "would read it as part of the first query id)"]


def test_trec_run_with_a_byte_order_mark_warns_once_on_stderr(tmp_path):
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_bytes(b"\xef\xbb\xbfq0 Q0 d0 1 0.5 sys\nq0 Q0 d1 2 0.4 sys\n"
                    b"q1 Q0 d0 1 0.5 sys\nq1 Q0 d1 2 0.4 sys\n")
    qrels.write_bytes(b"q0 0 d0 1\nq1 0 d1 1\n")
    result = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(run), "--qrels",
                             str(qrels), "-m", "HR@1", "-f", "json"],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": ROOT + os.pathsep
                                 + os.environ.get("PYTHONPATH", "")})
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("byte-order mark") == 1, result.stderr
    assert "::" not in result.stderr
    import json
    (metric,) = json.loads(result.stdout)["runs"][0]["metrics"]
    # by hand, as above: q0 hits at rank 1, q1 does not; (1 + 0) / 2
    assert (metric["metric"], metric["k"], metric["instances"]) == ("HR", 1, 2)
    assert metric["original"] == metric["tie_aware"] == 0.5


def test_npz_member_renamed_in_the_directory_is_refused(tmp_path):
    """A damaged central directory renamed ``positive.npy`` to ``positive.npq``: the dump was
    read without its positive field (column 0 evaluated instead); numpy.load refuses the
    member, whose own header still says ``positive.npy``."""
    path = tmp_path / "a.npz"
    np.savez(path, scores=np.array([[0.1, 0.9], [0.2, 0.8]]), positive=np.array([1, 1]))
    data = bytearray(path.read_bytes())
    directory = data.rindex(b"positive.npy")  # the central directory's copy comes last
    data[directory:directory + 12] = b"positive.npq"
    path.write_bytes(bytes(data))
    with pytest.raises(fuzz_oracle.Invalid, match="differ"):
        fuzz_oracle.read_npz(str(path))
    with pytest.raises(tieeval.TieevalError, match="positive.npq"):
        tieeval.evaluate_path(str(path), ["HR@1"])


def test_long_csv_empty_instance_id_is_a_missing_value(tmp_path):
    """An empty instance field is a missing value (it is for a score); it was read as an
    instance named ''."""
    path = tmp_path / "long.csv"
    path.write_text("instance,position,score\nu1,0,0.5\nu1,1,0.25\n,0,0.5\n,1,0.75\n")
    with pytest.raises(fuzz_oracle.Invalid):
        fuzz_oracle.read_csv(str(path))
    with pytest.raises(tieeval.TieevalError, match="null"):
        tieeval.evaluate_path(str(path), ["HR@1"])


@pytest.mark.parametrize("name", ["sco\nres", "sco\rres", "a\x00b"])
def test_error_quoting_a_damaged_column_name_stays_one_line(tmp_path, name):
    """A message quoting names read from a damaged file (a column 'sco\\nres') printed over
    several lines; every TieevalError message is one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({name: pa.array([[0.5, 0.25]])}), path)
    with pytest.raises(tieeval.TieevalError) as info:
        tieeval.evaluate_path(str(path), ["HR@1"])
    text = str(info.value)
    assert "\n" not in text and "\r" not in text and "\x00" not in text
    assert repr(name)[1:-1] in text
    if name != "sco\nres":
        return
    result = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(path), "-q"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": ROOT + os.pathsep
                                 + os.environ.get("PYTHONPATH", "")})
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("Error: ")


def test_parquet_page_header_declaring_a_huge_page_is_refused_in_bounded_memory(tmp_path):
    import fuzz_mutants
    # mutant 2911 of the fixed-size-list Parquet dumps, seed 99: two bytes deleted from
    # its first data page header (0.7 KB file)
    path, _, _, _ = fuzz_mutants.make("parquet_fixed", 2911, 99, str(tmp_path))
    code = ("import resource, tieeval\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            f"tieeval.evaluate_path({path!r}, ['HR@1'])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": ROOT + os.pathsep
                                              + os.environ.get("PYTHONPATH", ""),
                                              # malloc: the address-space limit then
                                              # bounds what is allocated, not reserved
                                              "ARROW_DEFAULT_MEMORY_POOL": "system"})
    # refused as damaged, without trying to allocate the page it declares (under this
    # limit that attempt fails as "malloc of size 1692903168 failed")
    assert "InputError" in result.stderr, result.stderr[-500:]
    assert "malloc" not in result.stderr and "MemoryError" not in result.stderr
