"""Worker pools never outlive their parent.

A process that evaluates with ``jobs=`` (a script, a test run, the command line) starts a
fork server, worker processes and multiprocessing's resource tracker. Killed (SIGKILL, or
SIGTERM at its default action, as a test runner or a job scheduler ends it), it runs no
clean-up of its own: each worker watches its parent and ends, and the fork server and the
resource tracker end once no worker holds their pipes. Every process the parent started is
found by a marker in its environment (children inherit it), read from ``/proc``.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest

from tieeval.engine import parallel
from tieeval.io.base import PART_BYTES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = "TIEEVAL_TEST_MARKER"

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux") or
                       not os.path.exists("/proc/self/environ"), reason="reads /proc"),
    pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                       reason="workers start from a fork server on Linux"),
]


def _marked(marker: str) -> dict[int, tuple[int, str]]:
    """The live processes whose environment carries ``marker``: pid -> (parent pid,
    command line). A zombie (ended, not yet reaped) has no environment left to read."""
    found = {}
    needle = f"{MARKER}={marker}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            found[int(name)] = (int(ppid), cmdline)
    return found


def _workers(tree: dict[int, tuple[int, str]]) -> list[int]:
    """The pool's workers in ``tree``: the children of its fork server."""
    servers = {pid for pid, (_, cmd) in tree.items() if "multiprocessing.forkserver" in cmd}
    return [pid for pid, (ppid, _) in tree.items() if ppid in servers]


def _kill_left(marker: str) -> None:
    """Whatever a failed test left behind, so that it does not linger after the run."""
    for pid in _marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _gone_within(marker: str, seconds: float) -> dict[int, tuple[int, str]]:
    """What is still alive of ``marker``'s processes after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    left = _marked(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _marked(marker)
    return left


def _wait_for(predicate, seconds: float, proc) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the parent ended first (exit {proc.returncode})")
        if time.monotonic() > deadline:
            pytest.fail("the workers never started")
        time.sleep(0.05)


# The parent: evaluates a small dump with a pool of 2 (checked against one process), then
# keeps the pool (kept for the next dump, as a test run keeps it) or keeps its workers busy
# inside one long C call (which holds the GIL, so no thread of the worker can run), and
# waits to be killed.
PARENT = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    import tieeval
    from tieeval.engine import parallel
    from tieeval.io import npy as tnpy


    def spin():
        os.write(1, f"busy {os.getpid()}\\n".encode())
        return sum(range(10 ** 15))  # hours, in one C call holding the GIL


    def stop(signum, frame):
        sys.exit(143)


    if __name__ == "__main__":
        path, mode = sys.argv[1:]
        signal.signal(signal.SIGTERM, stop if mode == "exit-on-sigterm" else signal.SIG_DFL)
        parallel.MIN_PARALLEL_BYTES = 0  # a pool for a small dump
        tnpy.PART_BYTES = 4096  # in many parts
        rng = np.random.default_rng(3)
        scores = (rng.integers(0, 6, size=(500, 17)) / 5).astype(np.float32)
        np.save(path, scores)
        pooled = tieeval.evaluate_path(path, jobs=2).to_dict()
        alone = tieeval.evaluate_path(path, jobs=1).to_dict()
        assert pooled == alone, (pooled, alone)
        assert len(parallel._POOL[2]._processes) == 2
        if mode == "busy":
            executor = parallel.pool(2)
            futures = [parallel._submit(executor, spin) for _ in range(2)]
        os.write(1, b"ready\\n")  # one write: the workers write to this pipe too
        time.sleep(600)
""")


def _start_parent(tmp_path, marker: str, mode: str):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    env = {**os.environ, "PYTHONPATH": ROOT, MARKER: marker}
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "s.npy"), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path)


def _read_lines(proc, count: int, seconds: float) -> list[str]:
    """The parent's next ``count`` lines of output (it and its workers write them)."""
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    fd = proc.stdout.fileno()
    buffer = b""
    while len(lines) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or proc.poll() is not None:
            pytest.fail(f"the parent said {lines!r} and {buffer!r}, then "
                        f"{'nothing' if proc.poll() is None else f'exit {proc.returncode}'}:"
                        f"\n{proc.stderr.read().decode() if proc.poll() is not None else ''}")
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.1))
        if ready:
            chunk = os.read(fd, 4096)
            buffer += chunk
            *done, buffer = buffer.split(b"\n")
            lines += [line.decode() for line in done]
    return lines


@pytest.mark.parametrize("signum, mode", [
    (signal.SIGKILL, "idle"),
    (signal.SIGTERM, "idle"),  # its default action: no clean-up runs either
    (signal.SIGKILL, "busy"),
    (signal.SIGTERM, "exit-on-sigterm"),  # a program that exits on SIGTERM: its own exit
], ids=["sigkill-idle", "sigterm-idle", "sigkill-busy-in-c", "sigterm-handled"])
def test_a_killed_api_parent_leaves_no_process(tmp_path, signum, mode):
    marker = uuid.uuid4().hex
    proc = _start_parent(tmp_path, marker, mode)
    try:
        said = _read_lines(proc, 3 if mode == "busy" else 1, 30)
        assert "ready" in said
        tree = _marked(marker)
        workers = _workers(tree)
        assert len(workers) == 2, tree
        if mode == "busy":  # both workers are inside the long call
            assert sorted(int(line.split()[1]) for line in said if line != "ready") == \
                sorted(workers)
        kinds = sorted(("worker" if pid in workers else
                        "parent" if pid == proc.pid else
                        "forkserver" if "multiprocessing.forkserver" in cmd else
                        "tracker" if "multiprocessing.resource_tracker" in cmd else cmd)
                       for pid, (_, cmd) in tree.items())
        assert kinds == ["forkserver", "parent", "tracker", "worker", "worker"]
        os.kill(proc.pid, signum)
        proc.wait(10)
        assert proc.returncode == (143 if mode == "exit-on-sigterm" else -signum)
        left = _gone_within(marker, 3.0)
        assert left == {}, left
    finally:
        _kill_left(marker)
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


@pytest.fixture(scope="module")
def big_npy(tmp_path_factory):
    """The smallest matrix the command line gives workers: two parts, and over the size
    below which a pool costs more than it saves."""
    path = tmp_path_factory.mktemp("big") / "big.npy"
    rows = max(PART_BYTES, parallel.MIN_PARALLEL_BYTES) // (4 * 1000) + 200
    rng = np.random.default_rng(0)
    scores = np.round(rng.random((rows, 1000), dtype=np.float32), 2)
    np.save(path, scores)
    assert os.path.getsize(path) > max(PART_BYTES, parallel.MIN_PARALLEL_BYTES)
    return path


def _full_pipe() -> tuple[int, int]:
    """A pipe already full: whoever writes to its (blocking) write end waits forever."""
    r, w = os.pipe()
    flags = fcntl.fcntl(w, fcntl.F_GETFL)
    fcntl.fcntl(w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    for size in (4096, 1):
        try:
            while True:
                os.write(w, b"x" * size)
        except BlockingIOError:
            pass
    fcntl.fcntl(w, fcntl.F_SETFL, flags)
    return r, w


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_killed_command_leaves_no_process(tmp_path, big_npy, signum):
    """``tieeval compare --jobs 2``: killed with its workers started (counting, or idle
    in the pool while the command waits on an output nobody reads)."""
    marker = uuid.uuid4().hex
    r, w = _full_pipe()
    env = {**os.environ, "PYTHONPATH": ROOT, MARKER: marker}
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tieeval", "compare", str(big_npy),
                                 "--jobs", "2", "--format", "json"],
                                stdout=w, stderr=err, env=env, cwd=tmp_path)
    os.close(w)
    try:
        _wait_for(lambda: len(_workers(_marked(marker))) == 2, 30, proc)
        os.kill(proc.pid, signum)
        proc.wait(10)
        left = _gone_within(marker, 3.0)
        assert left == {}, left
        stderr = (tmp_path / "stderr").read_text()
        if signum == signal.SIGTERM:  # handled: the command stops its workers itself
            assert proc.returncode == 143, stderr
            assert stderr.splitlines()[-1] == "Error: terminated by SIGTERM"
        else:
            assert proc.returncode == -signal.SIGKILL, stderr
        with os.fdopen(os.dup(r), "rb") as pipe:  # every writer gone: read to the end
            assert set(pipe.read()) == {ord("x")}  # the filler only: no report came
    finally:
        _kill_left(marker)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(r)


def test_the_fallback_watch_ends_the_worker_when_the_pipe_closes(tmp_path):
    """Where the kernel cannot send the signal (not Linux), the watch thread ends the
    worker: here, a process whose main thread sleeps."""
    r, w = os.pipe()
    code = ("import os, sys, threading, time\n"
            "from tieeval.engine import parallel\n"
            "fd = int(sys.argv[1])\n"
            "threading.Thread(target=parallel._end_with_parent, args=(fd,), daemon=True)"
            ".start()\n"
            "print('watching', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(r)], pass_fds=(r,),
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    os.close(r)
    try:
        assert proc.stdout.readline() == b"watching\n"
        time.sleep(0.2)
        assert proc.poll() is None  # the pipe is open: the watch waits
        start = time.monotonic()
        os.close(w)
        assert proc.wait(5) == 1
        assert time.monotonic() - start < 2
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_the_kernel_ends_a_worker_stuck_in_a_c_call_when_the_pipe_closes():
    r, w = os.pipe()
    code = ("import os, sys\n"
            "from tieeval.engine import parallel\n"
            "parallel._kill_on_hangup(int(sys.argv[1]))\n"
            "print('armed', flush=True)\n"
            "sum(range(10 ** 15))\n")  # no thread could run meanwhile
    proc = subprocess.Popen([sys.executable, "-c", code, str(r)], pass_fds=(r,),
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    os.close(r)
    try:
        assert proc.stdout.readline() == b"armed\n"
        time.sleep(0.2)
        assert proc.poll() is None
        start = time.monotonic()
        os.close(w)
        assert proc.wait(5) == -signal.SIGKILL
        assert time.monotonic() - start < 2
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_a_worker_started_after_its_parent_ended_ends_at_once():
    """The parent gone before the watch is armed (it died while the worker started): the
    pipe is at end-of-file already, which the watch thread sees at once."""
    r, w = os.pipe()
    os.close(w)
    code = ("import os, sys, time\n"
            "from tieeval.engine import parallel\n"
            "parallel._end_with_parent(int(sys.argv[1]))\n"
            "print('survived')\n")
    result = subprocess.run([sys.executable, "-c", code, str(r)], pass_fds=(r,),
                            capture_output=True, env={**os.environ, "PYTHONPATH": ROOT},
                            timeout=30)
    os.close(r)
    assert (result.returncode, result.stdout, result.stderr) == (1, b"", b"")
