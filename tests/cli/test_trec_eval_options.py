"""trec_eval's short options under ``--convention trec_eval``, and what a TREC run's
stderr says once.

``-c``, ``-J``, ``-M N`` and ``-l N`` are tieeval's ``--missing-queries zero``,
``--judged-only``, ``--depth N`` and ``--relevance-level N``; ``-q`` stays ``--quiet``
(trec_eval's ``-q`` is ``--per-query``). The oracle is trec_eval's printed output of its own
test suite (``-m all_trec -q -c -M100``).
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.cli.app import trec_eval_options

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "conformance",
                    "trec_eval_data")
QRELS = os.path.join(DATA, "qrels.test")
TRUNC = os.path.join(DATA, "results.trunc")


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def invoke(*args):
    return runner().invoke(cli, ["compare", "--qrels", QRELS, TRUNC, "--format", "trec_eval",
                                 "-m", "all_trec", "--per-query", *args])


def test_short_options_are_trec_evals_under_its_convention():
    short = invoke("--convention", "trec_eval", "-c", "-M100", "-q")
    spelled = invoke("--convention", "trec_eval", "--missing-queries", "zero", "--depth",
                     "100", "-q")
    assert short.exit_code == spelled.exit_code == 0, short.output
    assert short.stdout == spelled.stdout
    assert short.stderr == ""  # -q is still --quiet
    with open(os.path.join(DATA, "out.test.aqcM"), encoding="utf-8") as f:
        theirs = set(f.read().splitlines())
    assert set(short.stdout.splitlines()) <= theirs
    separate = invoke("--convention=trec_eval", "-c", "-M", "100", "-q")
    assert separate.stdout == short.stdout


def test_a_short_option_without_the_convention_names_tieevals():
    result = invoke("-c")
    assert result.exit_code == 2
    assert ("Error: -c is trec_eval's option: write --missing-queries zero, or give "
            "--convention trec_eval") in result.stderr
    result = invoke("-l2")
    assert result.exit_code == 2 and "write --relevance-level N" in result.stderr


@pytest.mark.parametrize("args,want", [
    (["-m", "map", "-J", "-l", "2"], ["-m", "map", "--judged-only", "--relevance-level", "2"]),
    (["--template", "-c", "-c"], ["--template", "-c", "--missing-queries", "zero"]),
    (["--", "-c"], ["--", "-c"]),
])
def test_option_values_are_never_read_as_options(args, want):
    assert trec_eval_options(["--convention", "trec_eval", *args],
                             {"--template", "-m", "--convention"})[2:] == want


def test_n_maps_only_where_the_command_has_no_summary():
    """trec_eval's -n (--nosummary) is compare's --no-summary; a command without that
    option leaves -n to click, which calls it unknown, rather than to another option."""
    args = ["--convention", "trec_eval", "-n", "--nosummary"]
    assert trec_eval_options(args, set(), {"--no-summary", "--convention"})[2:] == \
        ["--no-summary", "--no-summary"]
    assert trec_eval_options(args, set(), {"--convention"})[2:] == ["-n", "--nosummary"]
    result = invoke("-n")
    assert result.exit_code == 2
    assert "-n is trec_eval's option: write --no-summary" in result.stderr


def test_k_past_the_candidate_count_is_said_once():
    """results.trunc's shorter queries fall below four of trec_eval's cutoffs: one line."""
    result = invoke("--convention", "trec_eval")
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "exceeds the candidate" in line]
    assert said == [f"Warning: {TRUNC}: K exceeds the candidate count at 4 cutoffs (K=100 in "
                    "1, K=200 in 1, K=500 in 1, K=1000 in 2 instance(s))"]


def test_judged_only_prints_trec_evals_nan():
    """Under -J -c, query 302 (not in results.trunc) has no ranked document: trec_eval's
    iprec_at_recall_0.00 divides 0 by 0 and prints -nan, for the query and the mean; every
    line is trec_eval's."""
    result = invoke("--convention", "trec_eval", "-J", "-c", "-q")
    assert result.exit_code == 0, result.output
    with open(os.path.join(DATA, "out.test.aqcJ"), encoding="utf-8") as f:
        theirs = f.read().splitlines()
    ours = result.stdout.splitlines()
    names = {line.split("\t")[0] for line in ours}
    assert ours == [line for line in theirs if line.split("\t")[0] in names]
    assert "iprec_at_recall_0.00  \t302\t  -nan" in ours
    assert "iprec_at_recall_0.00  \tall\t  -nan" in ours
    # the JSON keeps its numbers: 302 counts 0 there, beside trec_eval's 301 and 303
    import json
    out = runner().invoke(cli, ["compare", "--qrels", QRELS, TRUNC, "-f", "json", "-q",
                                "--convention", "trec_eval", "-J", "-c", "-m",
                                "iprec_at_recall_0.00"])
    row = json.loads(out.stdout)["runs"][0]["metrics"][0]
    assert row["original"] == pytest.approx((0.3220 + 0.0 + 0.6000) / 3, abs=1e-4)
