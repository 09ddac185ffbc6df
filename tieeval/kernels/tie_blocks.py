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
* Recall@K divides the relevant items in the top K by R (by min(K, R) with
  ``recall_norm="min"``, LensKit's); Precision@K divides them by K,
  also when the row has fewer than K candidates (TREC; see ``short_list``).
* MRR / RR@K: reciprocal rank of the first relevant item, 0 when it is below K.
* MAP / AP@K: ``(1/Z) sum_{r <= K, relevant} precision@r`` with ``Z = R`` by default
  (trec_eval), ``Z = min(K, R)`` with ``ap_norm="min"``; its variance is exact too
  (:mod:`tieeval.metrics.measures.ap`).
* ``relevant_scores="positive"`` (torchmetrics): on a table built with ``gate`` a relevant
  candidate scored <= 0 reads as label 0 in every ordering, in its place; R still counts
  it (Recall's denominator, and which rows are defined), AP's Z does not.
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
* ``variance``: the exact tie-break variance (NaN where the measure has none: bpref,
  ERR, IPrec).
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

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from tieeval.errors import InputError, ParameterError
from tieeval.kernels import sparse_blocks
from tieeval.kernels.counts import NanScoreError, check_nan_policy, sort_key
from tieeval.kernels.sparse_blocks import label_span, run_first, run_starts
from tieeval.kernels.threads import map_blocks
from tieeval.metrics.measures.base import BY_JUDGED, BY_LABELS_AND_JUDGED
from tieeval.metrics.options import ORIGINAL_ORDERS, RelMetric, parse_rel_metric
from tieeval.records.values import InstanceValues
from tieeval.util.stopping import checkpoint

if TYPE_CHECKING:
    from tieeval.kernels.original import Listed, Short

# ---------------------------------------------------------------------------------------
# The block table


@dataclass(frozen=True)
class TableOptions:
    """How a :class:`RelBatch` is built: one value per run (the kernel makes it from the
    run's checked options), passed whole to every batch's table. The run's options were
    checked once, where the request was made (:mod:`tieeval.engine.request`); not per
    batch here.

    Parameters
    ----------
    nan_policy : {'raise', 'worst'}
        NaN scores raise :class:`~tieeval.kernels.counts.NanScoreError` (an ``InputError`` whose
        ``row`` is the first batch row holding NaN), or rank below every number, all NaNs of
        a row forming one tie block.
    original : {'argsort', 'stable', 'reverse-stable', 'given'}
        What the 'original' column ranks by. ``'argsort'`` (default): ``np.argsort(row * -1)``,
        the evaluated codebases' call; ``'stable'``: the same key sorted stably (ties by
        ascending position); ``'reverse-stable'``: ties by descending position (see
        :meth:`RelBatch.use_order` for a ranking listed per row). ``'given'``: each row is already
        listed in the order the system ranked it (for example a TREC run sorted by
        trec_eval's rule); the rows must then be non-increasing in score, or the order is
        not a ranking of the scores.
    tolerance : float, optional
        The what-if tolerance: neighbouring scores of a row within it (float64
        differences) are tied, in chains.
    relevance_level : float, optional
        An item is relevant iff ``label >= relevance_level`` (trec_eval ``-l``); None
        (default): ``label > 0``. Gains of the DCG family stay the raw label.
    depth : int, optional
        Only the top ``depth`` of each ranking is retrieved (trec_eval ``-M``): every cutoff
        is capped at ``depth`` for counting, denominators unchanged (P@K still divides by
        K). The cap applies to the randomly tie-broken order, so tie-aware values stay
        exact. The ideal DCG and R are not truncated.
    sparse : bool
        Keep only the tie blocks that hold a labelled or judged item
        (:mod:`tieeval.kernels.sparse_blocks`): the same values, bit for bit, without a
        pass over every position, and the argsort only for rows where such an item is
        tied. The block-table attributes then describe those blocks only (``pos`` keeps
        the true positions; ``offsets`` are row boundaries in that compact layout). ERR
        and IPrec read every position: they are evaluated on :meth:`RelBatch.full`. NaN scores and
        a ``tolerance`` keep the full table.
    rank_depth : int, optional
        With ``sparse``: no metric to be evaluated reads a place at or below this depth in
        the 'original' ordering (the depth every metric's measure declares,
        :meth:`~tieeval.metrics.measures.base.Measure.read_depth`, is at most rank_depth),
        so a tie block starting there is not sorted. :meth:`RelBatch.values` refuses a
        metric that would read one.
    prune_depth : int, optional
        With ``sparse``: every metric to be evaluated, in any ordering, reads no deeper
        than prune_depth (as its measure declares), so the tie blocks starting at or
        below it are left out (but for each row's first block holding a relevant item).
        :meth:`RelBatch.values` refuses any other metric.
    """

    nan_policy: str = "raise"
    original: str = "argsort"
    tolerance: float | None = None
    relevance_level: float | None = None
    depth: int | None = None
    sparse: bool = False
    rank_depth: int | None = None
    prune_depth: int | None = None

    def whole(self) -> "TableOptions":
        """The same options for the table over every position (:meth:`RelBatch.full`)."""
        return replace(self, sparse=False, rank_depth=None, prune_depth=None)


DEFAULT_TABLE = TableOptions()


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
    unranked : (labels, offsets), optional
        Labels of judged items that are *not* among a row's candidates (a TREC run that
        did not retrieve every relevant document): flat labels and ``rows + 1`` offsets.
        They count in R (Recall, MAP, SRecall and ISDCG divide by it, and a row whose only
        relevant items are unranked is defined and scores 0) and in the ideal DCG (IDCG@K
        takes the best K gains of ranked and unranked items, as trec_eval does). They are
        never ranked, so they add nothing to DCG, hits or V-AUC pairs.
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
    options : TableOptions
        How the table is built, the same for every batch of a run; the defaults when not
        given.
    gate : bool
        Read a relevant candidate whose score is not > 0 (<= 0, -0.0 included, or NaN) as
        label 0 in every ordering, in its place (``relevant_scores="positive"``, module
        doc); R (``n_pos``) still counts it; ``n_gated`` says how many per row.

    Attributes
    ----------
    The block table a measure reads, each attribute as
    :class:`tieeval.metrics.measures.protocol.BlockTable` documents it (``read_depth``: the
    sparse table's ``prune_depth``, past which :meth:`values` refuses a metric), and
    ``lab_last`` / ``judged_last``: the 'first' ordering with every tie block reversed.
    """

    # the sparse table's own attributes (set by tieeval.kernels.sparse_blocks.build)
    _top_ties: tuple[np.ndarray, np.ndarray]
    _judged_original: np.ndarray
    marked: tuple[np.ndarray, np.ndarray]
    _full_args: tuple[Any, Any, Any, dict[str, Any]] | None
    # the per-row counts (set by tieeval.kernels.sparse_blocks.row_counts)
    n_pos: np.ndarray
    n_neg: np.ndarray
    n_pos_ranked: np.ndarray
    n_judged_nonrel: np.ndarray
    rank_depth: int | None
    read_depth: int | None

    def __init__(self, scores: npt.ArrayLike, labels: npt.ArrayLike,
                 offsets: npt.ArrayLike | None = None, *,
                 unranked: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
                 judged: np.ndarray | None = None,
                 unranked_judged: npt.ArrayLike | None = None, max_grade: float | None = None,
                 options: TableOptions = DEFAULT_TABLE, gate: bool = False) -> None:
        s = np.asarray(scores)
        offsets_given, judged_given = offsets, judged
        lab = np.asarray(labels)
        nan_policy, original, tolerance = options.nan_policy, options.original, options.tolerance
        if judged is not None:
            judged = np.asarray(judged)
            if judged.shape != lab.shape or judged.dtype.kind != "b":
                raise ParameterError(f"judged must be a bool array shaped like the labels "
                                     f"{lab.shape}, got {judged.dtype} {judged.shape}")
            judged = judged.ravel()
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
        self._setup(n, offsets, options, max_grade)
        if gate:
            lab = self._gate(s, lab, offsets)
        if options.sparse and nan is None and tolerance is None:
            if original == "given":
                self._check_given_order(s, None)
            sparse_blocks.build(self, s, lab, judged, self._row_orders, options.rank_depth,
                                options.prune_depth)
            self.read_depth = options.prune_depth
            self._full_args = (scores, labels, None if offsets_given is None else offsets,
                               dict(unranked=unranked, judged=judged_given,
                                    unranked_judged=unranked_judged, max_grade=max_grade,
                                    options=options.whole(), gate=gate))
            self.n_pos = self.n_pos + self.n_gated
            self._add_unranked(unranked, unranked_judged)
            self.rank_depth = None if original == "given" else options.rank_depth
            return
        labf = lab.astype(np.float64)
        if not np.isfinite(labf).all():
            raise InputError("labels must be finite (no NaN or inf)")
        rw = np.repeat(np.arange(rows, dtype=np.int64), n)
        self.size, self.row = size, rw
        if original == "given":
            self._check_given_order(s, nan)
            order = np.arange(size, dtype=np.int64)
        else:
            # rows of one length in groups, sorted on several threads (argsort releases the
            # GIL); each row's order is the same as from one call
            order = np.empty(size, dtype=np.int64)
            groups = list(self.by_length(np.arange(rows)))
            for (_, idx), got in zip(groups, map_blocks(
                    lambda g: g[0] + self._row_orders(s[g[1]]), groups,
                    [g[1].size for g in groups])):
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
        self.bid = np.cumsum(new) - 1
        self.brow = rw[bst]
        self.ba = self.pos[bst]
        self.lab_input = labf
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
        sparse_blocks.row_counts(self, rw, labf, judged, self.relevant(labf))
        self.marked = (rw, labf)  # every item (the largest label reads them)
        self.n_pos = self.n_pos + self.n_gated
        self._add_unranked(unranked, unranked_judged)
        self.p_t = self.block_sum(self.relevant(self.lab_first).astype(np.int64))
        # judged non-relevant items per block (bpref) and judged items per block (Judged@K)
        self.j_t = self.block_sum((self.judged_first
                                    & ~self.relevant(self.lab_first)).astype(np.int64))
        self.jd_t = self.block_sum(self.judged_first.astype(np.int64))
        self.q_t = self.block_sum((self.lab_first < 0).astype(np.int64))
        self._row_first_block = run_first(run_starts(self.brow))

    def _gate(self, s: np.ndarray, lab: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """``lab`` with 0 at every relevant candidate whose score is not > 0 (``gate``);
        their count per row goes to ``n_gated``."""
        gone = self.relevant(lab) & ~(s > 0)
        if not gone.any():
            return lab
        at = np.flatnonzero(gone)
        rows = np.searchsorted(offsets, at, side="right") - 1
        self.n_gated = np.bincount(rows, minlength=offsets.size - 1).astype(np.int64)
        return np.where(gone, np.zeros((), dtype=lab.dtype), lab)

    def _setup(self, n: np.ndarray, offsets: np.ndarray, options: TableOptions,
               max_grade: float | None) -> None:
        """The attributes every table starts with: its rows, their lengths and offsets,
        the run's options, and empty caches."""
        # per metric, the rows a saved ranking does not answer (use_order), or None
        self.short: list[Short | None] | None = None
        # --original topk-each: per metric of the run, the list its Original ranks by
        self.orders: list[Listed] | None = None
        self.level = None if options.relevance_level is None else float(options.relevance_level)
        self.depth = None if options.depth is None else int(options.depth)
        self.max_grade = None if max_grade is None else float(max_grade)
        self.rows = n.size
        self.n, self.offsets = n, offsets
        self.n_gated = np.zeros(n.size, dtype=np.int64)
        self.original = options.original
        # -J -M: (Mixture, RelBatch) of the virtual rows of the queries whose tie block
        # straddles the cut (tieeval.kernels.general.GeneralKernel.block_table)
        self.mixture: tuple[Any, RelBatch] | None = None
        # the same batch's table with gate (relevant items scored <= 0 read as not
        # relevant), for the metrics of relevant_scores="positive"
        self.gated: RelBatch | None = None
        self._lab_ideal: dict[int | None, np.ndarray] = {}
        self._cutoffs: dict[tuple[int | float | None, bool], list[Any]] = {}
        self._relevant_places: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray, np.ndarray, np.ndarray]] = {}
        # what the metrics evaluated on this batch are (plan) and what a measure computes
        # once for all of them (shared): the 11 levels of trec_eval's iprec_at_recall
        self.planned: tuple[RelMetric, ...] = ()
        self.shared: dict[Hashable, Any] = {}
        self.unranked: tuple[np.ndarray, np.ndarray] | None = None
        self.compact = False
        self._full_args = None
        self.rank_depth = None
        self.read_depth = None

    @classmethod
    def one_relevant(cls, n: np.ndarray, above: np.ndarray, tied: np.ndarray,
                     top: np.ndarray, place: np.ndarray, options: TableOptions,
                     listed: bool = False) -> "RelBatch":
        """The sparse table of rows of lengths ``n`` each holding one relevant item (label
        1; every other candidate label 0, nothing else judged), from that item's counts
        per row instead of the scores: ``above`` (scores above it), ``tied`` (tied with
        it, itself included), ``top`` (the row's top tie) and ``place`` (its 0-based place
        in the 'original' ordering; ``listed``: in a listed ranking's, as
        :meth:`use_order` gives it). The table, and so every metric's values, are those of
        the scores' own sparse table: these are the counts
        :func:`tieeval.kernels.sparse_blocks.build` finds by its searches and sorts, and
        the rest of the table is made by the same code (a prune depth keeps every row's
        item: it is the row's first relevant block). The counts come from a torch tensor on
        its device (:mod:`tieeval.kernels.device`). A metric that needs the full table
        (:meth:`full`) cannot be evaluated on it."""
        self = cls.__new__(cls)
        n = np.asarray(n, dtype=np.int64)
        rows = n.size
        self._setup(n, np.concatenate(([0], np.cumsum(n))).astype(np.int64), options, None)
        self.rank_depth = depth = None if listed else options.rank_depth
        self.read_depth = options.prune_depth
        mrow, ml, rel = np.arange(rows, dtype=np.int64), np.ones(rows), np.ones(rows, dtype=bool)
        sparse_blocks.row_counts(self, mrow, ml, rel, rel)
        self.marked = (mrow, ml)
        full_rows = np.flatnonzero(n > 0)
        self._top_ties = (full_rows, top[full_rows])
        unsorted = None if depth is None else (tied > 1) & (above >= depth)
        sparse_blocks.fill(self, mrow, ml, rel, rel, above, tied, place.copy(), unsorted, True)
        return self

    def _add_unranked(self, unranked: tuple[npt.ArrayLike, npt.ArrayLike] | None,
                      unranked_judged: npt.ArrayLike | None) -> None:
        """R, the judged non-relevant count and the largest label with the unranked items."""
        rows = self.rows
        if unranked is not None:
            try:
                labels, offsets = unranked
            except (TypeError, ValueError):
                raise ParameterError("unranked must be a (labels, offsets) pair") from None
            lab, off = np.asarray(labels), np.asarray(offsets)
            if lab.ndim != 1 or lab.dtype.kind not in "biuf":
                raise ParameterError("unranked labels must be a 1-D integer, float or bool array")
            if (off.ndim != 1 or off.size != rows + 1 or off.dtype.kind not in "iu"
                    or off[0] != 0 or off[-1] != lab.size or (np.diff(off) < 0).any()):
                raise ParameterError(f"unranked offsets must be {rows + 1} non-decreasing "
                                     f"integers from 0 to {lab.size}")
            ulab, uoff = lab.astype(np.float64), off.astype(np.int64)
            if not np.isfinite(ulab).all():
                raise InputError("labels must be finite (no NaN or inf)")
            self.unranked = (ulab, uoff)
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
        elif unranked_judged is not None:
            raise ParameterError("unranked_judged needs unranked")

    def by_length(self, rows: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Groups of ``rows`` of one length: ``(base, idx)`` with 2-D ``idx = base + arange``.

        The loop runs over distinct row lengths, at most sqrt(2 * size) of them.
        """
        for part in sparse_blocks.row_groups(self.n, rows, sparse_blocks.SORT_CHUNK):
            checkpoint()
            base = self.offsets[part][:, None]
            yield base, base + np.arange(self.n[part[0]])

    def relevant(self, lab: np.ndarray) -> np.ndarray:
        return lab > 0 if self.level is None else lab >= self.level

    def relevant_places(self, lab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray, np.ndarray, np.ndarray]:
        """:class:`~tieeval.metrics.measures.protocol.BlockTable`'s, for ``lab`` one of
        :attr:`lab_first`, :attr:`lab_last`, :meth:`lab_original`: computed once per
        ordering and shared by every metric of the batch that reads the relevant items only
        (hits, AP, IPrec); on the compact table they are a small share of the positions."""
        got = self._relevant_places.get(id(lab))
        if got is None or got[0] is not lab:  # kept with the array, so its id stays its own
            at = np.flatnonzero(self.relevant(lab))
            row = self.row[at]
            count = np.bincount(row, minlength=self.rows)
            first = np.cumsum(count) - count
            nth = np.arange(1, at.size + 1) - first[row]
            got = (lab, at, row, nth, self.pos[at], first, count)
            self._relevant_places[id(lab)] = got
        return got[1:]

    def row_max_label(self) -> np.ndarray:
        if not hasattr(self, "_row_max_label"):  # from the marked items
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
            scores, labels, offsets, kwargs = cast(
                "tuple[Any, Any, Any, dict[str, Any]]", self._full_args)
            self._full = RelBatch(scores, labels, offsets, **kwargs)
            self._full.planned = self.planned
        return self._full

    def plan(self, metrics: Iterable[RelMetric]) -> None:
        """Name the metrics that will be evaluated on this batch, so that a measure can
        compute what several of them share once (:meth:`values` is the same without it)."""
        self.planned = tuple(metrics)
        if hasattr(self, "_full"):
            self._full.planned = self.planned

    # -- sums ------------------------------------------------------------------------------
    def block_sum(self, x: np.ndarray) -> np.ndarray:
        if self.bst.size == 0:
            return np.zeros(0, dtype=x.dtype)
        return np.add.reduceat(x, self.bst)

    def row_any(self, block_mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.brow[block_mask], minlength=self.rows) > 0

    def within_row_exclusive(self, x_t: np.ndarray) -> np.ndarray:
        """For each block, the sum of ``x_t`` over the earlier blocks of its row (exact for
        integer counts, held as int64, or as float64 below 2**53)."""
        c = np.cumsum(x_t) - x_t
        exclusive: np.ndarray = c - c[self._row_first_block]
        return exclusive

    def _first_block(self, mask_t: np.ndarray) -> np.ndarray:
        """Index of each row's first block with ``mask_t`` (rows without one are absent)."""
        idx = np.flatnonzero(mask_t)
        first: np.ndarray = idx[run_starts(self.brow[idx])]
        return first

    # -- orderings ------------------------------------------------------------------------
    def _check_given_order(self, s: np.ndarray, nan: np.ndarray | None) -> None:
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

    def _row_orders(self, vals: np.ndarray, scratch: bool = False) -> np.ndarray:
        """Per row of the 2-D ``vals`` (rows of one length), its column indices in the
        'original' ordering (the codebases' call by default, module doc; NaN last). Rows of
        one length are sorted together as a 2-D array (each row on its own, as the 1-D call
        would), several times faster than a flat sort."""
        if self.original == "reverse-stable":
            # a stable sort of the reversed row: ties by descending position
            back = np.argsort(sort_key(vals[:, ::-1]), axis=1, kind="stable")
            forward: np.ndarray = vals.shape[1] - 1 - back
            return forward
        if self.original == "argsort":
            return np.argsort(sort_key(vals, scratch), axis=1)
        return np.argsort(sort_key(vals, scratch), axis=1, kind="stable")

    def use_order(self, listed: Listed) -> None:
        """Take the 'original' ordering from a checked listed ranking
        (:class:`tieeval.kernels.original.Listed`): each row's listed candidates, then the
        rest in score order (they never decide a metric the list covers)."""
        self._original_index = listed.order(self._order, self.offsets)
        self._lab_original = self.lab_input[self._original_index]
        self.short = listed.short

    def lab_original(self) -> np.ndarray:
        """Labels in the order of ``np.argsort(row * -1)`` per row, or in the given order
        (``original='given'``)."""
        return self._lab_original

    def judged_extremes(self, negatives: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The judged mask by position with judged items first / last in every tie block;
        with ``negatives``, an item with a negative label counts as judged (ir_measures'
        Judged@K counts every qrels line; trec_eval reads a negative one as unjudged)."""
        cache = f"_judged_extremes_{negatives}"
        if not hasattr(self, cache):
            jd = self.judged_first | (self.lab_first < 0) if negatives else self.judged_first
            first = jd.copy()
            tied = np.flatnonzero(np.repeat(self.bsz > 1, self.bsz))
            if tied.size:
                first[tied] = jd[tied][np.lexsort((~jd[tied], self.bid[tied]))]
            back = 2 * self.bst[self.bid] + self.bsz[self.bid] - 1 - np.arange(self.size)
            setattr(self, cache, (first, first[back]))
        extremes: tuple[np.ndarray, np.ndarray] = getattr(self, cache)
        return extremes

    def judged_original(self, negatives: bool = False) -> np.ndarray:
        """The judged mask in the order of :meth:`lab_original` (``negatives``: as in
        :meth:`judged_extremes`)."""
        judged: np.ndarray = (self._judged_original if self.compact
                              else self._judged[self._original_index])
        return judged | (self.lab_original() < 0) if negatives else judged

    def ideal_labels(self, k: int | None = None) -> np.ndarray:
        """Each row's labels sorted descending, by position (cached per ``k``).

        With a cutoff only the first ``k`` positions are needed (the others get 0): they
        come from ``np.partition`` and a sort of ``k`` labels, not a sort of the row.
        """
        ideal: np.ndarray | None = self._lab_ideal.get(k)
        if ideal is None:
            ideal = np.zeros(self.size)
            for _, idx in self.by_length(np.arange(self.rows)):
                lab = self.lab_input[idx]
                if k is not None and k < idx.shape[1]:
                    top = np.partition(-lab, k - 1, axis=1)[:, :k]
                    ideal[idx[:, :k]] = -np.sort(top, axis=1)
                else:
                    ideal[idx] = -np.sort(-lab, axis=1)
            self._lab_ideal[k] = ideal
        return ideal

    # -- evaluation -----------------------------------------------------------------------
    def values(self, metric: RelMetric, *, original_order: bool = True) -> InstanceValues:
        """Per-row original, first, last, tie-aware, variance, tie_decided and defined."""
        if not isinstance(metric, RelMetric):
            raise ParameterError(f"metric must be a RelMetric (see parse_rel_metric), "
                                 f"got {metric!r}")
        if self.compact and metric.spec.full_table(self):
            return self.full().values(metric, original_order=original_order)
        # how deep the metric reads, as its measure declares it (Measure.read_depth)
        depth = metric.spec.read_depth(metric.k) if (
            self.read_depth is not None or self.rank_depth is not None) else None
        if self.read_depth is not None and (depth is None or depth > self.read_depth):
            raise ParameterError(f"{metric} reads places below prune_depth="
                                 f"{self.read_depth}")
        if (original_order and self.rank_depth is not None
                and (depth is None or depth > self.rank_depth)):
            raise ParameterError(f"{metric} reads the 'original' ordering below "
                                 f"rank_depth={self.rank_depth}")
        return Evaluation(self, metric, original_order).run()


class Evaluation:
    """One metric on one :class:`RelBatch`: the cutoff arrays and the block-table services
    its measure (:class:`tieeval.metrics.measures.base.Measure`) computes with, as
    :class:`tieeval.metrics.measures.protocol.TableEvaluation` documents them. Private to
    the kernels and the measures: it trusts its input.
    """

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
            # the positions inside it (in_k) are made when a measure first reads them
            cached = [k, kc, None, np.clip(kc[batch.brow] - batch.ba, 0, batch.bsz)]
            batch._cutoffs[key] = cached
        self._cut = cached
        self.k, self.kc, self.m_t = cached[0], cached[1], cached[3]
        self.measure = metric.spec
        defined = self.measure.defined(self)
        if metric.k is not None and metric.short_list == "skip":
            defined &= n >= metric.k
        self.defined = defined
        self.R = np.where(defined, batch.n_pos, 1).astype(np.float64)  # safe denominator

    def run(self) -> InstanceValues:
        b = self.b
        closed, realise = self.measure.bind(self)
        e, var, decided = closed()
        orders = self.measure.orders
        # what each ordering (first, last, original) is realised from
        if orders == BY_JUDGED:
            # judged items first / last inside every tie block (the measure's maximum and
            # minimum; the label orderings do not order it)
            negatives = self.measure.negatives_judged
            realise = partial(self.measure.realise_judged, self)
            ways: list[tuple[np.ndarray, ...]] = [
                (jd,) for jd in (*b.judged_extremes(negatives), b.judged_original(negatives))]
        elif orders == BY_LABELS_AND_JUDGED:  # reads the judged mask of each ordering
            ways = [(b.lab_first, b.judged_first), (b.lab_last, b.judged_last),
                    (b.lab_original(), b.judged_original())]
        else:
            ways = [(b.lab_first,), (b.lab_last,), (b.lab_original(),)]
        first, last = realise(*ways[0]), realise(*ways[1])
        original = realise(*ways[2]) if self.original_order else np.full(b.rows, np.nan)
        extremes = self.measure.extremes(self)
        if extremes is not None:  # the orderings above do not reach its extremes
            first, last = extremes
        if decided is None:
            # first and last are the maximum and the minimum (the metric is monotone in
            # moving a relevant item up): ties decide exactly where they differ
            decided = first != last
        # Where ties cannot matter the one realised value is exact; elsewhere rounding must
        # not push the expectation outside [last, first] (or [first, last], for a measure
        # the label orderings rank the other way round, such as rbp's residual).
        e = np.where(decided, np.clip(e, np.minimum(last, first), np.maximum(last, first)),
                     first)
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
        spread = (self.measure.spread(self, first) if self.measure.aggregate == "geometric"
                  else None)
        return InstanceValues(original=original, first=first, last=last, tie_aware=e, variance=var,
                         tie_decided=decided & self.defined, defined=self.defined.copy(),
                         spread=spread, weight=self.measure.weight(self))

    @property
    def in_k(self) -> np.ndarray:
        """Per position of the table, whether its place is inside the counting cutoff
        (shared by the metrics of the batch with the same cutoff; P@K and AP, which read
        the relevant items only, never need it)."""
        inside: np.ndarray | None = self._cut[2]
        if inside is None:
            inside = self._cut[2] = self.b.pos < self.kc[self.b.row]
        return inside

    # -- services the measures use -----------------------------------------------------------
    def hits(self, lab: np.ndarray, sign: int) -> np.ndarray:
        if sign > 0:  # from the ordering's relevant items, shared by every cutoff
            _, row, _, place, _, _ = self.b.relevant_places(lab)
            inside = row[place < self.kc[row]]
            return np.bincount(inside, minlength=self.b.rows).astype(np.float64)
        mask = (lab < 0) & self.in_k
        return np.bincount(self.b.row[mask], minlength=self.b.rows).astype(np.float64)

    def first_block_stats(self, mark_t: np.ndarray, count_t: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                     np.ndarray]:
        b = self.b
        t = b._first_block(mark_t)
        rows = b.brow[t]
        return t, rows, b.ba[t], b.bsz[t], count_t[t], self.m_t[t]

    def hits_moments(self, x_t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Only the blocks reaching into the top K (m_t > 0) contribute: only they are summed."""
        b = self.b
        live = self.live_blocks()
        m, n, x = self.m_t[live], b.bsz[live].astype(np.float64), x_t[live]
        rows = b.brow[live]
        straddle = m < n
        e = np.bincount(rows, weights=x * m / n, minlength=b.rows)
        var_t = np.where(straddle, m * (n - m) * x * (n - x)
                         / (n * n * np.maximum(n - 1, 1.0)), 0.0)
        decided = np.bincount(rows[straddle & (x > 0) & (x < n)], minlength=b.rows) > 0
        return e, np.bincount(rows, weights=var_t, minlength=b.rows), decided

    def live_blocks(self) -> np.ndarray:
        if not hasattr(self, "_live"):
            self._live = np.flatnonzero(self.m_t > 0)
        return self._live

    def row_sum_blocks(self, x_t: np.ndarray) -> np.ndarray:
        return np.bincount(self.b.brow, weights=x_t, minlength=self.b.rows)

    def k_safe(self) -> np.ndarray:
        """K as a denominator; 'truncate' makes it n, which is 0 for an (undefined) empty
        row."""
        return np.where(self.defined, self.k, 1).astype(np.float64)

    @staticmethod
    def label_span(lab: np.ndarray) -> int | None:
        return label_span(lab)


def relevance_values(scores: npt.ArrayLike, labels: npt.ArrayLike,
                     offsets: npt.ArrayLike | None, metric: RelMetric | str, *,
                     original_order: bool = True, nan_policy: str = "raise",
                     original: str = "argsort",
                     unranked: tuple[npt.ArrayLike, npt.ArrayLike] | None = None
                     ) -> InstanceValues:
    """Exact tie-aware values of one metric for every row of a ragged batch.

    Parameters
    ----------
    scores, labels, offsets, unranked
        As :class:`RelBatch` takes them (flat, or 2-D without offsets).
    metric : RelMetric or str
        For example ``parse_rel_metric("NDCG@10")`` or just ``"NDCG@10"``.
    original_order : bool
        Also evaluate the ``np.argsort(row * -1)`` ordering (NaN column when False).
    nan_policy, original
        As :class:`TableOptions` takes them.

    Returns
    -------
    InstanceValues
        One entry per row. Evaluating several metrics? Build one :class:`RelBatch` and call
        :meth:`RelBatch.values` for each, so the batch is sorted only once.
    """
    if isinstance(metric, str):
        metric = parse_rel_metric(metric)
    # a standalone entry point: its options are checked here, once, not by RelBatch
    check_nan_policy(nan_policy)
    if original not in ORIGINAL_ORDERS:
        raise ParameterError(f"original must be one of {', '.join(ORIGINAL_ORDERS)}, "
                             f"got {original!r}")
    return RelBatch(scores, labels, offsets, unranked=unranked,
                    options=TableOptions(nan_policy=nan_policy, original=original)
                    ).values(metric, original_order=original_order)
