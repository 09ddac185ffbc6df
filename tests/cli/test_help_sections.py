"""Every command's --help lists its options under headings (cli/help_sections.py), not in
one list of fifty; every option has a heading, and the help says how to read stdin."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.cli.app import long_name
from tieeval.cli.help_sections import OTHER, SECTIONS, section_of

COMMANDS = sorted(cli.commands)


def help_of(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_a_section(command):
    options = [p for p in cli.commands[command].params if isinstance(p, click.Option)]
    unplaced = [long_name(p) for p in options if section_of(long_name(p)) == OTHER]
    assert not unplaced, f"give these options a section in cli/help_sections.py: {unplaced}"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_options_under_their_sections_in_order(command):
    lines = help_of(command).splitlines()
    headings = [line[:-1] for line in lines if line.endswith(":") and not line.startswith(" ")
                and line[:-1] in dict(SECTIONS)]
    order = [title for title, _ in SECTIONS]
    assert headings == sorted(headings, key=order.index)  # printed in the table's order
    assert "Options" not in headings and not any(line == "Options:" for line in lines)
    # Each option line sits under the heading its section names.
    current = None
    for line in lines:
        if line[:-1] in dict(SECTIONS) and line.endswith(":"):
            current = line[:-1]
        elif current and line.startswith("  -"):  # (the description above may show options)
            name = next(word.rstrip(",") for word in line.split() if word.startswith("--"))
            assert section_of(name) == current, (name, current)


def test_compare_help_has_the_newcomer_sections():
    text = help_of("compare")
    for heading in ("Input", "Relevance", "Ranking rule and convention", "Metrics", "Output",
                    "Performance", "What-ifs"):
        assert f"\n{heading}:\n" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_help_says_a_dump_named_dash_is_stdin(command):
    assert "A dump named - is read from standard input" in " ".join(help_of(command).split())
