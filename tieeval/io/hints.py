"""Warnings on a dump whose positive defaults to column 0 but does not look like one.

A full-sort dump saved without ``positive=`` is evaluated with column 0 as every row's
positive. When the real positive sits elsewhere, column 0 is just some item: it ranks like
a random candidate and the figures are chance-level (HR@10 0.09 for a model whose real
figure is 0.77), with nothing to show for it. The tell-tale signs, read from the dump's
first rows (:data:`HINT_ROWS`, a separate small read):

* the assumed positive ranks like a random candidate: its normalised expected rank
  ``(a + b/2) / (n - 1)`` (``a`` candidates above it, ``b`` tied with it, ``n`` in the row)
  is uniform on [0, 1] with mean 1/2 and variance at most ``(n + 1) / (12 (n - 1))`` for a
  random item, and near 0 for a model's positive. The hint fires when the mean is not
  :data:`HINT_Z` standard errors below 1/2: no evidence that column 0 ranks better than a
  random candidate. A model whose positive really is column 0, even a weak one, is far
  below: mean 0.2 over 100 rows is 10 standard errors.
* column 0 is ``-inf`` in some rows (a masked or padding item); in most rows it is an
  error already (:func:`tieeval.kernels.base.check_default_positive`).

The figures never change: the hint is one warning line, with the fix.
"""

from __future__ import annotations

import math

import numpy as np

HINT_ROWS = 2048  # rows read for the hints: enough for the test, small to read twice
HINT_MIN_ROWS = 20  # fewer rows: no rank hint (too few to tell a model from chance)
HINT_Z = 3.0  # standard errors below chance a positive must rank to raise no hint
HINT_INF_SHARE = 0.01  # -inf in at least this share of the rows read: a hint
FULL_SORT_COLUMNS = 1000  # this many candidates or more: say it looks like a full sort

_FIX = ("if the positive is elsewhere, say where: tieeval.save_scores(path, scores, "
        "positive=...) (or positives=, labels=) stores it with the dump, or pass "
        "--positive-index N (positive_index= in ReadOptions)")


def _rows(scores: np.ndarray, offsets: np.ndarray | None) -> list[np.ndarray]:
    if offsets is None:
        return list(np.asarray(scores))
    return [scores[offsets[i]:offsets[i + 1]] for i in range(offsets.size - 1)]


def rank_evidence(rows: list[np.ndarray]) -> tuple[float, float, int]:
    """``(mean, z, rows used)`` of column 0's normalised expected rank over ``rows`` of
    two candidates or more and no NaN: ``z`` is how many standard errors the mean lies
    below 1/2, the mean of a random candidate."""
    u, var = [], []
    for row in rows:
        n = row.size
        if n < 2 or (row.dtype.kind == "f" and np.isnan(row).any()):
            continue
        above = np.count_nonzero(row > row[0])
        tied = np.count_nonzero(row == row[0]) - 1
        u.append((above + tied / 2) / (n - 1))
        var.append((n + 1) / (12 * (n - 1)))
    if not u:
        return math.nan, math.nan, 0
    mean = float(np.mean(u))
    se = math.sqrt(float(np.sum(var))) / len(u)
    return mean, (0.5 - mean) / se, len(u)


def positive_hints(path: str, scores: np.ndarray, offsets: np.ndarray | None = None
                   ) -> list[str]:
    """Warnings (zero or one line) on the first rows of a dump whose positive defaulted to
    column 0: ``scores`` dense 2-D, or flat with ``offsets``."""
    rows = _rows(np.asarray(scores), offsets)
    if not rows:
        return []
    n = max(row.size for row in rows)
    signs = []
    if np.asarray(scores).dtype.kind == "f":
        inf = sum(1 for row in rows if row.size and row[0] == -np.inf)
        if inf and inf >= HINT_INF_SHARE * len(rows):
            signs.append(f"column 0 is -inf in {inf} of the first {len(rows)} rows (a masked "
                         "or padding item?)")
    mean, z, used = rank_evidence(rows)
    if used >= HINT_MIN_ROWS and z < HINT_Z:
        signs.append(f"column 0 ranks like a random candidate (its mean normalised rank is "
                     f"{mean:.2f} over the first {used} rows, where 0 is the top and a random "
                     "item averages 0.50)")
    if not signs:
        return []
    shape = (f"; {n} candidates per row and no positive field look like a full-sort dump"
             if n >= FULL_SORT_COLUMNS else "")
    return [f"{path}: the positive defaults to column 0, but {' and '.join(signs)}{shape}: "
            f"the figures may be chance-level; {_FIX}"]
