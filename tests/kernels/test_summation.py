"""ExactSum: the exact, order-independent float64 sum behind every dataset mean."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import tieeval.kernels.summation as summation
from tieeval.kernels.summation import ExactSum


def wild(rng, size):
    """Finite float64 values spanning the whole exponent range, both signs, some zeros."""
    mant = rng.random(size) + 0.5
    exps = rng.integers(-1070, 1000, size=size)
    x = np.ldexp(mant, exps) * rng.choice([-1.0, 1.0], size=size)
    x[rng.random(size) < 0.05] = 0.0
    x[rng.random(size) < 0.05] = -0.0
    return x


def summed(values) -> ExactSum:
    s = ExactSum()
    s.add(np.asarray(values))
    return s


def exact(values) -> Fraction:
    return sum((Fraction(float(v)) for v in values), Fraction(0))


@pytest.mark.parametrize("size", [1, 2, 10, 1000, 20000])
def test_equals_fsum_on_wild_magnitudes(rng, size):
    for _ in range(5):
        x = wild(rng, size)
        s = summed(x)
        assert s.value() == math.fsum(x)
        if size <= 1000:
            assert s.fraction() == exact(x)


def test_equals_fsum_on_cancelling_values(rng):
    # Large values cancel exactly, leaving the small ones: naive summation loses them.
    big = np.ldexp(rng.random(500) + 0.5, 900)
    small = rng.normal(size=500)
    x = rng.permutation(np.concatenate([big, -big, small]))
    assert summed(x).value() == math.fsum(x) == math.fsum(small)
    assert summed([1e16, 1.0, -1e16]).value() == 1.0


def test_subnormals_and_extremes():
    tiny = np.array([5e-324, 5e-324, -1e-320, 2.2250738585072014e-308])
    assert summed(tiny).fraction() == exact(tiny)
    assert summed(tiny).value() == math.fsum(tiny)
    huge = np.array([1.7976931348623157e308, -1.7976931348623157e308, 1.0])
    assert summed(huge).value() == 1.0


def test_many_values_of_one_exponent(rng):
    # 2**17 copies of the largest significand below 1 stress the per-exponent half sums.
    x = np.full(1 << 17, 1.0 - 2.0 ** -53)
    assert summed(x).fraction() == Fraction(1 << 17) * Fraction(float(x[0]))
    y = rng.random(200000)
    assert summed(y).value() == math.fsum(y)


def test_chunking_is_exact(rng, monkeypatch):
    # Inputs longer than _MAX_ROWS are added chunk by chunk; shrink it to exercise the path.
    x = wild(rng, 1000)
    monkeypatch.setattr(summation, "_MAX_ROWS", 7)
    assert summed(x).fraction() == exact(x)


def test_negative_and_zero_values():
    assert summed([-1.5, -2.25]).value() == -3.75
    assert summed([0.0, -0.0, 0.0]).value() == 0.0
    assert summed([3.0, -3.0]).fraction() == 0
    assert summed([-0.1, 0.1]).value() == 0.0
    assert summed([-2.0 ** -1074]).value() == -5e-324


def test_empty():
    s = ExactSum()
    assert s.value() == 0.0 and s.fraction() == 0
    s.add(np.array([], dtype=np.float64))
    assert s.value() == 0.0
    s.merge(ExactSum())
    assert s.value() == 0.0
    assert s.mean(3) == 0.0


@pytest.mark.parametrize("pieces", [2, 3, 17])
def test_merge_in_any_split_is_bit_identical(rng, pieces):
    x = wild(rng, 3000)
    whole = summed(x)
    for _ in range(10):
        cuts = np.sort(rng.choice(np.arange(1, x.size), size=pieces - 1, replace=False))
        parts = [summed(p) for p in np.split(x, cuts)]
        rng.shuffle(parts)
        merged = ExactSum()
        for p in parts:
            merged.merge(p)
        assert merged.fraction() == whole.fraction()
        assert merged.value() == whole.value()
        assert merged.mean(x.size) == whole.mean(x.size)
        # adding the pieces sequentially into one sum is the same too
        seq = ExactSum()
        for piece in np.split(x[rng.permutation(x.size)], cuts):
            seq.add(piece)
        assert seq.fraction() == whole.fraction()


def test_merge_into_empty_and_from_empty(rng):
    x = wild(rng, 50)
    a = ExactSum()
    a.merge(summed(x))
    assert a.fraction() == exact(x)
    a.merge(ExactSum())
    assert a.fraction() == exact(x)


def test_mean_rounds_once(rng):
    x = rng.random(999)
    s = summed(x)
    assert s.mean(999) == float(exact(x) / 999)
    # 0.1 * 3 / 3 is not 0.1 in naive float arithmetic, but the exact sum divides exactly
    assert summed([0.1, 0.1, 0.1]).mean(3) == 0.1


def test_accepts_other_shapes_and_dtypes(rng):
    x = rng.random((20, 7)).astype(np.float32)
    # float32 -> float64 is exact, so the sum is the exact sum of the float32 values
    assert summed(x).fraction() == exact(x.ravel())
    assert summed([1, 2, 3]).value() == 6.0


def test_add_counts_equals_repeated_add(rng):
    values = wild(rng, 40)
    counts = rng.integers(0, 1000, size=40)
    counts[:3] = 0
    s = ExactSum()
    s.add_counts(values, counts)
    assert s.fraction() == sum((Fraction(float(v)) * int(c) for v, c in zip(values, counts)),
                               Fraction(0))
    r = summed(np.repeat(values, counts))
    assert s.fraction() == r.fraction() and s.value() == r.value()
    # mixing both kinds of addition and merging stays exact
    s.add(values)
    t = ExactSum()
    t.add_counts(values, counts + 1)
    assert s.fraction() == t.fraction()


def test_add_counts_degenerate():
    s = ExactSum()
    s.add_counts(np.array([]), np.array([], dtype=np.int64))
    s.add_counts(np.array([0.0, -0.0, 5.0]), np.array([3, 4, 0]))
    assert s.fraction() == 0 and s.value() == 0.0
    s.add_counts(np.array([-0.5, 0.25]), np.array([2 ** 40, 2 ** 41]))
    assert s.fraction() == 0  # -2**39 + 2**39
    s.add_counts(np.array([1e-300, 1e300]), np.array([7, 1]))
    assert s.fraction() == 7 * Fraction(1e-300) + Fraction(1e300)


def test_add_counts_splits_weights_that_would_round(rng):
    """Counts summing past 2**25 are added in several weighted chunks; counts past 2**25
    each go through Python integers. Both stay exact (against fractions)."""
    values = wild(rng, 300)
    counts = rng.integers(1, 1 << 20, size=300)  # about 2**28 in total: several chunks
    counts[[5, 77]] = [(1 << 25) + 3, 1 << 30]
    s = ExactSum()
    s.add_counts(values, counts)
    assert s.fraction() == sum((Fraction(float(v)) * int(c) for v, c in zip(values, counts)),
                               Fraction(0))
    # the largest significands at the largest weight a chunk takes: no bit is lost
    top = np.nextafter(np.array([1.0, -1.0]), 2.0)
    t = ExactSum()
    t.add_counts(np.repeat(top, 3), np.full(6, 1 << 23))
    assert t.fraction() == 3 * (1 << 23) * sum(Fraction(float(v)) for v in top)


def test_exact_sum_gathers_small_additions():
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=int(k)) * 10.0 ** rng.integers(-8, 8) for k in
             rng.integers(0, 3000, size=60)]
    one, many = ExactSum(), ExactSum()
    one.add(np.concatenate(parts))
    for p in parts:
        many.add(p)
    assert many.state() == one.state() and many.value() == one.value()
    merged = ExactSum()
    merged.add(parts[0])
    merged.merge(many)
    again = ExactSum.from_state(merged.state())
    assert again.fraction() == one.fraction() + ExactSum.from_state(
        _single(parts[0])).fraction()


def _single(values):
    s = ExactSum()
    s.add(values)
    return s.state()


@pytest.mark.parametrize("span", [5, 3000, 10 ** 7])
def test_distinct_pairs_counts_every_pair(rng, span):
    """Both ways (a histogram of few keys, np.unique of many) against a Counter."""
    from collections import Counter

    from tieeval.kernels.summation import distinct_pairs
    x = rng.integers(0, span, size=5000)
    y = rng.integers(1, span + 1, size=5000)
    gx, gy, times = distinct_pairs(x, y)
    assert Counter(dict(zip(zip(gx.tolist(), gy.tolist()), times.tolist()))) == Counter(
        zip(x.tolist(), y.tolist()))
    assert list(zip(gx, gy)) == sorted(set(zip(gx, gy)))  # each pair once, in order
    ex, ey, et = distinct_pairs(x[:0], y[:0])
    assert ex.size == ey.size == et.size == 0


def test_flush_all_gives_each_sum_its_exact_total(rng):
    """Many sums' waiting values added in one pass: each sum is the exact Fraction sum of
    its own values (wide exponents, zeros, whole numbers, an empty and a lone sum)."""
    from tieeval.kernels.summation import flush_all
    values = [rng.normal(size=300) * 10.0 ** rng.integers(-300, 300, 300),
              rng.integers(0, 2, 943).astype(np.float64), 1 / np.arange(1.0, 500.0),
              np.zeros(40), np.array([]), np.array([-0.0, 5e-324, -1e308, 1e308])]
    sums = []
    for x in values:
        s = ExactSum()
        s.add(x[: x.size // 2])
        s.add(x[x.size // 2:])
        sums.append(s)
    flush_all(sums)
    for s, x in zip(sums, values):
        assert not s._pending
        assert s.fraction() == sum((Fraction(v) for v in x.tolist()), Fraction(0))
    lone = ExactSum()
    lone.add(values[2])
    flush_all([lone])
    assert lone.fraction() == sum((Fraction(v) for v in values[2].tolist()), Fraction(0))
    # several sums waiting on empty arrays only (a measure undefined on every row): zero
    empty = [ExactSum() for _ in range(3)]
    for s in empty:
        s.add(np.array([]))
    flush_all(empty)
    assert [s.fraction() for s in empty] == [0, 0, 0] and not any(s._pending for s in empty)
