"""The output sink (``tieeval.sink``): every file tieeval writes is a regular file,
never an input, written completely to a temporary file and renamed, or not written at all.

Each refusal is checked to leave the target exactly as it was (a device node keeps its
type and numbers, an input its bytes) and the folder without temporary files.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tieeval
from tieeval import sink
from tieeval.cli import cli
from tieeval.errors import OutputError
from tieeval.sink import atomic_output, check_output_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error(result, pattern):
    """Exit 2 and exactly one line on stderr, ``Error: ...`` matching ``pattern``."""
    import re
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]


def char_device(path):
    """A character device node with /dev/null's numbers (1, 3) at ``path``, or a skip."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return os.stat(path)


def same_node(before: os.stat_result, path) -> bool:
    after = os.stat(path)
    return (stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
            and after.st_ino == before.st_ino)


def temp_files(folder):
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


@pytest.fixture
def dump(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "run.npz"
    tieeval.save_scores(path, np.round(rng.random((50, 8)), 1).astype(np.float32))
    return path


# ---------------------------------------------------------------------------------------
# the sink itself

def test_sink_writes_every_byte_and_renames(tmp_path):
    data = np.random.default_rng(0).bytes(3 << 20)  # larger than the sink's buffer
    target = tmp_path / "out.bin"
    with atomic_output(target) as out:
        out.write(b"head")
        out.write(data)
        out.write(b"tail")
        assert not target.exists() and len(temp_files(tmp_path)) == 1
    assert target.read_bytes() == b"head" + data + b"tail"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_sink_gives_a_new_file_the_umask_mode_and_keeps_an_existing_mode(tmp_path):
    umask = os.umask(0o022)
    try:
        with atomic_output(tmp_path / "new") as out:
            out.write(b"x")
        assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o644
        (tmp_path / "old").write_bytes(b"old")
        os.chmod(tmp_path / "old", 0o600)
        with atomic_output(tmp_path / "old") as out:
            out.write(b"new")
        assert stat.S_IMODE(os.stat(tmp_path / "old").st_mode) == 0o600
        assert (tmp_path / "old").read_bytes() == b"new"
    finally:
        os.umask(umask)


def test_short_writes_are_retried_until_complete(tmp_path, monkeypatch):
    real_write = os.write
    calls = []

    def stingy(fd, data):  # at most 7 bytes a call, as a pipe or a signal can cut a write
        calls.append(1)
        return real_write(fd, bytes(data[:7]))
    monkeypatch.setattr(sink.os, "write", stingy)
    data = bytes(range(256)) * 40
    with atomic_output(tmp_path / "out.bin") as out:
        out.write(data)
    assert (tmp_path / "out.bin").read_bytes() == data
    assert len(calls) >= len(data) // 7


def fill_after(monkeypatch, limit: int, chunk: int = 65536):
    """os.write in the sink as a disk with ``limit`` bytes free: short writes up to the
    limit, then ENOSPC, as the kernel does."""
    real_write = os.write
    state = {"written": 0}

    def write(fd, data):
        room = limit - state["written"]
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real_write(fd, bytes(data[:min(room, chunk)]))
        state["written"] += n
        return n
    monkeypatch.setattr(sink.os, "write", write)


def test_full_disk_part_way_raises_and_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    fill_after(monkeypatch, 100_000)
    with pytest.raises(OutputError, match=r"out\.bin: cannot write the output: No space left"):
        with atomic_output(target) as out:
            out.write(b"x" * (3 << 20))
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_write_that_makes_no_progress_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(sink.os, "write", lambda fd, data: 0)
    with pytest.raises(OutputError, match="No space left on device"):
        with atomic_output(tmp_path / "out.bin") as out:
            out.write(b"x" * (2 << 20))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("exc", [ValueError("bad"), KeyboardInterrupt()])
def test_error_or_interrupt_inside_the_block_removes_the_temporary_file(tmp_path, exc):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(type(exc)):
        with atomic_output(target) as out:
            out.write(b"partial" * 1000)
            raise exc
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_a_signal_just_after_the_temporary_file_is_created_leaves_nothing(tmp_path,
                                                                          monkeypatch):
    """SIGTERM's exception can be raised as soon as ``open`` has created the temporary
    file, before the name is handed back: the name stays known and the exit removes the
    file (a signal test once found it left behind)."""
    real_open = os.open

    def open_then_signalled(*args, **kwargs):
        os.close(real_open(*args, **kwargs))  # the file exists, its name not yet handed back
        raise KeyboardInterrupt

    monkeypatch.setattr(sink.os, "open", open_then_signalled)
    with pytest.raises(KeyboardInterrupt):
        sink.open_output(tmp_path / "out.bin")
    monkeypatch.undo()
    left = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(left) == 1 and str(tmp_path / left[0]) in sink._LIVE_TEMPS
    sink._remove_leftovers()  # what the exit runs
    assert os.listdir(tmp_path) == []


def test_a_failed_create_forgets_its_name_and_another_files_name_is_left_alone(
        tmp_path, monkeypatch):
    real_open = os.open
    calls = []

    def exists_then_denied(name, *args, **kwargs):
        calls.append(name)
        if len(calls) == 1:  # someone else's file under the name drawn first
            real_open(name, *args, **kwargs)
            raise FileExistsError(errno.EEXIST, "exists", name)
        raise PermissionError(errno.EACCES, "denied", name)

    monkeypatch.setattr(sink.os, "open", exists_then_denied)
    with pytest.raises(OutputError, match="denied"):
        sink.open_output(tmp_path / "out.bin")
    monkeypatch.undo()
    assert not set(calls) & sink._LIVE_TEMPS
    sink._remove_leftovers()
    assert os.listdir(tmp_path) == [os.path.basename(calls[0])]  # not ours: kept


def test_parquet_through_the_sink_reads_back_equal(tmp_path):
    rng = np.random.default_rng(1)
    table = pa.table({"x": rng.random(200_000), "y": rng.integers(0, 9, 200_000)})
    with atomic_output(tmp_path / "t.parquet") as out:
        with pq.ParquetWriter(out, table.schema) as writer:
            writer.write_table(table.slice(0, 70_000))
            writer.write_table(table.slice(70_000))
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


def test_parquet_on_a_full_disk_is_an_output_error(tmp_path, monkeypatch):
    fill_after(monkeypatch, 50_000)
    table = pa.table({"x": np.random.default_rng(1).random(500_000)})
    with pytest.raises(OutputError, match=r"t\.parquet: cannot write the output: No space"):
        with atomic_output(tmp_path / "t.parquet") as out:
            pq.write_table(table, out)
    assert os.listdir(tmp_path) == []


def test_pending_output_commits_or_discards_without_a_with_block(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    pending = sink.open_output(target, what="the rows")
    pending.file.write(b"new")
    pending.discard()
    pending.discard()  # twice is harmless
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]
    pending = sink.open_output(target)
    pending.file.write(b"new")
    pending.commit()
    pending.discard()  # after a commit: nothing to undo
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["out.bin"]


def test_temporary_name_fits_a_long_target_name(tmp_path):
    name = "n" * 250 + ".bin"  # 254 bytes: allowed, but not with a prefix and a suffix
    with atomic_output(tmp_path / name) as out:
        out.write(b"x")
    assert os.listdir(tmp_path) == [name]


# ---------------------------------------------------------------------------------------
# what the sink refuses

def test_refuses_a_device_node_and_leaves_it_intact(tmp_path):
    node = tmp_path / "null"
    before = char_device(node)
    with pytest.raises(OutputError, match="is a character device, not a regular file"):
        with atomic_output(node) as out:
            out.write(b"x")
    assert same_node(before, node)
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("kind", ["directory", "FIFO", "socket"])
def test_refuses_directories_fifos_and_sockets(tmp_path, kind):
    target = tmp_path / "target"
    if kind == "directory":
        target.mkdir()
    elif kind == "FIFO":
        os.mkfifo(target)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(target))
        s.close()
    with pytest.raises(OutputError, match=f"is a {kind}, not a regular file"):
        check_output_path(target)
    assert os.listdir(tmp_path) == ["target"]


def test_refuses_a_symlink_to_a_device_node(tmp_path):
    before = char_device(tmp_path / "null")
    os.symlink(tmp_path / "null", tmp_path / "link")
    with pytest.raises(OutputError, match="character device"):
        check_output_path(tmp_path / "link")
    assert same_node(before, tmp_path / "null")


def test_a_symbolic_link_is_written_through_never_replaced(tmp_path):
    (tmp_path / "real.bin").write_bytes(b"old")
    os.symlink("real.bin", tmp_path / "link.bin")
    with atomic_output(tmp_path / "link.bin") as out:
        out.write(b"new")
    assert os.path.islink(tmp_path / "link.bin")
    assert (tmp_path / "real.bin").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["link.bin", "real.bin"]


def test_per_instance_to_dev_stdout_leaves_the_link(tmp_path, dump):
    if not os.path.islink("/dev/stdout"):
        pytest.skip("no /dev/stdout link here")
    before = os.readlink("/dev/stdout")
    dev = sorted(os.listdir("/dev"))
    with open(tmp_path / "captured", "wb") as fh:  # stdout a regular file: the rename
        # lands on that file, never on /dev/stdout itself
        p = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(dump), "-q",
                            "-f", "json", "--per-instance", "/dev/stdout"], stdout=fh,
                           stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT},
                           timeout=120)
    assert p.returncode in (0, 2), p.stderr
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before
    assert sorted(os.listdir("/dev")) == dev


def test_refuses_an_input_by_name_hard_link_and_symbolic_link(tmp_path):
    src = tmp_path / "in.parquet"
    src.write_bytes(b"input")
    os.link(src, tmp_path / "hard.parquet")
    os.symlink(src, tmp_path / "soft.parquet")
    for target in ("in.parquet", "hard.parquet", "soft.parquet"):
        with pytest.raises(OutputError, match="is the input .*never overwrites its inputs"):
            with atomic_output(tmp_path / target, inputs=[str(src)]) as out:
                out.write(b"x")
    assert src.read_bytes() == b"input"
    assert temp_files(tmp_path) == []


def test_refuses_a_target_inside_an_input_folder(tmp_path):
    (tmp_path / "dataset").mkdir()
    with pytest.raises(OutputError, match="inside the input folder"):
        check_output_path(tmp_path / "dataset" / "new.parquet", inputs=[tmp_path / "dataset"])
    check_output_path(tmp_path / "new.parquet", inputs=[tmp_path / "dataset"])


def test_refuses_a_missing_folder_and_a_file_as_folder(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        check_output_path(tmp_path / "no" / "x.bin")
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(OutputError, match="is not a folder"):
        check_output_path(tmp_path / "f" / "x.bin")


def test_refuses_a_name_longer_than_the_file_system_allows(tmp_path):
    with pytest.raises(OutputError, match="File name too long|file name too long"):
        check_output_path(tmp_path / ("x" * 300 + ".parquet"))


def test_refuses_a_folder_it_cannot_write(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes any folder; the command-line test runs as another user")
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        with pytest.raises(OutputError, match="not writable"):
            check_output_path(folder / "x.bin")
    finally:
        os.chmod(folder, 0o755)


# ---------------------------------------------------------------------------------------
# every writer goes through it

def test_per_instance_refuses_device_node_and_leaves_it_intact(tmp_path, dump):
    node = tmp_path / "null"
    before = char_device(node)
    one_error(invoke("compare", dump, "-q", "--per-instance", node),
              r"null: is a character device, not a regular file")
    assert same_node(before, node)
    assert temp_files(tmp_path) == []


def test_per_instance_refuses_to_overwrite_the_input(tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "a.parquet"
    tieeval.save_scores(path, np.round(rng.random((30, 6)), 1).astype(np.float32))
    before = path.read_bytes()
    one_error(invoke("compare", path, "-q", "--per-instance", path),
              r"a\.parquet: is the input .*a\.parquet; tieeval never overwrites its inputs")
    assert path.read_bytes() == before
    assert "scores" in pq.read_schema(path).names


def test_per_instance_refuses_to_overwrite_the_qrels(tmp_path):
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    one_error(invoke("compare", tmp_path / "run", "--qrels", tmp_path / "qrels", "-q",
                     "--per-instance", tmp_path / "qrels"), r"qrels: is the input")
    assert (tmp_path / "qrels").read_text() == "q1 0 d1 1\n"


def test_per_instance_refuses_a_directory_in_one_line(tmp_path, dump):
    one_error(invoke("compare", dump, "-q", "--per-instance", tmp_path),
              r"is a directory, not a regular file")


def test_per_instance_on_a_full_disk_is_exit_2_and_keeps_the_old_file(tmp_path, dump,
                                                                       monkeypatch):
    target = tmp_path / "rows.parquet"
    target.write_bytes(b"old")
    fill_after(monkeypatch, 300)
    one_error(invoke("compare", dump, "-q", "--per-instance", target),
              r"rows\.parquet: cannot write the per-instance file: No space left on device")
    assert target.read_bytes() == b"old"
    assert temp_files(tmp_path) == []


def test_per_instance_output_unchanged_through_the_sink(tmp_path, dump):
    res = invoke("compare", dump, "-q", "-k", "1", "-f", "json", "--per-instance",
                 tmp_path / "rows.parquet")
    assert res.exit_code == 0, res.output
    run = json.loads(res.output)["runs"][0]
    table = pq.read_table(tmp_path / "rows.parquet")
    hr = run["metrics"][0]
    assert table.column("HR@1_tie_aware").to_numpy().mean() == pytest.approx(hr["tie_aware"])
    assert temp_files(tmp_path) == []


def test_plot_refuses_device_node_and_leaves_it_intact(tmp_path, dump):
    pytest.importorskip("matplotlib")
    node = tmp_path / "fig.png"
    before = char_device(node)
    one_error(invoke("compare", dump, "-q", "--plot", node),
              r"fig\.png: is a character device, not a regular file")
    assert same_node(before, node)


def test_plot_on_a_full_disk_keeps_the_old_figure(tmp_path, dump, monkeypatch):
    pytest.importorskip("matplotlib")
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")
    fill_after(monkeypatch, 1000, chunk=100)
    one_error(invoke("compare", dump, "-q", "--plot", target),
              r"fig\.png: cannot write the plot: No space left on device")
    assert target.read_bytes() == b"old"
    assert temp_files(tmp_path) == []


def test_save_scores_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "x.npz")
    with pytest.raises(OutputError, match="is a FIFO"):
        tieeval.save_scores(tmp_path / "x.npz", np.ones((2, 3)))
    assert stat.S_ISFIFO(os.stat(tmp_path / "x.npz").st_mode)


def test_save_scores_on_a_full_disk_keeps_the_old_dump(tmp_path, monkeypatch):
    path = tmp_path / "x.npz"
    tieeval.save_scores(path, np.ones((2, 3)))
    before = path.read_bytes()
    fill_after(monkeypatch, 10_000)
    with pytest.raises(OutputError, match=r"x\.npz: cannot write the dump: No space left"):
        tieeval.save_scores(path, np.zeros((1000, 30)))
    assert path.read_bytes() == before
    assert temp_files(tmp_path) == []


# ---------------------------------------------------------------------------------------
# a real full disk: a small tmpfs (root with mount permission) or a file size limit

@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip("mount is not permitted here")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


def cli_proc(*args, **kw):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "tieeval", *map(str, args)],
                          capture_output=True, env=env, timeout=120, **kw)


def test_per_instance_on_a_real_full_disk_leaves_nothing(tmp_path, small_tmpfs):
    rng = np.random.default_rng(2)
    np.save(tmp_path / "a.npy", np.round(rng.random((20_000, 20)), 2).astype(np.float32))
    p = cli_proc("compare", tmp_path / "a.npy", "-q", "-f", "json", "--per-instance",
                 small_tmpfs / "rows.parquet")
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().splitlines() == [
        f"Error: {small_tmpfs / 'rows.parquet'}: cannot write the per-instance file: No space "
        "left on device"]
    assert os.listdir(small_tmpfs) == []


def limited_file_size(limit: int):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def test_save_scores_past_a_file_size_limit_leaves_nothing(tmp_path):
    code = ("import numpy as np, tieeval\n"
            f"tieeval.save_scores({str(tmp_path / 'x.npz')!r}, np.ones((1000, 100)))\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                       preexec_fn=limited_file_size(100_000), timeout=120)
    assert p.returncode == 1
    assert "OutputError: " in p.stderr.decode() and "File too large" in p.stderr.decode()
    assert os.listdir(tmp_path) == []
