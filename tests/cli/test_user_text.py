"""User text never becomes a line, a command or markup of its own (tieeval.util.escaping).

A dump named with a line break, ``::``, a carriage return, ``|``, ``<``, ``&``, a
backslash, ``%`` and ``##[`` is run through every output format and the warnings and
errors of the command line, in a subprocess under ``GITHUB_ACTIONS=true``; every line of
stdout and stderr is checked: none starts (after spaces, as the runner reads it) with
``::`` unless it is tieeval's own annotation, none holds ``##[`` (the runner's older
command form, read anywhere in a line), none an escape code; and each format still parses
as its own syntax (JSON, CSV rows of the header's width, JUnit XML, Markdown tables of the
header's width).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from tiers import tiered

from tieeval.util.escaping import TARGETS, escape

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTILE = "w\n::error title=INJ::x\r::stop-commands::tok|<b>&\\%_##[error]y"
OWN = re.compile(r"::(error|notice) (file=[^,]*,)?title=tieeval check::")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    scores = np.random.default_rng(0).integers(0, 3, (20, 10)).astype(float)
    # no positive field: a warning that quotes the name
    np.savez(folder / f"{HOSTILE}.npz", scores=scores)
    np.savez(folder / "good.npz", scores=scores, positive=np.zeros(20, dtype=np.int64))
    return folder


def run(folder, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT, "GITHUB_ACTIONS": "true", "CI": "true"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "tieeval", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def assert_no_injected_line(proc: subprocess.CompletedProcess) -> None:
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        # the runner reads a line as one command: tieeval's own annotation, whose data is
        # percent-encoded, is read before any '##[' in it could be
        assert not [line for line in text.splitlines() if "##[" in line
                    and not OWN.match(line)], name
        assert "\x1b" not in text, name
        for line in text.splitlines():  # every line break Python knows, \r included
            if line.lstrip().startswith("::"):
                assert OWN.match(line), (name, line)


def md_cells(row: str) -> int:
    """The cells of a Markdown table row: its unescaped pipes, less one."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) - 1


COMPARE = ["table", "json", "csv", "html", "markdown", "latex", "trec_eval"]


# every run: the table, JSON, CSV and HTML on one run, and the table and JSON on two; the
# slow tier the rest
@pytest.mark.parametrize("fmt, both", tiered([(f, False) for f in COMPARE], quick=4) + tiered(
    [(f, True) for f in COMPARE], quick=2))
def test_compare_formats_keep_a_hostile_name_in_its_place(dumps, fmt, both):
    files = [f"{HOSTILE}.npz"] + (["good.npz"] if both else [])
    proc = run(dumps, "compare", *files, "-f", fmt)
    assert proc.returncode == 0, proc.stderr
    assert_no_injected_line(proc)
    assert proc.stderr.count("Warning: ") == proc.stderr.count("\n")  # one line each
    if fmt == "json":
        paths = [r["path"] for r in json.loads(proc.stdout)["runs"]]
        assert f"{HOSTILE}.npz" in paths  # JSON keeps the name exactly
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(proc.stdout)))
        assert all(len(r) == len(rows[0]) for r in rows)
        assert any(r[0] == escape(f"{HOSTILE}.npz", "csv") for r in rows[1:])
    elif fmt == "markdown":
        tables = [line for line in proc.stdout.splitlines() if line.startswith("|")]
        widths = {md_cells(line) for line in tables if not line.startswith("| ---")}
        assert tables and len(widths) <= 2  # the metric table (7) and the tie table (2)


@pytest.mark.parametrize("fmt", tiered(["text", "github", "json", "junit"]))
def test_check_formats_keep_a_hostile_name_in_its_place(dumps, fmt):
    proc = run(dumps, "check", f"{HOSTILE}.npz", "good.npz", "-f", fmt)
    assert proc.returncode == 1, proc.stderr  # the tied dumps fail the default gate
    assert_no_injected_line(proc)
    if fmt == "junit":
        names = [s.get("name") for s in ET.fromstring(proc.stdout).iter("testsuite")]
        assert escape(f"{HOSTILE}.npz", "xml") in names
    if fmt == "json":
        json.loads(proc.stdout)
    if fmt == "github":  # the annotation's file property decodes to the name exactly
        files = {m.group(1) for m in re.finditer(r"^::error file=([^,]*),", proc.stdout, re.M)}
        decoded = {f.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
                   .replace("%2C", ",").replace("%25", "%") for f in files}
        assert decoded == {f"{HOSTILE}.npz", "good.npz"}


@pytest.mark.parametrize("fmt", tiered(["table", "csv", "markdown", "latex"]))
def test_ties_formats_keep_a_hostile_name_in_its_place(dumps, fmt):
    proc = run(dumps, "ties", f"{HOSTILE}.npz", "good.npz", "-f", fmt)
    assert proc.returncode == 0, proc.stderr
    assert_no_injected_line(proc)


def test_errors_keep_a_hostile_name_on_their_one_line(dumps):
    for args in (["compare", f"{HOSTILE}-missing.npz"],
                 ["compare", "good.npz", "-o", f"{HOSTILE}/out.json"],
                 ["compare", "good.npz", "--k", HOSTILE],
                 ["compare", "good.npz", HOSTILE[1:]]):
        proc = run(dumps, *args)
        assert proc.returncode == 2, proc.stderr
        assert_no_injected_line(proc)
        assert proc.stderr.splitlines()[-1].startswith("Error: ")


def test_trec_query_ids_stay_in_their_column(tmp_path):
    qids = ["::error::q1", "q##[error]2"]
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 1\n" for q in qids))
    (tmp_path / "run.txt").write_text("".join(f"{q} Q0 d{i} {i} {1.0 / i} tag\n"
                                              for q in qids for i in (1, 2)))
    proc = run(tmp_path, "compare", "--qrels", "qrels.txt", "run.txt", "-f", "trec_eval",
               "--per-query", "-m", "P.1")
    assert proc.returncode == 0, proc.stderr
    assert_no_injected_line(proc)
    assert [line.split("\t")[1] for line in proc.stdout.splitlines()][:2] == [
        escape(q) for q in qids]


def test_the_one_line_form():
    """Every character that is not printable is its Python escape; '::' and '##[' are
    broken; printable text is left as it is."""
    assert escape("a b/c-d_é.npz") == "a b/c-d_é.npz"
    assert escape("w\n::x\r\x1b[2K\u2028##[e]") == "w\\n:\\x3ax\\r\\x1b[2K\\u2028#\\x23[e]"
    assert escape(":::") == ":\\x3a:" and "::" not in escape("::::")


@pytest.mark.parametrize("to", TARGETS)
def test_no_target_lets_a_line_break_through(to):
    out = escape(HOSTILE, to)
    if to.startswith("github"):  # the runner's percent-encoding: the name exactly
        assert "\n" not in out and "\r" not in out and "%0A" in out
    else:
        assert out.splitlines() == [out] and "::" not in out and "##[" not in out


def test_each_target_escapes_its_own_syntax():
    assert escape("a|b\\c*_<x>", "markdown") == "a\\|b\\\\c\\*\\_\\<x\\>"
    assert escape("<a href='x'>&", "html") == "&lt;a href=&#x27;x&#x27;&gt;&amp;"
    assert escape("50% & $x_1", "latex") == r"50\% \& \$x\_1"
    assert escape("[bold]x[/]", "rich") == "\\[bold]x\\[/]"
    assert escape("a$b", "plot") == "a\\$b"
    assert escape("a:b,c%\n", "github-property") == "a%3Ab%2Cc%25%0A"
    assert escape("a:b,c%\n", "github-data") == "a:b,c%25%0A"


@pytest.mark.parametrize("fmt", tiered(["table", "json", "csv", "markdown"]))
def test_diff_formats_keep_a_hostile_name_in_its_place(dumps, fmt):
    proc = run(dumps, "diff", f"{HOSTILE}.npz", "good.npz", "-f", fmt,
               "--permutations", "200", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert_no_injected_line(proc)


def test_the_job_summary_keeps_a_hostile_name_in_its_cell(dumps, tmp_path):
    """The Markdown GitHub shows as the job summary: each row of its two tables has the
    table's cells (a '|' or a line break in the name splits none)."""
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PYTHONPATH": ROOT, "GITHUB_ACTIONS": "true",
           "GITHUB_STEP_SUMMARY": str(summary)}
    proc = subprocess.run([sys.executable, "-m", "tieeval", "check", f"{HOSTILE}.npz",
                           "good.npz", "-f", "github"], cwd=dumps, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    rows = [line for line in summary.read_text("utf-8").splitlines() if line.startswith("|")]
    dumps_table = [r for r in rows if md_cells(r) == 3]
    failed_table = [r for r in rows if md_cells(r) == 2]
    assert len(dumps_table) + len(failed_table) == len(rows)
    assert len(dumps_table) == 2 + 2  # header, rule, one row per dump
    assert any(escape(f"{HOSTILE}.npz", "markdown") in r for r in dumps_table)
    assert all(not line.lstrip().startswith("::")
               for line in summary.read_text("utf-8").splitlines())
