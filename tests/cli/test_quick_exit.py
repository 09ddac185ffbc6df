"""The ``tieeval`` program ends without the interpreter's teardown
(:mod:`tieeval.cli.quick_exit`), and loses nothing by it: the command's exit code, all of
stdout, the exit handlers (temporary files, worker processes) and the threads still running
are as with Python's own exit; a stream that cannot be written is reported as Python does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from tiers import tiered

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A program run the way the console script runs it, after some set-up in the same process.
PROLOGUE = """\
import atexit, sys, threading, time
from tieeval.cli import program

class Noisy:  # freed by the teardown, which prints; the quick exit frees nothing
    def __del__(self):
        print("torn down", file=sys.stderr)

NOISY = Noisy()
"""


def _program(tmp_path, setup: str, args, **kw):
    script = tmp_path / "prog.py"
    script.write_text(PROLOGUE + setup + f"\nsys.argv = ['tieeval', *{list(map(str, args))!r}]"
                      "\nprogram()\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, str(script)], capture_output=True, env=env,
                          timeout=120, **kw)


@pytest.fixture()
def dump(tmp_path):
    path = tmp_path / "s.npy"
    rng = np.random.default_rng(5)
    scores = np.round(rng.random((500, 21)), 1).astype(np.float32)  # ties on purpose
    scores[:, 0] += 0.05
    np.save(path, scores)
    return path


def test_the_program_skips_the_teardown_and_keeps_the_code_and_stdout(tmp_path, dump):
    """The teardown does not run (the object freed by it does not print), and stdout is
    whole: the same JSON as the same command run by :func:`tieeval.cli.main`, which
    tears down as usual."""
    quick = _program(tmp_path, "", ["compare", dump, "-f", "json", "-q"])
    assert quick.returncode == 0, quick.stderr
    assert b"torn down" not in quick.stderr
    usual = subprocess.run([sys.executable, "-c", PROLOGUE + "from tieeval.cli import main\n"
                            f"main(['compare', {str(dump)!r}, '-f', 'json', '-q'])\n"],
                           capture_output=True, env={**os.environ, "PYTHONPATH": ROOT},
                           timeout=120)
    assert usual.returncode == 0, usual.stderr
    assert b"torn down" in usual.stderr  # the check above would see a teardown
    assert json.loads(quick.stdout) == json.loads(usual.stdout)


@pytest.mark.parametrize("args, code", tiered([
    (["check", "{dump}", "--max-tie-frequency", "0"], 1),  # a threshold failed
    (["compare", "{missing}"], 2),  # an input error
    (["compare", "{dump}", "--k", "0"], 2),  # a usage error (slow tier)
]))
def test_the_exit_code_is_the_commands(tmp_path, dump, args, code):
    args = [a.format(dump=dump, missing=tmp_path / "nope.npy") for a in args]
    quick = _program(tmp_path, "", args)
    usual = subprocess.run([sys.executable, "-c", "from tieeval.cli import main; main()", *args],
                           capture_output=True, env={**os.environ, "PYTHONPATH": ROOT},
                           timeout=120)
    assert usual.returncode == code, usual.stderr
    assert quick.returncode == code, quick.stderr
    assert quick.stdout == usual.stdout
    assert quick.stderr == usual.stderr


def test_exit_handlers_and_running_threads_finish_first(tmp_path, dump):
    """A thread still running when the command returns is waited for, and the exit
    handlers run after it, as at Python's exit (here: the thread writes a file, a handler
    reads it and prints)."""
    mark = tmp_path / "mark"
    setup = (f"MARK = {str(mark)!r}\n"
             "def late():\n"
             "    time.sleep(0.3)\n"
             "    open(MARK, 'w').write('thread done')\n"
             "threading.Thread(target=late).start()\n"
             "atexit.register(lambda: print('handler saw:', open(MARK).read(), file=sys.stderr))\n")
    quick = _program(tmp_path, setup, ["compare", dump, "-f", "json", "-q"])
    assert quick.returncode == 0, quick.stderr
    assert quick.stderr.decode().splitlines() == ["handler saw: thread done"]


def test_a_spooled_standard_input_is_removed(tmp_path, dump):
    """``-`` copies standard input to a temporary file; it is gone after the quick exit."""
    before = set(os.listdir(tmp_path))
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp_path)}
    with open(dump, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "tieeval", "compare", "-", "-q",
                               "-f", "json"], stdin=stdin, capture_output=True, env=env,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_stdout_that_cannot_be_written_is_reported(tmp_path, dump):
    """stdout on a full device: exit 2 and the one-line error, as without the quick exit."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "tieeval", "compare", str(dump), "-q",
                               "-f", "json"], stdout=full, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert done.returncode == 2
    assert done.stderr.decode() == ("Error: cannot write the output to stdout: "
                                    "No space left on device\n")


def test_a_message_code_is_left_to_python():
    """``end`` returns for a ``SystemExit`` carrying a message: Python prints it and
    exits 1 as usual."""
    from tieeval.cli.quick_exit import end
    assert end("a message") is None
