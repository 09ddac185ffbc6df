"""Tests for tieeval.metrics.measures.cascade: exact tie-aware ERR@K and interpolated precision.

Oracles: the plain-Python definitions below on one fixed ordering (ERR as Chapelle et al.
define it, and a line-by-line port of trec_eval's ``m_iprec_at_recall.c``), averaged over
every ordering the scores allow (``tie_orderings``, itertools.permutations per block);
pytrec_eval itself on tie-free rows. No expected number comes from the module under test.
"""

from __future__ import annotations

import itertools
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest
from helpers import tie_orderings

from tieeval.errors import ParameterError
from tieeval.kernels.tie_blocks import RelBatch
from tieeval.metrics.measures.cascade import (
    ERR_WORK_LIMIT,
    IPREC_WORK_LIMIT,
    err_expectation,
    iprec_expectation,
    iprec_expectations,
    not_computed_reason,
)


def make_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


# ---------------------------------------------------------------------------------------
# Oracles on one fixed ordering


def err_oracle(labels, k, max_grade, relevant_level=None) -> float:
    total, survive = 0.0, 1.0
    for r, label in enumerate(labels[:k] if k is not None else labels, start=1):
        g = min(max(float(label), 0.0), max_grade)  # a grade above g_max counts as g_max
        if relevant_level is not None and label < relevant_level:
            g = 0.0
        stop = (2.0 ** g - 1.0) / 2.0 ** max_grade
        total += survive * stop / r
        survive *= 1.0 - stop
    return total


def iprec_oracle(labels, recall, num_rel, depth=None, relevant_level=1) -> float:
    """m_iprec_at_recall.c, one cutoff: the C loop transcribed."""
    ranked = list(labels[:depth] if depth is not None else labels)
    num_ret = len(ranked)
    num_rel_ret = sum(1 for lab in ranked if lab >= relevant_level)
    cutoff = round_half_away(recall * num_rel)  # lround
    value = 0.0  # te_init_meas_a_double_cut_double
    current_cut = 0 if cutoff <= num_rel_ret else -1
    if num_ret == 0:
        return value
    precis = num_rel_ret / num_ret
    int_precis = precis
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        if int_precis < precis:
            int_precis = precis
        if ranked[i - 1] >= relevant_level:
            while current_cut >= 0 and rel_so_far == cutoff:
                value = int_precis
                current_cut -= 1
            rel_so_far -= 1
        i -= 1
    while current_cut >= 0:
        value = int_precis
        current_cut -= 1
    return value


def round_half_away(x: float) -> int:
    return math.floor(x) + (1 if x - math.floor(x) >= 0.5 else 0)


def batch(rows_scores, rows_labels, **kw) -> RelBatch:
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows_scores]))).astype(np.int64)
    scores = np.concatenate(rows_scores) if rows_scores else np.zeros(0)
    labels = np.concatenate(rows_labels) if rows_labels else np.zeros(0)
    return RelBatch(scores, labels, offsets, **kw)


def random_rows(rng, count, n_max, label_pool, dtype=np.float64):
    scores, labels = [], []
    for _ in range(count):
        n = int(rng.integers(0, n_max + 1))
        levels = int(rng.integers(1, 4))  # few score levels: heavy ties
        scores.append(rng.integers(0, levels, n).astype(dtype))
        labels.append(rng.choice(label_pool, n))
    return scores, labels


def ordering_stats(scores, labels, fn, *args, **kw):
    """Mean, least and largest of ``fn(ordering, *args, **kw)`` over every tie order."""
    values = [fn(list(o), *args, **kw) for o in tie_orderings(scores, labels)]
    return float(np.mean(values)), min(values), max(values)


def block_sorted(scores, labels, descending: bool):
    """The labels in score order with every tie block sorted by label."""
    sign = -1 if descending else 1
    order = np.lexsort((sign * np.asarray(labels, dtype=np.float64), -scores.astype(np.float64)))
    return list(np.asarray(labels)[order])


# ---------------------------------------------------------------------------------------
# ERR


@pytest.mark.parametrize("k", [None, 1, 2, 3, 5, 12])
@pytest.mark.parametrize("max_grade", [3, 4.5])
def test_err_matches_enumeration(k, max_grade):
    rng = make_rng(f"err-{k}-{max_grade}")
    scores, labels = random_rows(rng, 60, 8, [0, 0, 1, 2, 3, -1])
    got = err_expectation(batch(scores, labels), k, max_grade)
    for r, (s, lab) in enumerate(zip(scores, labels)):
        if len(s) == 0:
            assert got[r] == 0.0
            continue
        mean, low, high = ordering_stats(s, lab, err_oracle, k, max_grade)
        assert got[r] == pytest.approx(mean, rel=1e-12, abs=1e-15)
        first = err_oracle(block_sorted(s, lab, True), k, max_grade)
        last = err_oracle(block_sorted(s, lab, False), k, max_grade)
        assert first == pytest.approx(high, rel=1e-12) and last == pytest.approx(low, rel=1e-12)
        assert last - 1e-12 <= got[r] <= first + 1e-12


def test_err_relevant_level_and_float_labels():
    rng = make_rng("err-level")
    scores, labels = random_rows(rng, 40, 7, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    for level in (None, 1.0, 2.0):
        got = err_expectation(batch(scores, labels), 4, 3, relevant_level=level)
        for r, (s, lab) in enumerate(zip(scores, labels)):
            if len(s):
                mean, _, _ = ordering_stats(s, lab, err_oracle, 4, 3, level)
                assert got[r] == pytest.approx(mean, rel=1e-12, abs=1e-15)


def test_err_without_ties_is_the_realised_value():
    rng = make_rng("err-untied")
    scores = [rng.permutation(n).astype(np.float32) for n in rng.integers(1, 40, 30)]
    labels = [rng.integers(0, 5, len(s)) for s in scores]
    for k in (None, 3, 10):
        got = err_expectation(batch(scores, labels), k, 4)
        want = [err_oracle(block_sorted(s, lab, True), k, 4) for s, lab in zip(scores, labels)]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def test_err_one_block_closed_form():
    # One relevant item of grade g among n tied items: rank uniform on 1..n, so
    # E[ERR@K] = R/n * sum_{r<=min(K, n)} 1/r.
    n, g, m = 9, 2, 3
    got = err_expectation(batch([np.zeros(n)], [np.eye(1, n, 4)[0] * g]), 5, m)
    stop = (2 ** g - 1) / 2 ** m
    assert got[0] == pytest.approx(stop / n * sum(1 / r for r in range(1, 6)), rel=1e-14)


def test_err_large_tie_block_against_a_long_row():
    # 60 tied items, 6 of them graded: exhaustive enumeration is out of reach, but items
    # of one grade are exchangeable, so the expectation is a mean over the C(60, 6) * 6!/
    # (multiplicities) distinct grade sequences; with all six relevant items of one grade
    # it is the mean over C(60, 6) position sets, which the exact per-position
    # probability P(j-th of 6 at rank r) = C(r-1, j-1) C(60-r, 6-j) / C(60, 6) gives.
    n, p, grade, max_grade = 60, 6, 3, 3
    stop = (2 ** grade - 1) / 2 ** max_grade
    lab = np.zeros(n)
    lab[:p] = grade
    for k in (None, 10):
        kk = n if k is None else k
        want = sum(math.comb(r - 1, j - 1) * math.comb(n - r, p - j) / math.comb(n, p)
                   * stop * (1 - stop) ** (j - 1) / r
                   for j in range(1, p + 1) for r in range(j, kk + 1))
        got = err_expectation(batch([np.ones(n, dtype=np.float32)], [lab]), k, max_grade)
        assert got[0] == pytest.approx(want, rel=1e-12)


def test_err_blocks_below_the_cutoff_and_survival():
    # A fixed block above a tied one: the tied block's expectation is scaled by the
    # survival of the items above it, whatever their order.
    s = np.array([3.0, 2.0, 1.0, 1.0, 1.0, 0.0])
    lab = np.array([2, 1, 3, 0, 1, 3])
    for k in (None, 1, 2, 3, 4, 5, 6, 7):
        mean, _, _ = ordering_stats(s, lab, err_oracle, k, 3)
        assert err_expectation(batch([s], [lab]), k, 3)[0] == pytest.approx(mean, rel=1e-13)


def test_err_caps_grades_and_takes_a_grade_per_row():
    """A grade above g_max counts as g_max (R = 1 - 2**-g_max < 1); g_max may differ per
    row. Both against every tie order of each row."""
    rows = [np.array([1.0, 1.0, 1.0, 0.5]), np.array([2.0, 2.0, 1.0])]
    labs = [np.array([3, 0, 1, 2]), np.array([1, 4, 0])]
    for gmax in (2.0, np.array([2.0, 5.0])):
        got = err_expectation(batch(rows, labs), 3, gmax)
        for i, (s, lab) in enumerate(zip(rows, labs)):
            g = float(np.broadcast_to(gmax, (2,))[i])
            mean, _, _ = ordering_stats(s, lab, err_oracle, 3, g)
            assert got[i] == pytest.approx(mean, rel=1e-13)


def test_err_rejects_bad_parameters():
    rb = batch([np.array([1.0, 1.0])], [np.array([3, 0])])
    with pytest.raises(ParameterError, match="one per row"):
        err_expectation(rb, 2, np.array([2.0, 3.0]))
    for k in (0, -1, 1.5, True):
        with pytest.raises(ParameterError, match="k must be a positive integer"):
            err_expectation(rb, k, 3)
    with pytest.raises(ParameterError, match="max_grade must be a finite number"):
        err_expectation(rb, 2, float("nan"))
    with pytest.raises(ParameterError, match="rb must be a RelBatch"):
        err_expectation("rows", 2, 3)


def test_err_over_the_work_limit_is_nan(monkeypatch):
    import tieeval.metrics.measures.cascade as cascade
    rb = batch([np.zeros(30), np.arange(30.0)], [np.arange(30) % 3, np.arange(30) % 3])
    monkeypatch.setattr(cascade, "ERR_WORK_LIMIT", 50)
    got = cascade.err_expectation(rb, None, 3)
    assert np.isnan(got[0]) and np.isfinite(got[1])
    assert "more than 50 steps" in not_computed_reason("ERR")  # the limit in force


# ---------------------------------------------------------------------------------------
# Interpolated precision


RECALLS = [0.0, 0.1, 0.25, 0.5, 0.7, 1.0]


@pytest.mark.parametrize("recall", RECALLS)
@pytest.mark.parametrize("depth", [None, 1, 3, 6])
def test_iprec_matches_enumeration(recall, depth):
    rng = make_rng(f"iprec-{recall}-{depth}")
    scores, labels = random_rows(rng, 60, 8, [0, 0, 1, -1])
    got = iprec_expectation(batch(scores, labels), recall, depth)
    for r, (s, lab) in enumerate(zip(scores, labels)):
        num_rel = int((lab > 0).sum())
        if len(s) == 0:
            assert got[r] == 0.0
            continue
        mean, low, high = ordering_stats(
            s, lab, iprec_oracle, recall, num_rel, depth)
        assert got[r] == pytest.approx(mean, rel=1e-12, abs=1e-15)
        first = iprec_oracle(block_sorted(s, lab, True), recall, num_rel, depth)
        last = iprec_oracle(block_sorted(s, lab, False), recall, num_rel, depth)
        assert last - 1e-12 <= got[r] <= first + 1e-12


def test_iprec_larger_blocks_against_enumeration():
    # up to 12 items in few blocks: C(12, p) position sets per block, enumerated
    rng = make_rng("iprec-large")
    scores, labels = [], []
    for _ in range(25):
        n = int(rng.integers(8, 13))
        scores.append(rng.integers(0, 2, n).astype(np.float32))
        labels.append((rng.random(n) < rng.uniform(0.2, 0.7)).astype(np.int64))
    for recall in (0.0, 0.3, 0.5, 1.0):
        got = iprec_expectation(batch(scores, labels), recall)
        for r, (s, lab) in enumerate(zip(scores, labels)):
            num_rel = int(lab.sum())
            mean, _, _ = ordering_stats(s, lab, iprec_oracle, recall, num_rel)
            assert got[r] == pytest.approx(mean, rel=1e-12, abs=1e-15)


def test_iprec_unranked_relevant_and_relevant_level():
    rng = make_rng("iprec-unranked")
    scores, labels = random_rows(rng, 40, 7, [0, 1, 2, 2])
    unranked = rng.integers(0, 3, len(scores))
    ulab = np.concatenate([np.full(u, 2) for u in unranked])
    uoff = np.concatenate(([0], np.cumsum(unranked))).astype(np.int64)
    rb = batch(scores, labels, unranked=(ulab, uoff))
    for level in (None, 2):
        thr = 1 if level is None else level
        for recall in (0.0, 0.4, 1.0):
            got = iprec_expectation(rb, recall, relevant_level=level)
            for r, (s, lab) in enumerate(zip(scores, labels)):
                num_rel = int((lab >= thr).sum()) + int(unranked[r])
                if len(s) == 0:
                    assert got[r] == 0.0
                    continue
                mean, _, _ = ordering_stats(
                    s, lab, iprec_oracle, recall, num_rel, relevant_level=thr)
                assert got[r] == pytest.approx(mean, rel=1e-12, abs=1e-15)


def test_iprec_without_ties_is_trec_evals_value():
    rng = make_rng("iprec-untied")
    scores = [rng.permutation(n).astype(np.float64) for n in rng.integers(1, 50, 40)]
    labels = [(rng.random(len(s)) < 0.3).astype(np.int64) for s in scores]
    for recall in RECALLS:
        for depth in (None, 10):
            got = iprec_expectation(batch(scores, labels), recall, depth)
            want = [iprec_oracle(block_sorted(s, lab, True), recall, int(lab.sum()), depth)
                    for s, lab in zip(scores, labels)]
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_iprec_without_ties_matches_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = make_rng("iprec-pytrec")
    scores = [rng.permutation(n).astype(np.float64) + 1 for n in rng.integers(2, 30, 25)]
    labels = [(rng.random(len(s)) < 0.35).astype(np.int64) for s in scores]
    qrel, run = {}, {}
    for q, (s, lab) in enumerate(zip(scores, labels)):
        qrel[f"q{q}"] = {f"d{i}": int(lab[i]) for i in range(len(s))}
        run[f"q{q}"] = {f"d{i}": float(s[i]) for i in range(len(s))}
    levels = {"0.00": 0.0, "0.10": 0.1, "0.50": 0.5, "0.70": 0.7, "1.00": 1.0}
    measure = "iprec_at_recall." + ",".join(levels)
    res = pytrec_eval.RelevanceEvaluator(qrel, {measure.split(".")[0]}).evaluate(run)
    rb = batch(scores, labels)
    for name, recall in levels.items():
        got = iprec_expectation(rb, recall)
        for q in range(len(scores)):
            num_rel = int(labels[q].sum())
            if num_rel == 0:
                continue  # trec_eval leaves out a topic without relevant documents
            if round_half_away(recall * num_rel) != int(recall * num_rel + 0.9):
                # pytrec_eval bundles trec_eval 9, whose cutoff is (long)(x R + 0.9); the
                # reference m_iprec_at_recall.c rounds (lround), as this module does
                continue
            assert got[q] == pytest.approx(res[f"q{q}"][f"iprec_at_recall_{name}"], abs=1e-15)


def test_iprec_one_block_closed_form():
    # One relevant item among n tied (nothing above): rank uniform, IPrec(0) = 1/rank.
    n = 7
    got = iprec_expectation(batch([np.zeros(n)], [np.eye(1, n, 2)[0]]), 0.0)
    assert got[0] == pytest.approx(sum(1 / r for r in range(1, n + 1)) / n, rel=1e-14)


def test_iprec_rejects_bad_parameters():
    rb = batch([np.array([1.0, 1.0])], [np.array([1, 0])])
    for recall in (-0.1, 1.5, float("nan"), "0.5"):
        with pytest.raises(ParameterError, match="recall"):
            iprec_expectation(rb, recall)
    with pytest.raises(ParameterError, match="depth must be a positive integer"):
        iprec_expectation(rb, 0.5, depth=0)


def test_iprec_over_the_work_limit_is_nan(monkeypatch):
    import tieeval.metrics.measures.cascade as cascade
    lab = np.arange(40) % 3 == 0
    rb = batch([np.zeros(40), np.arange(40.0)], [lab, lab])
    monkeypatch.setattr(cascade, "IPREC_WORK_LIMIT", 10)
    got = cascade.iprec_expectation(rb, 0.0)
    assert np.isnan(got[0]) and np.isfinite(got[1])
    assert "more than 10 steps" in not_computed_reason("IPrec")
    with pytest.raises(ParameterError):
        not_computed_reason("NDCG")


def test_default_limits_are_in_the_reasons():
    assert f"{ERR_WORK_LIMIT:,}" in not_computed_reason("ERR")
    assert f"{IPREC_WORK_LIMIT:,}" in not_computed_reason("IPrec")


def test_float32_ties_are_judged_in_float32():
    # 0.1 and 0.1 + 1e-9 are one float32 value but two float64 values
    s32 = np.array([0.1, 0.1 + 1e-9, 0.0], dtype=np.float32)
    s64 = s32.astype(np.float64) + np.array([0.0, 1e-9, 0.0])
    lab = np.array([0, 2, 0])
    tied = err_expectation(batch([s32], [lab]), None, 2)[0]
    untied = err_expectation(batch([s64], [lab]), None, 2)[0]
    stop = 3 / 4
    assert tied == pytest.approx((stop + stop / 2) / 2, rel=1e-15)
    assert untied == pytest.approx(stop, rel=1e-15)


TREC_LEVELS = [j / 10 for j in range(11)]


def all_tied_enumeration(n: int, p: int, recall: float) -> float:
    """Mean of the m_iprec_at_recall.c port over every set of relevant positions of one
    block of n tied items with p relevant (each set is equally likely)."""
    values = []
    for pos in itertools.combinations(range(n), p):
        labels = [0] * n
        for q in pos:
            labels[q] = 1
        values.append(iprec_oracle(labels, recall, p))
    return float(np.mean(values))


def all_tied_fraction(n: int, p: int, recall: float) -> Fraction:
    """E[IPrec(x)] for one block of n tied items with p relevant, in exact fractions: a
    scan over the ranks carrying (relevant so far, best precision at a relevant rank at
    or past the cutoff) with the number of position sets reaching each state."""
    cut = max(round_half_away(recall * p), 1)
    states = {(0, Fraction(0)): 1}
    for rank in range(1, n + 1):
        nxt: dict = {}
        for (k, best), ways in states.items():
            nxt[(k, best)] = nxt.get((k, best), 0) + ways  # a non-relevant item here
            if k < p:
                k1 = k + 1
                b1 = max(best, Fraction(k1, rank)) if k1 >= cut else best
                nxt[(k1, b1)] = nxt.get((k1, b1), 0) + ways
        states = nxt
    total = sum(ways * best for (k, best), ways in states.items() if k == p)
    return total / math.comb(n, p)


def tied_rows(shapes):
    scores = [np.zeros(n, dtype=np.float32) for n, _ in shapes]
    labels = [np.r_[np.ones(p, dtype=np.int64), np.zeros(n - p, dtype=np.int64)]
              for n, p in shapes]
    return batch(scores, labels)


def test_iprec_all_tied_blocks_match_enumeration():
    # every block of up to 10 tied items, every count of relevant items, trec_eval's levels
    shapes = [(n, p) for n in range(1, 11) for p in range(n + 1)]
    got = iprec_expectations(tied_rows(shapes), TREC_LEVELS)
    assert got.shape == (len(TREC_LEVELS), len(shapes))
    for j, recall in enumerate(TREC_LEVELS):
        for r, (n, p) in enumerate(shapes):
            want = all_tied_enumeration(n, p, recall) if p else 0.0
            assert got[j, r] == pytest.approx(want, rel=1e-12, abs=1e-15), (n, p, recall)


@pytest.mark.parametrize("n,p", [(16, 5), (24, 8), (30, 21), (40, 12)])
def test_iprec_larger_all_tied_blocks_match_fractions(n, p):
    got = iprec_expectations(tied_rows([(n, p)]), TREC_LEVELS)[:, 0]
    want = [float(all_tied_fraction(n, p, x)) for x in TREC_LEVELS]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_iprec_levels_in_one_call_equal_single_calls():
    rng = make_rng("iprec-levels")
    scores, labels = random_rows(rng, 80, 12, [0, 0, 1, 2, -1])
    unranked = rng.integers(0, 3, len(scores))
    ulab = np.concatenate([np.full(u, 1) for u in unranked])
    uoff = np.concatenate(([0], np.cumsum(unranked))).astype(np.int64)
    rb = batch(scores, labels, unranked=(ulab, uoff))
    levels = TREC_LEVELS + [0.25, 0.75]
    for depth in (None, 4, 9):
        for level in (None, 2):
            many = iprec_expectations(rb, levels, depth, level)
            for j, recall in enumerate(levels):
                one = iprec_expectation(rb, recall, depth, level)
                np.testing.assert_allclose(many[j], one, rtol=1e-15, atol=0)


def test_iprec_levels_reject_bad_parameters():
    rb = batch([np.array([1.0, 1.0])], [np.array([1, 0])])
    for recalls in ("0.5", 0.5, [0.1, 1.5], [float("nan")]):
        with pytest.raises(ParameterError, match="recall"):
            iprec_expectations(rb, recalls)
    assert iprec_expectations(rb, []).shape == (0, 1)


def test_distinct_tuples_both_ways():
    import tieeval.metrics.measures.cascade as cascade
    rng = make_rng("distinct")
    small = [rng.integers(0, 3, 500) for _ in range(7)]
    wide = [rng.integers(0, 1000, 500) * 10**6 + c for c in small]  # > 2**62 key space
    wide[0] = wide[0] % 7  # a few repeated tuples even so
    for cols in (small, wide):
        first, inverse = cascade._distinct(cols)
        tuples = list(zip(*(c.tolist() for c in cols)))
        assert len(first) == len(set(tuples))
        for e, t in enumerate(tuples):
            assert tuples[first[inverse[e]]] == t


def test_iprec_cutoff_rounds_half_away_from_zero():
    # Ranks 1 and 4 relevant, R = 2. x = 0.7: c = lround(1.4) = 1, so the value is
    # max(1/1, 2/4) = 1; x = 0.75: c = lround(1.5) = 2, so it is 2/4.
    rb = batch([np.array([4.0, 3.0, 2.0, 1.0])], [np.array([1, 0, 0, 1])])
    assert iprec_expectation(rb, 0.7)[0] == 1.0
    assert iprec_expectation(rb, 0.75)[0] == 0.5
