"""The GitHub Action (``action.yml`` at the repository root): a composite action whose
inputs are declared, whose steps install tieeval from the action's own checkout, and whose
check step, run here with bash as the runner runs it, is a valid ``tieeval check``
invocation that propagates the exit code and writes the annotations and the job summary."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACTION = os.path.join(ROOT, "action.yml")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_action() -> dict:
    yaml = pytest.importorskip("yaml")
    with open(ACTION, encoding="utf-8") as f:
        return yaml.safe_load(f)


def check_step(action: dict) -> dict:
    (step,) = [s for s in action["runs"]["steps"] if "tieeval check" in s.get("run", "")]
    return step


def test_action_is_a_composite_action_with_its_inputs():
    action = load_action()
    assert action["name"] and action["description"]
    inputs = action["inputs"]
    assert set(inputs) == {"dumps", "args", "python-version", "format", "output"}
    assert inputs["output"]["default"] == "" and inputs["output"]["required"] is False
    assert inputs["dumps"]["required"] is True
    assert inputs["format"]["default"] == "github"
    assert all(spec["description"] for spec in inputs.values())
    runs = action["runs"]
    assert runs["using"] == "composite"
    setup, install, check = runs["steps"]
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["python-version"] == "${{ inputs.python-version }}"
    # installs the checkout the workflow named (its REF), not a release from an index
    assert '"$GITHUB_ACTION_PATH"' in install["run"] and "pip install" in install["run"]
    assert check is check_step(action)
    for step in (install, check):
        assert step["shell"] == "bash"  # a composite run step must name its shell


def test_action_expressions_name_declared_inputs_and_stay_out_of_scripts():
    """A ``${{ }}`` expression in a ``run`` script is pasted into the shell code: inputs
    reach the scripts as environment variables only."""
    action = load_action()
    for step in action["runs"]["steps"]:
        assert not EXPRESSION.search(step.get("run", "")), step
        for value in [*step.get("env", {}).values(), *step.get("with", {}).values()]:
            for expression in EXPRESSION.findall(str(value)):
                assert expression.startswith("inputs.")
                assert expression[len("inputs."):] in action["inputs"]


@pytest.fixture()
def runner_env(tmp_path):
    """The environment the runner gives the check step: ``tieeval`` on PATH (this
    checkout's, through this interpreter), the workspace as the working directory, and a
    job summary file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "tieeval"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tieeval "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": ROOT, "GITHUB_STEP_SUMMARY": str(summary)}
    return env, summary


def run_check_step(env: dict, dumps: str, args: str = "", fmt: str = "github", cwd=ROOT,
                   output: str = ""):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    step = check_step(load_action())
    step_env = {**env}
    for name, value in step["env"].items():
        expression = EXPRESSION.fullmatch(value).group(1)
        step_env[name] = {"inputs.dumps": dumps, "inputs.args": args,
                          "inputs.format": fmt, "inputs.output": output}[expression]
    # as GitHub runs a `shell: bash` step: bash --noprofile --norc -eo pipefail {0}
    return subprocess.run([bash, "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           step["run"]], cwd=cwd, env=step_env, capture_output=True,
                          text=True, timeout=300)


def test_action_passes_a_tie_free_dump(runner_env):
    env, summary = runner_env
    result = run_check_step(env, "sample_scores/tie_free.*",
                            "--max-change NDCG@10=5%\n--min NDCG@10=0.30 --k 1 5 10")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith("::error")]
    # the pattern matched both shipped tie-free dumps (npz and parquet); 2 checks each
    assert lines[0] == ("::notice title=tieeval check::4 passed / 0 failed "
                        "(4 checks on 2 dumps)")
    assert "| sample\\_scores/tie\\_free.parquet | 2 | 0 |" in summary.read_text("utf-8")


def test_action_fails_the_step_on_a_tied_dump(runner_env):
    env, summary = runner_env
    result = run_check_step(env, "sample_scores/sigmoid_saturated.parquet "
                                 "sample_scores/tie_free.parquet")
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all(e.startswith("::error file=sample_scores/sigmoid_saturated.parquet,")
                          for e in errors)
    assert "### tieeval check" in summary.read_text("utf-8")


def test_action_takes_options_literally(runner_env, tmp_path):
    """``METRIC[gamma=G]=`` would be a shell pattern: it reaches tieeval as written."""
    env, _ = runner_env
    (tmp_path / "SNDCG@10a=0.2").write_text("")  # what the pattern would match
    dump = os.path.join(ROOT, "sample_scores", "tie_free.parquet")
    result = run_check_step(env, dump, "-m SNDCG@10 --gamma 0 0.5 --min "
                                       "SNDCG@10[gamma=0.5]=0.2", "text", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"PASS {dump}: SNDCG@10 γ=0.5 tie-aware")


def test_action_reports_an_input_error_with_code_2(runner_env):
    env, _ = runner_env
    result = run_check_step(env, "sample_scores/no_such_dump.npz")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("Error: ")


def test_action_passes_a_dump_named_like_an_option_as_a_dump(runner_env, tmp_path):
    """A committed file named ``--output=hijacked.npz`` matched by the dumps' pattern is
    checked as a dump (its annotations name it), never taken as ``--output``: no file
    ``hijacked.npz`` appears and the annotations reach the log."""
    env, _ = runner_env
    shutil.copy(os.path.join(ROOT, "sample_scores", "sigmoid_saturated.npz"),
                tmp_path / "--output=hijacked.npz")
    result = run_check_step(env, "*.npz", "--max-tie-decided 5%", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # the tied dump fails its check
    assert not (tmp_path / "hijacked.npz").exists()
    assert sorted(os.listdir(tmp_path)) == sorted(["--output=hijacked.npz", "bin",
                                                   "summary.md"])
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all(e.startswith("::error file=--output=hijacked.npz,title=tieeval ")
                          for e in errors)


def test_action_passes_the_dumps_after_the_options_and_a_double_dash():
    """The step's command line: options, then ``--``, then the dumps."""
    run = check_step(load_action())["run"]
    command = [line.strip() for line in run.splitlines() if line.strip().startswith("tieeval")]
    assert command == ['tieeval check "${args[@]}" --format "$TIEEVAL_FORMAT" "${output[@]}" '
                       '-- "${dumps[@]}"']


def test_action_writes_a_junit_report_to_the_output_file(runner_env, tmp_path):
    """``format: junit`` with ``output:``: the report goes to the file (the step log gets
    none of it), one test suite per dump, the tied dump's checks failed and the tie-free
    dump's passed, and the step still fails with exit code 1."""
    from xml.etree import ElementTree
    env, summary = runner_env
    for name in ("sigmoid_saturated.parquet", "tie_free.parquet"):
        shutil.copy(os.path.join(ROOT, "sample_scores", name), tmp_path / name)
    result = run_check_step(env, "sigmoid_saturated.parquet tie_free.parquet",
                            "--max-tie-decided 5%", "junit", cwd=tmp_path,
                            output="reports/tieeval check.xml")
    assert result.returncode == 2 and "reports" in result.stderr  # no such folder
    (tmp_path / "reports").mkdir()
    result = run_check_step(env, "sigmoid_saturated.parquet tie_free.parquet",
                            "--max-tie-decided 5%", "junit", cwd=tmp_path,
                            output="reports/tieeval check.xml")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    root = ElementTree.parse(tmp_path / "reports" / "tieeval check.xml").getroot()
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert set(suites) == {"sigmoid_saturated.parquet", "tie_free.parquet"}
    tied, free = suites["sigmoid_saturated.parquet"], suites["tie_free.parquet"]
    # a tie-free dump has no tie to decide anything; the saturated one's HR@1 is decided
    # by the tie-break in most rows (its positive ties with the top score)
    assert free.findall(".//failure") == [] and int(free.get("failures")) == 0
    assert tied.findall(".//failure") and int(tied.get("failures")) == len(
        tied.findall(".//failure"))
    assert len(tied.findall("testcase")) == len(free.findall("testcase")) > 0
    assert not summary.exists()  # only format github appends to the job summary
