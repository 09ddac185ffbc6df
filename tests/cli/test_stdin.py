"""``-`` reads a dump from standard input: every format piped in gives the JSON of the
same file given by path, but for the path, which reads ``<stdin>``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from tiers import tiered

import tieeval


def _compare(args, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "tieeval", "compare", *args],
                          stdin=stdin, capture_output=True, env=env)


def _scores(rng):
    # ties on purpose: the tie-aware columns differ from the original there
    return np.round(rng.random((30, 12)), 1)


def _trec(tmp_path, rng):
    run, qrels = tmp_path / "run", tmp_path / "qrels.txt"
    with open(run, "w") as out, open(qrels, "w") as rel:
        for q in range(5):
            for d in range(8):
                out.write(f"q{q} Q0 d{d} {d} {rng.integers(0, 3)} tag\n")
                rel.write(f"q{q} 0 d{d} {int(rng.random() < 0.3)}\n")
    return run, ["--qrels", str(qrels), "-m", "P@5", "-m", "ndcg_cut_5"]


def _npy(tmp_path, rng):
    path = tmp_path / "scores.npy"
    np.save(path, _scores(rng))
    return path, []


def _npz(tmp_path, rng):
    path = tmp_path / "scores.npz"
    np.savez(path, scores=_scores(rng))
    return path, []


def _parquet(tmp_path, rng):
    path = tmp_path / "scores.parquet"
    tieeval.save_scores(str(path), _scores(rng))
    return path, []


def _long_csv(tmp_path, rng, extra=()):
    # a long-layout CSV has no magic bytes: standard input knows it by its header line
    path = tmp_path / "long.csv"
    scores = _scores(rng)
    with open(path, "w") as out:
        out.write("instance,position,score,label\n")
        for i, row in enumerate(scores):
            out.writelines(f"{i},{j},{v},{int(j == 0)}\n" for j, v in enumerate(row))
    return path, list(extra)


def _long_csv_layout(tmp_path, rng):
    return _long_csv(tmp_path, rng, ["--layout", "long"])


@pytest.mark.parametrize("make", tiered([_npy, _parquet, _trec, _npz, _long_csv,
                                         _long_csv_layout], quick=3))
def test_stdin_dump_gives_the_json_of_the_same_file(make, tmp_path, rng):
    path, extra = make(tmp_path, rng)
    args = [*extra, "--k", "1,5", "--meta", "method=m", "--format", "json"]
    by_path = _compare([str(path), *args])
    assert by_path.returncode == 0, by_path.stderr
    with open(path, "rb") as fh:
        piped = _compare(["-", *args], stdin=fh)
    assert piped.returncode == 0, piped.stderr
    b = json.loads(piped.stdout)
    assert b["runs"][0]["path"] == "<stdin>"
    assert b["groups"][0]["paths"] == ["<stdin>"]  # --meta makes a group of the run
    # the same document but for the path (stdout is JSON only: it parses whole)
    assert json.loads(by_path.stdout.decode().replace(str(path), "<stdin>")) == b
    assert piped.stderr.decode() == by_path.stderr.decode().replace(str(path), "<stdin>")


def test_stdin_spool_is_removed_and_named_in_errors(tmp_path, rng):
    path, _ = _npy(tmp_path, rng)
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    env = {**os.environ, "TMPDIR": str(spool_dir)}
    with open(path, "rb") as fh:
        assert _compare(["-", "--k", "1"], stdin=fh, env=env).returncode == 0
    assert os.listdir(spool_dir) == []
    bad = subprocess.run([sys.executable, "-m", "tieeval", "compare", "-"], input=b"junk\n",
                         capture_output=True, env=env)
    assert bad.returncode == 2 and bad.stdout == b""
    assert bad.stderr.decode().startswith("Error: <stdin>: unknown format")
    assert "tieeval-stdin" not in bad.stderr.decode()
    assert os.listdir(spool_dir) == []


def test_empty_stdin_and_stdin_twice_are_one_line_errors():
    empty = subprocess.run([sys.executable, "-m", "tieeval", "compare", "-"], input=b"",
                           capture_output=True)
    assert (empty.returncode, empty.stderr.decode().splitlines()) == (
        2, ["Error: <stdin>: empty (nothing was piped or redirected in)"])
    twice = subprocess.run([sys.executable, "-m", "tieeval", "compare", "-", "-"],
                           input=b"x", capture_output=True)
    assert twice.returncode == 2 and b"'-' (standard input) can be given once" in twice.stderr


@pytest.mark.parametrize("head, suffix", [(b"\x93NUMPY\x01\x00", ".npy"),
                                          (b"PK\x03\x04rest", ".npz"),
                                          (b"PAR1rest", ".parquet"),
                                          (b"q1 Q0 d1 1 0.5 t\n", ".txt")])
def test_stdin_spool_is_sniffed_copied_whole_and_refused_as_an_output(head, suffix):
    from tieeval.analysis.instances import check_output
    from tieeval.cli.stdin import spool
    from tieeval.errors import OutputError
    data = head + bytes(range(256)) * 5000  # beyond one copy chunk
    spooled = spool(io.BytesIO(data))
    try:
        assert spooled.endswith(suffix)
        assert os.path.dirname(spooled) == tempfile.gettempdir()
        with open(spooled, "rb") as fh:
            assert fh.read() == data
        # the spool is one of the command's inputs: no output may overwrite it
        with pytest.raises(OutputError):
            check_output(spooled, [spooled])
        # its name is known to the exit's clean-up from before the file existed (a
        # signal at any point leaves nothing behind), and forgotten once removed
        from tieeval import sink
        from tieeval.cli.stdin import _remove
        assert spooled in sink._LIVE_TEMPS
        _remove(spooled)
        assert not os.path.exists(spooled) and spooled not in sink._LIVE_TEMPS
    finally:
        if os.path.exists(spooled):
            os.unlink(spooled)


@pytest.mark.parametrize("args", tiered([["compare", "-"], ["check", "-"], ["ties", "-"]], quick=1))
def test_closed_stdin_is_a_one_line_error(args):
    # descriptor 0 closed before the interpreter starts (the shell's '<&-'): Python has no
    # sys.stdin at all
    proc = subprocess.run([sys.executable, "-m", "tieeval", *args, "-q"],
                          capture_output=True, preexec_fn=lambda: os.close(0), timeout=120)
    assert (proc.returncode, proc.stderr.decode().splitlines()) == (
        2, ["Error: <stdin>: standard input is closed; pipe or redirect the dump into "
            "tieeval"])
    assert proc.stdout == b""


def test_the_spool_is_no_part_of_a_dataset_folder_that_is_also_tmpdir(tmp_path, rng):
    import pyarrow.parquet as pq
    dataset = tmp_path / "ds"
    dataset.mkdir()
    tieeval.save_scores(str(dataset / "a.parquet"), _scores(rng))
    other, _ = _parquet(tmp_path, rng)
    args = ["-m", "HR@1", "-f", "json", "-q"]
    alone = _compare([dataset, *args])
    assert alone.returncode == 0, alone.stderr
    with open(other, "rb") as fh:  # the spool is written into the dataset being read
        both = _compare(["-", dataset, *args], stdin=fh,
                        env={**os.environ, "TMPDIR": str(dataset)})
    assert both.returncode == 0, both.stderr
    runs = json.loads(both.stdout)["runs"]
    assert runs[1]["path"] == str(dataset)
    assert runs[1]["metrics"] == json.loads(alone.stdout)["runs"][0]["metrics"]
    assert runs[1]["instances"] == pq.read_metadata(dataset / "a.parquet").num_rows
    assert os.listdir(dataset) == ["a.parquet"]


@pytest.mark.parametrize("option", ["--qrels", "--claims"])
def test_dash_for_qrels_or_claims_names_the_real_cause(tmp_path, rng, option):
    # '-' reads a dump from standard input; the qrels and the claims are read from a
    # file: '-' there is refused for what it is, not reported as a missing file named '-'
    if option == "--qrels":
        run, _ = _trec(tmp_path, rng)
        command = ["compare", str(run)]
    else:
        dump, _ = _npz(tmp_path, rng)
        command = ["audit", str(dump)]
    proc = subprocess.run([sys.executable, "-m", "tieeval", *command, option, "-"],
                          input=b"q1 0 d1 1\n", capture_output=True, timeout=120)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and proc.stdout == b""
    assert len(lines) == 1 and lines[0].startswith(f"Error: {option} -: "), lines
    assert "no such file" not in lines[0] and "standard input" in lines[0]


def test_an_error_with_stderr_closed_never_reaches_stdout(tmp_path):
    # descriptor 2 closed (the shell's '2>&-'): the Error line has nowhere to go, and
    # stdout, which carries data only, does not take it
    proc = subprocess.run([sys.executable, "-m", "tieeval", "compare",
                           str(tmp_path / "missing.npz"), "-f", "json"],
                          capture_output=True, preexec_fn=lambda: os.close(2), timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == b""
