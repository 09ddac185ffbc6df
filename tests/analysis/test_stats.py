"""Tests for tieeval.analysis.stats: the paired tests and method rankings.

Oracles: scipy.stats (ttest_rel, permutation_test), closed forms of the t distribution for
df = 1 and 2 (two and three instances), the finite series for even df evaluated in 50-digit
decimal arithmetic, brute-force enumeration of sign vectors in exact rational arithmetic, and an
independent Monte Carlo of random tie-breaks.
"""

from __future__ import annotations

import doctest
import itertools
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import tieeval.analysis.stats
from tieeval.analysis.stats import (
    EXACT_RANDOMIZATION_MAX_N,
    PairedResult,
    _randomization_exact,
    paired_comparison,
    rank_methods,
    ranking_changes,
)
from tieeval.errors import ParameterError


def rel_err(got: float, want: float) -> float:
    return abs(got - want) / abs(want)


def test_doctests():
    assert doctest.testmod(tieeval.analysis.stats).failed == 0


# ---------------------------------------------------------------------------------------
# Student t distribution inside the paired t-test
#
# The distribution itself comes from scipy; these tests pin tieeval's use of it against
# closed forms: df = 1 (two instances, the Cauchy distribution), df = 2 (three instances)
# and the finite series for even df, in the regime of a user-level test on a large dataset.


def _two_instances(x: float, y: float):
    """Differences (x, y): mean (x + y) / 2, standard error |x - y| / 2, t = (x+y)/|x-y|."""
    return paired_comparison(np.zeros(2), np.array([x, y]))


@pytest.mark.parametrize("x,y", [(1.0, -1.0 + 2e-9), (1.0, -1.0 + 2e-12), (0.5, -0.25),
                                 (0.3, 0.1), (1.0, 1.0 - 1e-6), (1.0, 1.0 - 2.0 ** -40)])
@pytest.mark.parametrize("confidence", [0.5, 0.95, 0.999])
def test_two_instances_cauchy_closed_form(x, y, confidence):
    # df = 1: P(|T| > t) = 2 atan2(1, t) / pi and t_{1, (1+c)/2} = tan(pi c / 2).
    r = paired_comparison(np.zeros(2), np.array([x, y]), confidence=confidence)
    t = (x + y) / abs(x - y)
    assert rel_err(r.statistic, t) < 1e-9
    want = 2.0 * math.atan2(1.0, abs(r.statistic)) / math.pi
    assert r.p_value_t == pytest.approx(want, rel=1e-14, abs=1e-300)
    se = abs(x - y) / 2
    half = math.tan(math.pi * confidence / 2) * se
    assert r.ci_low == pytest.approx((x + y) / 2 - half, rel=1e-12, abs=1e-15)
    assert r.ci_high == pytest.approx((x + y) / 2 + half, rel=1e-12, abs=1e-15)


def test_two_instances_tiny_t_keeps_its_p_value_below_one():
    # t = 1e-9 at df = 1: p = 1 - 2e-9 / pi, not rounded to 1.
    r = _two_instances(1.0, -1.0 + 2e-9)
    assert r.p_value_t < 1.0
    assert 1.0 - r.p_value_t == pytest.approx(2 * r.statistic / math.pi, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_three_instances_df2_closed_form(seed, confidence):
    # df = 2: P(|T| > t) = 2 / ((sqrt(2 + t^2) + t) sqrt(2 + t^2)) and the quantile with
    # upper tail q is (1 - 2q) / sqrt(2 q (1 - q)).
    rng = np.random.default_rng(seed)
    d = rng.normal(0.1 * seed, 0.3, 3)
    r = paired_comparison(np.zeros(3), d, confidence=confidence)
    t = abs(r.statistic)
    root = math.sqrt(2.0 + t * t)
    assert r.p_value_t == pytest.approx(2.0 / ((root + t) * root), rel=1e-13)
    q = (1 - confidence) / 2
    se = math.sqrt(math.fsum((v - math.fsum(d) / 3) ** 2 for v in d) / 2) / math.sqrt(3)
    half = (1 - 2 * q) / math.sqrt(2 * q * (1 - q)) * se
    assert r.ci_high - r.ci_low == pytest.approx(2 * half, rel=1e-12)


def _even_df_sf(t: float, df: int) -> float:
    """P(T > t) for even df from the finite series, in 50-digit decimal arithmetic.

    P(|T| < t) = sin(theta) sum_{j < df/2} (2j-1)!!/(2j)!! cos(theta)^(2j), with
    sin(theta)^2 = t^2 / (df + t^2).
    """
    getcontext().prec = 50
    tt, nu = Decimal(t) ** 2, Decimal(df)
    sin, cos2 = (tt / (nu + tt)).sqrt(), nu / (nu + tt)
    term, total = Decimal(1), Decimal(0)
    for j in range(df // 2):
        total += term
        term = term * cos2 * (2 * j + 1) / (2 * j + 2)
    return float((1 - sin * total) / 2)


@pytest.mark.parametrize("n,shift", [(31, 0.1), (1001, 0.0), (1001, 0.05), (100_001, 0.002),
                                     (100_001, 0.0)])
def test_many_instances_against_exact_series(n, shift):
    # The regime of a user-level test on a large dataset: many df, moderate t.
    rng = np.random.default_rng(n)
    d = rng.normal(shift, 0.3, n)
    r = paired_comparison(np.zeros(n), d, permutations=10)
    assert rel_err(r.p_value_t, 2 * _even_df_sf(abs(r.statistic), n - 1)) < 1e-12


def test_p_value_symmetric_and_interval_mirrored():
    rng = np.random.default_rng(17)
    a, b = rng.random(40), rng.random(40)
    ab = paired_comparison(a, b, permutations=10)
    ba = paired_comparison(b, a, permutations=10)
    assert ab.statistic == -ba.statistic
    assert ab.p_value_t == ba.p_value_t
    assert (ab.ci_low, ab.ci_high) == (-ba.ci_high, -ba.ci_low)
    assert ab.ci_low < ab.difference < ab.ci_high


def test_huge_t_gives_tiny_positive_p_value():
    # Nearly constant differences: t is large but finite, p small but never NaN or negative.
    d = np.full(10, 0.25)
    d[0] += 1e-12
    r = paired_comparison(np.zeros(10), d)
    assert math.isfinite(r.statistic) and r.statistic > 1e10
    assert 0.0 <= r.p_value_t < 1e-80
    assert r.ci_low < r.ci_high and r.ci_high - r.ci_low < 1e-11


def test_t_test_does_not_import_scipy_with_tieeval():
    import subprocess
    import sys

    code = ("import sys, tieeval, tieeval.analysis.stats, tieeval.analysis.diff; "
            "print(any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------
# Paired t-test


@pytest.mark.parametrize("n", [2, 3, 5, 10, 20, 21, 50, 1000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_test_matches_scipy(n, confidence):
    rng = np.random.default_rng(n)
    a = rng.random(n)
    b = np.clip(a + rng.normal(0.02, 0.2, n), 0, 1)
    r = paired_comparison(a, b, confidence=confidence, permutations=200)
    ref = stats.ttest_rel(b, a)
    ci = ref.confidence_interval(confidence)
    assert r.n == n
    assert rel_err(r.statistic, ref.statistic) < 1e-10
    assert rel_err(r.p_value_t, ref.pvalue) < 1e-9
    # scipy's own t quantile is accurate to ~1e-10 at small df before 1.11
    assert rel_err(r.ci_low, ci.low) < 1e-9
    assert rel_err(r.ci_high, ci.high) < 1e-9
    # the interval is mean -+ t_{n-1, (1+confidence)/2} * se, checked with scipy's quantile
    se = np.std(b - a, ddof=1) / math.sqrt(n)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * se
    assert r.ci_high - r.ci_low == pytest.approx(2 * half, rel=1e-10)
    assert r.confidence == confidence


def test_means_are_exact():
    rng = np.random.default_rng(5)
    a = rng.random(777) * 1e-3
    b = rng.random(777)
    r = paired_comparison(a, b, permutations=10)
    exact = lambda v: float(sum(map(Fraction, v.tolist())) / len(v))  # noqa: E731
    assert r.a == exact(a)
    assert r.b == exact(b)
    assert r.difference == exact(b - a)


def test_difference_std_formula():
    r = paired_comparison([0.0, 1.0, 0.5, 0.5], [1.0, 1.0, 0.0, 1.0],
                          a_variance=[0.25, 0.25, 0.0, 0.25], b_variance=[0.0, 0.0, 0.25, 0.0])
    assert r.difference_std == pytest.approx(math.sqrt(1.0) / 4, rel=1e-15)
    assert paired_comparison([0.1, 0.2], [0.3, 0.5]).difference_std is None


def test_difference_std_matches_simulated_tie_breaks():
    # HR@1 of a positive tied with b_i candidates at the top: 1 with probability 1/b_i. Two
    # runs broken independently; the spread of the mean difference over simulated tie-breaks
    # must match the closed form.
    rng = np.random.default_rng(21)
    n = 300
    pa = 1.0 / rng.integers(1, 6, size=n)
    pb = 1.0 / rng.integers(1, 6, size=n)
    r = paired_comparison(pa, pb, a_variance=pa * (1 - pa), b_variance=pb * (1 - pb),
                          permutations=10)
    draws = 4000
    sims = ((rng.random((draws, n)) < pb).mean(axis=1)
            - (rng.random((draws, n)) < pa).mean(axis=1))
    # The sample sd of 4000 draws has a relative standard error of about 1/sqrt(2*4000).
    assert np.std(sims, ddof=1) == pytest.approx(r.difference_std, rel=5 / math.sqrt(2 * draws))
    assert np.mean(sims) == pytest.approx(r.difference, abs=5 * r.difference_std / math.sqrt(draws))


# ---------------------------------------------------------------------------------------
# Sign-flip randomization test


def _brute_force_p(d) -> float:
    """Share of all sign vectors with |sum s_i d_i| >= |sum d_i|, in exact arithmetic."""
    exact = [Fraction(float(x)) for x in d]
    observed = abs(sum(exact))
    hits = sum(abs(sum(s * x for s, x in zip(signs, exact))) >= observed
               for signs in itertools.product((1, -1), repeat=len(exact)))
    return hits / 2 ** len(exact)


# Differences of NDCG-like gains: equal sums of them need not be equal in float arithmetic.
_GAINS = [1 / math.log2(r + 1) for r in range(1, 6)]
_TIED_DIFFS = [_GAINS[0] - _GAINS[1], _GAINS[1] - _GAINS[0], _GAINS[2] - _GAINS[4], 0.0,
               _GAINS[1] - _GAINS[3], _GAINS[0] - _GAINS[2]]


@pytest.mark.parametrize("n", range(2, 11))
def test_exact_randomization_matches_brute_force(n):
    rng = np.random.default_rng(100 + n)
    a = rng.random(n)
    d = rng.normal(0.1, 0.3, n)
    r = paired_comparison(a, a + d)
    assert r.randomization_exact
    assert r.p_value_randomization == _brute_force_p((a + d) - a)


@pytest.mark.parametrize("seed", range(8))
def test_exact_randomization_with_ties_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 11))
    d = rng.choice(_TIED_DIFFS, size=n)
    r = paired_comparison(np.zeros(n), d)
    assert r.p_value_randomization == _brute_force_p(d)


def test_exact_randomization_matches_scipy_permutation_test():
    rng = np.random.default_rng(7)
    n = 14
    a = rng.random(n)
    b = a + rng.normal(0.08, 0.2, n)
    ref = stats.permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=np.inf,
                                 vectorized=True)
    r = paired_comparison(a, b)
    assert r.p_value_randomization == pytest.approx(ref.pvalue, rel=1e-12)


def test_exact_at_twenty_monte_carlo_above():
    assert EXACT_RANDOMIZATION_MAX_N == 20
    rng = np.random.default_rng(8)
    d = rng.normal(0, 1, 21)
    assert paired_comparison(np.zeros(20), d[:20]).randomization_exact
    r = paired_comparison(np.zeros(21), d, permutations=1000)
    assert not r.randomization_exact
    # (count + 1) / (permutations + 1)
    assert (r.p_value_randomization * 1001) == pytest.approx(round(r.p_value_randomization
                                                                   * 1001), abs=1e-9)


def _mc_tolerance(p: float, *sizes: int) -> float:
    # 5 standard errors of the difference of independent Monte Carlo estimates
    return 5 * math.sqrt(max(p * (1 - p), 1e-4) * sum(1 / s for s in sizes))


def _seeded(seed) -> dict:
    """scipy's permutation_test takes ``rng`` from 1.15 and ``random_state`` before."""
    import inspect
    name = "rng" if "rng" in inspect.signature(stats.permutation_test).parameters \
        else "random_state"
    return {name: np.random.default_rng(seed)}


def test_monte_carlo_matches_scipy_permutation_test():
    rng = np.random.default_rng(9)
    n = 60
    a = rng.random(n)
    b = a + rng.normal(0.03, 0.2, n)
    ref = stats.permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=20000,
                                 vectorized=True, **_seeded(1))
    r = paired_comparison(a, b, permutations=20000)
    assert abs(r.p_value_randomization - ref.pvalue) < _mc_tolerance(ref.pvalue, 20000, 20000)


def test_monte_carlo_matches_exact_enumeration():
    # n = 22 is beyond the automatic exact limit but still enumerable (4M sign vectors).
    rng = np.random.default_rng(10)
    d = rng.choice(_TIED_DIFFS, size=22) + rng.normal(0.02, 0.05, 22)
    exact = _randomization_exact(d)
    r = paired_comparison(np.zeros(22), d, permutations=20000, seed=3)
    assert abs(r.p_value_randomization - exact) < _mc_tolerance(exact, 20000)


def test_monte_carlo_matches_separate_monte_carlo():
    rng = np.random.default_rng(14)
    n = 200
    a = rng.random(n)
    b = a + rng.normal(0.02, 0.25, n)
    d = b - a
    draws = 20000
    signs = rng.choice([-1.0, 1.0], size=(draws, n))
    ref = (np.count_nonzero(np.abs(signs @ d) >= abs(d.sum()) * (1 - 1e-12)) + 1) / (draws + 1)
    r = paired_comparison(a, b, permutations=draws, seed=123)
    assert abs(r.p_value_randomization - ref) < _mc_tolerance(ref, draws, draws)
    # and it agrees with the t-test at this n
    assert abs(r.p_value_randomization - r.p_value_t) < _mc_tolerance(r.p_value_t, draws)


def test_monte_carlo_is_reproducible_and_seeded():
    rng = np.random.default_rng(15)
    a, b = rng.random(40), rng.random(40)
    one = paired_comparison(a, b, permutations=3000, seed=1)
    assert paired_comparison(a, b, permutations=3000, seed=1) == one
    other = paired_comparison(a, b, permutations=3000, seed=2)
    assert other.p_value_randomization != one.p_value_randomization
    assert other.p_value_t == one.p_value_t


def test_monte_carlo_never_returns_zero():
    n = 50
    r = paired_comparison(np.zeros(n), np.linspace(0.5, 1.0, n), permutations=999)
    assert r.p_value_randomization == 1 / 1000


# ---------------------------------------------------------------------------------------
# Edge cases and validation


def test_single_instance_has_no_tests():
    r = paired_comparison([0.2], [0.5], a_variance=[0.01], b_variance=[0.0])
    assert (r.n, r.a, r.b, r.difference) == (1, 0.2, 0.5, 0.5 - 0.2)
    assert r.difference_std == pytest.approx(0.1)
    assert r.statistic is None and r.p_value_t is None and r.p_value_randomization is None
    assert r.ci_low is None and r.ci_high is None


@pytest.mark.parametrize("n", [2, 7, 25])
def test_all_differences_zero(n):
    v = np.linspace(0, 1, n)
    r = paired_comparison(v, v.copy())
    assert (r.statistic, r.p_value_t, r.p_value_randomization) == (0.0, 1.0, 1.0)
    assert (r.ci_low, r.ci_high) == (0.0, 0.0)
    assert r.difference == 0.0


@pytest.mark.parametrize("n,sign", [(3, 1), (12, -1), (30, 1)])
def test_constant_nonzero_differences(n, sign):
    a = np.arange(n) / 64  # dyadic, so that b - a is exactly +-0.25 for every instance
    r = paired_comparison(a, a + sign * 0.25, permutations=500)
    assert r.statistic == sign * math.inf
    assert r.p_value_t == 0.0
    assert r.difference == sign * 0.25
    assert (r.ci_low, r.ci_high) == (r.difference, r.difference)
    # only the identity and the all-minus flip reach |sum d|
    expected = 2 / 2 ** n if n <= 20 else 1 / 501
    assert r.p_value_randomization == pytest.approx(expected, rel=1e-12)


def test_to_dict_has_every_field():
    r = paired_comparison([0.1, 0.2, 0.3], [0.2, 0.2, 0.5])
    assert isinstance(r, PairedResult)
    assert list(r.to_dict()) == ["n", "a", "b", "difference", "difference_std", "p_value_t",
                                 "p_value_randomization", "ci_low", "ci_high", "statistic",
                                 "confidence", "randomization_exact"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(a_values=[], b_values=[]), "no instances to compare"),
    (dict(a_values=[1.0, 2.0], b_values=[1.0]),
     "a_values and b_values must have one value per instance each, got 2 and 1"),
    (dict(a_values=[[1.0]], b_values=[[1.0]]), r"a_values must be 1-D .* got shape \(1, 1\)"),
    (dict(a_values=[0.1, float("nan")], b_values=[0.1, 0.2]),
     r"a_values\[1\] is nan; values must be finite"),
    (dict(a_values=[0.1, 0.2], b_values=["x", 0.2]), "b_values must be an array of numbers"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], a_variance=[0.0, 0.0]),
     "give both a_variance and b_variance or neither"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], a_variance=[0.0, -1.0],
          b_variance=[0.0, 0.0]), r"a_variance\[1\] is -1.0; variances must be >= 0"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], a_variance=[0.0],
          b_variance=[0.0, 0.0]), r"a_variance must have one value per instance \(2\), got 1"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], permutations=0),
     "permutations must be >= 1, got 0"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], permutations=10.5),
     "permutations must be a whole number >= 1, got 10.5"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], permutations=True),
     "permutations must be a whole number >= 1, got True"),
    (dict(a_values=[0.1, 0.2], b_values=[0.1, 0.2], confidence=1.0),
     r"confidence must be between 0 and 1 \(exclusive\), got 1.0"),
])
def test_validation_messages(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        paired_comparison(**kwargs)


# ---------------------------------------------------------------------------------------
# Rankings


def test_rank_methods_competition_style():
    ranked = rank_methods({"A": 0.3, "B": 0.5, "C": 0.3, "D": 0.1, "E": 0.5})
    assert [(r.method, r.value, r.rank) for r in ranked] == [
        ("B", 0.5, 1), ("E", 0.5, 1), ("A", 0.3, 3), ("C", 0.3, 3), ("D", 0.1, 5)]
    assert rank_methods({}) == []


def test_rank_methods_matches_scipy_rankdata():
    rng = np.random.default_rng(16)
    for _ in range(50):
        values = rng.integers(0, 6, size=12) / 8  # many ties
        names = [f"m{i}" for i in range(12)]
        ranks = {r.method: r.rank for r in rank_methods(dict(zip(names, values)))}
        want = stats.rankdata(-values, method="min")
        assert [ranks[m] for m in names] == list(want)


def test_rank_methods_tolerance():
    values = {"A": 0.41231, "B": 0.41229, "C": 0.41227, "D": 0.41225}
    assert [r.rank for r in rank_methods(values)] == [1, 2, 3, 4]
    # within 5e-5 of the group's top value A: B and C tie with A; D (6e-5 below) does not,
    # although it is within 5e-5 of C: groups are anchored at their top value
    assert [r.rank for r in rank_methods(values, tolerance=5e-5)] == [1, 1, 1, 4]


def test_rank_methods_errors():
    with pytest.raises(ParameterError, match="value of method 'A' is NaN"):
        rank_methods({"A": float("nan")})
    with pytest.raises(ParameterError, match="value of method 'A' is not a number"):
        rank_methods({"A": "high"})
    with pytest.raises(ParameterError, match="tolerance must be >= 0"):
        rank_methods({"A": 1.0}, tolerance=-1)


def test_ranking_changes():
    original = {"A": 0.50, "B": 0.45, "C": 0.40, "D": 0.30}
    tie_aware = {"A": 0.20, "B": 0.44, "C": 0.39, "D": 0.39}
    changes = ranking_changes(original, tie_aware)
    assert [(c.method, c.original_rank, c.tie_aware_rank, c.change) for c in changes] == [
        ("B", 2, 1, 1), ("C", 3, 2, 1), ("D", 4, 2, 2), ("A", 1, 4, -3)]
    assert changes[0].to_dict() == {"method": "B", "original": 0.45, "tie_aware": 0.44,
                                    "original_rank": 2, "tie_aware_rank": 1, "change": 1}


def test_ranking_changes_needs_same_methods():
    with pytest.raises(ParameterError, match=r"only in original: C; only in tie_aware: D"):
        ranking_changes({"A": 1, "C": 2}, {"A": 1, "D": 2})
