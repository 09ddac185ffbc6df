"""Metric values and the metric registry.

Every closed form in ``single_positive`` is checked against exhaustive enumeration of the
tie-break orders (``itertools.permutations``): the tie-aware mean and variance equal the
mean and variance over all orderings consistent with the scores, ``first`` and ``last``
equal the maximum and minimum, and ``tie_decided`` says whether they differ.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import (
    FLOAT_DTYPES,
    RANK_METRICS,
    enumerated_ranks,
    lexsort_rank,
    random_row,
)

from tieeval.errors import ParameterError
from tieeval.kernels.closed_forms import (
    discount_prefix,
    harmonic,
    harmonic2,
    single_positive,
)
from tieeval.kernels.counts import dense_counts, ragged_counts
from tieeval.metrics.metric import Metric, default_metrics
from tieeval.metrics.registry import REGISTRY, check_k, metric_names

N_MAX = 7
ALL_KS = range(1, N_MAX + 3)  # every K from 1 to n+2 for every n <= 7 (larger K is harmless)


def oracle_table(rows, positive, nan_worst=False):
    """Per row: the enumerated ranks and the lexsort first/last ranks."""
    ranks = [enumerated_ranks(r, p, nan_worst) for r, p in zip(rows, positive)]
    first = np.array([lexsort_rank(r, p, "first", nan_worst) for r, p in zip(rows, positive)])
    last = np.array([lexsort_rank(r, p, "last", nan_worst) for r, p in zip(rows, positive)])
    return ranks, first, last


def check_against_enumeration(rows, positive, nan_policy):
    nan_worst = nan_policy == "worst"
    values = np.concatenate(rows)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    counts = ragged_counts(values, offsets, positive, nan_policy)
    ranks, first_rank, last_rank = oracle_table(rows, positive, nan_worst)
    metrics = [Metric("HR", k) for k in ALL_KS] + [Metric("NDCG", k) for k in ALL_KS]
    metrics.append(Metric("MRR"))
    for metric in metrics:
        rank_fn = RANK_METRICS[metric.name]
        v = single_positive(metric, counts.a, counts.b, counts.original)
        per_order = [rank_fn(r, metric.k) for r in ranks]
        mean = np.array([x.mean() for x in per_order])
        var = np.array([x.var() for x in per_order])  # population variance over orderings
        hi = np.array([x.max() for x in per_order])
        lo = np.array([x.min() for x in per_order])
        np.testing.assert_allclose(v.tie_aware, mean, rtol=1e-13, atol=1e-15, err_msg=str(metric))
        np.testing.assert_allclose(v.variance, var, rtol=1e-9, atol=1e-14, err_msg=str(metric))
        np.testing.assert_allclose(v.first, hi, rtol=1e-15, atol=0, err_msg=str(metric))
        np.testing.assert_allclose(v.last, lo, rtol=1e-15, atol=0, err_msg=str(metric))
        np.testing.assert_allclose(v.first, rank_fn(first_rank, metric.k), rtol=1e-15, atol=0)
        np.testing.assert_allclose(v.last, rank_fn(last_rank, metric.k), rtol=1e-15, atol=0)
        np.testing.assert_array_equal(v.tie_decided, hi > lo, err_msg=str(metric))
        np.testing.assert_array_equal(v.original, rank_fn(counts.original, metric.k))
        assert np.all(v.last <= v.tie_aware) and np.all(v.tie_aware <= v.first)
        assert np.all(v.last <= v.original) and np.all(v.original <= v.first)
        assert np.all(v.variance >= 0)
        for name in ("original", "first", "last", "tie_aware", "variance"):
            assert getattr(v, name).dtype == np.float64


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_single_positive_matches_enumeration(rng, dtype):
    rows = [random_row(rng, dtype, int(rng.integers(1, N_MAX + 1))) for _ in range(120)]
    # the degenerate extremes, always present: a single candidate and a fully tied row
    rows += [np.array([np.inf], dtype=dtype), np.full(N_MAX, -0.0, dtype=dtype),
             np.array([0.0, -0.0, 0.0, -np.inf, np.inf, np.inf, -0.0], dtype=dtype)]
    positive = np.array([rng.integers(0, len(r)) for r in rows], dtype=np.int64)
    check_against_enumeration(rows, positive, "raise")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_worst_matches_enumeration(rng, dtype):
    pool = (np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 0.5)
    rows = [random_row(rng, dtype, int(rng.integers(1, N_MAX + 1)), pool) for _ in range(120)]
    rows += [np.full(5, np.nan, dtype=dtype), np.array([np.nan, -np.inf, np.nan], dtype=dtype)]
    positive = np.array([rng.integers(0, len(r)) for r in rows], dtype=np.int64)
    check_against_enumeration(rows, positive, "worst")


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
@pytest.mark.parametrize("k", [1, 2, 5, 10, 60])
def test_all_tied_row_closed_forms(n, k):
    # All n candidates tied: the positive's rank is uniform on 1..n, so
    # HR@K = min(K, n)/n, NDCG@K = D[min(K, n)]/n and MRR = H[n]/n; first puts it at 1 and
    # last at n.
    c = dense_counts(np.zeros((1, n), dtype=np.float32), np.array([0]))
    m = min(k, n)
    D = math.fsum(1 / math.log2(j + 1) for j in range(1, m + 1))
    hr = single_positive(Metric("HR", k), c.a, c.b, c.original)
    assert hr.tie_aware[0] == pytest.approx(m / n, rel=1e-15)
    assert hr.variance[0] == pytest.approx(m / n * (1 - m / n), rel=1e-12, abs=1e-300)
    assert (hr.first[0], hr.last[0]) == (1.0, float(n <= k))
    ndcg = single_positive(Metric("NDCG", k), c.a, c.b, c.original)
    assert ndcg.tie_aware[0] == pytest.approx(D / n, rel=1e-14)
    assert ndcg.first[0] == 1.0
    assert ndcg.last[0] == pytest.approx(1 / math.log2(n + 1) if n <= k else 0.0, rel=1e-15)
    mrr = single_positive(Metric("MRR"), c.a, c.b, c.original)
    assert mrr.tie_aware[0] == pytest.approx(math.fsum(1 / j for j in range(1, n + 1)) / n,
                                             rel=1e-14)
    assert (mrr.first[0], mrr.last[0]) == (1.0, pytest.approx(1 / n))


def test_untied_positive_has_no_variance():
    a = np.arange(0, 12, dtype=np.int64)
    b = np.ones_like(a)
    for metric in (Metric("HR", 5), Metric("NDCG", 5), Metric("MRR")):
        v = single_positive(metric, a, b, a + 1)
        np.testing.assert_array_equal(v.variance, 0.0)
        np.testing.assert_array_equal(v.first, v.last)
        np.testing.assert_array_equal(v.tie_aware, v.first)
        assert not v.tie_decided.any()


def test_ndcg_decided_inside_top_k_but_hr_not():
    # docs/METRICS.md section 2: a = 0, b = 3, K = 10 -> HR is 1 either way, NDCG spans d(3)..1
    a, b = np.array([0]), np.array([3])
    hr = single_positive(Metric("HR", 10), a, b, a + 1)
    ndcg = single_positive(Metric("NDCG", 10), a, b, a + 1)
    assert not hr.tie_decided[0] and ndcg.tie_decided[0]
    assert (ndcg.first[0], ndcg.last[0]) == (1.0, 0.5)  # d(3) = 1/log2(4)


@pytest.mark.parametrize("a,b", [(0, 5000), (4000, 200), (4095, 2), (5000, 3000),
                                 (10 ** 6, 10), (3, 10 ** 5)])
def test_mrr_with_long_lists(a, b):
    # Beyond the 4096-entry harmonic table: compare with direct float sums over the block.
    rr = [1.0 / r for r in range(a + 1, a + b + 1)]
    mean = math.fsum(rr) / b
    var = math.fsum(x * x for x in rr) / b - mean * mean
    v = single_positive(Metric("MRR"), np.array([a]), np.array([b]), np.array([a + 1]))
    assert v.tie_aware[0] == pytest.approx(mean, rel=1e-11)
    # Var = E[RR^2] - E[RR]^2 from prefix differences of H2 (about 1.64) carries an absolute
    # error of a few ulps of H2; that is negligible for sd = sqrt(sum Var)/N.
    assert abs(v.variance[0] - var) <= 1e-6 * var + 2e-15
    assert v.variance[0] >= 0


# ---------------------------------------------------------------------------------------
# harmonic numbers and discount prefixes

@pytest.fixture(scope="module")
def exact_harmonics():
    """H[n] and H2[n] as exact fractions for n = 0..4200 (across the 4096 table edge)."""
    h, h2 = [Fraction(0)], [Fraction(0)]
    for j in range(1, 4201):
        h.append(h[-1] + Fraction(1, j))
        h2.append(h2[-1] + Fraction(1, j * j))
    return h, h2


def test_harmonic_against_fractions(exact_harmonics):
    h, h2 = exact_harmonics
    n = np.arange(0, 4201, dtype=np.int64)
    got, got2 = harmonic(n), harmonic2(n)
    want = np.array([float(x) for x in h])
    want2 = np.array([float(x) for x in h2])
    assert got[0] == 0.0 and got2[0] == 0.0
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-13, atol=0)
    np.testing.assert_allclose(got2[1:], want2[1:], rtol=1e-13, atol=0)


@pytest.mark.parametrize("n", [10 ** 4, 123457, 10 ** 6])
def test_harmonic_large_n(n):
    # math.fsum of the correctly rounded terms is within a few ulps of the exact sum
    want = math.fsum(1.0 / j for j in range(1, n + 1))
    want2 = math.fsum(1.0 / (j * j) for j in range(1, n + 1))
    assert harmonic(np.array([n]))[0] == pytest.approx(want, rel=1e-13)
    assert harmonic2(np.array([n]))[0] == pytest.approx(want2, rel=1e-13)


def test_harmonic_keeps_shape():
    n = np.array([[1, 2], [5000, 0]])
    assert harmonic(n).shape == (2, 2) and harmonic2(n).shape == (2, 2)
    assert harmonic(n)[0, 1] == 1.5 and harmonic2(n)[0, 1] == 1.25


def test_discount_prefix():
    D, D2 = discount_prefix(300)
    assert D.shape == D2.shape == (301,)
    assert D[0] == D2[0] == 0.0 and D[1] == D2[1] == 1.0  # d(1) = 1/log2(2)
    for r in (2, 3, 10, 300):
        d = [1 / math.log2(j + 1) for j in range(1, r + 1)]
        assert D[r] == pytest.approx(math.fsum(d), rel=1e-14)
        assert D2[r] == pytest.approx(math.fsum(x * x for x in d), rel=1e-14)


# ---------------------------------------------------------------------------------------
# the Metric value type and the registry

@pytest.mark.parametrize("text,canonical", [
    ("NDCG@10", "NDCG@10"), ("ndcg@10", "NDCG@10"), ("Hr@1", "HR@1"), (" hr @ 5 ", "HR@5"),
    ("MRR", "MRR"), ("mrr", "MRR"), ("NDCG@0010", "NDCG@10"),
])
def test_parse_round_trips(text, canonical):
    m = Metric.parse(text)
    assert str(m) == canonical
    assert Metric.parse(str(m)) == m
    assert hash(Metric.parse(str(m))) == hash(m)


def test_metric_is_a_value():
    assert Metric("ndcg", 10) == Metric("NDCG", 10) == Metric.parse("NDCG@10")
    table = {Metric.parse("HR@5"): 1}
    assert table[Metric("hr", 5)] == 1
    assert Metric("HR", 5) != Metric("HR", 10) != Metric("NDCG", 10)
    assert Metric("MRR").k is None
    assert sorted([Metric("NDCG", 1), Metric("HR", 10), Metric("HR", 5)]) == [
        Metric("HR", 5), Metric("HR", 10), Metric("NDCG", 1)]


@pytest.mark.parametrize("text", ["NDCG@0", "NDCG@-1", "NDCG@x", "HR@1.5", "HR@", "HR",
                                  "V-AUC@10", "AUC@10", "@10", ""])
def test_parse_rejects(text):
    with pytest.raises(ParameterError):
        Metric.parse(text)


@pytest.mark.parametrize("k", [0, -1, "x", True, False, 1.0, np.bool_(True), None])
def test_bad_k(k):
    with pytest.raises(ParameterError, match="K must be"):
        check_k(k)
    with pytest.raises(ParameterError):
        Metric("HR", k)


def test_good_k():
    assert check_k(1) == 1 and check_k(np.int64(7)) == 7 and type(check_k(np.int32(3))) is int


def test_unknown_metric_lists_valid_names():
    with pytest.raises(ParameterError) as info:
        Metric.parse("Novelty@10")
    message = str(info.value)
    assert "'Novelty'" in message
    # the registry's names in --help order while the line stays short (trec_eval's
    # measures made the whole list too long for one line), then how many more and where
    # every name is listed
    names = metric_names()
    shown = message.split("choose from ", 1)[1].split(" and ", 1)[0].split(", ")
    assert len(shown) >= 20 and shown == names[:len(shown)]
    rest = len(names) - len(shown)
    assert f" and {rest} more (every spelling: docs/metric-names.md)" in message
    assert isinstance(info.value, ValueError)


def test_registry_is_the_one_list():
    # One registry for both protocols: the single-positive metrics are entries of it.
    from tieeval.metrics.options import REL_REGISTRY, rel_metric_names
    assert REL_REGISTRY is REGISTRY and rel_metric_names() == metric_names()
    assert metric_names() == ["HR", "Recall", "Precision", "DCG", "NDCG", "MRR", "MAP", "SHR",
                              "SRecall", "SDCG", "SNDCG", "V-AUC", "Success", "Rprec",
                              "Bpref", "Judged", "NumRet", "NumRel", "NumRelRet", "NumQ",
                              "GMAP", "ERR", "IPrec", "AUC", "AUC-cut",
                              "InfAP", "GBpref", "RprecMult", "Utility", "IPrec11pt", "BinG",
                              "NormGain", "NDCG-rel", "Rndcg", "RelativeP", "SetP", "SetRelP",
                              "SetR", "SetAP", "SetF", "NumNonRelJudgedRet", "TrecRBP",
                              "TrecRBP-resid", "Unjudged"]
    for name in metric_names():
        assert REGISTRY[name].name == name == REGISTRY[name.lower()].name
    assert [n for n in metric_names() if REGISTRY[n].single_positive] == ["HR", "NDCG", "MRR"]
    assert [REGISTRY[n].takes_k for n in ("HR", "NDCG", "MRR")] == [True, False, False]
    fast = [Metric("HR", 5), Metric("NDCG", 5), Metric("MRR")]
    assert all(m.single_positive for m in fast)
    assert not any(m.single_positive for m in (Metric("NDCG"), Metric("MRR", 10),
                                               Metric("Recall", 5), Metric("V-AUC")))


@pytest.mark.parametrize("text,canonical", [("vauc", "V-AUC"), ("v_auc", "V-AUC"),
                                            ("ap@100", "MAP@100"), ("rr@10", "MRR@10"),
                                            ("sndcg@20", "SNDCG@20"), ("NDCG", "NDCG"),
                                            ("success@5", "Success@5"), ("HIT@5", "HR@5"),
                                            ("gm_map", "GMAP"), ("GM_MAP", "GMAP"),
                                            ("iprec@0.1", "IPrec@0.1"),
                                            ("IPrec@1", "IPrec@1"), ("IPrec@0", "IPrec@0"),
                                            ("iprec_at_recall@0.50", "IPrec@0.5"),
                                            ("num_rel_ret", "NumRelRet")])
def test_every_registry_name_parses_as_a_metric(text, canonical):
    assert str(Metric.parse(text)) == canonical


def test_single_positive_kernel_refuses_general_metrics():
    with pytest.raises(ParameterError, match="single-positive"):
        single_positive(Metric("Recall", 5), np.array([0]), np.array([1]), np.array([1]))


def test_default_metrics_order():
    assert [str(m) for m in default_metrics([1, 5])] == ["HR@1", "HR@5", "NDCG@1", "NDCG@5",
                                                         "MRR"]
    with pytest.raises(ParameterError):
        default_metrics([0])
