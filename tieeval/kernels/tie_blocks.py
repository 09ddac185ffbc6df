"""The general exact tie-aware kernel: many positives, graded gains, signed labels.

Where :func:`tieeval.kernels.closed_forms.single_positive` handles one held-out positive from
two counts, this module evaluates any labelling of a ragged batch of candidate lists. Every
formula is from ``docs/METRICS.md`` (sections 3-14), McSherry & Najork's tie-averaging
generalised to expectations *and* variances under uniform random tie-breaking.

Layout. A batch is flat: ``scores`` (any real dtype, never cast), ``labels`` (integers or
floats) and ``offsets`` (``rows + 1`` non-decreasing integers); row ``i`` is
``scores[offsets[i]:offsets[i+1]]``. Labels are read as:

* ``rel = max(label, 0)`` is the graded relevance (the gain of DCG/NDCG);
* ``label > 0``: relevant, the set P with ``R = |P|``;
* ``label < 0``: an explicit negative, the set N (only the signed metrics and V-AUC use it);
* ``label == 0``: unobserved (or judged non-relevant).

Method (docs/METRICS.md 14a). One sort per row: ``np.argsort(row * -1)`` on the stored dtype,
numpy's default kind, over all rows of one length at once (a loop over the distinct row
lengths, never over rows). That is the codebases' own call, so the same order gives the
'original' column. Equal scores of a row form a tie block; labels inside blocks of two or
more are then put in descending order ('first') by one small sort of the tied positions
only. Block sums come from ``np.add.reduceat`` / ``np.bincount``; the DCG family works on
the blocks that reach into the top K only, and the ideal DCG@K takes ``np.partition``, not a
sort. The only other loops run over bounded quantities: the hypergeometric miss probability
of HR/SHR (``min(m, p) <= K`` factors) and the reciprocal-rank series (power-of-two buckets
of rows).

Definitions (the choices docs/METRICS.md leaves open are recorded here and on :class:`RelMetric`):

* HR@K is the probability that *at least one* relevant item is in the top K (not a share).
* Recall@K divides the relevant items in the top K by R; Precision@K divides them by K,
  also when the row has fewer than K candidates (TREC; see ``short_list``).
* MRR / RR@K: reciprocal rank of the first relevant item, 0 when it is below K.
* MAP / AP@K: ``(1/Z) sum_{r <= K, relevant} precision@r`` with ``Z = R`` by default
  (trec_eval), ``Z = min(K, R)`` with ``ap_norm="min"``. It has no closed-form variance.
* NDCG@K: IDCG from the row's own labels sorted, over ``min(K, n)`` positions.
* SHR, SRecall, SDCG, SNDCG: gain +1 on P, -gamma on N, 0 otherwise (the sign-aware paper's
  definitions). SNDCG divides by ``ISDCG = D[min(K, R)]`` (all positives first, no
  negative counted), which stays > 0; it equals the literal ideal whenever
  ``K <= n - |N|`` and never lets a forced negative flip the sign (docs/METRICS.md 9).
* V-AUC: the share of (positive, negative) pairs with the positive ranked first. The
  tie-aware value counts a tied pair 1/2; the strict one (``y_p > y_n``) counts it 0 and is
  the ``last`` column; ``first`` counts it 1.
* Every metric is undefined (``defined`` False, NaN values) for a row with R = 0, HR
  included, so all metrics share one denominator; V-AUC also needs ``|N| >= 1``.

Columns of :class:`InstanceValues`, one float64 entry per row:

* ``first`` / ``last``: the metric after sorting every tie block by label descending /
  ascending. One ordering maximises every metric here and its reverse minimises it.
* ``original``: the metric on ``np.argsort(row * -1)`` (numpy's default kind, stored dtype),
  the ordering the evaluated codebases computed. It is platform dependent (docs/METRICS.md 1).
* ``tie_aware``: the exact expectation under uniform random tie-breaking.
* ``variance``: the exact tie-break variance (NaN for AP, which has no closed form).
* ``tie_decided``: ``first != last``, from the exact conditions of docs/METRICS.md 10.
* ``defined``: the rows where the metric exists (R >= 1; V-AUC also needs ``|N| >= 1``).
  Undefined rows hold NaN and are never divided by zero.

>>> import numpy as np
>>> v = relevance_values(np.array([0.9, 0.9, 0.1]), np.array([1, 0, 1]), np.array([0, 3]),
...                      parse_rel_metric("HR@1"))
>>> float(v.first[0]), float(v.last[0]), float(v.tie_aware[0]), float(v.variance[0])
(1.0, 0.0, 0.5, 0.25)
"""


from __future__ import annotations

import math
from typing import cast

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.kernels.counts import NanScoreError
from tieeval.kernels.threads import map_blocks
from tieeval.metrics.options import (
    NAN_POLICIES,
    ORIGINAL_ORDERS,
    RelMetric,
    _key,
    parse_rel_metric,
)
from tieeval.records.values import InstanceValues

# ---------------------------------------------------------------------------------------
# Results


# The per-row counts of trec_eval (summed over rows, not averaged): defined on every row.
_COUNTS = ("NumRet", "NumRel", "NumRelRet", "NumQ")

#: Metrics that read every position of a row (the cascade of ERR, IPrec's running
#: precision): a sparse batch (``RelBatch(sparse=True)``) evaluates them on the full table.
FULL_TABLE_METRICS = ("ERR", "IPrec")

# ---------------------------------------------------------------------------------------
# Numerical helpers (private: they trust their input)

_DIRECT = 64  # power sums over at most this many terms are added directly
_CHUNK = 1 << 22  # elements per 2-D work array
_SORT_CHUNK = 1 << 19  # elements per block of rows sorted together (one thread each)


def _recip_sum(lo: np.ndarray, hi: np.ndarray, power: int) -> np.ndarray:
    """``sum_{j=lo+1..hi} j**-power`` (power 1 or 2) for int64 ``0 <= lo <= hi``.

    No prefix differences (``H[hi] - H[lo]`` cancels when the range is short and deep, and
    a cumsum table drifts by ~1e-13 over a few thousand terms): terms up to position 64 are
    added directly, and the rest comes from the asymptotic expansion of the tail with every
    difference of powers factored (``1/x - 1/y = (y - x)/(x y)``), which has no cancellation.
    At x >= 64 the truncated series is accurate to about 1e-17 relative.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out = np.zeros(lo.shape, dtype=np.float64)
    # Direct part: the whole range when it is short, else the stretch below position 64.
    cut = np.where(hi - lo <= _DIRECT, hi, np.maximum(lo, np.minimum(hi, _DIRECT)))
    direct = np.flatnonzero(cut > lo)
    if direct.size:
        # j ** -power for every j the rows reach, computed once (the same values as
        # elementwise): the rows then gather them
        table = np.arange(1, int(lo[direct].max()) + _DIRECT + 1, dtype=np.float64) ** -power
    for chunk in np.array_split(direct, max(1, direct.size * _DIRECT // _CHUNK + 1)):
        if chunk.size:
            j = lo[chunk, None] + np.arange(1, _DIRECT + 1)
            out[chunk] = np.where(j <= cut[chunk, None], table[j - 1], 0.0).sum(axis=1)
    deep = np.flatnonzero(hi > cut)  # then cut >= 64
    if deep.size:
        x, y = cut[deep].astype(np.float64), hi[deep].astype(np.float64)
        df = (hi[deep] - cut[deep]).astype(np.float64)
        ix, iy = 1.0 / x, 1.0 / y
        q1 = df * ix * iy  # 1/x - 1/y
        q2 = q1 * (ix + iy)  # 1/x^2 - 1/y^2
        if power == 1:
            q4 = q2 * (ix * ix + iy * iy)
            q6 = q2 * (ix ** 4 + (ix * iy) ** 2 + iy ** 4)
            # H(y) - H(x), H(x) ~ ln x + C + 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6)
            out[deep] += np.log1p(df * ix) - 0.5 * q1 + q2 / 12 - q4 / 120 + q6 / 252
        else:
            q3 = q1 * (ix * ix + ix * iy + iy * iy)
            q5 = q1 * sum(ix ** (4 - e) * iy ** e for e in range(5))
            q7 = q1 * sum(ix ** (6 - e) * iy ** e for e in range(7))
            # T(x) - T(y), T(x) = sum_{j>x} j^-2
            #                   ~ 1/x - 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7)
            out[deep] += q1 - 0.5 * q2 + q3 / 6 - q5 / 30 + q7 / 42
    return out


def _pmiss(n: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``C(n-p, m) / C(n, m)``: no marked item among m uniform draws from n with p marked.

    Multiplies ``min(m, p)`` factors in [0, 1] (never forms a binomial, which overflows
    float64 near n = 1030); the loop runs over factor index, shrinking to the rows left.
    """
    out = np.ones(n.shape, dtype=np.float64)
    zero = m > n - p
    length = np.where(zero, 0, np.minimum(m, p))
    c = np.where(m <= p, p, m)  # factors (n - c - i)/(n - i), i < length
    order = np.argsort(-length, kind="stable")
    counts = np.bincount(length, minlength=1)
    alive = length.size - np.cumsum(counts)  # alive[i] = #rows with length > i
    for i in range(int(length.max(initial=0))):
        rows = order[:alive[i]]
        out[rows] *= (n[rows] - c[rows] - i) / (n[rows] - i)
    out[zero] = 0.0
    return out


def _rr_moments(a: np.ndarray, nb: np.ndarray, p: np.ndarray, k: np.ndarray,
                shortcut: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``E[RR@K]`` and ``E[RR@K^2]`` for a first relevant block (a above, nb items, p relevant).

    The first relevant item sits at in-block position J with
    ``P(J = j) = C(nb-j, p-1) / C(nb, p)``, ``j = 1..nb-p+1`` (docs/METRICS.md 7). With p = 1
    (and ``shortcut``) J is uniform and the sums are harmonic differences (section 2);
    otherwise the pmf comes from its recurrence as a product per row, in power-of-two
    buckets of rows so a row's arithmetic never depends on its neighbours.
    """
    a, nb, p, k = (np.asarray(x, dtype=np.int64) for x in (a, nb, p, k))
    length = np.clip(np.minimum(nb - p + 1, k - a), 0, None)
    e1 = np.zeros(a.shape, dtype=np.float64)
    e2 = np.zeros(a.shape, dtype=np.float64)
    general = length > 0
    if shortcut:
        one = general & (p == 1)
        general &= p != 1
        nbf = nb[one].astype(np.float64)
        e1[one] = _recip_sum(a[one], a[one] + length[one], 1) / nbf
        e2[one] = _recip_sum(a[one], a[one] + length[one], 2) / nbf
    idx = np.flatnonzero(general)
    if idx.size == 0:
        return e1, e2
    bucket = np.ceil(np.log2(length[idx])).astype(np.int64)
    for b in np.unique(bucket):
        width = 1 << int(b)
        sel = idx[bucket == b]
        for rows in np.array_split(sel, max(1, sel.size * width // _CHUNK + 1)):
            if rows.size == 0:
                continue
            j = np.arange(1, width + 1, dtype=np.int64)
            nr, pr, ar, lr = (x[rows, None] for x in (nb, p, a, length))
            inside = j <= lr
            # pi_1 = p/nb; pi_j = pi_{j-1} (nb - j - p + 2)/(nb - j + 1)
            num = np.where(j == 1, pr, nr - j - pr + 2)
            den = np.where(j == 1, nr, nr - j + 1)
            f = np.where(inside, num / np.where(inside, den, 1), 0.0)
            pi = np.cumprod(f, axis=1)
            inv = 1.0 / (ar + j)
            t = pi * inv
            e1[rows] = t.sum(axis=1)
            e2[rows] = (t * inv).sum(axis=1)
    return e1, e2


def _sort_key_desc(x: np.ndarray) -> np.ndarray:
    """``x * -1``, the codebases' key, where it reverses the order; else ``~x``.

    The rule the single-positive kernel in :mod:`tieeval.kernels.counts` uses for its 'original'
    rank: ``* -1`` overflows the signed integer minimum and raises for unsigned dtypes,
    where ``~x`` gives the same descending order.
    """
    kind = x.dtype.kind
    if kind == "f" or (kind == "i" and not (x == np.iinfo(x.dtype).min).any()):
        return x * -1
    return ~x


def _gain(rel: np.ndarray, gain: str) -> np.ndarray:
    if gain == "linear":
        return rel
    with np.errstate(over="ignore"):
        # 2**rel - 1: exp2 is exact on integers; expm1 keeps the digits of small rel.
        g = np.where(rel >= 1, np.exp2(rel) - 1.0, np.expm1(rel * math.log(2.0)))
    if not np.isfinite(g).all():
        raise ParameterError("exponential gain 2**label - 1 overflows float64; labels must "
                             "be below 1024")
    return g


def _weights(metric: RelMetric, r: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Discount of the 1-based positions ``r`` (float64) given the row cutoffs ``k``."""
    if metric.discount == "log2":
        return 1.0 / np.log2(r + 1.0)
    if metric.discount == "power":
        return r ** -metric.alpha
    if metric.discount == "news":
        return 1.0 / (1.0 + np.log2(r) ** 1.5)
    if metric.discount == "logb":
        return 1.0 / np.maximum(1.0, np.log(r) / math.log(metric.base))
    kf = k.astype(np.float64)
    return (kf - r + 1.0) / kf


def _check_unranked(unranked, rows: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        labels, offsets = unranked
    except (TypeError, ValueError):
        raise ParameterError("unranked must be a (labels, offsets) pair") from None
    lab = np.asarray(labels)
    off = np.asarray(offsets)
    if lab.ndim != 1 or lab.dtype.kind not in "biuf":
        raise ParameterError("unranked labels must be a 1-D integer, float or bool array")
    if (off.ndim != 1 or off.size != rows + 1 or off.dtype.kind not in "iu" or off[0] != 0
            or off[-1] != lab.size or (np.diff(off) < 0).any()):
        raise ParameterError(f"unranked offsets must be {rows + 1} non-decreasing integers "
                             f"from 0 to {lab.size}")
    labf = lab.astype(np.float64)
    if not np.isfinite(labf).all():
        raise InputError("labels must be finite (no NaN or inf)")
    return labf, off.astype(np.int64)


# ---------------------------------------------------------------------------------------
# The block table


class RelBatch:
    """A ragged batch sorted once into tie blocks; evaluate any number of metrics on it.

    Parameters
    ----------
    scores : ndarray, shape (M,) or (rows, n)
        Scores in their stored dtype (float or integer); ties are ``==`` on that dtype.
    labels : ndarray, same shape
        Integer, float or bool labels (see the module docstring for their meaning).
    offsets : ndarray of int, shape (rows + 1,), optional
        Row boundaries into the flat arrays; omit it for a 2-D (dense) batch.
    nan_policy : {'raise', 'worst'}
        NaN scores raise :class:`~tieeval.kernels.counts.NanScoreError` (an ``InputError`` whose
        ``row`` is the first batch row holding NaN), or rank below every number, all NaNs of
        a row forming one tie block.
    original : {'argsort', 'stable', 'reverse-stable', 'given'}
        What the 'original' column ranks by. ``'argsort'`` (default): ``np.argsort(row * -1)``,
        the evaluated codebases' call; ``'stable'``: the same key sorted stably (ties by
        ascending position); ``'reverse-stable'``: ties by descending position (see
        :meth:`use_order` for a ranking listed per row). ``'given'``: each row is already
        listed in the order the system ranked it (for example a TREC run sorted by
        trec_eval's rule); the rows must then be non-increasing in score, or the order is
        not a ranking of the scores.
    unranked : (labels, offsets), optional
        Labels of judged items that are *not* among a row's candidates (a TREC run that
        did not retrieve every relevant document): flat labels and ``rows + 1`` offsets.
        They count in R (Recall, MAP, SRecall and ISDCG divide by it, and a row whose only
        relevant items are unranked is defined and scores 0) and in the ideal DCG (IDCG@K
        takes the best K gains of ranked and unranked items, as trec_eval does). They are
        never ranked, so they add nothing to DCG, hits or V-AUC pairs.
    relevance_level : float, optional
        An item is relevant iff ``label >= relevance_level`` (trec_eval ``-l``); None
        (default): ``label > 0``. Gains of the DCG family stay the raw label.
    depth : int, optional
        Only the top ``depth`` of each ranking is retrieved (trec_eval ``-M``): every cutoff
        is capped at ``depth`` for counting, denominators unchanged (P@K still divides by
        K). The cap applies to the randomly tie-broken order, so tie-aware values stay
        exact. The ideal DCG and R are not truncated.
    judged : ndarray of bool, same shape as scores, optional
        Which candidates are judged (Judged@K, and bpref's judged non-relevant items:
        judged and not relevant). Default: ``label != 0``. A relevant item is always judged.
    unranked_judged : ndarray of bool, same shape as the unranked labels, optional
        Which unranked items are judged (bpref's denominator counts the judged non-relevant
        ones, retrieved or not). Default: ``label != 0``.
    max_grade : float, optional
        ERR's g_max for every row when no ``max_grade`` option is set on the metric (a
        reader that knows the largest label of all judgements passes it); None: the
        largest label of each row, ranked or unranked.
    sparse : bool
        Keep only the tie blocks that hold a labelled or judged item
        (:mod:`tieeval.kernels.sparse_blocks`): the same values, bit for bit, without a
        pass over every position, and the argsort only for rows where such an item is
        tied. The block-table attributes then describe those blocks only (``pos`` keeps
        the true positions; ``offsets`` are row boundaries in that compact layout). ERR
        and IPrec read every position: they are evaluated on :meth:`full`. NaN scores and
        a ``tolerance`` keep the full table.
    rank_depth : int, optional
        With ``sparse``: no metric to be evaluated reads a place at or below this depth in
        the 'original' ordering (every metric has a cutoff K <= rank_depth), so a tie
        block starting there is not sorted. :meth:`values` refuses a metric that would
        read one.

    Attributes
    ----------
    rows, size : int
        Number of rows and of candidates.
    n, offsets, row, pos : ndarray of int64
        Row lengths, row boundaries, and per sorted position its row and 0-based rank.
    bst, bsz, bend, brow, ba, p_t, q_t : ndarray of int64
        The block table: each tie block's first position, size, last position, row,
        candidates above it (a_t), relevant items (p_t) and explicit negatives (q_t).
    lab_first, lab_last : ndarray of float64
        Labels by position in the 'first' and 'last' orderings.
    n_pos, n_neg : ndarray of int64
        Per row R = |P| (unranked relevant items included) and |N| (ranked only).
    n_pos_ranked : ndarray of int64
        Per row the relevant items among the candidates (``n_pos`` without unranked ones).
    """

    # the sparse table's own attributes (set by tieeval.kernels.sparse_blocks.build)
    _top_ties: tuple[np.ndarray, np.ndarray]
    _judged_original: np.ndarray
    _marked: tuple[np.ndarray, np.ndarray]
    _full_args: tuple | None

    def __init__(self, scores, labels, offsets=None, *, nan_policy: str = "raise",
                 original: str = "argsort", unranked=None, tolerance: float | None = None,
                 relevance_level: float | None = None, depth: int | None = None,
                 judged=None, unranked_judged=None, max_grade: float | None = None,
                 sparse: bool = False, rank_depth: int | None = None):
        s = np.asarray(scores)
        offsets_given, judged_given = offsets, judged
        lab = np.asarray(labels)
        self.level = None if relevance_level is None else float(relevance_level)
        if self.level is not None and not self.level > 0:
            raise ParameterError(f"relevance_level must be a number > 0, got "
                                 f"{relevance_level!r}")
        if depth is not None and (isinstance(depth, (bool, np.bool_))
                                  or not isinstance(depth, (int, np.integer)) or depth < 1):
            raise ParameterError(f"depth must be a whole number >= 1, got {depth!r}")
        self.depth = None if depth is None else int(depth)
        self.max_grade = None if max_grade is None else float(max_grade)
        if judged is not None:
            judged = np.asarray(judged)
            if judged.shape != lab.shape or judged.dtype.kind != "b":
                raise ParameterError(f"judged must be a bool array shaped like the labels "
                                     f"{lab.shape}, got {judged.dtype} {judged.shape}")
            judged = judged.ravel()
        if nan_policy not in NAN_POLICIES:
            raise ParameterError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, "
                                 f"got {nan_policy!r}")
        if original not in ORIGINAL_ORDERS:
            raise ParameterError(f"original must be one of {', '.join(ORIGINAL_ORDERS)}, "
                                 f"got {original!r}")
        if s.shape != lab.shape:
            raise ParameterError(f"scores and labels differ in shape: {s.shape} vs {lab.shape}")
        if offsets is None:
            if s.ndim != 2:
                raise ParameterError("offsets are required unless scores is 2-D (rows, n)")
            offsets = np.arange(s.shape[0] + 1, dtype=np.int64) * s.shape[1]
            s, lab = s.ravel(), lab.ravel()
        elif s.ndim != 1:
            raise ParameterError(f"with offsets, scores must be 1-D; got shape {s.shape}")
        if s.dtype.kind not in "fiu":
            raise ParameterError(f"scores must be a float or integer array, got {s.dtype}")
        if lab.dtype.kind not in "biuf":
            raise ParameterError(f"labels must be integer, float or bool, got {lab.dtype}")
        offsets = np.asarray(offsets)
        if (offsets.ndim != 1 or offsets.size < 1 or offsets.dtype.kind not in "iu"
                or offsets[0] != 0 or offsets[-1] != s.size or (np.diff(offsets) < 0).any()):
            raise ParameterError("offsets must be non-decreasing integers from 0 to "
                                 f"len(scores) = {s.size}")
        offsets = offsets.astype(np.int64)
        n = np.diff(offsets)
        rows, size = n.size, s.size
        nan = np.isnan(s) if s.dtype.kind == "f" else None
        if nan is not None and not nan.any():
            nan = None
        if nan is not None and nan_policy == "raise":
            bad = np.unique(np.searchsorted(offsets, np.flatnonzero(nan), side="right") - 1)
            raise NanScoreError(int(bad[0]), int(bad.size))
        self.rows = rows
        self.n, self.offsets = n, offsets
        self.original = original
        self._lab_ideal: dict = {}
        self._cutoffs: dict = {}
        self.unranked: tuple[np.ndarray, np.ndarray] | None = None
        self.compact = False
        self._full_args = None
        self.rank_depth = None
        if sparse and nan is None and tolerance is None:
            from tieeval.kernels import sparse_blocks

            if original == "given":
                self._check_given_order(s, None, None)
            sparse_blocks.build(self, s, lab, judged, self._row_orders, rank_depth)
            self._full_args = (scores, labels, None if offsets_given is None else offsets,
                               dict(nan_policy=nan_policy, original=original,
                                    unranked=unranked, relevance_level=relevance_level,
                                    depth=depth, judged=judged_given,
                                    unranked_judged=unranked_judged, max_grade=max_grade))
            self._add_unranked(unranked, unranked_judged)
            self.rank_depth = None if original == "given" else rank_depth
            return
        labf = lab.astype(np.float64)
        if not np.isfinite(labf).all():
            raise InputError("labels must be finite (no NaN or inf)")
        rw = np.repeat(np.arange(rows, dtype=np.int64), n)
        self.size, self.row = size, rw
        if original == "given":
            self._check_given_order(s, nan, rw)
            order = np.arange(size, dtype=np.int64)
        else:
            order = np.empty(size, dtype=np.int64)
            for idx, got in self._argsort_rows(s, np.arange(rows)):
                order[idx] = got
        self._order = order
        ss = s[order]
        new = np.ones(size, dtype=bool)
        if size > 1:
            differ = ss[1:] != ss[:-1]
            if tolerance is not None:
                # the what-if tolerance chains neighbours within ATOL (float64 differences)
                with np.errstate(invalid="ignore", over="ignore"):
                    gap = np.abs(ss[1:].astype(np.float64) - ss[:-1].astype(np.float64))
                differ &= ~(gap <= tolerance)
            if nan is not None:
                sn = nan[order]
                differ &= ~(sn[1:] & sn[:-1])
            new[1:] = differ | (rw[1:] != rw[:-1])
        bst = np.flatnonzero(new)
        self.pos = np.arange(size, dtype=np.int64) - offsets[rw]
        judged = (labf != 0) if judged is None else judged
        judged = judged | self.relevant(labf)
        self.bst = bst
        self.bsz = np.diff(np.append(bst, size))
        self.bend = bst + self.bsz - 1
        self.bid = np.cumsum(new) - 1
        self.brow = rw[bst]
        self.ba = self.pos[bst]
        self._scores, self._labf = s, labf
        lab = labf[order]
        # 'first': labels descending inside every tie block (judged before unjudged among
        # equal labels). Only positions in blocks of two or more are reordered, by one small
        # sort of those positions (block, then label, then judged).
        jd = judged[order]
        perm = np.arange(size, dtype=np.int64)
        tied = np.flatnonzero(np.repeat(self.bsz > 1, self.bsz))
        if tied.size:
            perm[tied] = tied[np.lexsort((~jd[tied], -lab[tied], self.bid[tied]))]
        self.lab_first = lab[perm]
        self.judged_first = jd[perm]
        # 'last' reverses every block of the 'first' order: label ascending inside ties.
        back = 2 * bst[self.bid] + self.bsz[self.bid] - 1 - np.arange(size)
        self.lab_last = self.lab_first[back]
        self.judged_last = self.judged_first[back]
        self._judged = judged
        self._original_index = order
        self._lab_original = lab  # the argsort order, or the given order
        self.n_pos = np.bincount(rw[self.relevant(labf)], minlength=rows)
        self.n_neg = np.bincount(rw[labf < 0], minlength=rows)
        self.n_pos_ranked = self.n_pos
        # judged non-relevant items of each row, ranked or not (bpref's denominator)
        self.n_judged_nonrel = np.bincount(rw[judged & ~self.relevant(labf)], minlength=rows)
        self._row_max_label = np.full(rows, -np.inf)
        np.maximum.at(self._row_max_label, rw, labf)
        self._add_unranked(unranked, unranked_judged)
        self.p_t = self._block_sum(self.relevant(self.lab_first).astype(np.int64))
        # judged non-relevant items per block (bpref) and judged items per block (Judged@K)
        self.j_t = self._block_sum((self.judged_first
                                    & ~self.relevant(self.lab_first)).astype(np.int64))
        self.jd_t = self._block_sum(self.judged_first.astype(np.int64))
        self.q_t = self._block_sum((self.lab_first < 0).astype(np.int64))
        newrow = np.ones(bst.size, dtype=bool)
        newrow[1:] = self.brow[1:] != self.brow[:-1]
        self._row_first_block = np.maximum.accumulate(np.where(newrow, np.arange(bst.size), 0))

    def _add_unranked(self, unranked, unranked_judged) -> None:
        """R, the judged non-relevant count and the largest label with the unranked items."""
        rows = self.rows
        if unranked is not None:
            self.unranked = _check_unranked(unranked, rows)
            ulab, uoff = self.unranked
            urow = np.repeat(np.arange(rows, dtype=np.int64), np.diff(uoff))
            self.n_pos = self.n_pos + np.bincount(urow[self.relevant(ulab)], minlength=rows)
            if unranked_judged is None:
                ujd = ulab != 0
            else:
                ujd = np.asarray(unranked_judged)
                if ujd.shape != ulab.shape or ujd.dtype.kind != "b":
                    raise ParameterError("unranked_judged must be a bool array shaped like "
                                         f"the unranked labels {ulab.shape}, got {ujd.dtype} "
                                         f"{ujd.shape}")
            self.n_judged_nonrel = self.n_judged_nonrel + np.bincount(
                urow[ujd & ~self.relevant(ulab)], minlength=rows)
            self._unranked_max = (urow, ulab)
            if not self.compact:
                np.maximum.at(self._row_max_label, urow, ulab)
        elif unranked_judged is not None:
            raise ParameterError("unranked_judged needs unranked")

    def _by_length(self, rows: np.ndarray):
        """Groups of ``rows`` of one length: ``(base, idx)`` with 2-D ``idx = base + arange``.

        The loop runs over distinct row lengths, at most sqrt(2 * size) of them.
        """
        lens = self.n[rows]
        for length in np.unique(lens):
            if length == 0:
                continue
            group = rows[lens == length]
            for part in np.array_split(group, group.size * int(length) // _SORT_CHUNK + 1):
                if part.size:
                    base = self.offsets[part][:, None]
                    yield base, base + np.arange(length)

    def relevant(self, lab: np.ndarray) -> np.ndarray:
        """Which labels are relevant: ``label >= relevance_level``, by default ``label > 0``."""
        return lab > 0 if self.level is None else lab >= self.level

    def row_max_label(self) -> np.ndarray:
        """Each row's largest label over ranked and unranked items (-inf for an empty row)."""
        if not hasattr(self, "_row_max_label"):  # the sparse table: from the marked items
            from tieeval.kernels import sparse_blocks

            self._row_max_label = sparse_blocks.row_max_label(self)
            if self.unranked is not None:
                np.maximum.at(self._row_max_label, *self._unranked_max)
        return self._row_max_label

    def top_ties(self) -> tuple[np.ndarray, np.ndarray]:
        """Each non-empty row (ascending) and the size of its top-score tie block."""
        if self.compact:
            return self._top_ties
        first = self.ba == 0
        return self.brow[first], self.bsz[first]

    def full(self) -> RelBatch:
        """This batch with the block table over every position (itself unless sparse)."""
        if not self.compact:
            return self
        if not hasattr(self, "_full"):
            scores, labels, offsets, kwargs = cast(tuple, self._full_args)
            self._full = RelBatch(scores, labels, offsets, **kwargs)
        return self._full

    # -- sums ------------------------------------------------------------------------------
    def _block_sum(self, x: np.ndarray) -> np.ndarray:
        if self.bst.size == 0:
            return np.zeros(0, dtype=x.dtype)
        return np.add.reduceat(x, self.bst)

    def _row_any(self, block_mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.brow[block_mask], minlength=self.rows) > 0

    def _within_row_exclusive(self, x_t: np.ndarray) -> np.ndarray:
        """For each block, the sum of ``x_t`` over the earlier blocks of its row.

        Exact for integer counts (held as int64, or as float64 below 2**53).
        """
        c = np.cumsum(x_t) - x_t
        return c - c[self._row_first_block]

    def _first_block(self, mask_t: np.ndarray) -> np.ndarray:
        """Index of each row's first block with ``mask_t`` (rows without one are absent)."""
        idx = np.flatnonzero(mask_t)
        if idx.size:
            r = self.brow[idx]
            keep = np.ones(idx.size, dtype=bool)
            keep[1:] = r[1:] != r[:-1]
            idx = idx[keep]
        return idx

    # -- orderings ------------------------------------------------------------------------
    def _check_given_order(self, s: np.ndarray, nan, rw: np.ndarray | None) -> None:
        if s.size < 2:
            return
        rising = s[1:] > s[:-1]
        if nan is not None:  # NaN ranks last: a number after a NaN rises, NaN after NaN not
            rising = (rising | (nan[:-1] & ~nan[1:])) & ~(nan[:-1] & nan[1:])
        starts = self.offsets[1:-1]  # a rise across a row boundary is no fault
        rising[starts[(starts > 0) & (starts < s.size)] - 1] = False
        bad = np.flatnonzero(rising)
        if bad.size:
            row = int(np.searchsorted(self.offsets, bad[0], side="right") - 1)
            raise InputError(f"row {row}: candidates are not listed best first "
                             "(original='given' needs each row sorted by score, descending)")

    def _row_orders(self, vals: np.ndarray) -> np.ndarray:
        """Per row of the 2-D ``vals`` (rows of one length), its column indices in the
        'original' ordering.

        The one sort of a row: np.argsort(row * -1), numpy's default kind on the stored
        dtype, exactly the codebases' call (so it is also the 'original' ordering): score
        descending, NaN last. Rows of one length are sorted together as a 2-D array (each
        row on its own, as the 1-D call would), several times faster than a flat sort.
        """
        if self.original == "reverse-stable":
            # a stable sort of the reversed row: ties by descending position
            back = np.argsort(_sort_key_desc(vals[:, ::-1]), axis=1, kind="stable")
            return vals.shape[1] - 1 - back
        if self.original == "argsort":
            return np.argsort(_sort_key_desc(vals), axis=1)
        return np.argsort(_sort_key_desc(vals), axis=1, kind="stable")

    def _argsort_rows(self, s: np.ndarray, rows: np.ndarray):
        """``(idx, order)`` per group of ``rows`` of one length: ``order`` holds, for each
        row of ``idx`` (2-D flat indices), its flat indices in the 'original' ordering
        (:meth:`_row_orders`). Groups are sorted on several threads (argsort releases the
        GIL); each row's order is the same as from one call.
        """
        def sort(group):
            base, idx = group
            return base + self._row_orders(s[idx])
        groups = list(self._by_length(rows))
        for (_, idx), got in zip(groups, map_blocks(sort, groups, [g[1].size for g in groups])):
            yield idx, got

    def use_order(self, listed) -> None:
        """Take the 'original' ordering from a checked listed ranking
        (:class:`tieeval.kernels.original.Listed`): each row's listed candidates, then the
        rest in score order (they never decide a metric the list covers)."""
        self._original_index = listed.order(self._order, self.offsets)
        self._lab_original = self._labf[self._original_index]

    def lab_original(self) -> np.ndarray:
        """Labels in the order of ``np.argsort(row * -1)`` per row, or in the given order
        (``original='given'``)."""
        return self._lab_original

    def judged_extremes(self) -> tuple[np.ndarray, np.ndarray]:
        """The judged mask by position with judged items first / last in every tie block."""
        if not hasattr(self, "_judged_extremes"):
            jd = self.judged_first
            first = jd.copy()
            tied = np.flatnonzero(np.repeat(self.bsz > 1, self.bsz))
            if tied.size:
                first[tied] = jd[tied][np.lexsort((~jd[tied], self.bid[tied]))]
            back = 2 * self.bst[self.bid] + self.bsz[self.bid] - 1 - np.arange(self.size)
            self._judged_extremes = (first, first[back])
        return self._judged_extremes

    def judged_original(self) -> np.ndarray:
        """The judged mask in the order of :meth:`lab_original`."""
        if self.compact:
            return self._judged_original
        return self._judged[self._original_index]

    def _ideal_labels(self, k: int | None = None) -> np.ndarray:
        """Each row's labels sorted descending, by position (cached per ``k``).

        With a cutoff only the first ``k`` positions are needed (the others get 0): they
        come from ``np.partition`` and a sort of ``k`` labels, not a sort of the row.
        """
        if k not in self._lab_ideal:
            ideal = np.zeros(self.size)
            for _, idx in self._by_length(np.arange(self.rows)):
                lab = self._labf[idx]
                if k is not None and k < idx.shape[1]:
                    top = np.partition(-lab, k - 1, axis=1)[:, :k]
                    ideal[idx[:, :k]] = -np.sort(top, axis=1)
                else:
                    ideal[idx] = -np.sort(-lab, axis=1)
            self._lab_ideal[k] = ideal
        return self._lab_ideal[k]

    # -- evaluation -----------------------------------------------------------------------
    def values(self, metric: RelMetric, *, original_order: bool = True) -> InstanceValues:
        """Per-row original, first, last, tie-aware, variance, tie_decided and defined."""
        if not isinstance(metric, RelMetric):
            raise ParameterError(f"metric must be a RelMetric (see parse_rel_metric), "
                                 f"got {metric!r}")
        if self.compact and metric.name in FULL_TABLE_METRICS:
            return self.full().values(metric, original_order=original_order)
        if (original_order and self.rank_depth is not None
                and not (isinstance(metric.k, int) and metric.level is None
                         and metric.k <= self.rank_depth)):
            raise ParameterError(f"{metric} reads the 'original' ordering below "
                                 f"rank_depth={self.rank_depth}")
        return _Evaluation(self, metric, original_order).run()


class _Evaluation:
    """One metric on one :class:`RelBatch` (private; trusts its input)."""

    def __init__(self, batch: RelBatch, metric: RelMetric, original_order: bool):
        self.b, self.m, self.original_order = batch, metric, original_order
        n = batch.n
        # the per-position and per-block cutoff arrays are shared by every metric of the
        # batch with the same K and short-list policy (read-only from here on)
        cutoff = None if metric.level is not None else metric.k  # IPrec: a recall level
        key = (cutoff, metric.short_list == "truncate")
        cached = batch._cutoffs.get(key)
        if cached is None:
            if cutoff is None:
                k = n.copy()
            else:
                k = np.full(batch.rows, cutoff, dtype=np.int64)
                if metric.short_list == "truncate":
                    k = np.minimum(k, n)
            # k is the metric's cutoff (a denominator: P@K divides by K); kc the counting
            # cutoff, capped at the retrieval depth
            kc = k if batch.depth is None else np.minimum(k, batch.depth)
            cached = (k, kc, batch.pos < kc[batch.row],
                      np.clip(kc[batch.brow] - batch.ba, 0, batch.bsz))
            batch._cutoffs[key] = cached
        self.k, self.kc, self.in_k, self.m_t = cached
        defined = batch.n_pos >= 1
        if metric.name == "V-AUC":  # pairs of ranked items only
            defined = (batch.n_pos_ranked >= 1) & (batch.n_neg >= 1)
        elif metric.name in _COUNTS:  # a count exists for every row
            defined = np.ones(batch.rows, dtype=bool)
        if metric.k is not None and metric.short_list == "skip":
            defined &= n >= metric.k
        self.defined = defined
        self.R = np.where(defined, batch.n_pos, 1).astype(np.float64)  # safe denominator

    def run(self) -> InstanceValues:
        name = self.m.name
        b = self.b
        if name in ("DCG", "NDCG", "SDCG", "SNDCG"):
            closed, realise = self._dcg()
        else:
            closed = getattr(self, "_closed_" + _key(name).lower())
            realise = getattr(self, "_realise_" + _key(name).lower())
        e, var, decided = closed()
        if name == "Judged":
            # First / Last of Judged@K: judged items first / last inside every tie block
            # (its maximum and minimum; the label orderings do not order it)
            jfirst, jlast = b.judged_extremes()
            first, last = realise(None, jfirst), realise(None, jlast)
            original = (realise(None, b.judged_original()) if self.original_order
                        else np.full(b.rows, np.nan))
        elif name == "Bpref":  # reads the judged mask of each ordering
            first = realise(b.lab_first, b.judged_first)
            last = realise(b.lab_last, b.judged_last)
            original = (realise(b.lab_original(), b.judged_original()) if self.original_order
                        else np.full(b.rows, np.nan))
        else:
            first = realise(b.lab_first)
            last = realise(b.lab_last)
            original = (realise(b.lab_original()) if self.original_order
                        else np.full(b.rows, np.nan))
        if decided is None:
            # first and last are the maximum and the minimum (the metric is monotone in
            # moving a relevant item up): ties decide exactly where they differ
            decided = first != last
        # Where ties cannot matter the one realised value is exact; elsewhere rounding must
        # not push the expectation outside [last, first].
        e = np.where(decided, np.clip(e, last, first), first)
        if var is not None:
            var = np.where(decided, np.maximum(var, 0.0), 0.0)
        else:
            var = np.full(b.rows, np.nan)
        undef = ~self.defined
        # float64 whatever a realisation returned (an all-empty batch of rows, as queries
        # the run misses under --missing-queries zero, gives integer empty sums)
        original, first, last, e, var = (np.array(arr, dtype=np.float64)
                                         for arr in (original, first, last, e, var))
        for arr in (original, first, last, e, var):
            arr[undef] = np.nan
        return InstanceValues(original=original, first=first, last=last, tie_aware=e, variance=var,
                         tie_decided=decided & self.defined, defined=self.defined.copy())

    # -- shared pieces --------------------------------------------------------------------
    def _hits(self, lab: np.ndarray, sign: int) -> np.ndarray:
        mask = (self.b.relevant(lab) if sign > 0 else lab < 0) & self.in_k
        return np.bincount(self.b.row[mask], minlength=self.b.rows).astype(np.float64)

    def _first_block_stats(self, mark_t: np.ndarray, count_t: np.ndarray):
        b = self.b
        t = b._first_block(mark_t)
        rows = b.brow[t]
        return t, rows, b.ba[t], b.bsz[t], count_t[t], self.m_t[t]

    # -- HR -------------------------------------------------------------------------------
    def _closed_hr(self):
        b = self.b
        e = np.zeros(b.rows)
        decided = np.zeros(b.rows, dtype=bool)
        _, rows, _, nb, p, m = self._first_block_stats(b.p_t > 0, b.p_t)
        e[rows] = 1.0 - _pmiss(nb, p, m)
        decided[rows] = (m >= 1) & (m <= nb - p)
        return e, e * (1.0 - e), decided

    def _realise_hr(self, lab):
        return (self._hits(lab, +1) > 0).astype(np.float64)

    # -- Recall / Precision ---------------------------------------------------------------
    def _hits_moments(self, x_t: np.ndarray):
        """E and Var of #(marked in top K), x_t marked items per block (hypergeometric).

        Only blocks reaching into the top K (m_t > 0) contribute, so only they are summed.
        """
        b = self.b
        live = self._live_blocks()
        m, n, x = self.m_t[live], b.bsz[live].astype(np.float64), x_t[live]
        rows = b.brow[live]
        straddle = m < n
        e = np.bincount(rows, weights=x * m / n, minlength=b.rows)
        var_t = np.where(straddle, m * (n - m) * x * (n - x)
                         / (n * n * np.maximum(n - 1, 1.0)), 0.0)
        decided = np.bincount(rows[straddle & (x > 0) & (x < n)], minlength=b.rows) > 0
        return e, np.bincount(rows, weights=var_t, minlength=b.rows), decided

    def _live_blocks(self) -> np.ndarray:
        if not hasattr(self, "_live"):
            self._live = np.flatnonzero(self.m_t > 0)
        return self._live

    def _row_sum_blocks(self, x_t: np.ndarray) -> np.ndarray:
        return np.bincount(self.b.brow, weights=x_t, minlength=self.b.rows)

    def _closed_recall(self):
        e, v, d = self._hits_moments(self.b.p_t)
        return e / self.R, v / self.R ** 2, d

    def _realise_recall(self, lab):
        return self._hits(lab, +1) / self.R

    def _closed_precision(self):
        e, v, d = self._hits_moments(self.b.p_t)
        return e / self._k_safe(), v / self._k_safe() ** 2, d

    def _realise_precision(self, lab):
        return self._hits(lab, +1) / self._k_safe()

    def _k_safe(self) -> np.ndarray:
        # K as a denominator; 'truncate' makes it n, which is 0 for an (undefined) empty row.
        return np.where(self.defined, self.k, 1).astype(np.float64)

    # -- SRecall --------------------------------------------------------------------------
    def _closed_srecall(self):
        b, g = self.b, self.m.gamma
        live = self._live_blocks()  # blocks reaching into the top K
        rows = b.brow[live]
        m, n, p, q = self.m_t[live], b.bsz[live].astype(np.float64), b.p_t[live], b.q_t[live]
        mu = (p - g * q) / n
        e = np.bincount(rows, weights=(p - g * q) * m / n, minlength=b.rows)
        ssg = p * (1.0 - mu) ** 2 + q * (g + mu) ** 2 + (n - p - q) * mu ** 2
        straddle = m < n
        var_t = np.where(straddle, m * (n - m) / (n * np.maximum(n - 1, 1.0)) * ssg, 0.0)
        mixed = (p > 0) & (p < n)
        if g > 0:
            mixed |= (q > 0) & (q < n)
        decided = np.bincount(rows[straddle & mixed], minlength=b.rows) > 0
        var = np.bincount(rows, weights=var_t, minlength=b.rows)
        return e / self.R, var / self.R ** 2, decided

    def _realise_srecall(self, lab):
        return (self._hits(lab, +1) - self.m.gamma * self._hits(lab, -1)) / self.R

    # -- SHR ------------------------------------------------------------------------------
    def _closed_shr(self):
        b, g = self.b, self.m.gamma
        hp = np.zeros(b.rows)
        hn = np.zeros(b.rows)
        cov = np.zeros(b.rows)
        tp, rp, _, npb, p, mp = self._first_block_stats(b.p_t > 0, b.p_t)
        tn, rn, _, nnb, q, mn = self._first_block_stats(b.q_t > 0, b.q_t)
        miss_p = _pmiss(npb, p, mp)
        miss_n = _pmiss(nnb, q, mn)
        hp[rp] = 1.0 - miss_p
        hn[rn] = 1.0 - miss_n
        # Both first blocks are the same block: the events are dependent (docs/METRICS.md 9).
        block_of_p = np.full(b.rows, -1)
        block_of_p[rp] = tp
        same = block_of_p[rn] == tn
        if same.any():
            rs = rn[same]
            nb_, m_ = nnb[same], mn[same]
            p_, q_ = b.p_t[tn[same]], q[same]
            p00 = _pmiss(nb_, p_ + q_, m_)
            p11 = 1.0 - (1.0 - hp[rs]) - miss_n[same] + p00
            cov[rs] = p11 - hp[rs] * hn[rs]
        e = hp - g * hn
        var = hp * (1.0 - hp) + g * g * hn * (1.0 - hn) - 2.0 * g * cov
        decided = np.zeros(b.rows, dtype=bool)
        decided[rp] = (mp >= 1) & (mp <= npb - p)
        if g > 0:
            decided[rn] |= (mn >= 1) & (mn <= nnb - q)
        return e, var, decided

    def _realise_shr(self, lab):
        return ((self._hits(lab, +1) > 0).astype(np.float64)
                - self.m.gamma * (self._hits(lab, -1) > 0))

    # -- DCG family -----------------------------------------------------------------------
    def _dcg(self):
        b, metric = self.b, self.m
        signed = metric.name in ("SDCG", "SNDCG")
        # Only blocks reaching into the top K carry weight. Every other position has w = 0
        # and adds nothing to E, Var or a realised DCG, so the work runs over the positions
        # of the live blocks ('idx'), which hold every position above the cutoff.
        live = np.flatnonzero(self.m_t > 0)
        sizes = b.bsz[live]
        local = np.repeat(np.arange(live.size), sizes)
        head = np.cumsum(sizes) - sizes
        idx = b.bst[live][local] + (np.arange(local.size) - head[local])
        row = b.row[idx]
        r = b.pos[idx].astype(np.float64) + 1.0
        w = np.where(self.in_k[idx], _weights(metric, r, self.k[row]), 0.0)
        gamma = metric.gamma

        def item_gain(lab):
            if signed:
                return self.b.relevant(lab) - gamma * (lab < 0)
            return _gain(np.maximum(lab, 0.0), metric.gain)

        if metric.name in ("NDCG", "SNDCG") and (b.unranked is not None
                                                 or b.depth is not None):
            # the ideal list is never truncated at the depth: it needs every position
            unranked = b.unranked if b.unranked is not None else (
                np.zeros(0), np.zeros(b.rows + 1, dtype=np.int64))
            norm = self._extended_norm(item_gain, unranked)
            self.defined &= norm > 0
        elif metric.name in ("NDCG", "SNDCG") and b.compact:
            norm = self._sparse_norm(item_gain)
            if metric.name == "NDCG":
                self.defined &= norm > 0
        elif metric.name == "NDCG":
            ideal = b._ideal_labels(metric.k)[idx]
            norm = np.bincount(row, weights=w * item_gain(ideal), minlength=b.rows)
            self.defined &= norm > 0
        elif metric.name == "SNDCG":
            # ISDCG = D[min(K, R)]: positives first, no negative counted (docs/METRICS.md 9).
            norm = np.bincount(row, weights=w * (b.pos[idx] < b.n_pos[row]), minlength=b.rows)
        else:
            norm = np.ones(b.rows)
        norm = np.where(self.defined, norm, 1.0)
        brow = b.brow[live]

        def per_block(x):
            return np.bincount(local, weights=x, minlength=live.size)

        def closed():
            g = item_gain(b.lab_first[idx])
            n = sizes.astype(np.float64)
            gsum, wsum = per_block(g), per_block(w)
            e = np.bincount(brow, weights=gsum * wsum / n, minlength=b.rows)
            ssg = per_block((g - (gsum / n)[local]) ** 2)
            ssw = per_block((w - (wsum / n)[local]) ** 2)
            var_t = np.where(sizes > 1, ssg * ssw / np.maximum(n - 1.0, 1.0), 0.0)
            # first != last iff some block has two different gains and two different
            # weights (rearrangement); inside a block 'first' runs from high to low gain.
            tail = head + sizes - 1
            mixed = (g[head] != g[tail]) & (w[head] != w[tail])
            decided = np.bincount(brow[mixed], minlength=b.rows) > 0
            var = np.bincount(brow, weights=var_t, minlength=b.rows)
            return e / norm, var / norm ** 2, decided

        def realise(lab):
            return np.bincount(row, weights=w * item_gain(lab[idx]), minlength=b.rows) / norm

        return closed, realise

    def _sparse_norm(self, item_gain) -> np.ndarray:
        """IDCG@K (NDCG) or ISDCG@K (SNDCG) of a sparse batch, as the full table sums them.

        The full table adds, over the positions p < min(K, n) of a row in order, the
        discount of p times the gain of the row's p-th largest label (NDCG) or 1 for
        p < R (SNDCG). Past the positive labels (past R) every term is an exact zero, so
        only the positive labels of the marked items are listed, largest first.
        """
        b, metric = self.b, self.m
        if metric.name == "NDCG":
            if "ideal" not in b._lab_ideal:  # the positive labels by row, largest first
                mrow, ml = b._marked
                sel = ml > 0
                rows, lab = mrow[sel], ml[sel]
                span = _sparse_label_span(lab)
                if span is None:
                    order = np.lexsort((-lab, rows))
                    rows, lab = rows[order], lab[order]
                else:  # one sort of a whole-number key: row, then label descending
                    top = float(lab.max())
                    key = np.sort(rows * span + (top - lab).astype(np.int64))
                    rows, lab = key // span, top - (key % span).astype(np.float64)
                b._lab_ideal["ideal"] = (rows, lab, np.bincount(rows, minlength=b.rows))
            rows, lab, count = b._lab_ideal["ideal"]
        else:
            count = b.n_pos
            rows = np.repeat(np.arange(b.rows, dtype=np.int64), count)
        start = np.cumsum(count) - count
        pos = np.arange(rows.size, dtype=np.int64) - start[rows]
        keep = pos < np.minimum(self.kc, b.n)[rows]
        rows, pos = rows[keep], pos[keep]
        w = _weights(metric, pos.astype(np.float64) + 1.0, self.k[rows])
        if metric.name == "NDCG":
            w = w * item_gain(lab[keep])
        return np.bincount(rows, weights=w, minlength=b.rows)

    def _extended_norm(self, item_gain, unranked: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """IDCG@K / ISDCG@K over the ranked *and* unranked items of each row.

        The ideal list holds every judged item of the row, best label first, so it may be
        longer than the ranked list; it is cut at K (at ``n + unranked`` without a cutoff).
        ISDCG counts ``min(K, R)`` positions with R including the unranked positives.
        """
        b, metric = self.b, self.m
        ulab, uoff = unranked
        u = np.diff(uoff)
        if b.compact:  # the unmarked items (label 0) add exact zeros: the marked ones only
            mrow, ranked_lab = b._marked
            ranked = np.bincount(mrow, minlength=b.rows)
        else:
            mrow, ranked_lab, ranked = b.row, b._labf, b.n
        lab = np.concatenate((ranked_lab, ulab))
        rows = np.concatenate((mrow, np.repeat(np.arange(b.rows, dtype=np.int64), u)))
        order = np.lexsort((-lab, rows))
        lab, rows = lab[order], rows[order]
        start = np.concatenate(([0], np.cumsum(ranked + u)))[:-1]
        pos = np.arange(lab.size, dtype=np.int64) - start[rows]
        k = self.k if metric.k is not None else b.n + u
        cut = k
        if metric.name == "SNDCG":
            cut = np.minimum(k, b.n_pos)
            gain = np.ones(lab.size)
        else:
            gain = item_gain(lab)
        inside = pos < cut[rows]
        w = np.where(inside, _weights(metric, pos + 1.0, np.maximum(k, 1)[rows]), 0.0)
        return np.bincount(rows, weights=w * gain, minlength=b.rows)

    # -- reciprocal rank ------------------------------------------------------------------
    def _closed_mrr(self):
        b = self.b
        e = np.zeros(b.rows)
        e2 = np.zeros(b.rows)
        decided = np.zeros(b.rows, dtype=bool)
        _, rows, a, nb, p, _ = self._first_block_stats(b.p_t > 0, b.p_t)
        k = self.kc[rows]
        e[rows], e2[rows] = _rr_moments(a, nb, p, k)
        decided[rows] = (a < k) & (p < nb)
        return e, e2 - e * e, decided

    def _realise_mrr(self, lab):
        b = self.b
        out = np.zeros(b.rows)
        hit = np.flatnonzero(self.b.relevant(lab) & self.in_k)
        if hit.size:
            r = b.row[hit]
            keep = np.ones(hit.size, dtype=bool)
            keep[1:] = r[1:] != r[:-1]
            out[r[keep]] = 1.0 / (b.pos[hit[keep]] + 1.0)
        return out

    # -- average precision ----------------------------------------------------------------
    def _ap_norm(self) -> np.ndarray:
        if self.m.k is not None and self.m.ap_norm == "min":
            return np.minimum(self._k_safe(), self.R)
        return self.R

    def _closed_map(self):
        b = self.b
        n = b.bsz.astype(np.float64)
        p = b.p_t
        inv = np.where(self.in_k, 1.0 / (b.pos + 1.0), 0.0)
        # Segment sums over each block's own positions (no prefix differences at depth).
        s1 = b._block_sum(inv)
        s2 = b._block_sum(inv * (b.pos - b.ba[b.bid]))
        r_before = b._within_row_exclusive(p)
        c = np.where(b.bsz > 1, (p - 1) / np.maximum(n - 1.0, 1.0), 0.0)
        term = np.where(p > 0, p / n * ((1.0 + r_before) * s1 + c * s2), 0.0)
        e = self._row_sum_blocks(term) / self._ap_norm()
        decided = b._row_any((self.m_t >= 1) & (p > 0) & (p < b.bsz))
        return e, None, decided

    def _realise_map(self, lab):
        b = self.b
        rel = b.relevant(lab)
        c = np.cumsum(rel, dtype=np.int64)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        hits_so_far = c - base[b.row]
        mask = rel & self.in_k
        return (np.bincount(b.row[mask], weights=hits_so_far[mask] / (b.pos[mask] + 1.0),
                            minlength=b.rows) / self._ap_norm())

    # -- V-AUC ----------------------------------------------------------------------------
    def _vauc_pairs(self) -> np.ndarray:
        return np.where(self.defined, self.b.n_pos_ranked * self.b.n_neg, 1).astype(np.float64)

    def _closed_vauc(self):
        b = self.b
        p, q = b.p_t.astype(np.float64), b.q_t.astype(np.float64)
        below = b.n_neg[b.brow] - b._within_row_exclusive(q) - q
        pairs = self._vauc_pairs()
        greater = self._row_sum_blocks(p * below)
        tied = self._row_sum_blocks(p * q)
        e = (greater + 0.5 * tied) / pairs
        var = self._row_sum_blocks(p * q * (p + q + 1.0)) / 12.0 / pairs ** 2
        return e, var, b._row_any((p > 0) & (q > 0))

    def _realise_vauc(self, lab):
        b = self.b
        neg = lab < 0
        c = np.cumsum(neg, dtype=np.int64)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        below = b.n_neg[b.row] - (c - base[b.row])
        pos = b.relevant(lab)
        return (np.bincount(b.row[pos], weights=below[pos].astype(np.float64),
                            minlength=b.rows) / self._vauc_pairs())

    # -- trec_eval's counts -----------------------------------------------------------------
    def _constant(self, x: np.ndarray):
        return lambda: (x, np.zeros(self.b.rows), np.zeros(self.b.rows, dtype=bool))

    def _closed_numret(self):
        return self._constant(self._numret())()

    def _numret(self) -> np.ndarray:
        return self.kc.astype(np.float64)  # min(n, depth)

    def _realise_numret(self, lab):
        return self._numret()

    def _closed_numrel(self):
        return self._constant(self.b.n_pos.astype(np.float64))()

    def _realise_numrel(self, lab):
        return self.b.n_pos.astype(np.float64)

    def _closed_numq(self):
        return self._constant(np.ones(self.b.rows))()

    def _realise_numq(self, lab):
        return np.ones(self.b.rows)

    def _closed_numrelret(self):
        # relevant items in the top min(n, depth): hypergeometric, as Recall's numerator
        return self._hits_moments(self.b.p_t)

    def _realise_numrelret(self, lab):
        return self._hits(lab, +1)

    # -- Success ----------------------------------------------------------------------------
    def _closed_success(self):
        return self._closed_hr()

    def _realise_success(self, lab):
        return self._realise_hr(lab)

    # -- Judged@K ---------------------------------------------------------------------------
    def _closed_judged(self):
        """E[#judged in the top K] / K: each block contributes ``jd_t m_t / n_t`` (the
        hypergeometric mean), as Precision does with relevant items."""
        e, v, d = self._hits_moments(self.b.jd_t)
        return e / self._k_safe(), v / self._k_safe() ** 2, d

    def _realise_judged(self, lab, judged):
        hits = np.bincount(self.b.row[judged & self.in_k], minlength=self.b.rows)
        return hits / self._k_safe()

    # -- R-precision ------------------------------------------------------------------------
    def _rprec_cut(self) -> np.ndarray:
        """Per row the top min(R, n, depth) positions: trec_eval's ``num_to_look_at``."""
        return np.minimum(self.b.n_pos, self.kc)

    def _closed_rprec(self):
        b = self.b
        m_t = np.clip(self._rprec_cut()[b.brow] - b.ba, 0, b.bsz)
        e, var, decided = _hypergeometric_hits(b, m_t, b.p_t)
        return e / self.R, var / self.R ** 2, decided

    def _realise_rprec(self, lab):
        b = self.b
        inside = b.relevant(lab) & (b.pos < self._rprec_cut()[b.row])
        return np.bincount(b.row[inside], minlength=b.rows) / self.R

    # -- bpref ------------------------------------------------------------------------------
    def _bpref_norm(self) -> np.ndarray:
        """D = min(judged non-relevant of the row, R), 1 where it is 0 (then no judged
        non-relevant item exists and every retrieved relevant item scores 1)."""
        b = self.b
        return np.maximum(np.minimum(b.n_judged_nonrel, b.n_pos), 1).astype(np.float64)

    def _closed_bpref(self):
        """Exact E[bpref] under uniform random tie-breaking (no closed-form variance).

        bpref = (1/R) sum over retrieved relevant items of ``f(J) = 1 - min(J, R) / D``,
        J the judged non-relevant items above the item, D = min(judged non-relevant, R)
        (trec_eval m_bpref.c; f(0) = 1). Take a relevant item of tie block t, with
        ``Jb`` judged non-relevant items in the blocks above and ``j`` in its own block.
        Only its order relative to those ``j`` items matters for J, and that order is
        uniform: J = Jb + X with X uniform on 0..j. A block wholly retrieved contributes

            p_t (1 - S(Jb, j + 1) / ((j + 1) D)),  S(a, c) = sum_{y=a}^{a+c-1} min(y, R),

        in O(1). A block cut by the cutoff (the depth) after its first m items: the
        item and the j judged non-relevant items occupy j + 1 uniform positions of the
        block, the item the (X+1)-th of them, so ``P(X = x, item retrieved) =
        P(H > x) / (j + 1)`` with H ~ Hypergeometric(n_t, m, j + 1) the number of those
        positions among the first m. Summing over x,

            p_t / (j + 1) * E[G(H)],  G(h) = h - S(Jb, h) / D,

        which is computed from the pmf of H (one cut block per row).
        """
        b = self.b
        R = b.n_pos.astype(np.float64)
        D = self._bpref_norm()
        jb = b._within_row_exclusive(b.j_t).astype(np.float64)
        j = b.j_t.astype(np.float64)
        p = b.p_t.astype(np.float64)
        n = b.bsz
        m = self.m_t
        rows = b.brow
        whole = (m == n) & (p > 0)
        term = np.zeros(b.bst.size)
        term[whole] = p[whole] * (1.0 - _sum_min(jb[whole], j[whole] + 1.0, R[rows[whole]])
                                  / ((j[whole] + 1.0) * D[rows[whole]]))
        cut = np.flatnonzero((m > 0) & (m < n) & (p > 0))
        if cut.size:
            from scipy.stats import hypergeom

            draws = b.j_t[cut] + 1
            lo = np.maximum(0, draws - (n[cut] - m[cut]))
            hi = np.minimum(m[cut], draws)
            width = hi - lo + 1
            which = np.repeat(np.arange(cut.size), width)
            h = (np.arange(which.size) - np.repeat(np.cumsum(width) - width, width)
                 + lo[which])
            pmf = hypergeom.pmf(h, n[cut][which], m[cut][which], draws[which])
            t = cut[which]
            g = h - _sum_min(jb[t], h.astype(np.float64), R[rows[t]]) / D[rows[t]]
            eg = np.bincount(which, weights=pmf * g, minlength=cut.size)
            term[cut] = p[cut] / draws * eg
        e = self._row_sum_blocks(term) / self.R
        return e, None, None

    def _realise_bpref(self, lab, judged):
        b = self.b
        rel = b.relevant(lab)
        nonrel = judged & ~rel
        c = np.cumsum(nonrel, dtype=np.int64)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        above = (c - base[b.row] - nonrel).astype(np.float64)  # judged non-relevant above
        hit = rel & self.in_k
        r = b.row[hit]
        f = 1.0 - np.minimum(above[hit], b.n_pos[r]) / self._bpref_norm()[r]
        return np.bincount(r, weights=f, minlength=b.rows) / self.R

    # -- GMAP: AP per row; the geometric mean is taken by the kernel ------------------------
    def _closed_gmap(self):
        return self._closed_map()

    def _realise_gmap(self, lab):
        return self._realise_map(lab)

    # -- ERR@K ------------------------------------------------------------------------------
    def _err_max_grade(self):
        """g_max: the metric's ``max_grade``, else max(4, the largest label of the
        judgements: the batch's, else each row's, ranked or unranked); a float, or per-row
        float64 array. 4 is gdeval's MAX_JUDGMENT (TREC Web track, ir_measures' ERR@K):
        judgements up to 4 give gdeval's figures, larger grades keep R < 1."""
        if self.m.max_grade is not None:
            return self.m.max_grade
        if self.b.max_grade is not None:
            return max(GDEVAL_MAX_JUDGMENT, self.b.max_grade)
        return np.maximum(self.b.row_max_label(), GDEVAL_MAX_JUDGMENT)

    def _closed_err(self):
        err = _cascade("err_expectation")
        k = int(self.m.k) if self.b.depth is None else min(int(self.m.k), self.b.depth)
        return np.asarray(err(self.b, k, self._err_max_grade()), dtype=np.float64), None, None

    def _realise_err(self, lab):
        """ERR@K = sum_{r <= K} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) / 2^g_max,
        g = max(label, 0) capped at g_max (so R < 1)."""
        b = self.b
        gmax = np.broadcast_to(np.asarray(self._err_max_grade(), dtype=np.float64), (b.rows,))
        g = np.minimum(np.maximum(lab, 0.0), gmax[b.row])
        stop = -np.expm1(-g * math.log(2.0)) * np.exp2(g - gmax[b.row])  # (2^g - 1)/2^gmax
        # prod_{i < r} (1 - R_i), left to right within each row only (rows of one length
        # as a 2-D array), so a row's value never depends on the rows batched with it
        survive = np.ones(b.size)
        go = 1.0 - stop
        for _, idx in b._by_length(np.arange(b.rows)):
            if idx.shape[1] > 1:
                survive[idx[:, 1:]] = np.cumprod(go[idx[:, :-1]], axis=1)
        w = np.where(self.in_k, stop * survive / (b.pos + 1.0), 0.0)
        return np.bincount(b.row, weights=w, minlength=b.rows)

    # -- IPrec@x ----------------------------------------------------------------------------
    def _iprec_cut(self) -> np.ndarray:
        """trec_eval's cutoff in relevant items: lround(x R) (x R >= 0, so floor(+0.5))."""
        return np.floor(self._level() * self.b.n_pos + 0.5).astype(np.int64)

    def _level(self) -> float:
        level = self.m.level  # IPrec always has one (RelMetric checks it)
        return 0.0 if level is None else level

    def _closed_iprec(self):
        iprec = _cascade("iprec_expectation")
        return (np.asarray(iprec(self.b, self._level(), depth=self.b.depth,
                                 relevant_level=self.b.level), dtype=np.float64), None, None)

    def _realise_iprec(self, lab):
        """Interpolated precision at recall x (trec_eval m_iprec_at_recall.c): with
        c = lround(x R), the largest precision at any retrieved rank at or below the c-th
        relevant item (any rank when c = 0); 0 when fewer than c relevant items are
        retrieved or nothing is."""
        b = self.b
        rel = b.relevant(lab) & self.in_k
        c = np.cumsum(rel, dtype=np.int64)
        base = np.concatenate(([0], c))[b.offsets[:-1]]
        so_far = c - base[b.row]
        prec = np.where(self.in_k, so_far / (b.pos + 1.0), 0.0)
        best = np.zeros(b.size)  # max precision at this rank or below (suffix maximum)
        for _, idx in b._by_length(np.arange(b.rows)):
            best[idx] = np.maximum.accumulate(prec[idx][:, ::-1], axis=1)[:, ::-1]
        cut = self._iprec_cut()
        out = np.zeros(b.rows)
        at = rel & (so_far == cut[b.row])  # the c-th relevant item (c >= 1)
        out[b.row[at]] = best[at]
        zero = (cut == 0) & (b.n > 0)
        out[zero] = best[b.offsets[:-1][zero]]
        return out



# gdeval.pl's $MAX_JUDGMENT: the g_max of ERR's stop probability (2^g - 1) / 2^g_max
GDEVAL_MAX_JUDGMENT = 4.0


def _sparse_label_span(lab: np.ndarray):
    from tieeval.kernels.sparse_blocks import label_span
    return label_span(lab)


def _cascade(name: str):
    """A tie-aware function of :mod:`tieeval.kernels.cascade` (imported on first use: only
    ERR and IPrec need it)."""
    from tieeval.kernels import cascade
    return getattr(cascade, name)


def _sum_min(a: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``sum_{y=a}^{a+c-1} min(y, r)`` for float64 integers a, c >= 0, r (bpref's sums)."""
    below = np.clip(r - a, 0.0, c)  # the terms y < r
    return below * a + below * (below - 1.0) / 2.0 + (c - below) * r


def _hypergeometric_hits(b: RelBatch, m_t: np.ndarray, x_t: np.ndarray):
    """E and Var of #(marked in the top), ``m_t`` positions of each block inside the top,
    ``x_t`` marked items per block; the draws of different blocks are independent."""
    n = b.bsz.astype(np.float64)
    m = m_t.astype(np.float64)
    x = x_t.astype(np.float64)
    e = np.bincount(b.brow, weights=x * m / n, minlength=b.rows)
    straddle = (m_t > 0) & (m_t < b.bsz)
    var_t = np.where(straddle, m * (n - m) * x * (n - x) / (n * n * np.maximum(n - 1, 1.0)),
                     0.0)
    decided = np.bincount(b.brow[straddle & (x_t > 0) & (x_t < b.bsz)], minlength=b.rows) > 0
    return e, np.bincount(b.brow, weights=var_t, minlength=b.rows), decided


def relevance_values(scores, labels, offsets, metric, *, original_order: bool = True,
                     nan_policy: str = "raise", original: str = "argsort",
                     unranked=None) -> InstanceValues:
    """Exact tie-aware values of one metric for every row of a ragged batch.

    Parameters
    ----------
    scores : ndarray, shape (M,)
        Flat scores in their stored dtype (never cast; ties are ``==`` on that dtype).
    labels : ndarray, shape (M,)
        Integer/float/bool labels: ``> 0`` relevant (graded gain ``max(label, 0)``),
        ``< 0`` explicit negative, ``0`` unobserved.
    offsets : ndarray of int, shape (rows + 1,), or None for 2-D ``scores``/``labels``
    metric : RelMetric or str
        For example ``parse_rel_metric("NDCG@10")`` or just ``"NDCG@10"``.
    original_order : bool
        Also evaluate the ``np.argsort(row * -1)`` ordering (NaN column when False).
    nan_policy : {'raise', 'worst'}
    original, unranked
        See :class:`RelBatch`.

    Returns
    -------
    InstanceValues
        One entry per row. Evaluating several metrics? Build one :class:`RelBatch` and call
        :meth:`RelBatch.values` for each, so the batch is sorted only once.
    """
    if isinstance(metric, str):
        metric = parse_rel_metric(metric)
    return RelBatch(scores, labels, offsets, nan_policy=nan_policy, original=original,
                    unranked=unranked).values(metric, original_order=original_order)
