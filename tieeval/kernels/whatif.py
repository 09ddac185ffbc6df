"""Precision what-ifs: how would the metrics read if the scores were stored less precisely,
or if near-equal scores counted as tied?

These are *what-if analyses*, not evaluations of the stored scores: every result they
produce carries a :class:`WhatIf` record and every output format labels it. Two transforms,
applied in this order when both are given:

* **cast** (``--cast float16|bfloat16|float32``): round every score to a lower precision
  with round-to-nearest-even, then judge ties and order on the rounded values. Rounding is
  many-to-one, so distinct scores collapse into new ties (sigmoid outputs for logits
  17..30 all become exactly ``1.0`` in float32). NaN stays
  NaN, infinities stay infinite, values beyond the target's range become ``+-inf`` and
  values below half its smallest subnormal become ``+-0`` (IEEE 754 overflow and underflow).

  - ``float16`` and ``float32`` use numpy's own ``astype``, correctly rounded from float64.
  - ``bfloat16`` (1 sign, 8 exponent, 7 stored significand bits; float32's range) needs no
    new dependency: scores are rounded to nearest-even on the float32 bit pattern (add
    ``0x7FFF`` plus the lowest kept bit, clear the low 16 bits) and kept in a float32
    container, whose comparisons give exactly the bfloat16 order. float64 scores first go
    to float32 with round-to-odd, so that the two roundings equal one correct rounding
    (Boldo & Melquiond 2008; float32 keeps 16 > 2 extra bits); float16 scores widen
    exactly. Integer scores are converted to float64 first (exact up to 2**53).

* **tolerance** (``--tolerance ATOL``): scores within ``ATOL`` of the positive count as
  tied with it. For the single-positive protocol, with ``s+`` the positive's score and
  differences taken in float64::

      b = #{i : s_i == s+  or  |s_i - s+| <= ATOL}      (the positive's tolerance block)
      a = #{i : s_i >  s+  and not tied as above}         (= #(s_i - s+ > ATOL) for finite s)

  The positive's rank is then taken as uniform on ``a+1 .. a+b`` and every column follows
  as usual. Equality is tested first so that ``inf`` still ties with ``inf`` (``inf - inf``
  is NaN). The top-score tie statistics are defined likewise relative to the row maximum:
  ``m = #{i : s_i == max  or  |s_i - max| <= ATOL}``. ``ATOL = 0`` gives the exact counts.
  Note that "within ATOL" is not transitive: the block is the positive's neighbourhood,
  not an equivalence class. The ``original`` column stays the codebase's
  ``np.argsort(scores * -1)`` rank on the (possibly cast) scores; it always lies in
  ``a+1 .. a+b``, because the tolerance block contains the exact tie block.

  Labelled rows (several relevant items, graded or signed labels, TREC runs) need tie
  blocks that are an equivalence relation, so there the tolerance joins *chains*: in each
  row's descending order, neighbours whose scores are equal or within ``ATOL`` (float64
  difference) fall in one block, which may then span more than ``ATOL``. Every column of
  the general kernel follows from those blocks as from exact ties; Original keeps the
  codebase's order of the (possibly cast) scores, which lies inside the blocks.

NaN scores follow ``nan_policy`` exactly as without a what-if: ``'raise'`` refuses them,
``'worst'`` ranks them below every number (a NaN is never within ATOL of anything).
"""


from __future__ import annotations

import numpy as np

from tieeval.errors import ParameterError

# the what-if's names, where they were (re-exported)
from tieeval.records.whatif import CASTS as CASTS
from tieeval.records.whatif import WhatIf as WhatIf
from tieeval.records.whatif import check_cast

# ---------------------------------------------------------------------------------------
# casts

def _float32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32, rounding toward zero and setting the last bit when inexact.

    Round-to-odd keeps the information a second rounding needs: rounding its result to any
    format with at least two fewer significand bits equals rounding ``x`` directly.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(np.float32)  # round-to-nearest-even; may overflow to inf
    back = t.astype(np.float64)
    inexact = (back != x) & ~np.isnan(x)
    away = inexact & (np.abs(back) > np.abs(x))  # rounded away from zero: step back
    t[away] = np.nextafter(t[away], np.float32(0.0))
    bits = t.view(np.uint32)
    bits[inexact] |= np.uint32(1)
    return t


def round_to_bfloat16(scores: np.ndarray) -> np.ndarray:
    """Round scores to bfloat16 (nearest, ties to even), returned in a float32 container.

    Parameters
    ----------
    scores : array_like of float or int
        Any shape. float32 input is rounded on its bit pattern; float16 widens exactly
        first; float64 (and integers, via float64) go to float32 with round-to-odd first, so
        the result is the correctly rounded bfloat16 of the input.

    Returns
    -------
    numpy.ndarray of float32
        Each value is exactly representable in bfloat16 (its low 16 bits are zero). NaN
        stays NaN (quiet, sign kept), infinities stay infinite, values that round beyond
        the largest bfloat16 (about 3.39e38) become ``+-inf``.

    Examples
    --------
    >>> round_to_bfloat16(np.array([1.0, 1.00390625, 1.01171875, 3.14159], np.float32))
    array([1.      , 1.      , 1.015625, 3.140625], dtype=float32)
    """
    arr = np.asarray(scores)
    if arr.dtype == np.float32:
        f32 = arr
    elif arr.dtype.kind == "f" and arr.dtype.itemsize <= 2:
        f32 = arr.astype(np.float32)  # exact widening
    elif arr.dtype.kind in "fiu":
        f32 = _float32_round_to_odd(arr.astype(np.float64))
    else:
        raise ParameterError(f"cannot round {arr.dtype} scores to bfloat16")
    bits = np.ascontiguousarray(f32).view(np.uint32)
    keep_lsb = (bits >> np.uint32(16)) & np.uint32(1)
    # No wrap-around: the largest non-NaN pattern is -inf (0xFF800000).
    rounded = (bits + np.uint32(0x7FFF) + keep_lsb) & np.uint32(0xFFFF0000)
    nan = np.isnan(f32)
    if nan.any():
        rounded = np.where(nan, (bits & np.uint32(0xFFFF0000)) | np.uint32(0x00400000),
                           rounded)
    value: np.ndarray = rounded.astype(np.uint32).view(np.float32).reshape(np.shape(arr))
    return value


def cast_scores(scores: np.ndarray, target: str) -> np.ndarray:
    """Round ``scores`` to ``target`` precision (``'float16'``, ``'bfloat16'``, ``'float32'``).

    float16 and float32 are numpy's correctly rounded ``astype`` (overflow to ``+-inf``
    without a warning); bfloat16 is :func:`round_to_bfloat16` (a float32 container).
    Casting to an equal or wider type changes nothing.

    >>> cast_scores(np.array([1.0 + k * 1e-10 for k in range(5)]), "float32")
    array([1., 1., 1., 1., 1.], dtype=float32)
    """
    target = check_cast(target)
    arr = np.asarray(scores)
    if arr.dtype.kind not in "fiu":
        raise ParameterError(f"cannot cast {arr.dtype} scores to {target}")
    if target == "bfloat16":
        return round_to_bfloat16(arr)
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(np.float16 if target == "float16" else np.float32)
