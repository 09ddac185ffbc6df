"""Exact tie-aware expectations of ERR@K and of interpolated precision at a recall level.

Both metrics depend on a ranking in ways the additive formulas of
:mod:`tieeval.kernels.tie_blocks` cannot express: ERR multiplies over the items above a
position (a cascade), and interpolated precision takes a maximum over ranks. This module
computes their exact expectations under uniform random tie-breaking (every tie block of a
row in uniformly random order, blocks independent) from a :class:`RelBatch`. Nothing is
sampled; where the exact computation of a row would exceed a documented work limit the row
is NaN, and :func:`not_computed_reason` gives the text to report for it.

ERR@K (its stop probabilities ``R_i``) and trec_eval's interpolated precision IPrec(x)
(the ranks ``r_j`` of the relevant items, the cutoff ``c`` in relevant items) are as
:mod:`tieeval.metrics.measures.err` and :mod:`tieeval.metrics.measures.iprec` define them.
(The maximum of ``precision@i`` over the ranks ``i >= r_c`` is reached at a relevant rank,
because precision only rises at relevant ranks; ``c <= 0`` reads as ``c = 1`` in the C code,
whose loop stops after the first relevant item, and an unreached cutoff leaves the value at
its initial 0.)

Reference: O. Chapelle et al., Expected reciprocal rank for graded relevance, CIKM 2009;
F. McSherry & M. Najork, Computing information retrieval performance measures efficiently
in the presence of tied scores, ECIR 2008 (the tie model).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from numbers import Integral, Real

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.measures.protocol import BlockTable, Ints
from tieeval.metrics.measures.series import buckets, chunks
from tieeval.util.ranges import expand, positions
from tieeval.util.stopping import checkpoint

# what _check_batch requires of the table (BlockTable, the measures' view of a batch)
_BATCH_ATTRIBUTES = ("rows", "size", "n", "offsets", "row", "bst", "bsz", "ba", "brow",
                     "lab_first", "unranked", "within_row_exclusive")

#: Work limit of one row of :func:`err_expectation`: the sum over the row's tie blocks that
#: reach into the top K of ``p_t * (m_t + min(p_t, m_t))`` (p_t items of non-zero gain in
#: the block, m_t of its positions inside the cutoff). A row above it is NaN.
ERR_WORK_LIMIT = 20_000_000

#: Work limit of one row of :func:`iprec_expectation` (per recall level): the sum over its
#: random tie blocks of ``(thresholds + 1) * (p_t - i0 + 1) * (n_t - p_t + 1)``, one
#: bounded lattice-path count per threshold over the block's relevant indices from the
#: cutoff on, ``thresholds <= (p_t - i0 + 1)(n_t - p_t + 1)`` (see the function). A row
#: above it is NaN.
IPREC_WORK_LIMIT = 5_000_000


def not_computed_reason(metric: str) -> str:
    """The reason to report for a NaN row of :func:`err_expectation` ('ERR') or
    :func:`iprec_expectation` ('IPrec').

    >>> not_computed_reason("ERR").startswith("the exact tie-aware ERR")
    True
    """
    if metric == "ERR":
        return (f"the exact tie-aware ERR of this row needs more than {ERR_WORK_LIMIT:,} "
                "steps (a tie block with many items of non-zero gain reaching far into "
                "the cutoff); it is not estimated by sampling")
    if metric == "IPrec":
        return (f"the exact tie-aware interpolated precision of this row needs more than "
                f"{IPREC_WORK_LIMIT:,} steps (a tie block with many relevant items from "
                "the recall cutoff on and many non-relevant items: the work grows as the "
                "square of their product); it is not estimated by sampling")
    raise ParameterError(f"metric must be 'ERR' or 'IPrec', got {metric!r}")


# ---------------------------------------------------------------------------------------
# Boundary checks


def _check_batch(rb: BlockTable) -> None:
    if not all(hasattr(rb, name) for name in _BATCH_ATTRIBUTES):
        raise ParameterError(f"rb must be a RelBatch, got {type(rb).__name__}")


def _check_int(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ParameterError(f"{name} must be a positive integer or None, got {value!r}")
    return int(value)


def _check_real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ParameterError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _check_level(value: object) -> float | None:
    return None if value is None else _check_real("relevant_level", value)


# ---------------------------------------------------------------------------------------
# ERR


def err_expectation(rb: BlockTable, k: int | None, max_grade: float | np.ndarray,
                    relevant_level: float | None = None) -> np.ndarray:
    """Per row, the exact expectation of ERR@K under uniform random tie-breaking.

    Parameters
    ----------
    rb : BlockTable
        The labelled batch (its blocks and labels; unranked items play no part in ERR).
    k : int or None
        The cutoff K >= 1; None for the whole list. K beyond a row's length is that length.
    max_grade : float or ndarray of float, shape (rows,)
        The grade of a perfect item: ``R = (2**g - 1) / 2**max_grade``, one for the batch or
        one per row. A grade above it counts as ``max_grade`` (so ``R < 1`` and ERR stays a
        cascade probability), as the realised ERR of :mod:`tieeval.kernels.tie_blocks` does.
    relevant_level : float, optional
        Labels below it count as grade 0 (not relevant); the default keeps every positive
        label's grade.

    Returns
    -------
    ndarray of float64, shape (rows,)
        E[ERR@K] per row; 0 for a row without a positive grade in its top K; NaN where the
        exact computation exceeds :data:`ERR_WORK_LIMIT` (:func:`not_computed_reason`).

    Method
    ------
    Write ``x_i = 1 - R_i`` and ``S_j`` for the product of ``x`` over the first j items.
    Since ``R_r S_{r-1} = S_{r-1} - S_r``, ERR@K is a sum over the blocks t reaching into
    the top K (``a_t`` items above, ``n_t`` items, ``m_t = min(n_t, K - a_t)`` inside) of
    ``S(a_t) * C_t`` with ``C_t = sum_{j<=m_t} R_(j) S'_{j-1} / (a_t + j)``, where ``S'``
    runs over the block's own items in their (random) order. The product ``S(a_t)`` over
    every item above the block does not depend on the order inside earlier blocks, which
    lie wholly inside the cutoff, and the blocks' orders are independent, so
    ``E[ERR@K] = sum_t S(a_t) E[C_t]``.

    Inside a block only the ``p_t`` items with ``R > 0`` matter (an item with ``R = 0``
    adds nothing and leaves S unchanged). A uniform order of the block is a uniform choice
    of the positions that hold those items, times an independent uniform order of them, so
    ``E[C_t] = sum_{q=1..p_t} D_q W_q`` with

    * ``D_q = E[R_(q) prod_{i<q} x_(i)]`` over a uniform order of the p_t items, from the
      recurrence that adds one item (value x, R = 1 - x) to N - 1 items::

          M_j <- (j x M_{j-1} + (N - j) M_j) / N          (M_j = E[prod of the first j x])
          D_j <- ((j - 1) x D_{j-1} + (N - j) D_j + R M_{j-1}) / N

      (the new item lands before, after or at position j, with probabilities
      ``(j-1)/N``, ``(N-j)/N``, ``1/N``): all terms are non-negative, so nothing cancels;
    * ``W_q = E[1{pi_q <= m_t} / (a_t + pi_q)]``, pi_q the position of the q-th of p_t
      uniformly placed items among n_t, from the forward recurrence over positions j of
      ``P(q - 1 of them above j)`` (each position holds one with probability
      ``(p_t - q + 1)/(n_t - j + 1)``).

    The work is ``p_t (m_t + min(p_t, m_t))`` per block, vectorised over blocks of similar
    size. Exactness: every step is a finite sum of non-negative terms, exact up to the
    rounding of float64.

    >>> import numpy as np
    >>> from tieeval.kernels.tie_blocks import RelBatch
    >>> rb = RelBatch(np.array([1.0, 1.0]), np.array([1, 0]), np.array([0, 2]))
    >>> float(err_expectation(rb, None, 1)[0])  # R = 1/2 at rank 1 or 2: (1/2 + 1/4)/2
    0.375
    """
    _check_batch(rb)
    k = _check_int("k", k)
    if np.ndim(max_grade) == 0:
        gmax = np.full(rb.rows, _check_real("max_grade", max_grade))
    else:
        gmax = np.asarray(max_grade, dtype=np.float64)
        if gmax.shape != (rb.rows,) or not np.isfinite(gmax).all():
            raise ParameterError(f"max_grade must be a finite number or one per row "
                                 f"({rb.rows}), got shape {gmax.shape}")
    relevant_level = _check_level(relevant_level)
    lab = rb.lab_first
    g = np.maximum(lab, 0.0)
    if relevant_level is not None:
        g = np.where(lab >= relevant_level, g, 0.0)
    g = np.minimum(g, gmax[rb.row])
    with np.errstate(over="ignore"):
        gain = np.where(g >= 1, np.exp2(g) - 1.0, np.expm1(g * math.log(2.0)))
        r_item = gain * np.exp2(-gmax[rb.row])
    if not np.isfinite(r_item).all():
        raise ParameterError("2**max_grade overflows float64; max_grade must be below 1024")
    x_item = 1.0 - r_item
    kk = rb.n.copy() if k is None else np.minimum(rb.n, k)
    m_t = np.clip(kk[rb.brow] - rb.ba, 0, rb.bsz)
    # Items of R > 0 come first in every block of the 'first' order (labels descending).
    p_t = np.add.reduceat((r_item > 0).astype(np.int64), rb.bst) if rb.bst.size else \
        np.zeros(0, dtype=np.int64)
    out = np.zeros(rb.rows)
    live = np.flatnonzero((m_t > 0) & (p_t > 0))
    work = p_t[live] * (m_t[live] + np.minimum(p_t[live], m_t[live]))
    row_work = np.bincount(rb.brow[live], weights=work.astype(np.float64), minlength=rb.rows)
    over = row_work > ERR_WORK_LIMIT
    live = live[~over[rb.brow[live]]]
    if live.size:
        surv = survival(rb, x_item, np.minimum(rb.n, kk))[rb.bst[live]]
        ec = _err_blocks(rb, r_item, x_item, live, p_t[live], m_t[live])
        out += np.bincount(rb.brow[live], weights=surv * ec, minlength=rb.rows)
    out[over] = np.nan
    return out


def survival(rb: BlockTable, x_item: np.ndarray, width: Ints) -> np.ndarray:
    """Per position, the product of ``x_item`` over the items of its row above it, for the
    first ``width`` places of each row (a full table; the places past them hold 1).

    Products are taken left to right along each row, over rows of one width at a time as
    a 2-D array (no logarithms, no differences of running products), so a row's products
    never depend on the rows batched with it."""
    ex = np.ones(rb.size)
    for w in np.unique(width):
        if w <= 1:
            continue
        rows = np.flatnonzero(width == w)
        for part in chunks(rows, int(w)):
            checkpoint()
            idx = rb.offsets[part][:, None] + np.arange(int(w))
            ex[idx[:, 1:]] = np.cumprod(x_item[idx[:, :-1]], axis=1)
    return ex


def _err_blocks(rb: BlockTable, r_item: np.ndarray, x_item: np.ndarray, blocks: np.ndarray,
                p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``E[C_t]`` for the given blocks (see :func:`err_expectation`)."""
    out = np.zeros(blocks.size)
    for (pw, mw), sel in buckets(p, m):
        for part in chunks(sel, pw * max(pw, mw)):
            checkpoint()
            t = blocks[part]
            idx = rb.bst[t][:, None] + np.arange(pw)
            inside = np.arange(pw) < p[part][:, None]
            idx = np.where(inside, idx, rb.bst[t][:, None])
            rv = np.where(inside, r_item[idx], 0.0)
            xv = np.where(inside, x_item[idx], 1.0)
            d = _cascade_moments(rv, xv, p[part], min(pw, mw))
            out[part] = _position_weights(d, rb.ba[t], rb.bsz[t], p[part], m[part], pw, mw)
    return out


def _cascade_moments(rv: np.ndarray, xv: np.ndarray, p: np.ndarray, kmax: int) -> np.ndarray:
    """``D[:, q] = E[R_(q) prod_{i<q} x_(i)]``, q = 1..kmax, over a uniform order of each
    row's first ``p`` items (columns of ``rv``/``xv``); column 0 is 0."""
    b, pw = rv.shape
    j = np.arange(1, kmax + 1, dtype=np.float64)
    mom = np.zeros((b, kmax + 1))
    mom[:, 0] = 1.0
    d = np.zeros((b, kmax + 1))
    for i in range(1, pw + 1):
        checkpoint()
        act = (p >= i)[:, None]
        x = xv[:, i - 1:i]
        r = rv[:, i - 1:i]
        prev = mom[:, :-1]
        new_d = ((j - 1.0) * x * d[:, :-1] + (i - j) * d[:, 1:] + r * prev) / i
        new_m = (j * x * prev + (i - j) * mom[:, 1:]) / i
        d[:, 1:] = np.where(act, new_d, d[:, 1:])
        mom[:, 1:] = np.where(act, new_m, mom[:, 1:])
    return d


def _position_weights(d: np.ndarray, a: np.ndarray, n: np.ndarray, p: np.ndarray,
                      m: np.ndarray, pw: int, mw: int) -> np.ndarray:
    """``sum_q D_q E[1{pi_q <= m} / (a + pi_q)]`` by a forward pass over positions."""
    b = d.shape[0]
    kmax = d.shape[1] - 1
    q = np.arange(pw + 1)
    left = np.clip(p[:, None] - q, 0, None).astype(np.float64)  # of the p still to place
    f = np.zeros((b, pw + 1))
    f[:, 0] = 1.0  # P(q of the p items above the current position)
    out = np.zeros(b)
    af = a.astype(np.float64)
    for j in range(1, int(m.max()) + 1):
        checkpoint()
        rem = (n - j + 1).astype(np.float64)
        ok = (j <= m)
        rem = np.where(ok, rem, 1.0)[:, None]
        hit = f * left / rem  # P(q above, and position j holds the (q+1)-th)
        out += np.where(ok, (hit[:, :kmax] * d[:, 1:]).sum(axis=1) / (af + j), 0.0)
        f = np.where(ok[:, None], f - hit, f)
        f[:, 1:] += np.where(ok[:, None], hit[:, :-1], 0.0)
    return out


# ---------------------------------------------------------------------------------------
# Interpolated precision


def iprec_cut(recall: float, big_r: np.ndarray, rounding: str = "trec_eval") -> np.ndarray:
    """IPrec's cutoff in relevant items at recall level ``recall`` for ``big_r`` relevant
    items: trec_eval 10's ``lround(x R)`` (``"trec_eval"``; x R >= 0, halves up) or trec_eval
    9.0.8's ``(long)(x R + 0.9)`` (``"trec_eval9"``, m_iprec_at_recall.c of pytrec_eval).

    >>> iprec_cut(0.1, np.array([4, 5, 6])).tolist(), iprec_cut(0.1, np.array([4, 5, 6]),
    ...                                                        "trec_eval9").tolist()
    ([0, 1, 1], [1, 1, 1])
    """
    prod = recall * np.asarray(big_r).astype(np.float64)
    if rounding == "trec_eval9":
        return np.floor(prod + 0.9).astype(np.int64)
    fl = np.floor(prod)
    return (fl + (prod - fl >= 0.5)).astype(np.int64)  # lround: halves away from zero


def iprec_expectation(rb: BlockTable, recall: float, depth: int | None = None,
                      relevant_level: float | None = None,
                      rounding: str = "trec_eval") -> np.ndarray:
    """Per row, the exact expectation of trec_eval's ``iprec_at_recall`` at level ``recall``
    under uniform random tie-breaking.

    Parameters
    ----------
    rb : BlockTable
        The labelled batch; unranked relevant items (``RelBatch(unranked=...)``) count in R.
    recall : float
        The recall level x in [0, 1]; the cutoff is ``c = lround(x R)`` relevant items
        (``rounding``: :func:`iprec_cut`'s rule).
    depth : int, optional
        Only the top ``depth`` candidates are retrieved (trec_eval ``-M``); a tie block
        across that depth is cut after the random order is drawn.
    relevant_level : float, optional
        Relevant means ``label >= relevant_level`` (trec_eval ``-l``); default ``label > 0``.
    rounding : str
        ``"trec_eval"`` (trec_eval 10, default) or ``"trec_eval9"`` (:func:`iprec_cut`).

    Returns
    -------
    ndarray of float64, shape (rows,)
        E[IPrec] per row (0 for a row with nothing retrieved or no relevant item retrieved);
        NaN where the exact computation exceeds :data:`IPREC_WORK_LIMIT`
        (:func:`not_computed_reason`).

    Method
    ------
    Let ``c' = max(c, 1)``. When the number of relevant items retrieved, ``R_ret``, is
    below c the value is 0 for every order. Otherwise ``X = max_{j >= c'} j / r_j``. The
    relevant items of a tie block t (``a_t`` items and ``B_t`` relevant items above it,
    ``n_t`` items, ``p_t`` relevant) hold the relevant indices ``B_t+1 .. B_t+p_t`` in every
    order; only their in-block positions ``s_1 < ... < s_p``, a uniform p_t-subset of
    ``1..n_t``, are random, independently across blocks. Hence ``X = max_t Y_t`` with
    independent ``Y_t = max_{i >= i0} (B_t + i) / (a_t + s_i)``, ``i0 = max(1, c' - B_t)``,
    and ``P(X <= v) = prod_t P(Y_t <= v)``.

    * A block whose order cannot matter (every item relevant) gives a fixed
      ``Y_t = (B_t + p_t)/(a_t + p_t)`` (the ratio rises with i as ``B_t <= a_t``); the
      largest of them is a floor ``y0`` under X.
    * For a random block, ``Y_t <= v`` iff ``s_i >= ceil((B_t + i)/v) - a_t`` for every
      ``i >= i0``: with ``s_i = i + d_i`` and ``0 <= d_1 <= ... <= d_p <= n_t - p_t`` a
      count of lattice paths above a boundary, taken by a cumulative-sum recurrence over i
      scaled by ``i/(n_t - p_t + i)`` (so each step is a probability, never a binomial).
      ``v`` is held as the exact fraction (numerator, denominator) so the ceiling is
      integer arithmetic. It is evaluated at the floor L (below) and at every attainable
      value ``(B_t + i)/(a_t + s)`` above L, where its CDF steps.
    * A random block's values lie between ``(B_t + p_t)/(a_t + n_t)`` (relevant items
      last) and ``(B_t + p_t)/(a_t + p_t)`` (first). The floor ``L`` is the largest of
      ``y0`` and the least values; a block whose largest value is at most L is dropped
      (its CDF is 1 from L on), and only steps above L are evaluated.
    * ``E[X] = L + integral_{L}^{1} (1 - prod_t F_t(v)) dv``, a finite sum over the
      sorted steps; the product is taken through logarithms, summed per row, and exact
      zeros are counted apart.
    * The bound on ``d_i`` at a threshold is non-decreasing in i, so the indices where it
      is 0 form a prefix: the recurrence starts at the first binding index from the
      unconstrained distribution there (shared by all thresholds of the same width).
      Equal evaluations (block shape, first binding index, threshold as a reduced
      fraction) are made once per call, across rows and across the levels of
      :func:`iprec_expectations`. Every value is a float64 probability built by sums and
      by the factors ``i/(w - 1 + i)`` (no binomial is formed), exact up to float64
      rounding; masses below the float64 range underflow to 0.

    With ``depth`` cutting a block after m of its n items, the number h of its relevant
    items retrieved is hypergeometric and, given h, their positions a uniform h-subset of
    the m kept ones: the row is the mixture over h of the rows with that block replaced
    by one of m items and h relevant (``R_ret`` then depends on h).

    >>> import numpy as np
    >>> from tieeval.kernels.tie_blocks import RelBatch
    >>> rb = RelBatch(np.array([1.0, 1.0]), np.array([1, 0]), np.array([0, 2]))
    >>> float(iprec_expectation(rb, 0.0)[0])  # precision 1 or 1/2, each half the time
    0.75
    """
    value: np.ndarray = iprec_expectations(rb, [recall], depth=depth, relevant_level=relevant_level,
                                           rounding=rounding)[0]
    return value


def iprec_expectations(rb: BlockTable, recalls: Iterable[float], depth: int | None = None,
                       relevant_level: float | None = None,
                       rounding: str = "trec_eval") -> np.ndarray:
    """:func:`iprec_expectation` at each of the recall levels ``recalls`` in one call: shape
    (len(recalls), rows), row ``j`` its value at ``recalls[j]``, NaN included.

    The levels share the set-up and the path counts: every distinct tie-block CDF
    evaluation (block shape, cutoff index and threshold) is computed once for all the
    rows and levels that need it, so the 11 levels of trec_eval's ``iprec_at_recall``
    cost far less than 11 calls.

    >>> import numpy as np
    >>> from tieeval.kernels.tie_blocks import RelBatch
    >>> rb = RelBatch(np.array([1.0, 1.0]), np.array([1, 0]), np.array([0, 2]))
    >>> iprec_expectations(rb, [0.0, 1.0])[:, 0].tolist()
    [0.75, 0.75]
    """
    _check_batch(rb)
    if isinstance(recalls, (str, bytes)) or not hasattr(recalls, "__len__"):
        raise ParameterError(f"recalls must be a sequence of numbers, got {recalls!r}")
    levels = [_check_real("recall", x) for x in recalls]
    for x in levels:
        checkpoint()
        if not 0.0 <= x <= 1.0:
            raise ParameterError(f"recall must be between 0 and 1, got {x!r}")
    depth = _check_int("depth", depth)
    relevant_level = _check_level(relevant_level)
    if not levels:
        return np.zeros((0, rb.rows))
    lab = rb.lab_first
    rel = lab > 0 if relevant_level is None else lab >= relevant_level
    p_t = (np.add.reduceat(rel.astype(np.int64), rb.bst) if rb.bst.size
           else np.zeros(0, dtype=np.int64))
    big_r = np.bincount(rb.row[rel], minlength=rb.rows)
    if rb.unranked is not None:
        ulab, uoff = rb.unranked
        urel = ulab > 0 if relevant_level is None else ulab >= relevant_level
        urow = np.repeat(np.arange(rb.rows, dtype=np.int64), np.diff(uoff))
        big_r = big_r + np.bincount(urow[urel], minlength=rb.rows)
    kept = rb.n.copy() if depth is None else np.minimum(rb.n, depth)
    m_t = np.clip(kept[rb.brow] - rb.ba, 0, rb.bsz)
    b_t = rb.within_row_exclusive(p_t)
    shape = _iprec_shape(rb, p_t, b_t, m_t)  # the same at every level
    # every level in one pass: level j's virtual rows follow level j - 1's (one set of
    # array operations for all levels, not one per level; each virtual row is computed
    # on its own, so the values are those of one level at a time, bit for bit)
    c1 = np.stack([np.maximum(iprec_cut(recall, big_r, rounding), 1) for recall in levels])
    return _iprec_rows(rb, c1, shape)


#: the virtual rows of :func:`_iprec_shape`: ``(nv, vrow, weight, vret, ib, ba, nb, pb, bb)``
_Shape = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
               np.ndarray, np.ndarray]


def _iprec_rows(rb: BlockTable, c1: np.ndarray, shape: _Shape) -> np.ndarray:
    """Build the virtual rows (one per row, or one per count h of relevant items kept of
    a block cut by the depth) and their block instances, and return the rows'
    expectations, one row per level (NaN over the work limit). ``c1`` holds each row's first
    counted relevant item, one row per level. ``shape`` (:func:`_iprec_shape`) does not
    depend on the level."""
    nv, vrow, weight, vret, ib, ba, nb, pb, bb = shape
    levels, rows = c1.shape[0], rb.rows
    vc1 = c1[:, vrow].ravel()  # level j's virtual rows are j * nv + v
    valid = np.tile(vret, levels) >= vc1  # else 0 in every order (R_ret = 0 included)
    vrows = (vrow + rows * np.arange(levels)[:, None]).ravel()
    ib = (ib + nv * np.arange(levels)[:, None]).ravel()
    ba, nb, pb, bb = (np.tile(x, levels) for x in (ba, nb, pb, bb))
    ev, over = _iprec_virtual(levels * nv, vc1, valid, ib, ba, nb, pb, bb, vrows,
                              levels * rows)
    out = np.bincount(vrows, weights=np.tile(weight, levels) * np.where(valid, ev, 0.0),
                      minlength=levels * rows)
    out[over] = np.nan
    return out.reshape(levels, rows)


def _iprec_shape(rb: BlockTable, p_t: Ints, b_t: Ints, m_t: Ints) -> _Shape:
    """The virtual rows of :func:`_iprec_rows` and their block instances: ``(nv, vrow,
    weight, vret, ib, ba, nb, pb, bb)``."""
    full = np.flatnonzero(m_t == rb.bsz)
    cutb = np.flatnonzero((m_t > 0) & (m_t < rb.bsz))  # at most one per row
    # h values of the cut blocks: max(0, p - (n - m)) .. min(p, m)
    n_c, p_c, m_c = rb.bsz[cutb], p_t[cutb], m_t[cutb]
    h_lo = np.maximum(0, p_c - (n_c - m_c))
    h_hi = np.minimum(p_c, m_c)
    nh = h_hi - h_lo + 1
    vcount = np.ones(rb.rows, dtype=np.int64)
    vcount[rb.brow[cutb]] = nh
    vstart = np.concatenate(([0], np.cumsum(vcount)))
    nv = int(vstart[-1])
    vrow = np.repeat(np.arange(rb.rows), vcount)
    weight = np.ones(nv)
    ret = np.bincount(rb.brow[full], weights=p_t[full], minlength=rb.rows).astype(np.int64)
    vret = ret[vrow]
    # the cut blocks' variants
    h, ci = expand(h_lo, nh)
    cv = vstart[rb.brow[cutb]][ci] + (h - h_lo[ci])  # their virtual rows
    if cv.size:
        # scipy is imported only for a depth that cuts a tie block (``import tieeval``
        # stays light)
        from scipy.stats import hypergeom
        weight[cv] = hypergeom.pmf(h, n_c[ci], p_c[ci], m_c[ci])
    vret[cv] += h
    # block instances: every full block once per virtual row of its row, and the variants
    reps = vcount[rb.brow[full]]
    inst_block = np.repeat(full, reps)
    inst_v = positions(vstart[rb.brow[full]], reps)
    ba = np.concatenate((rb.ba[inst_block], rb.ba[cutb][ci]))
    nb = np.concatenate((rb.bsz[inst_block], m_c[ci]))
    pb = np.concatenate((p_t[inst_block], h))
    bb = np.concatenate((b_t[inst_block], b_t[cutb][ci]))
    ib = np.concatenate((inst_v, cv))
    # a block instance without a relevant item never moves a row's maximum: every level
    # would drop it (_iprec_virtual), so it is dropped once here, in the same order
    some = np.flatnonzero(pb > 0)
    return nv, vrow, weight, vret, ib[some], ba[some], nb[some], pb[some], bb[some]


def _iprec_virtual(nv: int, vc1: np.ndarray, valid: np.ndarray, ib: np.ndarray, ba: np.ndarray,
                   nb: np.ndarray, pb: np.ndarray, bb: np.ndarray, vrow: np.ndarray,
                   rows: int) -> tuple[np.ndarray, np.ndarray]:
    """E[max_t Y_t] per virtual row, from the block CDFs at their steps, and the rows
    over the work limit."""
    keep = valid[ib] & (pb > 0) & (bb + pb >= vc1[ib])
    ib, ba, nb, pb, bb = ib[keep], ba[keep], nb[keep], pb[keep], bb[keep]
    det = pb == nb
    # The floor L under X, a fraction (0/1 when there is none): a fixed block's Y_t, or a
    # random block's least value (B+p)/(a+n), reached with its relevant items last.
    fn = bb + pb
    fd = np.where(det, ba + pb, ba + nb)
    y_num = np.zeros(nv, dtype=np.int64)
    y_den = np.ones(nv, dtype=np.int64)
    pick = _last_max(fn / fd, ib)
    y_num[ib[pick]] = fn[pick]
    y_den[ib[pick]] = fd[pick]
    y0 = y_num / y_den
    # a random block whose largest value (B+p)/(a+p) (relevant items first) is at most L
    # has F_t = 1 from L on, and drops out
    rnd = ~det & ((bb + pb) / (ba + pb) > y0[ib])
    ib, ba, nb, pb, bb = ib[rnd], ba[rnd], nb[rnd], pb[rnd], bb[rnd]
    i0 = np.maximum(1, vc1[ib] - bb)
    w = nb - pb + 1
    # per index i = i0..p, the steps (B+i)/(a+s) above L: s = i .. min(w-1+i, top_i),
    # top_i the last s with (B+i) den > (a+s) num
    per = pb - i0 + 1
    i, blk = expand(i0, per)
    yn, yd = y_num[ib[blk]], y_den[ib[blk]]
    top = np.where(yn > 0, -((-(bb[blk] + i) * yd) // np.maximum(yn, 1)) - ba[blk] - 1,
                   w[blk] - 1 + i)
    count_i = np.clip(np.minimum(top, w[blk] - 1 + i) - i + 1, 0, None)
    thresholds = np.bincount(blk, weights=count_i, minlength=ib.size).astype(np.int64)
    work = (thresholds + 1.0) * (pb - i0 + 1) * w  # the DP runs over i = i0..p only
    over = np.bincount(vrow[ib], weights=work, minlength=rows) > IPREC_WORK_LIMIT
    ok = ~over[vrow[ib]]
    if not ok.all():
        ib, ba, nb, pb, bb, i0, w = (a[ok] for a in (ib, ba, nb, pb, bb, i0, w))
        keep_i = ok[blk]
        blk = np.cumsum(ok)[blk[keep_i]] - 1
        i, count_i = i[keep_i], count_i[keep_i]
    # the steps: for each (block, i) the s = i .. i + count_i - 1
    s, pair = expand(i, count_i)
    blk = blk[pair]
    num, den = bb[blk] + i[pair], ba[blk] + s
    init = np.arange(ib.size)
    blk = np.concatenate((init, blk))
    num = np.concatenate((y_num[ib], num))
    den = np.concatenate((y_den[ib], den))
    is_init = np.zeros(blk.size, dtype=bool)
    is_init[:init.size] = True
    sel = np.flatnonzero(num > 0)  # P(Y_t <= 0) = 0
    bs = blk[sel]
    cdf = np.zeros(blk.size)
    cdf[sel] = _path_cdf(pb[bs], nb[bs], i0[bs], bb[bs], ba[bs], num[sel], den[sel])
    return _iprec_integral(ib, blk, is_init, num, den, cdf, y0, nv), over


def _last_max(val: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group, the index of its largest ``val``, the last one among equals (what a
    stable sort by group, then value, puts last). Without a sort where the groups come in
    order (no depth cuts a block)."""
    if group.size and not (group[1:] >= group[:-1]).all():
        order = np.lexsort((val, group))
        last = np.ones(order.size, dtype=bool)
        last[:-1] = group[order][1:] != group[order][:-1]
        return order[last]
    new = np.ones(group.size, dtype=bool)
    new[1:] = group[1:] != group[:-1]
    start = np.flatnonzero(new)
    of = np.repeat(np.arange(start.size), np.diff(np.append(start, group.size)))
    at = np.flatnonzero(val == np.maximum.reduceat(val, start)[of]) if start.size else start
    last = np.ones(at.size, dtype=bool)
    last[:-1] = of[at][1:] != of[at][:-1]
    return at[last]


def _iprec_integral(ib: np.ndarray, blk: np.ndarray, is_init: np.ndarray, num: np.ndarray,
                    den: np.ndarray, cdf: np.ndarray, y0: np.ndarray, nv: int) -> np.ndarray:
    """``y0 + integral`` per virtual row from each block's CDF at its steps."""
    v = num / den
    # change of each block's CDF at each of its steps (from 1 before its first record)
    order = np.lexsort((~is_init, v, blk))
    prev = np.ones(blk.size)
    o_blk = blk[order]
    prev[order[1:]] = np.where(o_blk[1:] == o_blk[:-1], cdf[order[:-1]], 1.0)
    zero, zprev = cdf <= 0.0, prev <= 0.0
    dlog = (np.log(np.where(zero, 1.0, cdf)) - np.log(np.where(zprev, 1.0, prev)))
    dzero = zero.astype(np.int64) - zprev.astype(np.int64)
    value: np.ndarray = y0 + _sweep(ib[blk], v, dlog, dzero, y0, nv)
    return value


def _path_cdf(p: np.ndarray, n: np.ndarray, i0: np.ndarray, bb: np.ndarray, ba: np.ndarray,
              num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``P(Y <= num/den)`` for a block: the share of the ``C(n, p)`` position sets with
    ``s_i >= ceil((bb + i) den / num) - ba`` for ``i >= i0``.

    With ``s_i = i + d_i`` the bound on ``d_i`` is ``max(0, ceil((bb + i) den / num) - ba
    - i)``, non-decreasing in i (``den >= num``), so the indices where it is 0 form a
    prefix: the constrained indices start at ``i1 >= i0`` (closed form below), and the
    distribution of ``d_{i1-1}`` is the unconstrained one, shared by every request of the
    same width and ``i1``. Equal requests (the threshold as a reduced fraction) are
    computed once.
    """
    out = np.ones(p.size)
    if p.size == 0:
        return out
    g = np.gcd(num, den)
    num, den = num // g, den // g
    # first i with (bb + i) den > (ba + i) num, i.e. i (den - num) > ba num - bb den
    gap = den - num
    i1 = np.where(gap > 0, (ba * num - bb * den) // np.maximum(gap, 1) + 1, p + 1)
    i1 = np.maximum(i0, i1)
    active = np.flatnonzero(i1 <= p)  # else no bound binds: the CDF is 1
    if active.size == 0:
        return out
    cols = [x[active] for x in (p, n, i1, bb, ba, num, den)]
    first, inverse = _distinct(cols)
    out[active] = _path_cdf_distinct(*(c[first] for c in cols))[inverse]
    return out


def _distinct(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the distinct tuples of the equal-length integer ``cols`` and, per
    element, the position of its tuple among them (a mixed-radix key of the columns'
    ranks while it fits in int64, else a lexicographic sort)."""
    key = np.zeros(cols[0].size, dtype=np.int64)
    radix = 1
    for c in cols:
        vals, rank = np.unique(c, return_inverse=True)
        if radix * vals.size >= 1 << 62:
            order = np.lexsort(cols[::-1])
            new = np.ones(order.size, dtype=bool)
            new[1:] = np.any([c[order][1:] != c[order][:-1] for c in cols], axis=0)
            group = np.cumsum(new) - 1
            inverse = np.empty(order.size, dtype=np.int64)
            inverse[order] = group
            return order[new], inverse
        key = key * vals.size + rank.ravel()
        radix *= vals.size
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _path_cdf_distinct(p: np.ndarray, n: np.ndarray, i1: np.ndarray, bb: np.ndarray, ba: np.ndarray,
                       num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """:func:`_path_cdf` for requests whose first binding index is ``i1``."""
    out = np.zeros(p.size)
    w = n - p + 1
    steps = p - i1 + 1  # the constrained indices i1..p
    for ww, sel in _width_classes(w):
        for part in chunks(sel, ww):
            checkpoint()
            part = part[np.argsort(-steps[part], kind="stable")]  # rows still going: a prefix
            stp, wp, bp, ap, dp, np_, ip = (x[part] for x in (steps, w, bb, ba, den, num, i1))
            alive = np.searchsorted(-stp, -np.arange(1, int(stp[0]) + 1), side="right")
            hh = _free_start(wp, ip - 1, ww)
            col = np.arange(ww)
            # Columns at or beyond a row's own width w take values the cumulative sums carry
            # rightwards, but never feed a column to their left: they are dropped at the end.
            for j in range(int(stp[0])):
                checkpoint()
                na = int(alive[j])
                h = hh[:na]
                i = ip[:na] + j
                np.cumsum(h, axis=1, out=h)
                ell = -((-(bp[:na] + i) * dp[:na]) // np_[:na]) - ap[:na]
                scale = (i / (wp[:na] - 1.0 + i))[:, None]
                np.multiply(h, np.where(col >= (ell - i)[:, None], scale, 0.0), out=h)
            out[part] = np.where(col < wp[:, None], hh, 0.0).sum(axis=1)
    return np.minimum(out, 1.0)


def _width_classes(w: np.ndarray) -> Iterator[tuple[int, Ints]]:
    """Group indices by width, padded to at most 1.25 times their own (a multiple of
    ``2 ** max(3, floor(log2 w) - 2)``)."""
    q = np.left_shift(1, np.maximum(3, np.floor(np.log2(np.maximum(w, 1))).astype(np.int64) - 2))
    padded = -(-w // q) * q
    for width in np.unique(padded):
        checkpoint()
        yield int(width), np.flatnonzero(padded == width)


def _free_start(w: np.ndarray, k: np.ndarray, width: int) -> np.ndarray:
    """Rows ``P(d_k = d)``, d < width, of unconstrained paths (``d_0 = 0``) of width w:
    the recurrence of :func:`_path_cdf_distinct` without bounds, run once per distinct
    (w, k)."""
    first, inverse = _distinct([w, k])
    pw, pk = w[first], k[first]
    order = np.argsort(-pk, kind="stable")
    pw, pk = pw[order], pk[order]
    hh = np.zeros((pw.size, width))
    hh[:, 0] = 1.0
    alive = np.searchsorted(-pk, -np.arange(1, int(pk[0]) + 1), side="right") if pk[0] > 0 \
        else np.zeros(0, dtype=np.int64)
    for i in range(1, int(pk[0]) + 1):
        checkpoint()
        na = int(alive[i - 1])
        h = hh[:na]
        np.cumsum(h, axis=1, out=h)
        h *= (i / (pw[:na] - 1.0 + i))[:, None]
    rows = np.empty(pw.size, dtype=np.int64)
    rows[order] = np.arange(pw.size)
    value: np.ndarray = hh[rows[inverse]]
    return value


def _sweep(vr: np.ndarray, v: np.ndarray, dlog: np.ndarray, dzero: np.ndarray, y0: np.ndarray,
           nv: int) -> np.ndarray:
    """``integral_{y0}^{1} (1 - prod_t F_t) dv`` per virtual row from the CDF changes."""
    order = np.lexsort((v, vr))
    vr, v, dlog, dzero = vr[order], v[order], dlog[order], dzero[order]
    # cumulative sums inside each virtual row, as padded 2-D rows (no global differences)
    counts = np.bincount(vr, minlength=nv)
    start = np.concatenate(([0], np.cumsum(counts)))[:-1]
    slog = np.empty(vr.size)
    szero = np.empty(vr.size, dtype=np.int64)
    present = np.flatnonzero(counts)
    for (cw,), sel in buckets(counts[present]):
        for part in chunks(present[sel], cw):
            checkpoint()
            idx = start[part][:, None] + np.arange(cw)
            inside = np.arange(cw) < counts[part][:, None]
            idx = np.where(inside, idx, start[part][:, None])
            cl = np.cumsum(np.where(inside, dlog[idx], 0.0), axis=1)
            cz = np.cumsum(np.where(inside, dzero[idx], 0), axis=1)
            slog[idx[inside]] = cl[inside]
            szero[idx[inside]] = cz[inside]
    prod = np.where(szero > 0, 0.0, np.exp(np.minimum(slog, 0.0)))
    # the last record of each (row, value) holds the product from that value on
    last = np.ones(vr.size, dtype=bool)
    last[:-1] = (vr[1:] != vr[:-1]) | (v[1:] != v[:-1])
    vr, v, prod = vr[last], v[last], prod[last]
    nxt = np.empty(v.size)
    nxt[:-1] = v[1:]
    has_next = np.zeros(v.size, dtype=bool)
    has_next[:-1] = vr[1:] == vr[:-1]
    gap = np.where(has_next, nxt - v, 0.0)
    return np.bincount(vr, weights=gap * (1.0 - prod), minlength=nv)
