"""Every trec_eval name tieeval accepts means what trec_eval means by it.

The oracle is trec_eval's own printed output (``trec_eval_data/out.test.aq``:
``trec_eval -m all_trec -q qrels.test results.test``): ``-m NAME`` for one measure prints
the lines of that measure only, at trec_eval's default parameters (``-m P`` is ``P_5`` ...
``P_1000``, ``-m success`` ``success_1``, ``success_5``, ``success_10``), and the ``runid``
line only where trec_eval prints it (``-m runid``, or a nickname that lists it).
"""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.errors import TieevalError
from tieeval.metrics import spellings
from tieeval.metrics.metric import Metric

DATA = os.path.join(os.path.dirname(__file__), "trec_eval_data")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def tieeval_lines(*args) -> list[str]:
    result = runner().invoke(cli, ["compare", "--qrels", QRELS, RUN, "--format", "trec_eval",
                                   "--per-query", "-q", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def trec_eval_printed() -> list[str]:
    """trec_eval's -q lines: -m all_trec, then -m dcg (in no nickname)."""
    lines = []
    for name in ("out.test.aq", "out.test.dcgq"):
        with open(os.path.join(DATA, name), encoding="utf-8") as f:
            lines += [line for line in f.read().splitlines()
                      if not line.startswith("runid ") or not lines]
    return lines


def accepted(name: str) -> bool:
    try:
        Metric.expand(name)
    except TieevalError:
        return False
    return True


def of_measure(line: str, name: str) -> bool:
    """True when trec_eval printed ``line`` for measure ``name`` (``P`` prints ``P_10``)."""
    printed = line.split("\t")[0].rstrip()
    return printed == name or re.fullmatch(re.escape(name) + r"_[0-9.]+", printed) is not None


BARE = [m.name for m in spellings.TREC_MEASURES if m.name != "relstring"]


@pytest.mark.parametrize("name", BARE)
def test_a_bare_trec_eval_name_prints_what_trec_eval_prints(name):
    """``-m P``, ``-m success``, ``-m iprec_at_recall``, ``-m ndcg_cut``: every line
    trec_eval prints for the measure at its default parameters, and no runid line."""
    if not accepted(name):
        pytest.skip(f"tieeval does not compute trec_eval's {name} yet")
    want = [line for line in trec_eval_printed() if of_measure(line, name)]
    assert want, name
    assert tieeval_lines("-m", name) == want


@pytest.mark.parametrize("nickname", ["runid", "official", "all_trec"])
def test_runid_is_printed_where_trec_eval_prints_it(nickname):
    """trec_eval prints ``runid`` when the measure is asked for, itself or in a nickname
    (measures.c); ``-m map`` alone has no runid line."""
    got = tieeval_lines("-m", nickname, "-m", "map")
    runid = [line for line in trec_eval_printed() if line.startswith("runid ")]
    assert runid and [line for line in got if line.startswith("runid ")] == runid
    assert not [line for line in tieeval_lines("-m", "map") if line.startswith("runid ")]


def test_runid_alone_names_no_metric():
    result = runner().invoke(cli, ["compare", "--qrels", QRELS, RUN, "-m", "runid"])
    assert result.exit_code == 2
    assert "runid and relstring name no metric" in result.stderr


def test_a_family_name_with_k_is_one_metric_per_k():
    """``--k`` still chooses the cutoffs of a family name; without it trec_eval's."""
    printed = [line for line in trec_eval_printed() if of_measure(line, "P")]
    assert tieeval_lines("-m", "P", "--k", "5,30") == [
        line for line in printed if line.split("\t")[0].rstrip() in ("P_5", "P_30")]
    assert tieeval_lines("-m", "P") == printed


def test_bare_names_in_the_api():
    """The Python API reads a bare trec_eval name as trec_eval does, and with ``k`` as one
    metric per cutoff."""
    from tieeval.engine.arguments import metric_list
    assert [str(m) for m in metric_list("success")] == ["Success@1", "Success@5",
                                                        "Success@10"]
    assert [str(m) for m in metric_list("P", k=[3])] == ["Precision@3"]
    assert len(metric_list("iprec_at_recall")) == 11
    with pytest.raises(TieevalError, match="Precision needs a cutoff"):
        metric_list("Precision")
