"""``--output FILE`` on every command that writes data: the bytes stdout would carry, written
through the output sink (whole or not at all, never a device or an input), and nothing on
stdout."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tiers import tiered

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


# ---------------------------------------------------------------------------------------
# no output of a run is one of its inputs, the file behind standard input included, nor
# another of its outputs; '-' is stdout (run as the command line runs: the descriptors
# are the process's own)

def _tieeval(args, **kw):
    kw.setdefault("timeout", 120)
    kw.setdefault("env", {**os.environ})
    kw["env"]["PYTHONPATH"] = ROOT + os.pathsep + kw["env"].get("PYTHONPATH", "")
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "tieeval", *map(str, args)],
                          stderr=subprocess.PIPE, **kw)


def _refused(proc, words=""):
    """Exit 2, exactly one line on stderr, an ``Error:`` line holding ``words``."""
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert words in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def _descriptor_names():
    names = [name for name in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
             if os.path.exists(name)]
    if not names:
        pytest.skip("no name of a descriptor here")
    return names


@pytest.fixture
def dump(tmp_path):
    copy = tmp_path / "x.parquet"
    shutil.copy(FREE, copy)
    return copy


@pytest.mark.parametrize("option, given", tiered(
    [("--per-instance", "-"), ("-o", "named"), ("-o", "-"), ("--per-instance", "named")]))
def test_no_output_lands_on_the_file_behind_stdin(tmp_path, dump, option, given):
    before = dump.read_bytes()
    os.symlink(dump, tmp_path / "link.parquet")
    for target in [*_descriptor_names(), tmp_path / "link.parquet"]:
        with open(dump, "rb") as stdin:
            proc = _tieeval(["compare", "-" if given == "-" else dump, "-q", option, target],
                            stdin=stdin, cwd=tmp_path)
        _refused(proc, "is the input")
        assert dump.read_bytes() == before, target
    assert sorted(os.listdir(tmp_path)) == ["link.parquet", "x.parquet"]


def test_the_file_behind_stdin_is_never_written_even_when_not_read(tmp_path, dump):
    other = tmp_path / "other.json"
    other.write_text("kept\n")
    for target in _descriptor_names():
        with open(other, "rb") as stdin:
            proc = _tieeval(["compare", dump, "-q", "-f", "json", "-o", target], stdin=stdin)
        _refused(proc, "(the file behind standard input)")
    assert other.read_text() == "kept\n"


def test_a_pipe_on_stdin_is_no_output(dump):
    for target in _descriptor_names():
        proc = _tieeval(["compare", "-", "-q", "-o", target], input=dump.read_bytes())
        _refused(proc, "is a FIFO, not a regular file")
        assert proc.stdout == b""


@pytest.mark.parametrize("how", tiered(["a link to it", "the input", "stdin's file"], quick=1))
def test_step_summary_naming_an_input_is_refused_before_the_evaluation(tmp_path, dump, how):
    before = dump.read_bytes()
    os.symlink(dump, tmp_path / "link.parquet")
    summary = {"the input": dump, "a link to it": tmp_path / "link.parquet",
               "stdin's file": dump}[how]
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    with open(dump, "rb") as stdin:
        proc = _tieeval(["check", "-" if how == "stdin's file" else dump, "-q", "-f",
                         "github"], stdin=stdin, env=env)
    line = _refused(proc, f"GITHUB_STEP_SUMMARY {summary}: cannot append the job summary")
    assert "is the input" in line
    assert proc.stdout == b""  # refused before the evaluation: no annotation printed
    assert dump.read_bytes() == before


def test_two_outputs_naming_one_file_are_refused(tmp_path, dump):
    (tmp_path / "old.out").write_text("old\n")
    os.link(tmp_path / "old.out", tmp_path / "hard.out")
    os.symlink("same.out", tmp_path / "soft.out")
    for first, second in (("same.out", "same.out"), ("same.out", "./same.out"),
                          ("soft.out", "same.out"), ("old.out", "hard.out"),
                          ("same.out", str(tmp_path / "sub" / ".." / "same.out"))):
        (tmp_path / "sub").mkdir(exist_ok=True)
        proc = _tieeval(["compare", dump, "-f", "json", "-o", first, "--per-instance",
                         second], cwd=tmp_path)
        _refused(proc, "is also the output of this run")
        assert not os.path.exists(tmp_path / "same.out")
        assert (tmp_path / "old.out").read_text() == "old\n"
    pytest.importorskip("matplotlib")
    proc = _tieeval(["compare", dump, "-o", "fig.png", "--plot", "fig.png"], cwd=tmp_path)
    _refused(proc, "is also the output of this run")
    assert not os.path.exists(tmp_path / "fig.png")


def test_step_summary_naming_the_output_file_is_refused(tmp_path, dump):
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "report.txt")}
    proc = _tieeval(["check", dump, "-q", "-f", "github", "-o", tmp_path / "report.txt"],
                    env=env)
    line = _refused(proc, "of this run")  # whichever of the two was checked first
    assert "is also the output" in line or "is also the job summary" in line
    assert proc.stdout == b""  # refused before the evaluation
    assert sorted(os.listdir(tmp_path)) == ["x.parquet"]


def test_stdout_redirected_to_an_input_or_to_another_output(tmp_path, dump):
    before = dump.read_bytes()
    with open(dump, "ab") as out:  # '>> x.parquet': the report would land in the input
        _refused(_tieeval(["compare", dump, "-q"], stdout=out), "stdout: is the input")
    assert dump.read_bytes() == before
    with open(tmp_path / "rows.parquet", "wb") as out:  # '> rows.parquet --per-instance
        proc = _tieeval(["compare", dump, "-q", "--per-instance",  # rows.parquet'
                         tmp_path / "rows.parquet"], stdout=out)
    _refused(proc, "is the file stdout is redirected to, which carries the output")
    assert (tmp_path / "rows.parquet").read_bytes() == b""


def test_per_instance_dash_is_stdout_when_the_report_goes_to_a_file(tmp_path, dump):
    named = _tieeval(["compare", dump, "-q", "-o", tmp_path / "a.json", "--per-instance",
                      tmp_path / "rows.parquet"])
    assert named.returncode == 0, named.stderr
    dash = _tieeval(["compare", dump, "-o", tmp_path / "b.json", "--per-instance", "-"])
    assert dash.returncode == 0, dash.stderr
    assert dash.stderr.decode().splitlines()[-1].endswith("instance rows to stdout")
    rows = pq.read_table(tmp_path / "rows.parquet")
    assert rows.num_rows == pq.read_metadata(dump).num_rows  # one row per instance
    assert pq.read_table(io.BytesIO(dash.stdout)).equals(rows)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert not os.path.exists(tmp_path / "-") and not os.path.exists("-")


@pytest.mark.parametrize("args,words", [
    (["--per-instance", "-"], "--per-instance -: stdout already carries the report"),
    (["-o", "-", "--per-instance", "-"], "--per-instance -: stdout already carries"),
    (["-o", "OUT", "--plot", "-"], "--plot -: a plot is written to a file"),
])
def test_dash_where_stdout_is_taken_or_cannot_serve_is_refused(tmp_path, dump, args, words):
    args = [str(tmp_path / "r.json") if a == "OUT" else a for a in args]
    proc = _tieeval(["compare", dump, "-q", *args], cwd=tmp_path)
    _refused(proc, words)
    assert proc.stdout == b""
    assert sorted(os.listdir(tmp_path)) == ["x.parquet"]


def test_per_instance_dash_refuses_a_terminal(tmp_path, dump):
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        proc = _tieeval(["compare", dump, "-q", "-o", tmp_path / "r.json", "--per-instance",
                         "-"], stdout=follower)
    finally:
        os.close(follower)
        os.close(leader)
    _refused(proc, "stdout is a terminal")
    assert sorted(os.listdir(tmp_path)) == ["x.parquet"]
