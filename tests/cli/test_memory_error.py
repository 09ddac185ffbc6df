"""A MemoryError is the input error it is (a dump too big for the memory allowed): one
``Error:`` line naming the limit reached, exit 2; never an internal error or a traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

from click.testing import CliRunner

from tieeval.cli import app, cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FREE = os.path.join(ROOT, "sample_scores", "tie_free.parquet")


def test_memory_error_is_one_line_naming_the_limit(monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("tieeval.engine.local.evaluate_request", exhausted)
    res = CliRunner().invoke(cli, ["compare", FREE])
    assert res.exit_code == 2
    (line,) = res.output.strip().splitlines()
    assert line == f"Error: {app.memory_message()}"
    assert "internal error" not in line and "lower --batch-rows" in line


def test_memory_limit_names_a_ulimit_first(monkeypatch):
    limits = {resource.RLIMIT_AS: (3 * 2**30, resource.RLIM_INFINITY)}
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: limits.get(which, (resource.RLIM_INFINITY,) * 2))
    assert app.memory_limit() == "the process's limit of 3.0 GiB (RLIMIT_AS, ulimit -v)"
    limits.clear()
    # without a ulimit: a container's limit or the machine's memory, in GiB or MiB
    assert app.memory_limit().startswith(("the container's limit of ", "this machine's "))


def test_a_real_memory_error_under_ulimit_v():
    """The process limited to 1 GiB of address space, a dump too big to evaluate in it
    (one row of 40 million candidates, read whole)."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
            "from tieeval.cli import main\n"
            "import numpy\n"
            "def big(*a, **k):\n"
            "    numpy.ones((40_000, 10_000))\n"
            "import tieeval.engine.local as local\n"
            "local.evaluate_request = big\n"
            f"sys.argv = ['tieeval', 'compare', {FREE!r}]\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == ("Error: out of memory: the evaluation needed more than the "
                           "process's limit of 1.0 GiB (RLIMIT_AS, ulimit -v); lower "
                           "--batch-rows (and --jobs), or TIEEVAL_MAX_ROW_CANDIDATES for "
                           "very long rows\n")
