"""tieeval.util.ranges against a plain loop over the ranges: every position, its range, the
dtypes the callers rely on, empty input and empty ranges."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import tieeval.util.ranges
from tieeval.util.ranges import expand, positions


def loop_oracle(starts, sizes) -> tuple[list[int], list[int]]:
    """Range i gives starts[i], starts[i] + 1, ..., starts[i] + sizes[i] - 1, each owned
    by i; the ranges follow one another."""
    pos, owner = [], []
    for i, (start, size) in enumerate(zip(starts.tolist(), sizes.tolist())):
        for k in range(size):
            pos.append(start + k)
            owner.append(i)
    return pos, owner


def random_ranges(rng, count: int, dtype=np.int64):
    """Starts anywhere (negative, repeated, overlapping ranges) and sizes 0..6 with many
    zeros, so empty ranges sit first, last and in runs."""
    starts = rng.integers(-50, 50, count).astype(dtype)
    sizes = rng.integers(0, 7, count).astype(dtype)
    sizes[rng.random(count) < 0.3] = 0
    return starts, sizes


@pytest.mark.parametrize("seed", range(40))
def test_expand_matches_the_loop_on_random_ranges(seed):
    rng = np.random.default_rng(seed)
    starts, sizes = random_ranges(rng, int(rng.integers(0, 30)))
    pos, owner = expand(starts, sizes)
    want_pos, want_owner = loop_oracle(starts, sizes)
    assert pos.dtype == np.int64 and owner.dtype == np.int64
    assert pos.tolist() == want_pos
    assert owner.tolist() == want_owner
    # the place inside each range, as the callers recover it
    assert (pos - starts[owner]).tolist() == [
        k for size in sizes.tolist() for k in range(size)]


@pytest.mark.parametrize("seed", range(10))
def test_positions_are_expands_positions(seed):
    rng = np.random.default_rng(100 + seed)
    starts, sizes = random_ranges(rng, 25)
    got = positions(starts, sizes)
    assert got.dtype == np.int64
    assert got.tolist() == expand(starts, sizes)[0].tolist() == loop_oracle(starts, sizes)[0]


@pytest.mark.parametrize("in_dtype", [np.int8, np.int16, np.int32, np.int64])
def test_results_are_int64_whatever_the_integer_inputs(in_dtype):
    rng = np.random.default_rng(7)
    starts, sizes = random_ranges(rng, 20, dtype=in_dtype)
    pos, owner = expand(starts, sizes)
    assert pos.dtype == np.int64 and owner.dtype == np.int64
    assert (pos.tolist(), owner.tolist()) == loop_oracle(starts, sizes)


def test_positions_in_int32_when_asked():
    """The TREC reader orders lines with int32 positions below 2**31 lines (half the
    memory): the dtype asked for is the result's, with the same values."""
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 1000, 30)
    sizes = rng.integers(0, 5, 30)
    got = positions(starts, sizes, dtype=np.int32)
    assert got.dtype == np.int32
    assert got.tolist() == loop_oracle(starts, sizes)[0]


@pytest.mark.parametrize("count", [0, 1, 5])
def test_empty_ranges_give_no_position(count):
    """No range at all, or only empty ones: empty int64 results, not an error."""
    starts = np.arange(count, dtype=np.int64) * 10
    sizes = np.zeros(count, dtype=np.int64)
    pos, owner = expand(starts, sizes)
    assert pos.shape == owner.shape == (0,)
    assert pos.dtype == np.int64 and owner.dtype == np.int64
    assert positions(starts, sizes, dtype=np.int32).dtype == np.int32


def test_sequences_are_taken_as_arrays():
    pos, owner = expand([5, 9, 2], [2, 0, 3])
    assert (pos.tolist(), owner.tolist()) == loop_oracle(np.array([5, 9, 2]), np.array([2, 0, 3]))


def test_inputs_are_left_unchanged():
    """The arithmetic runs in place on its own arrays, never on the caller's."""
    rng = np.random.default_rng(11)
    starts, sizes = random_ranges(rng, 20)
    before = starts.copy(), sizes.copy()
    expand(starts, sizes)
    positions(starts, sizes, dtype=np.int32)
    assert np.array_equal(starts, before[0]) and np.array_equal(sizes, before[1])


def test_docstring_examples_hold():
    result = doctest.testmod(tieeval.util.ranges)
    assert result.attempted > 0 and result.failed == 0
