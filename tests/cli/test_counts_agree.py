"""Counts printed with their noun agree with it: ``1 check``, ``2 checks``, never ``1 checks``
or ``check(s)``. The checks run on the sample dumps; the counts expected are those of the
checks asked for (one threshold per dump, and the number of dumps given)."""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.report.format import counted

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SATURATED = os.path.join(ROOT, "sample_scores", "sigmoid_saturated.parquet")
TIE_FREE = os.path.join(ROOT, "sample_scores", "tie_free.parquet")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("n,text", [(0, "0 checks"), (1, "1 check"), (2, "2 checks"),
                                    (11, "11 checks")])
def test_counted(n, text):
    assert counted(n, "check") == text
    assert counted(n, "query", "queries").endswith("query" if n == 1 else "queries")


def _no_bad_plural(text):
    assert not re.search(r"\b1 [a-z]+s\b", text.replace("1 of ", "")), text
    assert "(s)" not in text, text


def test_one_check_on_one_dump_is_singular():
    text = invoke("check", TIE_FREE, "--max-inflation", "NDCG@10=5%")
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[1] == "1 check passed"
    gh = invoke("check", TIE_FREE, "--max-inflation", "NDCG@10=5%", "--format", "github")
    assert gh.exit_code == 0, gh.output
    assert "::notice title=tieeval check::1 passed / 0 failed (1 check on 1 dump)" \
        in gh.stdout.splitlines()
    for out in (text.stdout, gh.stdout):
        _no_bad_plural(out)


def test_one_failed_check_and_its_advice_are_singular():
    bad = invoke("check", SATURATED, "--max-inflation", "NDCG@10=5%")
    assert bad.exit_code == 1, bad.output
    lines = bad.stdout.splitlines()
    assert lines[1] == "1 of 1 check failed"
    assert lines[2].startswith("Failed: --max-inflation NDCG@10=5.00% (1 check); to relax")
    _no_bad_plural(bad.stdout)


def test_several_checks_and_dumps_are_plural():
    gh = invoke("check", TIE_FREE, SATURATED, "--max-inflation", "NDCG@10=5%",
                "--format", "github")
    assert gh.exit_code == 1, gh.output
    assert "(2 checks on 2 dumps)" in gh.stdout
    one_dump = invoke("check", TIE_FREE, "--max-inflation", "NDCG@10=5%", "--min",
                      "NDCG@10=0.01", "--format", "github")
    assert "(2 checks on 1 dump)" in one_dump.stdout


def test_a_ranking_of_one_is_singular():
    out = invoke("rank", SATURATED, TIE_FREE, "-m", "HR@1", "--format", "markdown")
    assert out.exit_code == 0, out.output
    summary = [line for line in out.stdout.splitlines() if "ranking changes" in line]
    assert summary and all("ranking(s)" not in line for line in summary)
    assert all(re.search(r"in 1 of 1 ranking\.", line) for line in summary)
    two = invoke("rank", SATURATED, TIE_FREE, "-m", "HR@1", "-m", "HR@5", "--format",
                 "markdown")
    assert re.search(r"in \d of 2 rankings\.", two.stdout), two.stdout


def test_one_instance_and_one_claim_are_singular(tmp_path):
    import numpy as np
    one = tmp_path / "one.npy"
    np.save(one, np.array([[0.9, 0.5, 0.5]]))
    out = invoke("compare", one, "-m", "HR@1")
    assert out.exit_code == 0, out.output
    assert "1 instance × 3 candidates" in out.stdout
    diff = invoke("diff", one, one, "-m", "HR@1")
    assert diff.exit_code == 0, diff.output
    assert "1 instance, matched by row order" in diff.stdout
    _no_bad_plural(diff.stdout.replace("0 of 1 ", ""))
    claims = tmp_path / "claims.csv"
    claims.write_text("method,dataset,task,metric,k,value\none,toy,user,HR,1,1.0\n")
    audit = invoke("audit", one, "--meta", "dataset=toy", "--meta", "task=user",
                   "--claims", claims)
    assert " of 1 claim flagged" in audit.stdout, audit.output
