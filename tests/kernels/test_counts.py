"""Tie kernels: (a, b, n, top, original) against enumeration, lexsort and the IEEE rules."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    FLOAT_DTYPES,
    consistent_orders,
    enumerated_ranks,
    lexsort_rank,
    random_row,
)

from tieeval.errors import InputError
from tieeval.kernels.counts import NanScoreError, RowCounts, dense_counts, ragged_counts


def random_rows(rng, dtype, count, n_max=7, pool=None):
    rows = [random_row(rng, dtype, int(rng.integers(1, n_max + 1)), pool) for _ in range(count)]
    positive = np.array([rng.integers(0, len(r)) for r in rows], dtype=np.int64)
    return rows, positive


def ragged(rows):
    values = np.concatenate(rows)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    return values, offsets


def one_row(row, positive, nan_policy="raise") -> RowCounts:
    return dense_counts(row[None, :], np.array([positive]), nan_policy)


def assert_counts_equal(x: RowCounts, y: RowCounts) -> None:
    for field in ("a", "b", "n", "top", "original"):
        np.testing.assert_array_equal(getattr(x, field), getattr(y, field), err_msg=field)


# ---------------------------------------------------------------------------------------
# counts against the enumeration and lexsort oracles

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_counts_match_enumeration_and_lexsort(rng, dtype):
    rows, positive = random_rows(rng, dtype, 150)
    values, offsets = ragged(rows)
    rc = ragged_counts(values, offsets, positive)
    for i, (row, p) in enumerate(zip(rows, positive)):
        dc = one_row(row, p)
        ranks = enumerated_ranks(row, p)
        # Under uniform tie-breaking the positive takes every rank a+1..a+b (F1).
        assert set(ranks.tolist()) == set(range(int(dc.a[0]) + 1, int(dc.a[0] + dc.b[0]) + 1))
        assert dc.a[0] + 1 == lexsort_rank(row, p, "first")
        assert dc.a[0] + dc.b[0] == lexsort_rank(row, p, "last")
        assert dc.n[0] == len(row)
        # top = how many candidates can be ranked first in some consistent ordering
        assert dc.top[0] == len(set(consistent_orders(row)[:, 0].tolist()))
        assert dc.a[0] + 1 <= dc.original[0] <= dc.a[0] + dc.b[0]
        for field in ("a", "b", "n", "top", "original"):
            assert getattr(rc, field)[i] == getattr(dc, field)[0], (field, row, p)
    for c in (rc,):
        for field in ("a", "b", "n", "top", "original"):
            assert getattr(c, field).dtype == np.int64


def test_counts_closed_forms():
    # all tied: nothing above, everything tied with the positive, all at the top
    c = dense_counts(np.full((3, 5), 0.5), np.array([0, 2, 4]))
    np.testing.assert_array_equal(c.a, [0, 0, 0])
    np.testing.assert_array_equal(c.b, [5, 5, 5])
    np.testing.assert_array_equal(c.top, [5, 5, 5])
    # strictly decreasing row: the positive at column j has j candidates above it
    row = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]] * 5)
    c = dense_counts(row, np.arange(5))
    np.testing.assert_array_equal(c.a, np.arange(5))
    np.testing.assert_array_equal(c.b, np.ones(5))
    np.testing.assert_array_equal(c.original, np.arange(5) + 1)
    np.testing.assert_array_equal(c.top, np.ones(5))


def test_signed_zeros_and_infinities_tie():
    # IEEE: -0.0 == 0.0 and inf == inf, so each pair is one tie block.
    c = one_row(np.array([-0.0, 0.0, np.inf, np.inf, -np.inf, -np.inf]), 0)
    assert (c.a[0], c.b[0], c.top[0]) == (2, 2, 2)
    c = one_row(np.array([-0.0, 0.0, np.inf, np.inf, -np.inf, -np.inf]), 4)
    assert (c.a[0], c.b[0]) == (4, 2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_ragged_equals_dense_row_by_row(rng, dtype):
    rows, positive = random_rows(rng, dtype, 60, n_max=40)
    rc = ragged_counts(*ragged(rows), positive)
    for i, (row, p) in enumerate(zip(rows, positive)):
        dc = one_row(row, p)
        for field in ("a", "b", "n", "top", "original"):
            assert getattr(rc, field)[i] == getattr(dc, field)[0], field


# ---------------------------------------------------------------------------------------
# original: invariants only (the tie order of np.argsort is platform dependent)

def heavy_tie_matrix(rng, dtype, rows, cols):
    # five discrete levels: the positive usually shares its score with many negatives
    return rng.integers(0, 5, size=(rows, cols)).astype(dtype) / 4


def saturated_matrix(rng, dtype, rows, cols):
    # sigmoid saturation: the positive and a few negatives sit exactly at the top score
    s = rng.random((rows, cols)).astype(dtype) * np.asarray(0.9, dtype)
    top = rng.random((rows, cols)) < 0.05
    top[:, 0] = True
    s[top] = 1
    return s


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("make", [heavy_tie_matrix, saturated_matrix])
@pytest.mark.parametrize("cols", [11, 101, 1000])
def test_original_equals_full_matrix_argsort(rng, dtype, make, cols):
    rows = 400 if cols < 1000 else 60
    s = make(rng, dtype, rows, cols)
    positive = rng.integers(0, cols, size=rows)
    positive[::3] = 0
    c = dense_counts(s, positive)
    # The released codebases' call, on the whole matrix; the kernel sorts only tied rows.
    order = np.argsort(s * -1, axis=1)
    expected = np.argmax(order == positive[:, None], axis=1) + 1
    np.testing.assert_array_equal(c.original, expected)
    assert np.all(c.a + 1 <= c.original) and np.all(c.original <= c.a + c.b)
    untied = c.b == 1
    np.testing.assert_array_equal(c.original[untied], c.a[untied] + 1)
    assert (c.b > 1).any()
    # the ragged kernel sorts one row at a time and must agree
    offsets = np.arange(rows + 1, dtype=np.int64) * cols
    assert_counts_equal(ragged_counts(s.ravel(), offsets, positive), c)


def test_original_is_a_plus_one_without_ties(rng):
    s = rng.permuted(np.tile(np.arange(50, dtype=np.float64), (30, 1)), axis=1)
    positive = rng.integers(0, 50, size=30)
    c = dense_counts(s, positive)
    np.testing.assert_array_equal(c.b, 1)
    np.testing.assert_array_equal(c.original, c.a + 1)


# ---------------------------------------------------------------------------------------
# dtype rules (docs/METRICS.md section 12)

@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_upcast_preserves_counts(rng, dtype):
    # Upcasting to float64 is exact and monotone, so every equality and order survives.
    s = (rng.normal(size=(300, 40)) * 3).astype(dtype)
    s[rng.random(s.shape) < 0.3] = np.asarray(1.0, dtype)
    s[:, 5] = s[:, 0]
    positive = rng.integers(0, 40, size=300)
    native = dense_counts(s, positive)
    wide = dense_counts(s.astype(np.float64), positive)
    for field in ("a", "b", "n", "top"):
        np.testing.assert_array_equal(getattr(native, field), getattr(wide, field), field)


def test_float64_near_ties_are_not_ties():
    # 1 + k*1e-10 (k = 0..4) are five distinct doubles but a single float32 (1.0f):
    # the kernel must judge ties in float64, never after a downcast.
    s = (1.0 + np.arange(5) * 1e-10)[None, :]
    assert len(np.unique(s)) == 5 and len(np.unique(s.astype(np.float32))) == 1
    c = dense_counts(s, np.array([0]))
    assert (c.a[0], c.b[0], c.top[0]) == (4, 1, 1)
    collapsed = dense_counts(s.astype(np.float32), np.array([0]))
    assert (collapsed.a[0], collapsed.b[0]) == (0, 5)


def test_float64_sigmoid_saturation_is_not_a_tie():
    # sigmoid(z) for z = 18..30 is 13 distinct doubles, all exactly 1.0f in float32
    z = np.arange(18, 31, dtype=np.float64)
    s = (1.0 / (1.0 + np.exp(-z)))[None, :]
    assert len(np.unique(s)) == 13 and np.all(s.astype(np.float32) == 1.0)
    c = dense_counts(s, np.array([12]))  # z = 30, the largest score
    assert (c.a[0], c.b[0], c.top[0], c.original[0]) == (0, 1, 1, 1)
    c = dense_counts(s, np.array([0]))  # z = 18, the smallest
    assert (c.a[0], c.b[0]) == (12, 1)
    c = dense_counts(s.astype(np.float32), np.array([0]))
    assert (c.a[0], c.b[0], c.top[0]) == (0, 13, 13)


def test_int64_above_2_53_compared_natively():
    big = 2 ** 53
    s = np.array([[big, big + 1, big + 1, big - 1, 2 ** 63 - 1]], dtype=np.int64)
    assert float(big) == float(big + 1)  # the float64 cast would merge them
    c = dense_counts(s, np.array([0]))
    assert (c.a[0], c.b[0], c.top[0]) == (3, 1, 1)
    c = dense_counts(s, np.array([1]))
    assert (c.a[0], c.b[0]) == (1, 2)
    assert 2 <= c.original[0] <= 3
    r = ragged_counts(s.ravel(), np.array([0, 5]), np.array([1]))
    assert (r.a[0], r.b[0]) == (1, 2)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64])
def test_integer_extremes_keep_original_within_block(rng, dtype):
    # scores * -1 overflows at the signed minimum and is not defined for unsigned types;
    # the original rank must still be a rank inside the positive's tie block.
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.min, info.max, 0, 1], dtype=dtype)
    s = rng.choice(pool, size=(200, 6))
    s[:, 1] = s[:, 0]  # every positive (column 0) is tied
    positive = np.zeros(200, dtype=np.int64)
    c = dense_counts(s, positive)
    for i in range(200):
        assert c.a[i] + 1 == lexsort_rank(s[i], 0, "first")
        assert c.a[i] + c.b[i] == lexsort_rank(s[i], 0, "last")
    assert np.all(c.a + 1 <= c.original) and np.all(c.original <= c.a + c.b)
    r = ragged_counts(s.ravel(), np.arange(201, dtype=np.int64) * 6, positive)
    assert_counts_equal(r, c)


# ---------------------------------------------------------------------------------------
# NaN (docs/METRICS.md section 13)

def test_nan_raises_by_default_with_row():
    s = np.zeros((6, 4))
    s[3, 2] = np.nan
    s[5, 0] = np.nan
    with pytest.raises(NanScoreError) as info:
        dense_counts(s, np.zeros(6, dtype=np.int64))
    assert (info.value.row, info.value.count) == (3, 2)
    assert isinstance(info.value, InputError)
    assert "row 3" in str(info.value)
    with pytest.raises(NanScoreError) as info:
        ragged_counts(s.ravel(), np.arange(7, dtype=np.int64) * 4, np.zeros(6, dtype=np.int64))
    assert (info.value.row, info.value.count) == (3, 2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_worst_matches_enumeration(rng, dtype):
    pool = (np.nan, np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 0.5)
    rows, positive = random_rows(rng, dtype, 150, pool=pool)
    rows.append(np.full(4, np.nan, dtype=dtype))  # an all-NaN row: one tie block
    positive = np.append(positive, 2)
    rc = ragged_counts(*ragged(rows), positive, nan_policy="worst")
    for i, (row, p) in enumerate(zip(rows, positive)):
        dc = one_row(row, p, "worst")
        ranks = enumerated_ranks(row, p, nan_worst=True)
        a, b = int(dc.a[0]), int(dc.b[0])
        assert set(ranks.tolist()) == set(range(a + 1, a + b + 1)), (row, p)
        assert a + 1 == lexsort_rank(row, p, "first", nan_worst=True)
        assert a + b == lexsort_rank(row, p, "last", nan_worst=True)
        assert dc.top[0] == len(set(consistent_orders(row, nan_worst=True)[:, 0].tolist()))
        # np.argsort puts NaN last, which is the 'worst' order
        assert a + 1 <= dc.original[0] <= a + b
        for field in ("a", "b", "n", "top", "original"):
            assert getattr(rc, field)[i] == getattr(dc, field)[0], (field, row, p)


def test_integer_scores_never_nan():
    s = np.array([[3, 3, 1]], dtype=np.int32)
    for policy in ("raise", "worst"):
        c = dense_counts(s, np.array([0]), policy)
        assert (c.a[0], c.b[0], c.top[0]) == (0, 2, 2)


# ---------------------------------------------------------------------------------------
# blocks and threads never change a count


def naive_counts(s, positive, nan_policy="raise"):
    """a, b, top and the original rank straight from the definitions, one row at a time."""
    out = []
    for row, pos in zip(s, positive):
        p = row[pos]
        if np.isnan(p):  # nan_policy="worst": NaN ties with NaN, below every number
            nans = np.isnan(row)
            a, b = int((~nans).sum()), int(nans.sum())
        else:
            a, b = int(np.count_nonzero(row > p)), int(np.count_nonzero(row == p))
        top = len(row) if np.isnan(row).all() else int(np.count_nonzero(row == np.nanmax(row)))
        order = np.argsort(row * -1)
        out.append((a, b, top, int(np.flatnonzero(order == pos)[0]) + 1))
    return np.array(out, dtype=np.int64).T


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("block", [1, 7, 1 << 18])
@pytest.mark.parametrize("nan_policy", ["raise", "worst"])
def test_counts_do_not_depend_on_blocks_or_threads(rng, monkeypatch, threads, block,
                                                   nan_policy):
    from tieeval.kernels import counts as kc
    from tieeval.kernels import threads as kt
    monkeypatch.setattr(kc, "BLOCK_SCORES", block * 37)
    monkeypatch.setattr(kt, "MIN_BLOCK_SCORES", 1)
    monkeypatch.setenv("TIEEVAL_SORT_THREADS", str(threads))
    s = saturated_matrix(rng, np.float32, 300, 37)
    if nan_policy == "worst":
        s[rng.random(s.shape) < 0.05] = np.nan
        s[7] = np.nan
    positive = rng.integers(0, 37, size=300)
    c = dense_counts(s, positive, nan_policy)
    a, b, top, original = naive_counts(s, positive, nan_policy)
    for name, want in (("a", a), ("b", b), ("top", top), ("original", original)):
        np.testing.assert_array_equal(getattr(c, name), want, err_msg=name)


def test_sort_blocks_give_every_thread_a_share(monkeypatch):
    from tieeval.kernels.counts import sort_blocks
    monkeypatch.setenv("TIEEVAL_SORT_THREADS", "2")
    tied = np.arange(10)
    assert [len(b) for b in sort_blocks(tied, 100)] == [5, 5]
    assert [len(b) for b in sort_blocks(tied, 3)] == [3, 3, 2, 2]
    assert sort_blocks(tied[:0], 3) == []
    assert np.array_equal(np.concatenate(sort_blocks(tied, 4)), tied)


@pytest.mark.parametrize("cols", [1, 255, 256, 65_535, 65_536, 70_001])
def test_row_sums_of_byte_flags_are_exact_at_their_width_limits(cols):
    # comparisons are summed as 0/1 bytes into uint16 up to 65,535 candidates a row and
    # into int64 beyond: every candidate equal (and above) the positive, the longest sums
    rng = np.random.default_rng(cols)
    scores = np.ones((3, cols), dtype=np.float32)
    scores[1] = 2.0
    scores[1, 0] = 1.0  # all others above the positive
    scores[2] = rng.integers(0, 3, cols).astype(np.float32)
    got = dense_counts(scores, np.zeros(3, dtype=np.int64))
    p = scores[:, :1]
    assert (got.a == np.count_nonzero(scores > p, axis=1)).all()
    assert (got.b == np.count_nonzero(scores == p, axis=1)).all()
    assert (got.top == np.count_nonzero(scores == scores.max(axis=1)[:, None], axis=1)).all()
    assert got.a[1] == cols - 1 and got.b[0] == cols


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint16])
def test_columnwise_and_rowwise_counts_agree_with_count_nonzero(dtype):
    # short rows are counted on a transposed copy of the block, longer ones along rows:
    # both against the plain definitions, on either side of the switch
    from tieeval.kernels.counts import COLUMNWISE_BELOW
    rng = np.random.default_rng(int(np.dtype(dtype).num))
    for cols in (1, 2, COLUMNWISE_BELOW - 1, COLUMNWISE_BELOW):
        scores = rng.integers(0, 4, size=(500, cols)).astype(dtype)
        positive = rng.integers(0, cols, 500)
        got = dense_counts(scores, positive)
        p = scores[np.arange(500), positive][:, None]
        assert (got.a == np.count_nonzero(scores > p, axis=1)).all()
        assert (got.b == np.count_nonzero(scores == p, axis=1)).all()
        top = np.count_nonzero(scores == scores.max(axis=1)[:, None], axis=1)
        assert (got.top == top).all()
        want = np.argmax(np.argsort(scores * -1 if dtype != np.uint16 else ~scores, axis=1)
                         == positive[:, None], axis=1) + 1
        assert (got.original == want).all()


def test_a_nan_names_the_same_row_whichever_way_rows_are_counted():
    from tieeval.kernels.counts import COLUMNWISE_BELOW
    for cols in (5, COLUMNWISE_BELOW + 5):
        scores = np.ones((300, cols), dtype=np.float32)
        scores[[17, 230], 3] = np.nan
        with pytest.raises(NanScoreError) as err:
            dense_counts(scores, np.zeros(300, dtype=np.int64))
        assert err.value.row == 17 and err.value.count == 2
