"""The README's and the guide's promises: the quickstart commands run, their output is real,
the Python API example runs, every command is documented."""

from __future__ import annotations

import os
import re
import shlex

import numpy as np
import pytest
from click.testing import CliRunner
from guide import ROOT, read

from tieeval.cli import cli

ROW = re.compile(r"\s+(HR|NDCG|MRR)(@\d+)?\s+\d")
README = read("README.md")


def quickstart_commands(text: str = README) -> list[str]:
    block = text.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines()]


def test_ci_runs_the_readme_quickstart_verbatim():
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    commands = quickstart_commands()
    assert len(commands) == 2
    for command in commands:
        assert command in ci.splitlines()


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_quickstart_output_is_real(page):
    """The README's quickstart, and the guide's copy of it."""
    text = read(page)
    assert quickstart_commands(text) == quickstart_commands()
    install_and_run = quickstart_commands(text)[0]
    compare = install_and_run.split("&& ")[-1]
    args = shlex.split(compare)[1:]
    assert args[0] == "compare"
    os.chdir(ROOT)
    out = CliRunner().invoke(cli, args, catch_exceptions=False, terminal_width=100).output
    shown = text.split("The first command prints", 1)[1].split("```text", 1)[1]
    shown = shown.split("```", 1)[0]
    # Every metric row's First, Last and Tie-aware cells are platform-independent.
    rows = [line.split() for line in shown.splitlines() if ROW.match(line)]
    assert len(rows) == 7
    actual = {line.split()[0]: line.split() for line in out.splitlines()
              if ROW.match(line)}
    for row in rows:
        assert actual[row[0]][2:6] == row[2:6]
    for label in ("Avg. top-score tie size", "Top-score tie frequency"):
        shown_line = next(line for line in shown.splitlines() if label in line)
        assert shown_line.split()[-1] in out


def test_guide_python_example_runs(capsys):
    block = read("docs/python.md").split("# Python API", 1)[1].split("```python", 1)[1]
    block = block.split("```", 1)[0]
    exec(compile(block, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    assert printed[1:4] == ["1.0", "0.5", "0.75"] and printed[4] == "0.5"


def test_every_command_is_documented():
    """The README shows every command, and the guide's commands page has a section for each,
    the one its --help points to."""
    commands_page = read("docs/commands.md")
    for name in cli.commands:
        assert f"tieeval {name}" in README, name
        assert re.search(f"^## `tieeval {name}`$", commands_page, re.M), name
        help_text = CliRunner().invoke(cli, [name, "--help"], terminal_width=200).output
        assert f"docs/commands.md#tieeval-{name}" in help_text, name
    assert "docs/index.md" in CliRunner().invoke(cli, ["--help"]).output


def test_changelog_has_unreleased_on_top():
    log = open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8").read()
    assert re.search(r"^## \[Unreleased\]", log, re.M)
    first = re.search(r"^## \[", log, re.M).group(0)
    assert log.index("## [Unreleased]") == log.index(first)


def test_sample_scores_are_reproducible(tmp_path, monkeypatch):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_samples", os.path.join(ROOT, "sample_scores", "make_samples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "HERE", str(tmp_path))
    mod.main()
    for name in ("sigmoid_saturated", "tie_free"):
        fresh = np.load(tmp_path / f"{name}.npz")["scores"]
        shipped = np.load(os.path.join(ROOT, "sample_scores", f"{name}.npz"))["scores"]
        assert fresh.dtype == np.float32 and np.array_equal(fresh, shipped)
    saturated = np.load(os.path.join(ROOT, "sample_scores", "sigmoid_saturated.npz"))["scores"]
    assert (saturated == np.float32(1.0)).any(axis=1).mean() > 0.5


def test_changelog_sections_and_bullets():
    """Keep a Changelog: release headings, then only its section names, no repeated bullet."""
    log = open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8").read()
    allowed = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    for release in re.split(r"^## ", log, flags=re.M)[1:]:
        sections = re.findall(r"^### (.+)$", release, re.M)
        assert sections and set(sections) <= allowed, sections
        assert len(sections) == len(set(sections)), sections
        bullets = [" ".join(b.split()) for b in re.findall(r"^- (.+?)(?=^- |^#|\Z)", release,
                                                           re.M | re.S)]
        assert len(bullets) == len(set(bullets))


def _exit_code_table(page: str) -> set[int]:
    section = read(page).split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| **")]
    return {int(code) for row in rows for code in re.findall(r"\*\*(\d+)\*\*",
                                                             row.split(" | ")[0])}


@pytest.mark.parametrize("page", ["README.md", "docs/commands.md"])
def test_exit_code_tables_list_every_code_tieeval_returns(page):
    import signal

    from tieeval.cli import app
    returned = {value for name, value in vars(app).items() if name.startswith("EXIT_")}
    returned |= {0, 128 + signal.SIGPIPE}  # success; killed by SIGPIPE (| head)
    # the codes a signal ends a run with are 128 + its number, as shells report them
    assert {app.EXIT_HANGUP, app.EXIT_INTERRUPTED, app.EXIT_TERMINATED} == {
        128 + signal.SIGHUP, 128 + signal.SIGINT, 128 + signal.SIGTERM}
    assert _exit_code_table(page) == returned == {0, 1, 2, 3, 129, 130, 141, 143}
