"""Warnings on a dump whose positive defaults to column 0 but does not look like one.

A full-sort dump saved without ``positive=`` is evaluated with column 0 as every row's
positive. When the real positive sits elsewhere, column 0 is just some item: it ranks like
a random candidate and the figures are chance-level (HR@10 0.09 for a model whose real
figure is 0.77), with nothing to show for it. The tell-tale signs, gathered from the dump's
first rows (:data:`HINT_ROWS`) as they are evaluated (kept in the accumulator, so workers
and batch sizes give the same evidence):

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
from typing import Any

import numpy as np

HINT_ROWS = 2048  # rows read for the hints: enough for the test, small to read twice
HINT_MIN_ROWS = 20  # fewer rows: no rank hint (too few to tell a model from chance)
HINT_Z = 3.0  # standard errors below chance a positive must rank to raise no hint
HINT_INF_SHARE = 0.01  # -inf in at least this share of the rows read: a hint
FULL_SORT_COLUMNS = 1000  # this many candidates or more: say it looks like a full sort

_FIX = ("if the positive is elsewhere, say where: tieeval.save_scores(path, scores, "
        "positive=...) (or positives=, labels=) stores it with the dump, or pass "
        "--positive-index N (positive_index= in ReadOptions)")


def new_evidence() -> dict[str, Any]:
    """Empty evidence: per-row normalised ranks ``u`` and their chance variances ``var``
    (rows of two candidates or more, no NaN), rows seen, rows whose column 0 is -inf, the
    most candidates of a row."""
    return {"u": [], "var": [], "rows": 0, "inf": 0, "n": 0}


def add_evidence(evidence: dict[str, Any], scores: np.ndarray, offsets: np.ndarray | None,
                 start: int) -> None:
    """Add the rows of a batch (dump rows ``start``...) that are among the dump's first
    :data:`HINT_ROWS`, so the evidence does not depend on how the rows were batched: each
    row's counts above and tied with column 0, as :func:`add_count_evidence` takes them."""
    take = max(HINT_ROWS - start, 0)
    scores = np.asarray(scores)
    blocks = ([scores[:take]] if offsets is None else
              [scores[offsets[i]:offsets[i + 1]][None, :]
               for i in range(min(take, offsets.size - 1))])
    for x in blocks:
        first = x[:, :1]
        add_count_evidence(evidence, x, np.count_nonzero(x > first, axis=1),
                           np.count_nonzero(x == first, axis=1), 0, True)


def add_count_evidence(evidence: dict[str, Any], scores: np.ndarray, a: np.ndarray, b: np.ndarray,
                       start: int, nan_rows: bool) -> None:
    """:func:`add_evidence` for a dense batch whose positive is column 0, from the
    kernel's own counts (``a`` above column 0, ``b`` tied with it, itself included)
    instead of a second pass over each row: the same values, bit for bit (the same
    float64 operations). ``nan_rows``: rows may hold NaN (they are left out, as there)."""
    x = scores[:max(HINT_ROWS - start, 0)]
    rows, n = x.shape
    if not rows:
        return
    evidence["rows"] += rows
    evidence["n"] = max(evidence["n"], n)
    if n == 0:
        return
    if x.dtype.kind == "f":
        evidence["inf"] += int(np.count_nonzero(x[:, 0] == -np.inf))
    if n < 2:
        return
    a, b = a[:rows], b[:rows]
    if nan_rows and x.dtype.kind == "f":
        ok = ~np.isnan(x).any(axis=1)
        a, b = a[ok], b[ok]
    evidence["u"].extend(((a + (b - 1) / 2) / (n - 1)).tolist())
    evidence["var"].extend([(n + 1) / (12 * (n - 1))] * int(a.size))


def merge_evidence(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    return {"u": mine["u"] + theirs["u"], "var": mine["var"] + theirs["var"],
            "rows": mine["rows"] + theirs["rows"], "inf": mine["inf"] + theirs["inf"],
            "n": max(mine["n"], theirs["n"])}


def rank_evidence(rows: list[np.ndarray]) -> tuple[float, float, int]:
    """``(mean, z, rows used)`` of column 0's normalised expected rank over ``rows`` of
    two candidates or more and no NaN: ``z`` is how many standard errors the mean lies
    below 1/2, the mean of a random candidate."""
    evidence = new_evidence()
    for row in rows:
        add_evidence(evidence, row[None, :], None, 0)
    return _statistic(evidence)


def _statistic(evidence: dict[str, Any]) -> tuple[float, float, int]:
    used = len(evidence["u"])
    if not used:
        return math.nan, math.nan, 0
    # fsum: exact, so the figure does not depend on the order rows were added in
    mean = math.fsum(evidence["u"]) / used
    se = math.sqrt(math.fsum(evidence["var"])) / used
    return mean, (0.5 - mean) / se, used


def evidence_hints(path: str, evidence: dict[str, Any]) -> list[str]:
    """Warnings (zero or one line) from the evidence of a dump's first rows."""
    rows = evidence["rows"]
    signs = []
    inf = evidence["inf"]
    if inf and inf >= HINT_INF_SHARE * rows:
        signs.append(f"column 0 is -inf in {inf} of the first {rows} rows (a masked or "
                     "padding item?)")
    mean, z, used = _statistic(evidence)
    if used >= HINT_MIN_ROWS and z < HINT_Z:
        signs.append(f"column 0 ranks like a random candidate (its mean normalised rank is "
                     f"{mean:.2f} over the first {used} rows, where 0 is the top and a random "
                     "item averages 0.50)")
    if not signs:
        return []
    shape = (f"; {evidence['n']} candidates per row and no positive field look like a "
             "full-sort dump" if evidence["n"] >= FULL_SORT_COLUMNS else "")
    return [f"{path}: the positive defaults to column 0, but {' and '.join(signs)}{shape}: "
            f"the figures may be chance-level; {_FIX}"]
