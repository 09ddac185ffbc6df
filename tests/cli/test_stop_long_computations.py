"""A stop signal ends a long exact computation within a second.

The measures of a batch run on the sort threads (tieeval.kernels.threads); a signal is
handled in the main thread, which then waits for them: they stop at their next checkpoint
(tieeval.util.stopping) instead of finishing their batch. The case: ``-m all_trec`` on a TREC
run of 200 queries x 1,400 documents whose every query is one tie block (the exact tie
measures, infAP, binG / G, IPrec, ERR, over blocks of 1,400 items: seconds a batch).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tieeval.util.stopping import Stopped, Token, checkpoint, running

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")


@pytest.fixture(scope="module")
def tied_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tied")
    rng = np.random.default_rng(7)
    run, qrels = [], []
    for q in range(200):
        for d in range(1400):
            run.append(f"q{q} Q0 d{d} {d + 1} 1.0 sys\n")  # one tie block per query
            rel = rng.random()
            if rel < 0.05:
                qrels.append(f"q{q} 0 d{d} {1 + int(rel < 0.02)}\n")
            elif rel < 0.35:
                qrels.append(f"q{q} 0 d{d} 0\n")
    (folder / "run.txt").write_text("".join(run))
    (folder / "qrels.txt").write_text("".join(qrels))
    return folder / "run.txt", folder / "qrels.txt"


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in os.listdir(f"/proc/{p}/task") if os.path.exists(f"/proc/{p}/task") else ():
            try:
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    kids = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            found.update(kids)
            todo.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# slow tier: the run must be seconds into its measures before the signal (about 12 CPU-s a
# case with the dump's writing); every run checks the stop token and the threads below
@pytest.mark.slow
@pytest.mark.parametrize("name, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_all_trec_on_large_tie_blocks_stops_within_a_second(tmp_path, tied_run, name, code):
    run, qrels = tied_run
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tieeval", "compare", str(run), "--qrels",
                             str(qrels), "-m", "all_trec"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    # the measures are under way (start-up and reading take about 2 s of CPU; the whole
    # run about 15)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and _cpu_seconds(proc.pid) < 5:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("the run ended before the signal")
    children = _descendants(proc.pid)
    sent = time.monotonic()
    proc.send_signal(getattr(signal, name))
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)
        pytest.fail(f"still running 60 s after {name}:\n{proc.communicate()[1].decode()}")
    took = time.monotonic() - sent
    out, err = proc.communicate()
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal")
    assert proc.returncode == code, err.decode()
    assert err.decode().splitlines() == [
        "Error: interrupted" if name == "SIGINT" else f"Error: terminated by {name}"]
    assert took < 1.0, f"{took:.2f} s from {name} to the exit"
    assert out == b""
    assert os.listdir(tmp) == [] and sorted(os.listdir(tmp_path)) == ["tmpdir"]
    assert not [c for c in children if _alive(c)]


def test_a_stopped_token_stops_the_work_at_its_next_checkpoint():
    token = Token()
    steps = []
    with running(token):
        for i in range(5):
            checkpoint()
            steps.append(i)
            if i == 2:
                token.stop()
                with pytest.raises(Stopped):
                    checkpoint()
                break
    assert steps == [0, 1, 2]
    checkpoint()  # no token outside the work: nothing to stop


def test_batches_running_on_threads_stop_when_the_consumer_stops(monkeypatch):
    """An interrupt (or an error) where the main thread takes a batch's result: the batches
    running on the other threads stop at their next checkpoint, not at their end."""
    from tieeval.kernels import threads
    monkeypatch.setattr(threads, "_THREADS", 2)
    monkeypatch.delenv("TIEEVAL_SORT_THREADS", raising=False)
    ended = []

    def work(i):
        if i == 0:
            raise KeyboardInterrupt  # as the signal raises it where the caller waits
        start = time.monotonic()
        try:
            while time.monotonic() - start < 30:  # a long exact loop
                checkpoint()
                time.sleep(0.001)
        finally:
            ended.append(time.monotonic() - start)
        return i

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(threads.map_batches(work, iter(range(4))))
    assert time.monotonic() - started < 5
    assert all(t < 5 for t in ended)
