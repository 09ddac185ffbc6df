"""Paired comparison of two methods evaluated on the same instances, and rankings of methods.

A user-level paired test (as in sign-aware evaluation papers that compare a method with a
baseline user by user) asks whether the mean of the per-instance differences ``d = b - a``
is distinguishable from zero, by the paired Student t-test and by the paired sign-flip
randomization test (under the null hypothesis A and B are exchangeable within each pair, so
every ``d_i`` is equally likely to have either sign); :func:`paired_comparison` gives the
formulas. With per-instance tie-break variances the result also carries the spread of the
mean difference that a re-run with another tie-breaker would show.

The Student t distribution comes from ``scipy.special`` (``stdtr`` / ``stdtrit``, as in
``scipy.stats.t``), imported only when a t-test is computed. The sign-flip test is tieeval's
own, and its p-values are part of the documented output.
"""


from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tieeval.errors import ParameterError
from tieeval.kernels.summation import ExactSum
from tieeval.records.diff import (  # noqa: F401 - the paired result, where it was
    EXACT_RANDOMIZATION_MAX_N,
    PairedResult,
)
from tieeval.records.results import AsDict

_EPS = 2.220446049250313e-16  # float64 machine epsilon


# ---------------------------------------------------------------------------------------
# Student t distribution (scipy, imported here so that ``import tieeval`` stays light)

def _t_two_sided_p(t: float, df: int) -> float:
    """Two-sided p-value ``2 P(T_df > |t|)`` of a finite t, capped at 1."""
    t = abs(t)
    if df == 1:
        # Cauchy: 2 atan2(1, t) / pi, accurate in both tails. scipy 1.17's stdtr(1, x)
        # returns exactly 0.5 for |x| below about 7e-9 (scipy issue 25667).
        return min(1.0, 2.0 * math.atan2(1.0, t) / math.pi)
    from scipy import special

    return min(1.0, 2.0 * float(special.stdtr(df, -t)))


def _t_upper_quantile(q: float, df: int) -> float:
    """The ``t`` with ``P(T_df > t) = q``, for ``0 < q <= 1/2`` (``scipy.stats.t.isf``).

    One and two degrees of freedom have closed forms, used here because scipy's
    ``stdtrit`` is accurate there only in recent versions (1.10 is off by 1e-11)."""
    if df == 1:  # Cauchy: tan(pi (1/2 - q))
        return math.tan(math.pi * (0.5 - q))
    if df == 2:  # t = (1 - 2q) / sqrt(2 q (1 - q))
        return (1.0 - 2.0 * q) / math.sqrt(2.0 * q * (1.0 - q))
    from scipy import special

    return -float(special.stdtrit(df, q))


# ---------------------------------------------------------------------------------------
# Paired comparison


def _as_values(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be an array of numbers") from None
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be 1-D (one value per instance), got shape "
                             f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ParameterError(f"{name}[{bad}] is {arr[bad]}; values must be finite")
    return arr


def check_permutations(permutations) -> int:
    """``permutations`` as an int, or a ParameterError naming the bad value."""
    if isinstance(permutations, (bool, np.bool_)) or not isinstance(permutations,
                                                                     (int, np.integer)):
        raise ParameterError(f"permutations must be a whole number >= 1, got {permutations!r}")
    if permutations < 1:
        raise ParameterError(f"permutations must be >= 1, got {permutations}")
    return int(permutations)


def _exact_mean(values: np.ndarray) -> float:
    # The same exact, order-independent mean the engine reports for a run's column.
    total = ExactSum()
    total.add(values)
    return total.mean(values.size)


def _sign_flip_tolerance(d: np.ndarray) -> float:
    # Two computed sums of +-d_i that are equal in exact arithmetic differ by at most
    # 2 (n-1) eps sum|d_i| (the classic bound for any summation order); count such sums as
    # ties, as the exact test would. Distinct sums closer than this do not occur in practice.
    return 2.0 * d.size * _EPS * float(np.sum(np.abs(d)))


def _signed_sums(d: np.ndarray) -> np.ndarray:
    """All ``2**len(d)`` sums ``sum_i s_i d_i``, the all-plus sum first."""
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def _randomization_exact(d: np.ndarray) -> float:
    # Meet in the middle: sums over each half, then all 2**n combinations by broadcasting.
    half = d.size // 2
    left, right = _signed_sums(d[:half]), _signed_sums(d[half:])
    observed = abs(left[0] + right[0])  # the identity flip, computed like the others
    tol = _sign_flip_tolerance(d)
    count = 0
    for start in range(0, left.size, 64):  # blocks keep the broadcast near 8 MB
        block = np.abs(left[start:start + 64, None] + right[None, :])
        count += int(np.count_nonzero(block >= observed - tol))
    return count / float(1 << d.size)


def _randomization_monte_carlo(d: np.ndarray, permutations: int, seed) -> float:
    rng = np.random.default_rng(seed)
    n = d.size
    observed = abs(float(np.sum(d)))
    tol = _sign_flip_tolerance(d)
    rows = max(1, min(permutations, (1 << 22) // n))  # about 32 MB of float64 signs
    buffer = np.empty((rows, n), dtype=np.float64)  # reused: no page faults per block
    count = 0
    for done in range(0, permutations, rows):
        m = min(rows, permutations - done)
        # One random byte gives eight independent fair signs.
        packed = rng.integers(0, 256, size=(m, (n + 7) // 8), dtype=np.uint8)
        signs = buffer[:m]
        np.copyto(signs, np.unpackbits(packed, axis=1, count=n))
        signs *= 2.0
        signs -= 1.0
        count += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
    return (count + 1) / (permutations + 1)


_BLOCK_BYTES = 1 << 24  # random bytes drawn at a time by sign_flip_p_value (16 MB)


def _popcount_bytes(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    return _POPCOUNT[x]  # pragma: no cover - numpy 1.x


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def sign_flip_p_value(d, permutations: int = 10000, seed=0) -> float:
    """Monte Carlo p-value of :func:`paired_comparison`'s sign-flip test on differences
    ``d``, grouped by value. Instances with the same ``|d_i| = v`` enter only through how
    many of their signs are +1, so each draw needs one popcount of ``c_v`` random bits per
    distinct value rather than one sign per instance: the same distribution, at a cost that
    follows the number of distinct values (a handful for HR, a few thousand for MRR)
    instead of the number of instances.

    >>> sign_flip_p_value(np.zeros(50))
    1.0
    """
    d = np.asarray(d, dtype=np.float64)
    mags = np.abs(d)
    values, inverse = np.unique(mags, return_inverse=True)
    counts = np.bincount(inverse, minlength=values.size)
    positives = np.bincount(inverse, weights=(d > 0), minlength=values.size)
    keep = values > 0
    values, counts, positives = values[keep], counts[keep], positives[keep].astype(np.int64)
    if values.size == 0:
        return 1.0
    observed = abs(float((2 * positives - counts) @ values))
    tol = _sign_flip_tolerance(d)
    # Each value's signs are the bits of ceil(c_v / 8) random bytes, the last byte masked.
    nbytes = (counts + 7) // 8
    starts = np.concatenate(([0], np.cumsum(nbytes)[:-1]))
    width = int(nbytes.sum())
    mask = np.full(width, 0xFF, dtype=np.uint8)
    partial = counts % 8 != 0
    mask[(starts + nbytes - 1)[partial]] = ((1 << (counts[partial] % 8)) - 1).astype(np.uint8)
    offset = float(counts @ values)
    rng = np.random.default_rng(seed)
    rows = max(1, min(permutations, _BLOCK_BYTES // width))
    hits = 0
    for done in range(0, permutations, rows):
        m = min(rows, permutations - done)
        bits = rng.integers(0, 256, size=(m, width), dtype=np.uint8)
        bits &= mask
        ones = np.add.reduceat(_popcount_bytes(bits), starts, axis=1, dtype=np.int64)
        sums = 2.0 * (ones @ values) - offset
        hits += int(np.count_nonzero(np.abs(sums) >= observed - tol))
    return (hits + 1) / (permutations + 1)


def paired_comparison(a_values, b_values, *, a_variance=None, b_variance=None,
                      permutations: int = 10000, seed=0, confidence: float = 0.95,
                      grouped_signs: bool = False) -> PairedResult:
    """Compare method B with method A instance by instance (a user-level paired test).

    Parameters
    ----------
    a_values, b_values : array_like of float, shape (n,)
        Per-instance values of the same metric for methods A and B on the same instances,
        in the same order (for example each user's tie-aware NDCG@10). Must be finite.
    a_variance, b_variance : array_like of float, shape (n,), optional
        Per-instance tie-break variances of ``a_values`` and ``b_values``. Give both or
        neither; pass zeros for a run without ties (or an 'original' column, which is
        deterministic).
    permutations : int, default 10000
        Number of Monte Carlo sign-flip vectors when ``n > 20``.
    seed : int or None, default 0
        Seed of ``np.random.default_rng`` for the Monte Carlo sign flips; the same seed
        gives the same p-value.
    confidence : float, default 0.95
        Level of the confidence interval, in (0, 1).
    grouped_signs : bool, default False
        Draw the Monte Carlo sign flips per distinct ``|d_i|`` (:func:`sign_flip_p_value`):
        the same test, much faster when the differences take few values (HR, NDCG), but
        another random stream, so another p-value for the same seed.

    Returns
    -------
    PairedResult
        See :class:`PairedResult` for the fields.

    Notes
    -----
    With ``d = b_values - a_values``:

    * Means are exact (order-independent, rounded once), like the run means.
    * ``difference_std = sqrt(sum(a_variance + b_variance)) / n``: tie-breaks are
      independent across instances and between the two runs, so variances add.
    * Paired t-test: ``t = mean(d) / (s / sqrt(n))`` with ``s`` the sample standard
      deviation (``ddof=1``), two-sided ``p = 2 P(T_{n-1} > |t|)``, and the interval
      ``mean(d) -+ t_{n-1, (1+confidence)/2} s / sqrt(n)``. This matches
      ``scipy.stats.ttest_rel(b_values, a_values)``.
    * Sign-flip randomization test: the statistic is ``|sum(s_i d_i)|``. Because
      ``sum d_i^2`` does not change under sign flips, this orders sign vectors exactly as
      ``|t|`` does, so it is the randomization version of the same t-test. For
      ``n <= 20`` all ``2**n`` sign vectors are enumerated and ``p`` is the exact share with
      ``|sum| >= |observed sum|`` (the identity included). For larger ``n``,
      ``permutations`` random sign vectors are drawn and ``p = (count + 1) /
      (permutations + 1)``, which is never 0 and is a valid p-value (Phipson & Smyth 2010).
      Sums equal up to floating-point rounding count as ties.

    Edge cases, chosen so that every field stays JSON-friendly (None, never NaN):

    * ``n == 0`` raises :class:`~tieeval.errors.ParameterError`; at ``n == 1`` nothing
      can be tested (:class:`PairedResult`).
    * All differences zero: ``statistic = 0.0``, both p-values 1.0 and the interval
      (0.0, 0.0). (``scipy.stats.ttest_rel`` returns NaN here.)
    * All differences equal and non-zero: ``s = 0``, so ``statistic`` is +-inf,
      ``p_value_t = 0.0`` and the interval is ``(d, d)``; the randomization p-value is
      the smallest possible: ``2 / 2**n`` exact, ``1 / (permutations + 1)`` typically by
      Monte Carlo. "Equal" means equal in float64: ``b - a`` is rounded once per instance,
      so differences that are equal in exact arithmetic come out equal.

    Costs: O(n) for the t-test, O(2**n) (at most about 1e6) for the exact test and
    O(permutations * n) for the Monte Carlo test.

    Examples
    --------
    >>> r = paired_comparison([0.2, 0.4, 0.1, 0.3], [0.3, 0.6, 0.1, 0.5])
    >>> round(r.difference, 12), r.randomization_exact, r.p_value_randomization
    (0.125, True, 0.25)
    """
    a = _as_values(a_values, "a_values")
    b = _as_values(b_values, "b_values")
    if a.shape != b.shape:
        raise ParameterError(f"a_values and b_values must have one value per instance each, "
                             f"got {a.size} and {b.size}")
    n = int(a.size)
    if n == 0:
        raise ParameterError("no instances to compare (a_values and b_values are empty)")
    if (a_variance is None) != (b_variance is None):
        raise ParameterError("give both a_variance and b_variance or neither "
                             "(pass zeros for a run without ties)")
    check_permutations(permutations)
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ParameterError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")

    difference_std = None
    if a_variance is not None:
        total = ExactSum()
        for name, var in (("a_variance", a_variance), ("b_variance", b_variance)):
            var = _as_values(var, name)
            if var.shape != a.shape:
                raise ParameterError(f"{name} must have one value per instance ({n}), "
                                     f"got {var.size}")
            if np.any(var < 0):
                bad = int(np.flatnonzero(var < 0)[0])
                raise ParameterError(f"{name}[{bad}] is {var[bad]}; variances must be >= 0")
            total.add(var)
        difference_std = math.sqrt(total.value()) / n

    d = b - a
    constant = bool(np.all(d == d[0]))
    # For constant differences use d[0] itself: the rounded mean could differ by an ulp.
    difference = float(d[0]) if constant else _exact_mean(d)
    mean_a, mean_b = _exact_mean(a), _exact_mean(b)
    exact = n <= EXACT_RANDOMIZATION_MAX_N
    if n < 2:
        return PairedResult(n, mean_a, mean_b, difference, difference_std, None, None, None,
                            None, None, confidence, exact)  # nothing to test with one pair

    if exact:
        p_rand = _randomization_exact(d)
    elif grouped_signs:
        p_rand = sign_flip_p_value(d, int(permutations), seed)
    else:
        p_rand = _randomization_monte_carlo(d, int(permutations), seed)

    if constant and difference == 0.0:
        statistic, p_t, ci = 0.0, 1.0, (0.0, 0.0)
    elif constant:
        statistic, p_t, ci = math.copysign(math.inf, difference), 0.0, (difference, difference)
    else:
        df = n - 1
        se = math.sqrt(float(np.sum((d - difference) ** 2)) / df) / math.sqrt(n)
        statistic = difference / se
        p_t = _t_two_sided_p(statistic, df)
        half_width = _t_upper_quantile(0.5 * (1.0 - confidence), df) * se
        ci = (difference - half_width, difference + half_width)
    return PairedResult(n, mean_a, mean_b, difference, difference_std, p_t, p_rand,
                        float(ci[0]), float(ci[1]), float(statistic), confidence, exact)


# ---------------------------------------------------------------------------------------
# Rankings of methods

@dataclass(frozen=True)
class RankedMethod:
    """A method, its value and its competition rank (1 is best)."""

    method: str
    value: float
    rank: int


@dataclass(frozen=True)
class RankChange(AsDict):
    """A method's rank under the original and the tie-aware values.

    ``change = original_rank - tie_aware_rank``: positive when the method moves up (to a
    better rank) once ties are accounted for, negative when it moves down.
    """

    method: str
    original: float
    tie_aware: float
    original_rank: int
    tie_aware_rank: int
    change: int


def rank_methods(values: dict, *, tolerance: float = 0.0) -> list[RankedMethod]:
    """Rank methods by value, highest first, with competition ranks (1, 2, 2, 4).

    Parameters
    ----------
    values : dict of str to float
        One value per method (higher is better).
    tolerance : float, default 0.0
        Values within ``tolerance`` of the highest value of the current tie group share its
        rank. The default treats only equal values as tied.

    Returns
    -------
    list of RankedMethod
        Sorted by rank; methods sharing a rank keep the order of ``values``.

    Examples
    --------
    >>> [(r.method, r.rank) for r in rank_methods({"A": 0.3, "B": 0.5, "C": 0.3, "D": 0.1})]
    [('B', 1), ('A', 2), ('C', 2), ('D', 4)]
    """
    tolerance = float(tolerance)
    if not tolerance >= 0.0:
        raise ParameterError(f"tolerance must be >= 0, got {tolerance}")
    items = []
    for method, value in values.items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"value of method {method!r} is not a number: "
                                 f"{value!r}") from None
        if math.isnan(value):
            raise ParameterError(f"value of method {method!r} is NaN; it cannot be ranked")
        items.append((method, value))
    items.sort(key=lambda item: -item[1])  # stable: ties keep the input order
    ranked: list[RankedMethod] = []
    group_top = math.nan
    rank = 0
    for position, (method, value) in enumerate(items, start=1):
        if not group_top - value <= tolerance:  # a new tie group (NaN on the first item)
            group_top, rank = value, position
        ranked.append(RankedMethod(method, value, rank))
    return ranked


def ranking_changes(original: dict, tie_aware: dict, *,
                    tolerance: float = 0.0) -> list[RankChange]:
    """How each method's rank moves from the original to the tie-aware values.

    Parameters
    ----------
    original, tie_aware : dict of str to float
        The same methods, with their original (``np.argsort``) and tie-aware values.
    tolerance : float, default 0.0
        Passed to :func:`rank_methods` for both rankings.

    Returns
    -------
    list of RankChange
        In tie-aware rank order (ties in the order of ``tie_aware``).

    Examples
    --------
    >>> [(c.method, c.original_rank, c.tie_aware_rank, c.change) for c in
    ...  ranking_changes({"A": 0.5, "B": 0.4}, {"A": 0.3, "B": 0.4})]
    [('B', 2, 1, 1), ('A', 1, 2, -1)]
    """
    if set(original) != set(tie_aware):
        parts = [f"only in {name}: " + ", ".join(map(str, only))
                 for name, only in (("original", sorted(set(original) - set(tie_aware))),
                                    ("tie_aware", sorted(set(tie_aware) - set(original))))
                 if only]
        raise ParameterError("original and tie_aware must name the same methods ("
                             + "; ".join(parts) + ")")
    before = {r.method: r for r in rank_methods(original, tolerance=tolerance)}
    return [RankChange(r.method, before[r.method].value, r.value, before[r.method].rank,
                       r.rank, before[r.method].rank - r.rank)
            for r in rank_methods(tie_aware, tolerance=tolerance)]
