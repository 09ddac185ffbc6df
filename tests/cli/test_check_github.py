"""``tieeval check --format github``: an ``::error`` annotation per failed check, one
``::notice`` summary (no notice per passed check), and the job summary appended to
``$GITHUB_STEP_SUMMARY``; the counts against pass/fail worked out here from the scores."""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli


@pytest.fixture()
def dumps(tmp_path):
    """Top-score tie frequencies known by hand: 2 of 4 rows, 0 of 4, 4 of 4."""
    rows = {"half.npz": [[1, 1, 0], [2, 2, 1], [3, 2, 1], [1, 0, 2]],
            "none.npz": [[3, 1, 0], [2, 0, 1], [3, 2, 1], [1, 0, 2]],
            "all.npz": [[1, 1, 1], [2, 2, 0], [3, 3, 3], [5, 0, 5]]}
    paths = {}
    for name, scores in rows.items():
        scores = np.array(scores, dtype=np.float64)
        np.savez(tmp_path / name, scores=scores)
        top = scores == scores.max(axis=1, keepdims=True)
        paths[str(tmp_path / name)] = float(np.mean(top.sum(axis=1) > 1))
    assert list(paths.values()) == [0.5, 0.0, 1.0]
    return paths


def _invoke(paths, env):
    return CliRunner(env=env).invoke(cli, ["check", *paths, "--max-tie-frequency", "25%",
                                           "--format", "github", "-q"])


def test_github_annotates_failures_only_with_one_summary(dumps):
    result = _invoke(dumps, {"GITHUB_STEP_SUMMARY": None})
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    failing = [p for p, freq in dumps.items() if freq > 0.25]
    errors = [line for line in lines if line.startswith("::error ")]
    assert [e.split(",title=")[0] for e in errors] == [f"::error file={p}" for p in failing]
    notices = [line for line in lines if line.startswith("::notice")]
    assert notices == [f"::notice title=tieeval check::{len(dumps) - len(failing)} passed / "
                       f"{len(failing)} failed (3 checks on 3 dumps)"]
    assert not [line for line in lines if line.startswith("::") and "PASS" in line]


def test_github_appends_the_job_summary(dumps, tmp_path):
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n", encoding="utf-8")
    result = _invoke(dumps, {"GITHUB_STEP_SUMMARY": str(target)})
    assert result.exit_code == 1, result.output
    text = target.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### tieeval check\n")  # appended, not replaced
    rows = [line for line in text.splitlines() if line.startswith("| ") and "npz" in line]
    counts = [[cell.strip() for cell in row.strip("| ").split("|")][1:] for row in rows[:3]]
    assert counts == [["0", "1"] if freq > 0.25 else ["1", "0"] for freq in dumps.values()]
    assert len(rows) == 3 + sum(freq > 0.25 for freq in dumps.values())
    again = _invoke(dumps, {"GITHUB_STEP_SUMMARY": str(target)})
    assert again.exit_code == 1
    assert target.read_text(encoding="utf-8").count("### tieeval check") == 2


def test_github_summary_write_failure_is_one_error_line(dumps, tmp_path):
    result = _invoke(dumps, {"GITHUB_STEP_SUMMARY": str(tmp_path)})  # a folder
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(
        f"Error: GITHUB_STEP_SUMMARY {tmp_path}: cannot append the job summary: ")
    assert "Traceback" not in result.output


def test_other_formats_leave_the_job_summary_alone(dumps, tmp_path):
    target = tmp_path / "summary.md"
    for fmt in ("text", "json", "junit"):
        result = CliRunner(env={"GITHUB_STEP_SUMMARY": str(target)}).invoke(
            cli, ["check", *dumps, "--max-tie-frequency", "25%", "-f", fmt, "-q"])
        assert result.exit_code == 1, result.output
    assert not os.path.exists(target)


def test_github_summary_fifo_is_refused_at_once_not_blocked_on(dumps, tmp_path):
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)  # an append would block until a reader opens the other end
    result = _invoke(dumps, {"GITHUB_STEP_SUMMARY": str(fifo)})
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: GITHUB_STEP_SUMMARY {fifo}: cannot append the job summary: {fifo}: is a "
        "FIFO, not a regular file; tieeval writes the job summary to regular files only")


def _damaged(tmp_path) -> list[str]:
    """A dump cut short, one holding a NaN, one with no instance; named with characters
    an annotation's file property escapes (',' and ':')."""
    whole = tmp_path / "whole.npz"
    np.savez(whole, scores=np.array([[0.9, 0.1], [0.4, 0.6]]))
    (tmp_path / "cut,1.npz").write_bytes(whole.read_bytes()[:200])
    np.savez(tmp_path / "nan:2.npz", scores=np.array([[0.9, np.nan], [0.4, 0.6]]))
    np.savez(tmp_path / "empty.npz", scores=np.zeros((0, 2)))
    return [str(tmp_path / name) for name in ("cut,1.npz", "nan:2.npz", "empty.npz")]


def _property(path: str) -> str:
    return path.replace("%", "%25").replace(":", "%3A").replace(",", "%2C")


@pytest.mark.parametrize("at", [0, 2, 3])
def test_github_annotates_a_damaged_dump_and_still_checks_the_others(dumps, tmp_path, at):
    summary_file = tmp_path / "summary.md"
    alone = {p: _invoke([p], {"GITHUB_STEP_SUMMARY": None}).stdout.splitlines()
             for p in dumps}
    failing = [p for p, freq in dumps.items() if freq > 0.25]
    for bad in _damaged(tmp_path):
        files = list(dumps)
        files.insert(at, bad)
        result = _invoke(files, {"GITHUB_STEP_SUMMARY": str(summary_file)})
        assert result.exit_code == 2, result.output
        lines = result.stdout.splitlines()
        errors = [line for line in lines if line.startswith("::error ")]
        expected = [p for p in files if p == bad or p in failing]  # in the order given
        assert [e.split(",title=")[0] for e in errors] == \
            [f"::error file={_property(p)}" for p in expected]
        (annotation,) = [e for e in errors if e.startswith(f"::error file={_property(bad)},")]
        (stderr,) = result.stderr.splitlines()
        assert annotation == (f"::error file={_property(bad)},title=tieeval check::ERROR "
                              + stderr[len("Error: "):].replace("%", "%25"))
        for path in failing:  # each failed check's annotation as when checked alone
            assert [e for e in errors if e.startswith(f"::error file={path},")] == \
                [line for line in alone[path] if line.startswith("::error ")]
        notices = [line for line in lines if line.startswith("::notice")]
        assert notices == [f"::notice title=tieeval check::{len(dumps) - len(failing)} "
                           f"passed / {len(failing)} failed (3 checks on 3 dumps; 1 could "
                           "not be checked)"]
    summary = summary_file.read_text(encoding="utf-8")
    assert summary.count("### tieeval check") == 3
    assert "1 dump could not be checked" in summary


def test_a_damaged_dump_named_with_a_line_break_is_still_its_own_error(dumps, tmp_path):
    """The error writes the name's line break as \\n (one line): it is still the dump's
    own error, annotated, and no line of the name starts a workflow command."""
    bad = str(tmp_path / "b\n::warning::x,y:.npz")
    with open(bad, "wb") as fh:
        fh.write(b"PK\x03\x04 cut short")
    good = next(p for p, freq in dumps.items() if freq == 0.0)
    result = _invoke([good, bad], {"GITHUB_STEP_SUMMARY": None})
    assert result.exit_code == 2, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"::error file={_property(bad).replace(chr(10), '%0A')},"
                               "title=tieeval check::ERROR ")
    assert lines[1].startswith("::notice title=tieeval check::1 passed / 0 failed")
    assert all(not line.startswith("::warning") for line in lines + result.stderr.splitlines())
