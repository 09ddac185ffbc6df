"""Hostile and broken input: every case is one ``Error:`` line and exit 2 (or the right
figures), in bounded memory and time, with nothing half-written."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers import small_tmpfs
from tiers import tiered

from tieeval.analysis.audit import parse_value
from tieeval.cli import cli
from tieeval.engine.local import evaluate_path
from tieeval.errors import InputError
from tieeval.io.base import MAX_ROW_ENV, ReadOptions
from tieeval.io.npy import ArraySpec
from tieeval.io.open import open_dump

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def cli_proc(*args, stdout=subprocess.PIPE, **kw):
    # no empty entry (it means the working folder, which some tests delete)
    path = [ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    kw.setdefault("timeout", 120)
    return subprocess.run([sys.executable, "-m", "tieeval", *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, env=env, **kw)


def one_error(result, pattern):
    """Exit 2 and exactly one line on stderr, matching ``pattern``."""
    import re
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines[-1].startswith("Error: "), result.output
    assert re.search(pattern, lines[-1]), lines[-1]
    assert "internal error" not in result.output and "Traceback" not in result.output


def npy_header(shape, descr="<f4", fortran=False) -> bytes:
    text = ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
            ).encode()
    pad = 64 - (10 + len(text) + 1) % 64
    return (b"\x93NUMPY\x01\x00" + (len(text) + pad + 1).to_bytes(2, "little") + text
            + b" " * pad + b"\n")


def scores_table(scores, **extra):
    cols = {"scores": pa.array([list(r) for r in scores], type=pa.list_(pa.float32()))}
    cols.update({k: pa.array(v) for k, v in extra.items()})
    return pa.table(cols)


@pytest.fixture
def scores():
    rng = np.random.default_rng(11)
    s = np.round(rng.random((40, 12)), 1).astype(np.float32)
    return s


# ---------------------------------------------------------------------------------------
# memory and hangs (1-4)

@pytest.mark.parametrize("shape", ["(4611686018427387904, 4611686018427387904)",
                                   "(4, 4611686018427387904)"])
def test_shape_products_never_wrap(tmp_path, shape):
    path = tmp_path / "huge.npy"
    path.write_bytes(npy_header(shape) + b"\0" * 64)
    one_error(run("compare", path), r"huge\.npy: corrupted or truncated file \(the array "
                                    r"needs \d+ bytes, 192 are there\)")


def test_stored_npz_member_shape_overflow(tmp_path):
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("scores.npy", npy_header("(4611686018427387904, 4)") + b"\0" * 64)
    one_error(run("compare", path), r"corrupted or truncated file \(the array needs")


def test_big_compressed_fortran_member_is_refused(tmp_path, monkeypatch):
    import tieeval.io.npz as npz
    monkeypatch.setattr(npz, "PART_BYTES", 1000)
    path = tmp_path / "f.npz"
    np.savez_compressed(path, scores=np.asfortranarray(np.zeros((100, 10), np.float32)))
    with pytest.raises(InputError, match=r"compressed Fortran-order array of 4000 bytes, "
                                         r"which cannot be read by rows and is too big"):
        open_dump(str(path))


def test_small_compressed_fortran_member_still_reads(tmp_path, scores):
    np.savez_compressed(tmp_path / "f.npz", scores=np.asfortranarray(scores))
    np.save(tmp_path / "c.npy", scores)
    a = evaluate_path(str(tmp_path / "f.npz"))
    b = evaluate_path(str(tmp_path / "c.npy"))
    assert [m.tie_aware for m in a.metrics] == [m.tie_aware for m in b.metrics]


def test_row_length_bound_npy_parquet_long(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_ROW_ENV, "10")
    s = np.zeros((2, 11), np.float32)
    np.save(tmp_path / "a.npy", s)
    one_error(run("compare", tmp_path / "a.npy"),
              r"a\.npy: a row has 11 candidates, more than the 10 one row may have .*raise it "
              r"with TIEEVAL_MAX_ROW_CANDIDATES=11")
    pq.write_table(scores_table(s), tmp_path / "a.parquet")
    one_error(run("compare", tmp_path / "a.parquet"),
              r"a\.parquet: row group 0: a row has 11 candidates")
    ragged = pa.table({"scores": pa.array([[0.5] * 3] * 5 + [[0.5] * 11],
                                          type=pa.list_(pa.float32()))})
    pq.write_table(ragged, tmp_path / "r.parquet")
    one_error(run("compare", tmp_path / "r.parquet"), r"r\.parquet: row 5 has 11 candidates")
    (tmp_path / "l.csv").write_text("instance,position,score\n" + "".join(
        f"7,{i},0.5\n" for i in range(11)))
    one_error(run("compare", tmp_path / "l.csv"), r"l\.csv: instance 7 has 11 candidates")
    monkeypatch.setenv(MAX_ROW_ENV, "11")
    assert run("compare", tmp_path / "a.npy").exit_code == 0
    monkeypatch.setenv(MAX_ROW_ENV, "lots")
    one_error(run("compare", tmp_path / "a.npy"),
              r"TIEEVAL_MAX_ROW_CANDIDATES must be a whole number >= 1, got 'lots'")


def test_fifo_in_a_dataset_is_refused_without_blocking(tmp_path, scores):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    ds = tmp_path / "ds"
    ds.mkdir()
    pq.write_table(scores_table(scores), ds / "a.parquet")
    os.mkfifo(ds / "b.parquet")
    start = time.monotonic()
    one_error(run("compare", ds), r"b\.parquet: not a regular file \(a FIFO, socket or "
                                  r"device\)")
    os.mkfifo(tmp_path / "x.npy")
    one_error(run("compare", tmp_path / "x.npy"), r"x\.npy: not a regular file")
    assert time.monotonic() - start < 30


# ---------------------------------------------------------------------------------------
# silently wrong numbers (6-11)

def test_named_fields_must_exist(tmp_path, scores):
    pq.write_table(scores_table(scores, positive=[3] * 40), tmp_path / "p.parquet")
    one_error(run("compare", tmp_path / "p.parquet", "--positive-column", "pos"),
              r"p\.parquet: no column 'pos' \(--positive-column\); found: positive, scores")
    np.savez(tmp_path / "p.npz", scores=scores, positive=np.full(40, 3))
    one_error(run("compare", tmp_path / "p.npz", "--positive-column", "pos"),
              r"p\.npz: no array 'pos' \(--positive-column\); found: positive, scores")
    (tmp_path / "l.csv").write_text("instance,position,score,label\n1,0,0.5,1\n1,1,0.4,0\n")
    one_error(run("compare", tmp_path / "l.csv", "--label-column", "lab"),
              r"l\.csv: long layout: no column 'lab' \(--label-column; found: instance, "
              r"position, score, label\)")
    # with --positive-index the renamed field only says which stored field not to use
    assert run("compare", tmp_path / "p.npz", "--positive-column", "none",
               "--positive-index", "1").exit_code == 0


@pytest.mark.parametrize("first_has", [True, False])
def test_dataset_files_must_agree_on_fields(tmp_path, scores, first_has):
    ds = tmp_path / "ds"
    ds.mkdir()
    with_pos = scores_table(scores, positive=[3] * 40)
    without = scores_table(scores)
    pq.write_table(with_pos if first_has else without, ds / "a.parquet")
    pq.write_table(without if first_has else with_pos, ds / "b.parquet")
    has, lacks = ("a", "b") if first_has else ("b", "a")
    one_error(run("compare", ds), rf"{has}\.parquet has a column 'positive' and "
                                  rf".*{lacks}\.parquet has not; the files of a dataset must "
                                  "have the same columns")


def test_long_csv_ids_are_compared_as_written(tmp_path):
    (tmp_path / "ids.csv").write_text("instance,position,score,label\n"
                                      "1,0,0.5,1\n1,1,0.4,0\n01,0,0.3,0\n01,1,0.9,1\n")
    r = evaluate_path(str(tmp_path / "ids.csv"), ["HR@1"])
    assert r.instances == 2  # "1" and "01" are two instances
    assert r.metrics[0].tie_aware == 1.0
    (tmp_path / "int.csv").write_text("instance,position,score\n2,0,0.5\n2,1,0.4\n"
                                      "10,0,0.3\n10,1,0.9\n")
    dump = open_dump(str(tmp_path / "int.csv"))
    assert [i for b in dump.batches() for i in b.ids.tolist()] == [2, 10]  # integers


def test_npz_crc_is_verified_stored_and_compressed(tmp_path):
    rng = np.random.default_rng(5)
    s = rng.random((200, 50)).astype(np.float32)
    for name, save in (("stored", np.savez), ("compressed", np.savez_compressed)):
        path = tmp_path / f"{name}.npz"
        save(path, scores=s)
        data = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("scores.npy")
        if name == "stored":
            data[info.header_offset + 30 + len("scores.npy") + 4000] ^= 0x40
        else:  # corrupt the CRC itself: the data still inflates
            pos = info.header_offset + 14
            data[pos] ^= 0xFF
            cd = data.rindex(b"PK\x01\x02")
            data[cd + 16] ^= 0xFF
        bad = tmp_path / f"bad_{name}.npz"
        bad.write_bytes(bytes(data))
        result = run("compare", bad, "--jobs", "1")
        one_error(result, r"bad_%s\.npz: corrupted (file|or truncated file) \(member "
                          r"scores(\.npy)?: (b|B)ad CRC-32" % name)


def test_parquet_page_checksums_are_verified(tmp_path, scores):
    path = tmp_path / "c.parquet"
    pq.write_table(scores_table(scores), path, write_page_checksum=True, compression="none",
                   use_dictionary=False)
    data = bytearray(path.read_bytes())
    marker = np.float32(scores[5, 3]).tobytes()
    data[data.index(marker, 100)] ^= 0x01
    (tmp_path / "bad.parquet").write_bytes(bytes(data))
    one_error(run("compare", tmp_path / "bad.parquet"),
              r"bad\.parquet: corrupted or truncated Parquet file \(row group 0: .*(CRC|checksum)")


def test_trec_query_ids_must_be_utf8(tmp_path):
    (tmp_path / "run").write_bytes(b"q\xff Q0 d1 1 0.5 r\nq\xfe Q0 d2 1 0.5 r\n")
    (tmp_path / "qrels").write_bytes(b"q\xff 0 d1 1\n")
    one_error(run("compare", tmp_path / "run", "--qrels", tmp_path / "qrels"),
              r"run: line 1: query id b'q\\xff' is not valid UTF-8")


@pytest.mark.parametrize("text,tolerance", [("0", 0.0), ("1", 0.0), ("0.0", 0.05),
                                            ("0.466", 5e-4), ("47%", 5e-3)])
def test_audit_integers_are_exact(text, tolerance):
    assert parse_value(text)[1] == pytest.approx(tolerance)


# ---------------------------------------------------------------------------------------
# internal errors on bad input (12-16)

def test_parquet_bad_metadata_key_and_duplicate_columns(tmp_path, scores):
    t = scores_table(scores).replace_schema_metadata({b"\xff\xfe": b"x", b"method": b"m"})
    pq.write_table(t, tmp_path / "k.parquet")
    r = run("compare", tmp_path / "k.parquet", "--format", "json")
    assert r.exit_code == 0
    col = pa.array([list(x) for x in scores], type=pa.list_(pa.float32()))
    pq.write_table(pa.Table.from_arrays([col, col], names=["scores", "scores"]),
                   tmp_path / "d.parquet")
    one_error(run("compare", tmp_path / "d.parquet"),
              r"d\.parquet: two columns are named 'scores' \(column names must be unique\)")


@pytest.mark.parametrize("shape", ["(2, 2, }", "(2, 'a')", "(-1, 2)", "[2, 2]", "(2.5, 2)"])
def test_malformed_npy_headers(tmp_path, shape):
    (tmp_path / "h.npy").write_bytes(npy_header(shape) + b"\0" * 16)
    one_error(run("compare", tmp_path / "h.npy"), r"h\.npy: corrupted or truncated file")


def test_huge_positive_index(tmp_path, scores):
    np.save(tmp_path / "a.npy", scores)
    one_error(run("compare", tmp_path / "a.npy", "--positive-index", "99999999999999999999"),
              r"--positive-index 99999999999999999999 is out of range")


def test_huge_relevance_and_labels(tmp_path):
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 0.4 r\nq1 Q0 d3 3 0.4 r\n")
    (tmp_path / "q1").write_text("q1 0 d1 99999999999999999999999\nq1 0 d3 1\n")
    assert run("compare", tmp_path / "run", "--qrels", tmp_path / "q1").exit_code == 0
    (tmp_path / "q2").write_text("q1 0 d1 1e160\nq1 0 d3 1\n")
    p = cli_proc("compare", tmp_path / "run", "--qrels", tmp_path / "q2", "-q", "-m",
                 "NDCG@3")
    assert p.returncode == 2
    assert p.stderr.decode().splitlines() == [
        "Error: a computation left float64's range (overflow encountered in square); the "
        "input holds scores or labels too large to evaluate"]
    (tmp_path / "q3").write_text("q1 0 d1 1e400\n")
    one_error(run("compare", tmp_path / "run", "--qrels", tmp_path / "q3"),
              r"q3: line 1: relevance must be finite")


@pytest.mark.parametrize("fmt", tiered(["json", "table", "csv", "markdown"], quick=1))
def test_stdout_errors_are_input_errors(tmp_path, scores, fmt):
    np.save(tmp_path / "a.npy", scores)
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            p = cli_proc("compare", tmp_path / "a.npy", "--format", fmt, "--positive-index",
                         0, stdout=full)
        assert p.returncode == 2
        assert p.stderr.decode().splitlines() == [
            "Error: cannot write the output to stdout: No space left on device"]
    p = cli_proc("compare", tmp_path / "a.npy", "--format", fmt, "--positive-index", 0,
                 stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert p.returncode == 2
    assert p.stderr.decode().splitlines() == [
        "Error: cannot write the output to stdout: it is closed"]


def _file_size_limit(limit: int):
    def preexec():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


@pytest.mark.parametrize("fmt", tiered(["table", "json", "csv", "markdown", "latex"], quick=1))
def test_short_write_on_stdout_is_exit_2(tmp_path, scores, fmt):
    # stdout is a file that can take half of the output: the first write is cut short
    # part-way (not refused at byte 0, as /dev/full does), the next one fails
    np.save(tmp_path / "a.npy", scores)
    args = ["compare", *[tmp_path / "a.npy"] * 6, "-q", "-t", "runs", "--format", fmt,
            "-k", *range(1, 13)]
    with open(tmp_path / "whole", "wb") as fh:
        assert cli_proc(*args, stdout=fh).returncode == 0
    size = os.path.getsize(tmp_path / "whole")
    assert size > 8192
    with open(tmp_path / "half", "wb") as fh:
        p = cli_proc(*args, stdout=fh, preexec_fn=_file_size_limit(size // 2))
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().splitlines() == [
        "Error: cannot write the output to stdout: File too large"]
    assert os.path.getsize(tmp_path / "half") == size // 2  # it did fill part-way


def test_short_write_on_stdout_of_a_full_tmpfs_is_exit_2(tmp_path, scores):
    with small_tmpfs(tmp_path / "small") as small:
        np.save(tmp_path / "a.npy", scores)
        with open(small / "out.json", "wb") as fh:
            p = cli_proc("compare", *[tmp_path / "a.npy"] * 6, "-q", "-t", "runs", "-f",
                         "json", "-k", *range(1, 13), stdout=fh)
        assert p.returncode == 2, p.stderr
        assert p.stderr.decode().splitlines() == [
            "Error: cannot write the output to stdout: No space left on device"]
        assert 0 < os.path.getsize(small / "out.json") <= 65536


# ---------------------------------------------------------------------------------------
# faults and partial output (17-19)

def test_file_shrinking_while_read_is_an_input_error(tmp_path, scores):
    path = tmp_path / "a.npy"
    np.save(path, np.tile(scores, (100, 1)))
    dump = open_dump(str(path))
    batches = dump.batches(50)
    next(batches)
    with open(path, "r+b") as fh:
        fh.truncate(1000)
    with pytest.raises(InputError, match=r"a\.npy: the file changed while it was read"):
        list(batches)


def test_fortran_rows_read_by_positioned_reads(tmp_path, scores):
    np.save(tmp_path / "f.npy", np.asfortranarray(scores))
    spec = ArraySpec(str(tmp_path / "f.npy"), 128, np.dtype("<f4"), scores.shape, True)
    with spec.reader() as reader:
        np.testing.assert_array_equal(reader.rows(7, 19), scores[7:19])


def test_plot_is_written_atomically(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from tieeval import sink
    from tieeval.errors import OutputError
    from tieeval.report import plot
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")
    real_write = os.write
    written = []

    def full_after_64k(fd, data):  # a disk with 64 KiB free: short writes, then ENOSPC
        room = 65536 - sum(written)
        if room <= 0:
            raise OSError(28, "No space left on device")
        written.append(real_write(fd, bytes(data[:room])))
        return written[-1]
    monkeypatch.setattr(sink.os, "write", full_after_64k)

    class Fig:
        def savefig(self, out, **kw):
            out.write(b"partial" * 100_000)
    with pytest.raises(OutputError, match=r"fig\.png: cannot write the plot: No space left"):
        plot._save(Fig(), str(target))
    assert sum(written) == 65536
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["fig.png"]


def test_ctrl_c_exits_130_with_one_line(big_npy):
    # big_npy (below): the module's one dump of seconds' work, written once for its tests
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.Popen([sys.executable, "-m", "tieeval", "compare", str(big_npy), "-j", "2",
                             "--format", "json", "--tolerance", "1e-3"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    # interrupt once the workers run
    while time.monotonic() < deadline and proc.poll() is None and not _workers_running(proc):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends it: the whole group
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0 or _finished_then_killed(proc, out, signal.SIGINT):
        pytest.skip("the run finished before the interrupt")
    assert proc.returncode == 130, err.decode()
    assert err.decode().splitlines() == ["Error: interrupted"]
    assert out == b""


@pytest.fixture(scope="module")
def big_npy(tmp_path_factory):
    """A dump that takes seconds to evaluate (and --jobs 2 starts workers for)."""
    path = tmp_path_factory.mktemp("big") / "big.npy"
    rng = np.random.default_rng(0)
    np.save(path, np.round(rng.random((60000, 1000)), 2).astype(np.float32))
    return path


def _finished_then_killed(proc, out: bytes, signum: int) -> bool:
    """Whether the run had printed its whole JSON when the signal's default action ended
    it: the signal came as the interpreter shut down, once Python had put its handlers
    back to the defaults. The run finished first (the command never runs with those
    defaults: its handlers are set before the readiness the tests wait for)."""
    if proc.returncode != -signum:
        return False
    try:
        json.loads(out)
    except ValueError:
        return False
    return True


def _at_defaults(ignored=()):
    """The stop signals at their defaults in the child, whatever started the tests (nohup
    ignores SIGHUP), but for those in ``ignored``."""
    def preexec():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
    return preexec


def _signalled(args, tmp_path, signum, ready, group=False, ignored=(), finished=False):
    """Run the command line with TMPDIR in ``tmp_path``, send ``signum`` once ``ready()``
    (to the process, as ``kill`` does, or to its group, as a closed terminal does), and
    return (process, stdout, stderr, what is left in TMPDIR); None when it finished first
    (unless ``finished``). The signals in ``ignored`` are ignored from the start, as
    ``nohup`` ignores SIGHUP."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    # faulthandler: a run still alive long after the signal shows where it hangs
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tieeval", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True, preexec_fn=_at_defaults(ignored))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not ready(proc):
        time.sleep(0.05)
    if proc.poll() is None:
        (os.killpg if group else os.kill)(proc.pid, signum)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"still running 120 s after the signal:\n{err.decode()}")
    if not finished and (proc.returncode == 0 or _finished_then_killed(proc, out, signum)):
        return None
    return proc, out, err, sorted(os.listdir(tmp))


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return []


def _workers_running(proc):
    """Whether the command's worker processes (children of its fork server, a child of
    the command) have started, and then counted for 0.3 s. The run takes about 1.3 s on
    2 cores: a fixed wait after the fork server appears could reach its end."""
    if not os.path.exists(f"/proc/{proc.pid}/task"):  # no /proc to read: wait instead
        time.sleep(1.0)
        return True
    if not any(_children(child) for child in _children(proc.pid)):
        return False
    time.sleep(0.3)  # the workers are counting, not starting
    return True


# every run: SIGTERM to the process, SIGHUP to its group; the slow tier the other two
@pytest.mark.parametrize("group, name, code", tiered([
    (False, "SIGTERM", 143), (True, "SIGHUP", 129), (True, "SIGTERM", 143),
    (False, "SIGHUP", 129)]), ids=["kill-SIGTERM", "group-SIGHUP", "group-SIGTERM", "kill-SIGHUP"])
def test_sigterm_and_sighup_stop_workers_in_one_line(tmp_path, big_npy, name, code, group):
    got = _signalled(["compare", big_npy, "-j", "2", "--format", "json", "--tolerance",
                      "1e-3"], tmp_path, getattr(signal, name), _workers_running, group)
    if got is None:
        pytest.skip("the run finished before the signal")
    proc, out, err, left = got
    assert proc.returncode == code, err.decode()
    # one line: no resource-tracker warning, no worker traceback
    assert err.decode().splitlines() == [f"Error: terminated by {name}"]
    assert out == b""
    assert left == []


def test_a_group_sighup_under_nohup_ends_neither_the_run_nor_its_workers(tmp_path, big_npy):
    """Under ``nohup`` the command keeps SIGHUP ignored, and so do its workers: a closed
    terminal's SIGHUP to the whole group leaves the run to finish with its figures."""
    args = ["compare", big_npy, "-j", "2", "--format", "json", "--tolerance", "1e-3"]
    proc, out, err, left = _signalled(args, tmp_path, signal.SIGHUP, _workers_running,
                                      group=True, ignored=(signal.SIGHUP,), finished=True)
    assert proc.returncode == 0, err.decode()
    env = {**os.environ, "PYTHONPATH": ROOT}
    alone = subprocess.run([sys.executable, "-m", "tieeval", *map(str, args)],
                           capture_output=True, env=env, timeout=300)
    assert json.loads(out) == json.loads(alone.stdout)
    assert left == []


def test_workers_ignore_what_their_parent_ignores():
    from tieeval.engine import parallel
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert parallel._ignored() == (signal.SIGHUP,)
    finally:
        signal.signal(signal.SIGHUP, old)
    assert signal.SIGHUP not in parallel._ignored()


_POOL_THREAD_MASKS = """
import os, signal, threading
from tieeval.engine import parallel
parallel._submit(parallel.pool(2), os.getpid).result()
for thread in threading.enumerate():
    if thread is threading.main_thread():
        continue
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        blocked = next(int(line.split()[1], 16) for line in status
                       if line.startswith("SigBlk:"))
    print(thread.name, bool(blocked >> (signal.SIGPIPE - 1) & 1))
parallel.stop_workers()
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
def test_pool_threads_cannot_be_killed_by_sigpipe():
    """A signal to the whole group ends the workers at once; the pool's own threads may
    then write to a worker that is gone before this process's handler runs. With SIGPIPE
    at its default (the command line's, for ``| head``) that write would end the process
    with no message and no exit code of its own: the pool's threads hold SIGPIPE blocked,
    so the write fails with EPIPE, which the pool handles, and the run ends on its signal's
    one line (test above, signalled as a group)."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-c", _POOL_THREAD_MASKS], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    threads = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
    assert threads, "the pool started no thread"  # its manager and queue feeder
    assert set(threads.values()) == {"True"}, threads


@pytest.mark.parametrize("name, code", tiered([("SIGTERM", 143), ("SIGHUP", 129)], quick=1))
def test_sigterm_leaves_no_temp_or_spill_files(tmp_path, big_npy, name, code):
    out = tmp_path / "out"
    out.mkdir()

    def writing(proc):
        return any(n.endswith(".tmp") for n in os.listdir(out))
    got = _signalled(["compare", big_npy, "-q", "--per-instance", out / "rows.parquet"],
                     tmp_path, getattr(signal, name), writing)
    if got is None:
        pytest.skip("the run finished before the signal")
    proc, _, err, left = got
    assert proc.returncode == code, err.decode()
    assert err.decode().splitlines() == [f"Error: terminated by {name}"]
    assert os.listdir(out) == [] and left == []


def test_sigterm_while_regrouping_removes_the_spill_files(tmp_path):
    rng = np.random.default_rng(0)
    n, m = 100_000, 50
    order = rng.permutation(n * m)  # unsorted by instance: regrouped through spill files
    pq.write_table(pa.table({"instance": np.repeat(np.arange(n), m)[order],
                             "position": np.tile(np.arange(m), n)[order],
                             "score": np.round(rng.random(n * m), 2)[order]}),
                   tmp_path / "long.parquet")

    def spilling(proc):
        return any(n.startswith("tieeval-long-") for n in os.listdir(tmp_path / "tmpdir"))
    got = _signalled(["compare", tmp_path / "long.parquet", "-q"], tmp_path,
                     signal.SIGTERM, spilling)
    if got is None:
        pytest.skip("the run finished before the signal")
    proc, _, err, left = got
    assert proc.returncode == 143, err.decode()
    assert err.decode().splitlines() == ["Error: terminated by SIGTERM"]
    assert left == []


def test_interrupt_between_thread_start_and_registration_does_not_hang_exit():
    # a thread pool's worker started but not yet recorded by its pool (where an interrupt
    # can land) is waited for at exit forever unless the interrupt path records it
    code = ("import threading, weakref\n"
            "import concurrent.futures.thread as cft\n"
            "from tieeval.cli.app import _adopt_stray_threads\n"
            "ex = cft.ThreadPoolExecutor(1)\n"
            "t = threading.Thread(target=cft._worker,\n"
            "                     args=(weakref.ref(ex), ex._work_queue, None, ()))\n"
            "t.start()\n"
            "_adopt_stray_threads()\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr


_SIGNAL_IN_IMPORT = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from tieeval.cli.app import Terminated, _stop_signals_raise
# the signals at their defaults whatever started this test (nohup ignores SIGHUP, a
# background job SIGINT): an ignored signal stays ignored, by design
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)
with _stop_signals_raise():
    try:
        import slow_module  # its body is signalled, then sleeps 0.3 s
        time.sleep(5)  # the signal, delivered again, ends this (or lands just before)
        print("never", flush=True)
    except {exc} as exc:
        # the import was whole: a module whose import raised is not in sys.modules
        done = getattr(sys.modules.get("slow_module"), "DONE", False)
        print("imported", done, flush=True)
        print("raised after the import", type(exc).__name__, flush=True)
"""


@pytest.mark.parametrize("sig,exc", [(signal.SIGTERM, "Terminated"),
                                     (signal.SIGHUP, "Terminated"),
                                     (signal.SIGINT, "KeyboardInterrupt")])
def test_a_stop_signal_inside_an_import_is_raised_once_the_import_is_over(tmp_path, sig,
                                                                           exc):
    """A stop signal arriving while the main thread imports a module is raised when the
    import is over, never inside Python's import machinery, where it could leave a module
    lock held and a batch thread importing that module waiting forever (a hang)."""
    (tmp_path / "slow_module.py").write_text(
        "import os, signal, time\n"
        f"os.kill(os.getpid(), {int(sig)})\n"
        "time.sleep(0.3)\n"
        "DONE = True\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", _SIGNAL_IN_IMPORT.format(exc=exc),
                        str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert p.stdout.splitlines() == ["imported True", f"raised after the import {exc}"], (
        p.stdout, p.stderr)


def test_sighup_ignored_under_nohup_stays_ignored():
    from tieeval.cli.app import _raise_terminated, _stop_signals_raise
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with _stop_signals_raise():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is _raise_terminated
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGHUP, old)


_AS_NOBODY = """
import os, sys
from tieeval.cli import main
warm, real = sys.argv[1].split("|"), sys.argv[2].split("|")
try:
    main(warm)  # everything the command imports, imported while root may read it
except SystemExit:
    pass
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
main(real)
"""


def _as_nobody(tmp_path, warm, real):
    """``real`` run by an unprivileged user (root reads and writes everything), after
    ``warm`` imported what it needs (the interpreter's own files may be root's only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-c", _AS_NOBODY, "|".join(map(str, warm)),
                           "|".join(map(str, real))], capture_output=True, env=env,
                          timeout=120, cwd=tmp_path)


def test_unreadable_input_and_unwritable_folder_are_exit_2(tmp_path, scores):
    os.chmod(tmp_path, 0o755)
    np.save(tmp_path / "ok.npy", scores)
    np.save(tmp_path / "secret.npy", scores)
    os.chmod(tmp_path / "secret.npy", 0o600)
    (tmp_path / "ro").mkdir(mode=0o755)
    (tmp_path / "w").mkdir(mode=0o777)
    warm = ["compare", tmp_path / "ok.npy", "-q", "-f", "json", "--per-instance",
            tmp_path / "w" / "warm.parquet"]
    p = _as_nobody(tmp_path, warm, ["compare", "secret.npy", "-q", "-f", "json"])
    assert p.returncode == 2, p.stderr
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        r"Error: secret\.npy: (cannot open: )?Permission denied", lines[0]), lines
    p = _as_nobody(tmp_path, warm, ["compare", "ok.npy", "-q", "-f", "json",
                                    "--per-instance", "ro/rows.parquet"])
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().splitlines() == [
        f"Error: ro/rows.parquet: cannot write the per-instance file: the folder "
        f"{tmp_path / 'ro'} is not writable"]
    assert os.listdir(tmp_path / "ro") == []


def test_per_instance_name_too_long_is_exit_2(tmp_path, scores):
    np.save(tmp_path / "a.npy", scores)
    name = tmp_path / ("r" * 300 + ".parquet")
    one_error(run("compare", tmp_path / "a.npy", "-q", "--per-instance", name),
              r"File name too long|file name too long")


def test_claims_fifo_is_refused_without_blocking(tmp_path, scores):
    np.save(tmp_path / "a.npy", scores)
    os.mkfifo(tmp_path / "claims.csv")
    p = cli_proc("audit", tmp_path / "a.npy", "--claims", tmp_path / "claims.csv", timeout=30)
    assert p.returncode == 2
    assert p.stderr.decode().splitlines() == [
        f"Error: {tmp_path / 'claims.csv'}: not a regular file (a FIFO, socket or device); "
        "tieeval reads files it can seek in"]


# ---------------------------------------------------------------------------------------
# misleading messages (20-23) and what-ifs (25)

def test_float16_csv_judges_ties_in_float16(tmp_path):
    # 0.50001 and 0.5 are one float16: tied; distinct in float64
    (tmp_path / "h.csv").write_text("instance,position,score\n1,0,0.5\n1,1,0.50001\n")
    half = evaluate_path(str(tmp_path / "h.csv"), ["HR@1"],
                         options=ReadOptions(score_dtype="float16"))
    assert str(half.dtype) == "float16" and half.metrics[0].tie_aware == 0.5
    full = evaluate_path(str(tmp_path / "h.csv"), ["HR@1"])
    assert full.metrics[0].tie_aware == 0.0
    (tmp_path / "o.csv").write_text("instance,position,score\n1,0,70000\n1,1,0.5\n")
    one_error(run("compare", tmp_path / "o.csv", "--score-dtype", "float16"),
              r"o\.csv: 'score' holds 70000\.0, beyond the range of float16")


def test_short_compressed_member_says_shorter(tmp_path):
    path = tmp_path / "s.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("scores.npy", npy_header("(10, 4)") + np.zeros(20, "<f4").tobytes())
    one_error(run("compare", path), r"s\.npz: corrupted or truncated file \(member "
                                    r"scores\.npy is shorter than its header says\)")


def test_bom_header_only_and_compressed_csv(tmp_path):
    (tmp_path / "bom.csv").write_bytes("\ufeffinstance,position,score\n1,0,0.5\n1,1,0.4\n"
                                       .encode())
    assert evaluate_path(str(tmp_path / "bom.csv"), ["HR@1"]).instances == 1
    (tmp_path / "h.csv").write_text("instance,position,score\n")
    one_error(run("compare", tmp_path / "h.csv"), r"h\.csv: no rows \(the CSV has a header "
                                                   r"only\)")
    with gzip.open(tmp_path / "g.csv.gz", "wt") as fh:
        fh.write("instance,position,score\n1,0,0.5\n1,1,0.4\n")
    assert evaluate_path(str(tmp_path / "g.csv.gz"), ["HR@1"]).instances == 1
    (tmp_path / "b.csv.bz2").write_bytes(b"BZh9")
    one_error(run("compare", tmp_path / "b.csv.bz2"),
              r"b\.csv\.bz2: bzip2-compressed CSV is not read; decompress it, or compress "
              r"it with gzip \(\.csv\.gz\)")
    with gzip.open(tmp_path / "scores.dat", "wt") as fh:
        fh.write("instance,position,score\n")
    one_error(run("compare", tmp_path / "scores.dat"), r"scores\.dat: gzip-compressed")


def test_qrels_cast_what_if(tmp_path):
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.50001 r\nq1 Q0 d2 2 0.5 r\nq1 Q0 d3 3 0.4 r\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    r = run("compare", tmp_path / "run", "--qrels", tmp_path / "qrels", "--cast", "bfloat16",
            "-m", "HR@1", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    metric = data["runs"][0]["metrics"][0]
    assert metric["tie_aware"] == pytest.approx(0.5)  # d1 and d2 tie in bfloat16


def test_csv_header_with_a_nul_byte_is_an_input_error(tmp_path):
    """Python before 3.11 refuses NUL in csv; either way a NUL header is one Error line."""
    path = tmp_path / "nul.csv"
    path.write_bytes(b"instance,pos\x00ition,score\n1,0,0.5\n")
    result = CliRunner().invoke(cli, ["compare", str(path)])
    assert result.exit_code == 2
    assert "the CSV header holds a NUL byte" in result.output


# ---------------------------------------------------------------------------------------
# a working folder deleted under the run; a folder the user may not search

def _in_deleted_folder(tmp_path, *args):
    """``tieeval ARGS`` run in ``tmp_path/g``, removed after the process went into it (as
    ``mkdir g && cd g && rmdir ../g`` leaves a shell)."""
    (tmp_path / "g").mkdir()
    return cli_proc(*args, cwd=tmp_path / "g",
                    preexec_fn=lambda: os.rmdir(tmp_path / "g"))


@pytest.mark.parametrize("option, name, what", [
    ("-o", "out.json", "the output"), ("--per-instance", "rows.parquet",
                                       "the per-instance file")])
def test_output_in_a_deleted_working_folder_is_one_line(tmp_path, scores, option, name,
                                                        what):
    np.save(tmp_path / "x.npy", scores)
    before = (tmp_path / "x.npy").read_bytes()
    p = _in_deleted_folder(tmp_path, "compare", "../x.npy", "-q", "-f", "json", option, name)
    assert (p.returncode, p.stderr.decode().splitlines()) == (
        2, [f"Error: {name}: cannot write {what}: the working folder was deleted; name a "
            "file in a folder that exists"])
    assert (tmp_path / "x.npy").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]


def test_a_deleted_working_folder_still_reads_and_writes_where_it_can(tmp_path, scores):
    np.save(tmp_path / "x.npy", scores)
    expected = cli_proc("compare", tmp_path / "x.npy", "-q", "-f", "json", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    p = _in_deleted_folder(tmp_path, "compare", "../x.npy", "-q", "-f", "json", "-o",
                           "../out.json", "--per-instance", tmp_path / "rows.parquet")
    assert p.returncode == 0, p.stderr
    got = (tmp_path / "out.json").read_text()
    assert got == expected.stdout.decode().replace(str(tmp_path / "x.npy"), "../x.npy")
    assert pq.read_metadata(tmp_path / "rows.parquet").num_rows == scores.shape[0]


def test_a_dump_in_a_folder_without_search_permission_says_permission_denied(tmp_path,
                                                                               scores):
    os.chmod(tmp_path, 0o755)
    np.save(tmp_path / "ok.npy", scores)
    (tmp_path / "closed").mkdir(mode=0o700)  # root's: the other user may not search it
    np.save(tmp_path / "closed" / "x.npy", scores)
    pq.write_table(scores_table(scores), tmp_path / "closed" / "x.parquet")
    warm = ["compare", tmp_path / "ok.npy", "-q", "-f", "json"]
    for name in ("closed/x.npy", "closed/x.parquet", "closed/missing.npy"):
        p = _as_nobody(tmp_path, warm, ["compare", name, "-q", "-f", "json"])
        assert (p.returncode, p.stderr.decode().splitlines()) == (
            2, [f"Error: {name}: cannot open: Permission denied (a folder on its path may "
                "not be searched)"]), name


@pytest.mark.parametrize("error, words", [
    (PermissionError(13, "Permission denied"),
     "cannot open: Permission denied (a folder on its path may not be searched)"),
    (NotADirectoryError(20, "Not a directory"), "a part of the path is not a folder"),
    (OSError(40, "Too many levels of symbolic links"),
     "cannot open: Too many levels of symbolic links"),
    (FileNotFoundError(2, "No such file or directory"), "no such file")])
def test_a_dump_that_cannot_be_reached_says_why(tmp_path, monkeypatch, error, words):
    target = str(tmp_path / "run.npy")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) == target:
            raise error
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(InputError) as caught:
        open_dump(target)
    assert str(caught.value) == f"{target}: {words}"


def test_a_reader_gone_from_stdout_ends_the_run_by_sigpipe_quietly(tmp_path, scores):
    # exit 141 in a shell (128 + SIGPIPE), as the exit-code table says: no message
    np.save(tmp_path / "x.npy", scores)
    (tmp_path / "tmp").mkdir()  # where stdout's copy of --per-instance - is gathered
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "TMPDIR": str(tmp_path / "tmp")}
    for extra in ([], ["-o", tmp_path / "r.json", "--per-instance", "-"]):
        proc = subprocess.Popen([sys.executable, "-m", "tieeval", "compare",
                                 tmp_path / "x.npy", "-f", "json", "-q", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        proc.stdout.close()  # before the interpreter has even started: nothing reads
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == -signal.SIGPIPE, err
        assert err == b""
    assert os.listdir(tmp_path / "tmp") == []
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_gzip_csv_damaged_in_its_first_block_is_an_input_error(tmp_path):
    """A bit flipped in the deflate stream of a .csv.gz can fail zlib itself (zlib.error,
    neither OSError nor EOFError) while the header line is read."""
    import zlib
    text = "instance,position,score\n" + "".join(f"{i},{j},{(i * j) % 7 / 7}\n"
                                                 for i in range(50) for j in range(5))
    good = gzip.compress(text.encode(), mtime=0)
    for at in range(20, len(good) - 8):  # the first flip that zlib itself refuses
        data = bytearray(good)
        data[at] ^= 0x10
        try:
            gzip.GzipFile(fileobj=__import__("io").BytesIO(bytes(data))).readline()
        except zlib.error:
            break
        except (OSError, EOFError):
            continue
    else:
        pytest.fail("no flip made zlib fail")
    path = tmp_path / "d.csv.gz"
    path.write_bytes(bytes(data))
    one_error(run("compare", path), r"d\.csv\.gz: cannot read CSV header \(Error -3 while "
                                    r"decompressing data")


def test_a_hard_link_to_a_file_of_an_input_folder_is_refused_as_an_output(tmp_path, scores,
                                                                          monkeypatch):
    # the folder's files are inputs too: a second name for one of them (same device and
    # inode) is refused for -o, --per-instance and the job summary, as the file itself is
    dataset = tmp_path / "ds"
    dataset.mkdir()
    pq.write_table(scores_table(scores), dataset / "part.parquet")
    link = tmp_path / "link"
    os.link(dataset / "part.parquet", link)
    before = (dataset / "part.parquet").read_bytes()
    for args in (["compare", dataset, "-o", link],
                 ["compare", dataset, "--per-instance", link, "-o", tmp_path / "r.txt"],
                 ["check", dataset, "-f", "github"]):
        if args[0] == "check":
            monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(link))
            monkeypatch.setenv("GITHUB_ACTIONS", "true")
        proc = cli_proc(*args)
        lines = proc.stderr.decode().splitlines()
        errors = [line for line in lines if line.startswith("Error:")]
        assert proc.returncode == 2, (args, lines)
        assert len(errors) == 1 and "input folder" in errors[0], lines
        assert os.path.samefile(link, dataset / "part.parquet")
        assert (dataset / "part.parquet").read_bytes() == before
