"""Exact, order-independent summation of float64 arrays.

A dataset mean must not depend on how the rows were split into batches, files or workers.
Floating-point addition is not associative, so every per-instance value is added *exactly*:
each float64 is split into its integer significand and binary exponent, significands are
summed per exponent as integers, and the total is rounded once at the end. Partial sums
merge by integer addition, so any split gives the bit-identical result.
"""


from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from tieeval.util.stopping import checkpoint

_HALF = 26  # significands (53 bits) are split into two halves that sum exactly in float64
_MAX_ROWS = 1 << 25  # keeps each per-exponent half-sum below 2**53
_GATHER = 1 << 16  # small additions are gathered up to this many values, then added at once
_FEW = 48  # add_counts of up to this many values: a Python loop beats numpy's per-call cost


class ExactSum:
    """An exact running sum of finite float64 values.

    >>> s = ExactSum(); s.add(np.array([1e16, 1.0, -1e16])); s.value()
    1.0
    """

    __slots__ = ("_total", "_shift", "_pending", "_waiting")

    def __init__(self) -> None:
        # The sum is _total * 2**-_shift, held as a Python integer: exact and mergeable.
        self._total = 0
        self._shift = 0
        # Small arrays wait here and are added together (the sum is exact, so the grouping
        # cannot change it; only the per-call overhead goes).
        self._pending: list[Any] = []
        self._waiting = 0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).ravel()
        if values.size < _GATHER:
            self._pending.append(values.copy())
            self._waiting += values.size
            if self._waiting >= _GATHER:
                self._flush()
            return
        for start in range(0, values.size, _MAX_ROWS):
            checkpoint()
            self._add_chunk(values[start:start + _MAX_ROWS])

    def _flush(self) -> None:
        if self._pending:
            values = np.concatenate(self._pending)
            self._pending, self._waiting = [], 0
            self._add_chunk(values)

    def _add_chunk(self, x: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add ``x`` (times ``weights``, whole numbers whose sum is at most _MAX_ROWS)."""
        if x.size:
            totals, shift = _totals(x, weights)
            self._merge(totals[0], shift)

    def _merge(self, total: int, shift: int) -> None:
        if total == 0:
            return
        if shift > self._shift:
            self._total <<= shift - self._shift
            self._shift = shift
        else:
            total <<= self._shift - shift
        self._total += total

    def add_counts(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Add ``counts[i]`` copies of ``values[i]``, exactly (histograms of values)."""
        values = np.asarray(values, dtype=np.float64).ravel()
        counts = np.asarray(counts, dtype=np.int64).ravel()
        keep = (counts != 0) & (values != 0.0)
        if not keep.all():
            values, counts = values[keep], counts[keep]
        if values.size == 0:
            return
        if values.size <= _FEW:  # a few values (a rank histogram): Python integers
            self._add_products(values, counts)
            return
        huge = counts > _MAX_ROWS
        if huge.any():  # more than 2**25 copies of a value: Python integers, one by one
            self._add_products(values[huge], counts[huge])
            values, counts = values[~huge], counts[~huge]
        # chunks whose counts sum to at most _MAX_ROWS keep every weighted sum exact
        ends = np.cumsum(counts)
        start = 0
        while start < values.size:
            checkpoint()
            base = int(ends[start - 1]) if start else 0
            stop = int(np.searchsorted(ends, base + _MAX_ROWS, side="right"))
            self._add_chunk(values[start:stop], counts[start:stop].astype(np.float64))
            start = stop

    def _add_products(self, values: np.ndarray, counts: np.ndarray) -> None:
        """``sum(values * counts)`` exactly, one Python integer product per value."""
        mant, exp = np.frexp(values)
        sig = np.ldexp(mant, 53).astype(np.int64)
        e0 = int(exp.min())
        total = 0
        for s, e, c in zip(sig.tolist(), (exp - e0).tolist(), counts.tolist()):
            total += (s * c) << e
        self._merge(total, 53 - e0)

    def merge(self, other: "ExactSum") -> None:
        """Add another exact sum into this one (exact, commutative, associative).

        ``other``'s values still waiting join this sum's waiting ones (a batch's part
        holds few), so they are added in one gathered call, not one per part; ``other``
        keeps its own sum."""
        if other._pending:
            self._pending.extend(other._pending)
            self._waiting += other._waiting
            if self._waiting >= _GATHER:
                self._flush()
        self._merge(other._total, other._shift)

    def state(self) -> list[Any]:
        """``[total, shift]`` as JSON-able data (the big integer as a decimal string)."""
        self._flush()
        return [str(self._total), self._shift]

    @classmethod
    def from_state(cls, state: list[Any]) -> "ExactSum":
        out = cls()
        out._total, out._shift = int(state[0]), int(state[1])
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactSum) and self.fraction() == other.fraction()

    def fraction(self) -> Fraction:
        self._flush()
        return Fraction(self._total, 1 << self._shift) if self._shift >= 0 else Fraction(
            self._total << -self._shift)

    def value(self) -> float:
        """The exact sum rounded once to the nearest float64."""
        return float(self.fraction())

    def mean(self, count: int) -> float:
        """The exact sum divided by ``count``, rounded once."""
        return float(self.fraction() / count)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x = (hi * 2**_HALF + lo) * 2**(exp - 53)``: the 53-bit significand split into a
    high part (< 2**27) and a low part (< 2**26), both exact integers in float64, so that
    per-exponent sums of up to 2**25 of them are exact (and of weighted ones, when the
    weights sum to at most 2**25)."""
    mant, exp = np.frexp(x)  # x = mant * 2**exp, 0.5 <= |mant| < 1 (0 -> 0, 0)
    hi = np.floor(np.ldexp(mant, 53 - _HALF))
    lo = np.ldexp(mant, 53) - np.ldexp(hi, _HALF)
    return hi, lo, exp


def _totals(x: np.ndarray, weights: np.ndarray | None = None, owner: np.ndarray | None = None,
            parts: int = 1) -> tuple[list[int], int]:
    """The exact sums of the non-empty ``x`` (times ``weights``, as
    :meth:`ExactSum._add_chunk` takes them), one per ``owner`` (``parts`` of them; None:
    one sum), as integers ``total`` and one ``shift``: each sum is ``total * 2**-shift``.
    Significands are summed per owner and exponent (:func:`_split`)."""
    hi, lo, exp = _split(x)
    if weights is not None:
        hi *= weights
        lo *= weights
    e0 = int(exp.min())
    idx = exp - e0
    span = int(idx.max()) + 1
    key = idx if owner is None else owner * span + idx
    hi_sums = np.bincount(key, weights=hi, minlength=parts * span)
    lo_sums = np.bincount(key, weights=lo, minlength=parts * span)
    totals = [0] * parts
    for k in np.flatnonzero((hi_sums != 0) | (lo_sums != 0)).tolist():
        at, e = divmod(k, span)
        totals[at] += (int(hi_sums[k]) << (_HALF + e)) + (int(lo_sums[k]) << e)
    return totals, 53 - e0


def flush_all(sums: Iterable[ExactSum]) -> None:
    """Add the values every sum of ``sums`` keeps waiting, in one pass for all of them:
    the numpy calls of :meth:`ExactSum._add_chunk` once on their values together, split
    per sum and exponent (a result rounds some thirty small sums; each would pay those
    calls). Each sum's total is the one its own flush gives (exact sums)."""
    waiting = [s for s in sums if s._pending]
    if not waiting:
        return
    parts = [np.concatenate(s._pending) for s in waiting]
    x = np.concatenate(parts)
    if x.size == 0 or x.size > _MAX_ROWS:  # nothing waits, or beyond one chunk: one by one
        for one in waiting:
            one._flush()
        return
    owner = np.repeat(np.arange(len(waiting), dtype=np.int64), [p.size for p in parts])
    totals, shift = _totals(x, None, owner, len(waiting))
    for one, total in zip(waiting, totals):
        one._pending, one._waiting = [], 0
        one._merge(total, shift)


def distinct_pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct pairs of two non-negative int64 arrays and how often each occurs:
    ``(x', y', counts)``. A histogram when the pairs span few keys, else ``np.unique``."""
    if x.size == 0:
        return x, y, np.zeros(0, dtype=np.int64)
    width = int(y.max()) + 1
    key = x * width + y
    span = int(x.max()) * width + width
    if span <= max(4 * key.size, 1 << 16):
        times = np.bincount(key, minlength=span)
        key = np.flatnonzero(times)
        times = times[key]
    else:
        key, times = np.unique(key, return_counts=True)
    return key // width, key % width, times
