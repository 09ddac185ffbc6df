"""``--output FILE`` on every command that writes data: the bytes stdout would carry, written
through the output sink (whole or not at all, never a device or an input), and nothing on
stdout."""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

from tieeval.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "sample_scores")
TIED = os.path.join(SAMPLES, "sigmoid_saturated.parquet")
FREE = os.path.join(SAMPLES, "tie_free.parquet")
CLAIMS = os.path.join(SAMPLES, "claims.csv")

# every command that writes data, with a format of each kind of renderer (text, rich
# table, JSON, CSV), and the exit code it ends with on the samples
COMMANDS = [
    (["compare", TIED, "--format", "json"], 0),
    (["compare", TIED, FREE], 0),
    (["compare", TIED, FREE, "--table", "3", "--format", "latex"], 0),
    (["ties", TIED, FREE, "--format", "csv"], 0),
    (["check", TIED], 1),
    (["check", FREE, "--format", "junit"], 0),
    (["diff", FREE, TIED, "-m", "HR@1", "--permutations", "200"], 0),
    (["rank", TIED, FREE, "--format", "markdown"], 0),
    (["audit", TIED, FREE, "--claims", CLAIMS, "--format", "json"], 1),
]


@pytest.mark.parametrize("args,code", COMMANDS, ids=lambda v: " ".join(map(str, v))
                         if isinstance(v, list) else str(v))
def test_output_file_holds_what_stdout_would(args, code, tmp_path):
    expected = CliRunner().invoke(cli, [*args, "--quiet"])
    assert expected.exit_code == code, expected.output
    target = tmp_path / "out.txt"
    got = CliRunner().invoke(cli, [*args, "--quiet", "--output", str(target)])
    assert got.exit_code == code, got.output
    assert got.stdout == ""
    assert target.read_text(encoding="utf-8") == expected.stdout
    assert expected.stdout  # something was written
    assert os.listdir(tmp_path) == ["out.txt"]  # no temporary file left


def test_output_dash_is_stdout():
    plain = CliRunner().invoke(cli, ["compare", FREE, "-f", "json", "-q"])
    dash = CliRunner().invoke(cli, ["compare", FREE, "-f", "json", "-q", "-o", "-"])
    assert dash.exit_code == 0 and dash.stdout == plain.stdout


def test_output_refuses_devices_and_inputs_before_evaluating(tmp_path, monkeypatch):
    copy = tmp_path / "run.parquet"
    shutil.copy(FREE, copy)
    claims = tmp_path / "claims.csv"
    shutil.copy(CLAIMS, claims)
    before = copy.read_bytes()

    def never(*args, **kwargs):
        raise AssertionError("the evaluation started before --output was checked")

    monkeypatch.setattr("tieeval.engine.local.evaluate_request", never)
    for args, words in (
            (["compare", str(copy), "-o", os.devnull], "is a character device"),
            (["compare", str(copy), "-o", str(copy)], "is the input"),
            (["audit", str(copy), "--claims", str(claims), "-o", str(claims)], "is the input"),
            (["ties", str(copy), "-o", str(tmp_path)], "directory"),
            (["rank", str(copy), "-o", str(tmp_path / "missing" / "x.md")],
             "does not exist")):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, res.output
        (line,) = res.output.strip().splitlines()
        assert line.startswith("Error: ") and words in line
    assert copy.read_bytes() == before


def test_failed_run_leaves_the_output_as_it_was(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old\n")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    res = CliRunner().invoke(cli, ["compare", str(bad), "-f", "json", "-o", str(target)])
    assert res.exit_code == 2
    assert target.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["bad.parquet", "out.json"]


def test_every_data_command_has_output():
    for name, command in cli.commands.items():
        assert any("--output" in p.opts for p in command.params), name
