"""The progress bar is drawn only where a person watches a format made for people.

Under a format read by a program, the runner or a browser (json, csv, github, junit,
trec_eval, html) or in CI (``CI`` or ``GITHUB_ACTIONS`` set) no bar is drawn unless
``--progress`` asks for it: where stdout and stderr are one terminal (``script``, a runner
in host mode), its frames and clearing escape codes would land in front of the first
``::error`` line, which the runner would then log as plain text. The runs here share one
pseudo-terminal between stdout and stderr, as those do.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tiers import tiered

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIED = os.path.join(ROOT, "sample_scores", "sigmoid_saturated.npz")
ESC = b"\x1b"
HIDE_CURSOR = b"\x1b[?25l"  # the bar's first code: it hides the cursor while drawn

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals")


def run_on_a_pty(args: list[str], **env_changes) -> tuple[int, bytes]:
    """``tieeval ARGS`` with stdout and stderr on one pseudo-terminal: its exit code and
    every byte it wrote there."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env.update({"PYTHONPATH": ROOT, "COLUMNS": "120", "TERM": "xterm-256color"})
    env.update({k: v for k, v in env_changes.items() if v is not None})
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tieeval", *args], cwd=ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=300), b"".join(chunks)


def test_the_pty_shows_the_bar_when_progress_is_asked_for():
    """The check of the tests below: on this pseudo-terminal the bar is drawn, with its
    escape codes, in front of the annotations when ``--progress`` asks for it."""
    code, out = run_on_a_pty(["check", TIED, "-f", "github", "--progress"],
                             GITHUB_ACTIONS="true")
    assert code == 1  # the tied dump fails the default gate
    first = out.index(b"::error ")
    assert ESC in out[:first]


@pytest.mark.parametrize("env", [{"GITHUB_ACTIONS": "true", "CI": "true"}, {}],
                         ids=["github-actions", "no-ci"])
def test_no_escape_code_precedes_the_first_annotation(env):
    code, out = run_on_a_pty(["check", TIED, "-f", "github"], **env)
    assert code == 1
    first = out.index(b"::error ")
    assert ESC not in out[:first]
    # and no line but tieeval's own annotations starts with '::'
    lines = out.replace(b"\r\n", b"\n").split(b"\n")
    assert all(line.startswith((b"::error file=", b"::notice title=tieeval check::"))
               for line in lines if line.lstrip().startswith(b"::"))


@pytest.mark.parametrize("fmt", tiered(["json", "csv", "html", "trec_eval"]))
def test_no_bar_under_a_machine_read_format(fmt):
    code, out = run_on_a_pty(["compare", TIED, "-f", fmt])
    assert code == 0, out[-2000:]
    assert ESC not in out


def test_no_bar_under_junit():
    code, out = run_on_a_pty(["check", TIED, "-f", "junit"])
    assert code == 1
    assert ESC not in out


@pytest.mark.parametrize("variable", ["CI", "GITHUB_ACTIONS"])
def test_no_bar_in_ci_under_the_table(variable):
    code, out = run_on_a_pty(["compare", TIED], **{variable: "true"})
    assert code == 0
    assert HIDE_CURSOR not in out  # the table's own colours are there; the bar is not


def test_the_bar_is_drawn_on_a_terminal_under_the_table_outside_ci():
    code, out = run_on_a_pty(["compare", TIED])
    assert code == 0
    assert HIDE_CURSOR in out[:out.index(b"sigmoid_saturated.npz")]


def test_no_progress_and_quiet_draw_nothing():
    for flag in ("--no-progress", "--quiet"):
        code, out = run_on_a_pty(["compare", TIED, flag])
        assert code == 0
        assert HIDE_CURSOR not in out


def test_ci_variable_set_to_false_is_not_ci():
    from tieeval.cli.progress import in_ci
    assert not in_ci({"CI": "false", "GITHUB_ACTIONS": ""})
    assert not in_ci({"CI": "0"})
    assert in_ci({"CI": "1"}) and in_ci({"GITHUB_ACTIONS": "true"})
