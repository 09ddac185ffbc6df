"""Every command's ``--help`` fits a terminal of 80 columns (``COLUMNS=80``): click wraps the
options' help to the width, and the examples, shown as written, are kept short or continued
with a backslash; the help of ``-m`` stays a few lines and points to the names' page."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tieeval.cli import cli

COMMANDS = [[], *([name] for name in cli.commands)]


def help_at_80(monkeypatch, command: list[str]) -> str:
    monkeypatch.setenv("COLUMNS", "80")  # what click reads the terminal's width from
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed():
    assert {"compare", "ties", "check", "diff", "rank", "audit"} <= set(cli.commands)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "tieeval")
def test_help_fits_80_columns(monkeypatch, command):
    lines = help_at_80(monkeypatch, command).splitlines()
    wide = [line for line in lines if len(line) > 80]
    assert not wide, wide
    examples = [line.strip() for line in lines if line.strip().startswith("tieeval ")]
    assert examples  # every help shows examples
    # a continued example goes on with an indented option
    for before, after in zip(lines, lines[1:]):
        if before.endswith(" \\"):
            assert after.lstrip().startswith("--") and after.startswith(" " * 6), after


def test_metric_help_is_short(monkeypatch):
    lines = help_at_80(monkeypatch, ["compare"]).splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("-m, --metric"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("-"))
    assert end - start <= 10, lines[start:end]
    assert "docs/metric-names.md" in " ".join(" ".join(lines[start:end]).split())
