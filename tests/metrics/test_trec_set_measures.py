"""trec_eval's Rprec_mult, utility, 11pt_avg, relative_P, set_P, set_relative_P, set_recall,
set_map, set_F, num_nonrel_judged_ret and unj against every tie order of small rows.

Each measure is written out here from its trec_eval source (m_*.c), independently of
tieeval's modules, and evaluated on every ordering consistent with the scores
(``helpers.tie_orderings``, which permutes each tie block): the tie-aware value is the mean
over the orderings, its variance theirs, first the largest value and last the smallest.
Rows draw graded and negative labels, judged and unjudged items, relevant items the run
did not rank, and the options trec_eval has: a depth cut (-M) and a relevance level (-l).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import tie_orderings

from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelMetric


def relevant(label, level):
    return label >= level if level is not None else label > 0


def rprec_mult(x):
    def value(seq, r, depth, level):
        c = int(x * r + 0.9)  # m_Rprec_mult.c: (long) (x * num_rel + 0.9)
        if c == 0:
            return 0.0
        ret = seq[:depth]
        return sum(relevant(lab, level) for lab, _ in ret[:c]) / c
    return value


def set_counts(seq, r, depth, level):
    ret = seq[:depth]
    return sum(relevant(lab, level) for lab, _ in ret), len(ret)


def set_p(seq, r, depth, level):
    x, n = set_counts(seq, r, depth, level)
    return x / n if n else 0.0


def set_relative_p(seq, r, depth, level):
    x, n = set_counts(seq, r, depth, level)
    return x / min(n, r) if n and r else 0.0


def set_recall(seq, r, depth, level):
    x, _ = set_counts(seq, r, depth, level)
    return x / r if r else 0.0


def set_map(seq, r, depth, level):
    x, n = set_counts(seq, r, depth, level)
    return x * x / (n * r) if n and r else 0.0


def set_f(seq, r, depth, level):
    x, n = set_counts(seq, r, depth, level)
    if not x:
        return 0.0
    p, rec = x / n, x / r
    return 2.0 * p * rec / (p + rec)  # m_set_F.c with its default beta = 1


def utility(seq, r, depth, level):
    x, n = set_counts(seq, r, depth, level)
    return 1.0 * x - 1.0 * (n - x)  # m_utility.c's default coefficients 1, -1, 0, 0


def num_nonrel_judged_ret(seq, r, depth, level):
    return float(sum(judged and not relevant(lab, level) for lab, judged in seq[:depth]))


def relative_p(k):
    def value(seq, r, depth, level):
        if r == 0:
            return 0.0
        return sum(relevant(lab, level) for lab, _ in seq[:depth][:k]) / min(k, r)
    return value


def unj(k):
    def value(seq, r, depth, level):
        return sum(not judged for _, judged in seq[:depth][:k]) / k
    return value


def eleven_point(seq, r, depth, level):
    """m_11pt_avg.c, line by line: the interpolated precision at each of the 11 recall
    cutoffs lround(x R), walking the ranking backwards."""
    rels = [relevant(lab, level) for lab, _ in seq[:depth]]
    num_ret, num_rel_ret = len(rels), sum(rels)
    cutoffs = [math.floor(x / 10 * r + 0.5) for x in range(11)]  # lround of x R >= 0
    current = 10
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret if num_ret else 0.0
    rel_so_far, total = num_rel_ret, 0.0
    i = num_ret
    while i > 0 and rel_so_far > 0:
        int_precis = max(int_precis, rel_so_far / i)
        if rels[i - 1]:
            while current >= 0 and rel_so_far == cutoffs[current]:
                total += int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        total += int_precis
        current -= 1
    return total / 11


# tieeval metric -> (trec_eval definition, exact variance expected)
CASES = [
    (Metric("RprecMult", 0.2), rprec_mult(0.2), True),
    (Metric("RprecMult", 1.0), rprec_mult(1.0), True),
    (Metric("RprecMult", 1.4), rprec_mult(1.4), True),
    (Metric("RprecMult", 2.0), rprec_mult(2.0), True),
    (Metric("Utility"), utility, True),
    (Metric("IPrec11pt"), eleven_point, False),
    (Metric("RelativeP", 2), relative_p(2), True),
    (Metric("RelativeP", 5), relative_p(5), True),
    (Metric("SetP"), set_p, True),
    (Metric("SetRelP"), set_relative_p, True),
    (Metric("SetR"), set_recall, True),
    (Metric("SetAP"), set_map, True),
    (Metric("SetF"), set_f, True),
    (Metric("NumNonRelJudgedRet"), num_nonrel_judged_ret, True),
    (Metric("Unjudged", 3), unj(3), True),
    (Metric("Unjudged", 6), unj(6), True),
]


def random_row(rng):
    n = int(rng.integers(1, 8))
    scores = rng.integers(0, 3, n).astype(np.float64)
    labels = rng.choice([-1, 0, 0, 1, 2, 3], n)
    judged = rng.random(n) < 0.7
    unranked = rng.choice([0, 1, 2, 3], int(rng.integers(0, 3)))
    depth = [None, None, 2, 4][int(rng.integers(0, 4))]
    level = [None, None, 2][int(rng.integers(0, 3))]
    return scores, labels, judged, unranked, depth, level


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("metric, definition, has_variance", CASES,
                         ids=[str(c[0]) for c in CASES])
def test_against_every_tie_order(metric, definition, has_variance, sparse):
    rng = np.random.default_rng(2026)
    checked_ties = 0
    for _ in range(150):
        scores, labels, judged, unranked, depth, level = random_row(rng)
        rel = np.array([relevant(lab, level) for lab in labels], dtype=bool)
        judged = judged & (labels >= 0) | rel  # a relevant item is always judged
        batch = RelBatch(scores[None, :], labels[None, :], judged=judged[None, :],
                         unranked=(unranked.astype(np.float64), np.array([0, unranked.size])),
                         unranked_judged=np.ones(unranked.size, dtype=bool),
                         options=TableOptions(depth=depth, relevance_level=level, sparse=sparse))
        got = batch.values(RelMetric(metric.name, metric.k))
        r = int(rel.sum() + sum(relevant(lab, level) for lab in unranked))
        cut = len(scores) if depth is None else depth
        items = list(zip(labels.tolist(), judged.tolist()))
        values = [definition(list(order), r, cut, level)
                  for order in tie_orderings(scores, items)]
        if not got.defined[0]:
            # undefined rows are those without a relevant item, where trec_eval prints 0
            assert r == 0 and all(v == 0 for v in values), (metric, values)
            continue
        mean = math.fsum(values) / len(values)
        var = math.fsum((v - mean) ** 2 for v in values) / len(values)
        context = (str(metric), scores.tolist(), items, unranked.tolist(), depth, level)
        assert math.isclose(got.tie_aware[0], mean, rel_tol=1e-12, abs_tol=1e-12), context
        assert math.isclose(got.first[0], max(values), rel_tol=1e-12, abs_tol=1e-12), context
        assert math.isclose(got.last[0], min(values), rel_tol=1e-12, abs_tol=1e-12), context
        if has_variance:
            assert math.isclose(got.variance[0], var, rel_tol=1e-9, abs_tol=1e-12), context
        else:
            assert np.isnan(got.variance[0])
        checked_ties += max(values) != min(values)
    assert checked_ties >= 5  # rows where the tie order matters (for the set measures:
    # a depth cut through a tie block) were drawn and checked


@pytest.mark.parametrize("metric", ["SetP", "SetRelP", "SetR", "SetAP", "SetF", "Utility",
                                    "NumNonRelJudgedRet"])
def test_set_measures_ignore_the_order_inside_the_retrieved_set(metric):
    """Without a depth cut the retrieved set is every ranked item, whatever the tie order:
    first = last = tie-aware = original, variance 0. A depth cut through a tie block makes
    the set random, and only then do the columns differ."""
    rng = np.random.default_rng(11)
    straddled = 0
    for _ in range(100):
        scores, labels, judged, unranked, _, level = random_row(rng)
        for depth in (None, 3):
            batch = RelBatch(scores[None, :], labels[None, :], judged=judged[None, :],
                             options=TableOptions(depth=depth, relevance_level=level))
            got = batch.values(RelMetric(metric))
            if not got.defined[0]:
                continue
            if depth is None:
                assert got.first[0] == got.last[0] == got.original[0]
                assert math.isclose(got.tie_aware[0], got.first[0], abs_tol=1e-15)
                assert got.variance[0] == 0
            else:
                straddled += got.first[0] != got.last[0]
    assert straddled >= 5


def test_eleven_point_average_is_the_mean_of_the_iprec_levels():
    """trec_eval's 11pt_avg averages the same interpolated precisions it prints as
    iprec_at_recall_0.00 ... 1.00 (tie-aware too: the expectation of a mean)."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        scores, labels, judged, unranked, depth, level = random_row(rng)
        batch = RelBatch(scores[None, :], labels[None, :],
                         options=TableOptions(depth=depth, relevance_level=level))
        avg = batch.values(RelMetric("IPrec11pt"))
        if not avg.defined[0]:
            continue
        levels = [batch.values(RelMetric("IPrec", x / 10)) for x in range(11)]
        for column in ("original", "tie_aware"):
            want = math.fsum(getattr(v, column)[0] for v in levels) / 11
            assert math.isclose(getattr(avg, column)[0], want, abs_tol=1e-12)


def test_rprec_mult_cutoff_is_trec_evals_plus_point_nine():
    """(long)(x R + 0.9): R = 5 and x = 0.2 give cutoff 1 (1.9), x = 0.6 cutoff 3
    (0.6 * 5 is 3.0000000000000004 in double, plus 0.9 is 3.9); one relevant item at rank 2
    then scores 0 at 0.2 and 1/3 at 0.6."""
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    labels = np.array([0, 1, 0, 0, 0])
    unranked = (np.array([1.0, 1.0, 1.0, 1.0]), np.array([0, 4]))
    batch = RelBatch(scores[None, :], labels[None, :], unranked=unranked)
    assert batch.values(RelMetric("RprecMult", 0.2)).original[0] == 0.0
    assert batch.values(RelMetric("RprecMult", 0.6)).original[0] == pytest.approx(1 / 3)
    assert batch.values(RelMetric("RprecMult", 2.0)).original[0] == pytest.approx(1 / 10)


def test_family_names_expand_as_trec_eval_expands_them():
    """Rprec_mult, relative_P, unj alone: trec_eval's default parameters (m_Rprec_mult.c,
    m_rel_P.c, m_unjudged.c); printed names as trec_eval prints them."""
    from tieeval.metrics.spellings import translate, trec_eval_name

    assert translate("Rprec_mult") == [f"RprecMult@{x}" for x in (
        "0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4", "1.6", "1.8", "2.0")]
    assert translate("relative_P") == [f"RelativeP@{k}" for k in (5, 10, 15, 20, 30, 100,
                                                                  200, 500, 1000)]
    assert [str(m) for m in Metric.expand("unj")] == ["Unjudged@5", "Unjudged@10",
                                                      "Unjudged@20"]
    assert [str(m) for m in Metric.expand("Rprec_mult")] == [
        f"RprecMult@{x}" for x in ("0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.4", "1.6",
                                   "1.8", "2")]
    assert [m.k for m in Metric.expand("relative_P")] == [5, 10, 15, 20, 30, 100, 200, 500,
                                                          1000]
    assert [str(m) for m in Metric.expand("Rprec_mult.0.5,3")] == ["RprecMult@0.5",
                                                                   "RprecMult@3"]
    assert [str(m) for m in Metric.expand("relative_P.20,5")] == ["RelativeP@5",
                                                                  "RelativeP@20"]
    assert str(Metric.parse("Rprec_mult_1.20")) == "RprecMult@1.2"
    assert str(Metric.parse("unj_10")) == "Unjudged@10"
    assert [str(m) for m in Metric.expand("11pt_avg")] == ["IPrec11pt"]
    assert str(Metric.parse("set_F")) == "SetF"
    assert str(Metric.parse("num_nonrel_judged_ret")) == "NumNonRelJudgedRet"
    names = {str(m): trec_eval_name(m.spec, m.k) for m in Metric.expand("all_trec")}
    assert names["RprecMult@0.2"] == "Rprec_mult_0.20" and names["RprecMult@2"] == \
        "Rprec_mult_2.00"
    assert names["Unjudged@20"] == "unj_20" and names["IPrec11pt"] == "11pt_avg"


def test_rprec_mult_refuses_a_negative_multiple():
    from tieeval.errors import ParameterError

    with pytest.raises(ParameterError, match="number >= 0"):
        Metric.parse("RprecMult@-1")
    with pytest.raises(ParameterError, match="number > 0"):
        Metric.expand("Rprec_mult.-0.5")
    with pytest.raises(ParameterError, match=r"in \[0, 1\]"):
        Metric.parse("IPrec@1.5")
