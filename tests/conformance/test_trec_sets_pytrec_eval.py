"""trec_eval's Rprec_mult, utility, 11pt_avg, relative_P, set measures and
num_nonrel_judged_ret against pytrec_eval, a second oracle that runs in CI.

pytrec_eval bundles trec_eval 9.0.8's measure code and ranks as trec_eval does (score, then
docno, descending), so tieeval's Original column must give its per-query values on the
reference collections (``trec_reference/``: huge tie blocks, graded and negative
judgements), with ``-l 2`` and ``-J`` too. trec_eval 9 cut 11pt_avg's recall levels at
(long)(x R + 0.9) relevant items where trec_eval 10 takes lround(x R): that measure is
compared under ``--convention trec_eval9``'s rounding, the others under trec_eval 10's
(they did not change between the two).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tieeval.analysis.trec_eval import query_values
from tieeval.io.base import RelevanceReadOptions
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelOptions
from tieeval.metrics.spellings import trec_eval_name

DATA = Path(__file__).parent / "trec_reference"
MEASURES = ("Rprec_mult", "utility", "11pt_avg", "relative_P", "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F", "num_nonrel_judged_ret")


def read(collection: str):
    qrels: dict = {}
    for line in (DATA / collection / "qrels").read_text().splitlines():
        qid, _, doc, rel = line.split()
        qrels.setdefault(qid, {})[doc] = int(rel)
    run: dict = {}
    for line in (DATA / collection / "run").read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return qrels, run


def compare(collection: str, level, judged_only: bool) -> int:
    """Assert every per-query value equals pytrec_eval's; return on how many queries
    trec_eval 10's rounding of 11pt_avg gives another value than trec_eval 9's."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = read(collection)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES),
                                               relevance_level=level or 1,
                                               judged_docs_only_flag=judged_only)
    want = evaluator.evaluate({q: docs for q, docs in run.items() if q in qrels})
    metrics = [m for name in MEASURES for m in Metric.expand(name)]
    options = RelevanceReadOptions(qrels=str(DATA / collection / "qrels"),
                                   judged_only=judged_only)
    got = {}
    for rounding in ("trec_eval", "trec_eval9"):
        got[rounding] = query_values(str(DATA / collection / "run"), metrics, options=options,
                                     relevance=RelOptions(no_relevant="zero",
                                                          relevance_level=level,
                                                          iprec_rounding=rounding))
    compared = differs = 0
    for metric in metrics:
        name = trec_eval_name(metric.spec, metric.k)
        values = got["trec_eval9" if name == "11pt_avg" else "trec_eval"]
        column = values.values[(metric.name, metric.k, None)]["original"]
        for i, qid in enumerate(values.qids):
            expected = want[qid][name]
            if np.isnan(expected):  # -J left the query nothing: trec_eval's 0/0
                continue
            assert column[i] == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, qid)
            compared += 1
            if name == "11pt_avg":  # trec_eval 10's rounding gives other values on some
                ten = got["trec_eval"].values[(metric.name, metric.k, None)]["original"][i]
                differs += abs(ten - expected) > 1e-9
    assert compared >= len(metrics) * 10
    return differs


@pytest.mark.parametrize("level, judged_only", [(None, False), (2, False), (None, True)])
@pytest.mark.parametrize("collection", ["alpha", "beta", "gamma"])
def test_original_is_pytrec_evals(collection, level, judged_only):
    compare(collection, level, judged_only)


def test_the_two_roundings_of_11pt_avg_are_told_apart():
    assert sum(compare(c, None, False) for c in ("alpha", "beta", "gamma")) > 0
