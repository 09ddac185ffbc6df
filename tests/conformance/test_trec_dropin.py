"""``tieeval compare --convention trec_eval --format trec_eval`` as a drop-in for trec_eval 10
on the options users carry over: ``-n`` / ``--nosummary`` and measure parameters in ``-m``
(``P.5,7``, ``ndcg_cut.3,7``, ``iprec_at_recall.0.25,0.5``, ``rbp.p=0.9``, ``set_F.1.0``,
``ndcg.1=1,2=2``), with ``-q``, ``-c``, ``-J``, ``-M`` and ``-l``.

The oracle is trec_eval 10's output, byte for byte: ``trec_dropin/<case>.txt``, written by
``make_trec_dropin.py`` from the cases of ``trec_dropin/cases.tsv``, and the trec_eval binary
itself where there is one (``TREC_EVAL``, else ``/work/bin/trec_eval``; CI has none). The
command line is trec_eval's, with only ``-q`` written ``--per-query`` (``-q`` is tieeval's
``--quiet``).
"""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner
from make_trec_dropin import OUT, cases, trec_eval_output

from tieeval.cli import cli

CASES = {name: (qrels, run, options) for name, qrels, run, options in cases()}
TREC_EVAL = os.environ.get("TREC_EVAL") or shutil.which("trec_eval") or "/work/bin/trec_eval"


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def tieeval(qrels, run, options: list[str]):
    ours = ["--per-query" if option == "-q" else option for option in options]
    return runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "--convention",
                                 "trec_eval", "--format", "trec_eval", "--quiet", *ours],
                           catch_exceptions=False)


@pytest.mark.parametrize("name", list(CASES))
def test_drop_in_output_is_trec_evals_byte_for_byte(name):
    qrels, run, options = CASES[name]
    result = tieeval(qrels, run, options)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == (OUT / f"{name}.txt").read_bytes()


@pytest.mark.skipif(not os.access(TREC_EVAL, os.X_OK), reason="no trec_eval binary")
@pytest.mark.parametrize("name", list(CASES))
def test_the_saved_outputs_are_the_binarys(name):
    """The saved oracle is what trec_eval prints today (so the comparison above is with
    trec_eval, not with a stale file)."""
    qrels, run, options = CASES[name]
    assert trec_eval_output(TREC_EVAL, qrels, run, options) == \
        (OUT / f"{name}.txt").read_bytes()


def test_the_cases_cover_what_they_claim():
    """-n alone prints nothing (no runid line either), -n -q the query lines only, and the
    parameter cases print names carrying the parameters as written."""
    assert (OUT / "n_official.txt").read_bytes() == b""
    per_query = (OUT / "n_q_official.txt").read_text().splitlines()
    assert per_query and not any("\tall\t" in line or line.startswith("runid")
                                 for line in per_query)
    names = {line.split()[0] for line in (OUT / "default_parameters.txt").read_text()
             .splitlines()}
    assert {"rbp_p=0.9", "set_F_1.0", "utility_1,-1,0,0", "ndcg_1=1,2=2"} <= names
    names = {line.split()[0] for line in (OUT / "cutoff_lists.txt").read_text().splitlines()}
    assert {"P_7", "ndcg_cut_3", "iprec_at_recall_0.25", "Rprec_mult_0.50"} <= names


@pytest.mark.parametrize("options,message", [
    (["-m", "rbp.p=0.8"], "'rbp.p=0.8': tieeval computes trec_eval's rbp at its default "
                          "parameters only: p=0.9"),
    (["-m", "set_F.0.5"], "computes trec_eval's set_F at its default parameters only: "
                          "set_F.1"),
    (["-m", "ndcg.1=0,2=1"], "level=gain pairs that keep each gain the level"),
    (["-m", "G.-1=-1"], "level=gain pairs that keep each gain the level"),
    (["-m", "utility.1,-1,0,1"], "utility.1,-1,0,0"),
    (["-m", "11pt_avg.0.2,0.5,0.8"], "11pt_avg.0,0.1,0.2"),
    (["-m", "P.5,5"], "'P.5,5' gives a parameter of P twice, which trec_eval refuses"),
    (["-m", "iprec_at_recall.0.5,.50"], "gives a parameter of iprec_at_recall twice"),
    (["-m", "map.5"], "trec_eval's map takes no parameters"),
])
def test_parameters_tieeval_does_not_compute_are_refused(options, message):
    """A parameter tieeval cannot honour is one Error line and exit 2, never a line that
    differs from trec_eval's."""
    qrels, run, _ = CASES["n_official"]
    result = tieeval(qrels, run, options)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert result.stdout == ""


def test_no_summary_needs_the_trec_eval_format_and_n_needs_the_convention():
    qrels, run, _ = CASES["n_official"]
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "-n"])
    assert result.exit_code == 2
    assert "-n is trec_eval's option: write --no-summary" in result.stderr
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "--no-summary"])
    assert result.exit_code == 2
    assert "--no-summary apply to --format trec_eval" in result.stderr


def test_relstring_writes_each_judgement_as_trec_eval_does(tmp_path):
    """m_relstring.c's characters: the judgement 0-9, '>' above 9, '.' for any negative
    judgement (in the pool, unjudged), '-' for a document in no qrels line; ties broken
    by docno descending (d6 before d5 at the same score)."""
    run = tmp_path / "run"
    run.write_text("".join(f"q1 Q0 d{i} {i} {score} tag\n" for i, score in
                           ((1, 9.0), (2, 8.0), (3, 7.0), (4, 6.0), (5, 5.0), (6, 5.0))))
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 12\nq1 0 d2 -2\nq1 0 d3 -1\nq1 0 d4 3\nq1 0 d6 0\n")
    options = ["-q", "-m", "relstring.6", "-m", "num_ret"]
    result = tieeval(qrels, run, options)
    assert result.exit_code == 0, result.stderr
    # derived from m_relstring.c by hand: d1 12 '>', d2 '.', d3 '.', d4 '3', d6 '0', d5 '-'
    assert result.stdout.splitlines()[:2] == ["num_ret               \tq1\t6",
                                              "relstring_6           \tq1\t'>..30-'"]
    if os.access(TREC_EVAL, os.X_OK):
        assert result.stdout_bytes == trec_eval_output(TREC_EVAL, qrels, run, options)


def test_relstring_is_left_out_with_a_warning_for_another_column():
    qrels, run, _ = CASES["n_official"]
    result = runner().invoke(cli, ["compare", "--qrels", str(qrels), str(run), "--convention",
                                   "trec_eval", "--format", "trec_eval", "--per-query",
                                   "--column", "tie_aware", "-m", "relstring", "-m", "map"])
    assert result.exit_code == 0, result.stderr
    assert "relstring" not in result.stdout and "map" in result.stdout
    assert "relstring's lines are left out: it is the Original ranking's judgements" \
        in result.stderr


def test_parameters_trec_eval_keeps_on_its_bogus_ranking_are_refused_under_c():
    """Under -c trec_eval scores a query the run misses on a one-document bogus ranking
    and resets utility and rbp_resid only when they are named without parameters: with
    them, its lines hold the bogus values (-1, 1.0), which tieeval refuses to guess."""
    qrels, run, _ = CASES["relstring_c"]
    result = tieeval(qrels, run, ["-c", "-m", "utility.1,-1,0,0", "-m", "rbp_resid.p=0.9"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "trec_eval scores a query the run misses on a bogus one-document ranking for " \
        "rbp_resid_p=0.9, utility_1,-1,0,0" in result.stderr
    result = tieeval(qrels, run, ["-c", "-m", "utility", "-m", "rbp_resid"])
    assert result.exit_code == 0, result.stderr


def test_relstring_of_a_run_read_from_standard_input():
    """A run piped in (``-``) is read from its spool for relstring, as for the figures."""
    qrels, run, _ = CASES["n_official"]
    args = ["compare", "--qrels", str(qrels), "-", "--convention", "trec_eval", "--format",
            "trec_eval", "--per-query", "--quiet", "-m", "relstring", "-m", "map"]
    piped = runner().invoke(cli, args, input=run.read_bytes())
    assert piped.exit_code == 0, piped.stderr
    named = runner().invoke(cli, [*args[:3], str(run), *args[4:]])
    assert piped.stdout == named.stdout
    # trec_eval's own line (trec_eval_data/out.test.aq)
    assert "relstring             \t301\t'0000011000'\n" in piped.stdout
