"""What a measure sees of a batch: :class:`BlockTable`, :class:`TableEvaluation` and
:class:`MetricOptions`.

A measure (:class:`~tieeval.metrics.measures.base.Measure`) is handed one evaluation of its
metric on one batch, ``ev`` (a :class:`TableEvaluation`), and through it the batch's block
table, ``ev.b`` (a :class:`BlockTable`). These two protocols list every attribute and
method a measure may use, each public and documented; the kernels' classes
(:class:`tieeval.kernels.tie_blocks.RelBatch` and
:class:`tieeval.kernels.tie_blocks.Evaluation`) satisfy them, which the type checker
verifies where the kernels hand themselves to a measure. A measure reads nothing else
of them (tests/metrics/test_measure_protocol.py checks that no measure reaches a ``_``
attribute of what it is handed).

Layout (:mod:`tieeval.kernels.tie_blocks`). A batch of ``rows`` rows is flat: its
``size`` candidates are sorted once per row, by score descending, and each run of equal
scores of a row is a tie block. Per-position arrays have shape ``(size,)`` and follow
that order; per-block arrays have shape ``(blocks,)``, blocks in row order and, inside a
row, best first; per-row arrays have shape ``(rows,)``. On a compact table
(:attr:`BlockTable.compact`) only the tie blocks holding a labelled or judged item are
kept: positions and blocks are those, ``pos`` and ``ba`` keep their true places.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

#: float64 array (labels, gains, values per row)
Floats = npt.NDArray[np.float64]
#: int64 array (counts, places, indices)
Ints = npt.NDArray[np.int64]
#: bool array (masks)
Bools = npt.NDArray[np.bool_]
#: numeric array (a value per row: float64, or an integer count)
Numbers = npt.NDArray[np.number[Any]]
#: ``(value, variance, tie_decided)`` per row, as :meth:`Measure.closed` returns them:
#: the exact expectation, its variance (None: no exact variance) and first != last (None:
#: read off the realised first and last orderings)
Closed = tuple[Numbers, Numbers | None, Bools | None]

#: How deep a measure reads a row (:meth:`Measure.read_depth`): a place, one per row, or
#: None for every position
Depth = int | float | Ints | None

_Number = TypeVar("_Number", bound=np.generic)


class Realise(Protocol):
    """A measure's value per row in one ordering, bound to one evaluation
    (:meth:`Measure.bind`): ``lab`` its labels by position, ``judged`` its judged mask
    (for a measure of the label-and-judged orderings)."""

    def __call__(self, lab: Floats, judged: Bools | None = None) -> Numbers: ...


class MetricOptions(Protocol):
    """A metric with its options, as a measure reads it
    (:class:`tieeval.metrics.options.RelMetric` is one)."""

    @property
    def k(self) -> int | float | None:
        """The metric's parameter: a rank cutoff K, a recall level, or None."""

    @property
    def level(self) -> float | None:
        """The recall level of a level metric (``IPrec@0.1``), else None."""

    @property
    def gain(self) -> str:
        """The DCG family's gain: ``'linear'`` or ``'exponential'``."""

    @property
    def discount(self) -> str:
        """The DCG family's discount (``'log2'``, ``'power'``, ...)."""

    @property
    def alpha(self) -> float:
        """The exponent of the power discount."""

    @property
    def base(self) -> float:
        """The base of the ``logb`` discount."""

    @property
    def gamma(self) -> float:
        """The penalty of an explicit negative (the signed metrics)."""

    @property
    def short_list(self) -> str:
        """Rows shorter than K: ``'pad'``, ``'truncate'`` or ``'skip'``."""

    @property
    def ap_norm(self) -> str:
        """AP@K's divisor: ``'R'`` or ``'min'`` (min(K, R))."""

    @property
    def recall_norm(self) -> str:
        """Recall@K's divisor: ``'relevant'`` or ``'min'``."""

    @property
    def max_grade(self) -> float | None:
        """ERR's g_max (None: from the judgements)."""

    @property
    def iprec_rounding(self) -> str:
        """IPrec's cutoff rounding: ``'trec_eval'`` or ``'trec_eval9'``."""

    @property
    def precision_norm(self) -> str:
        """Precision@K's average: ``'K'`` or ``'micro'`` (sum of hits / sum of min(K, R))."""

    @property
    def spec(self) -> object:
        """The metric's measure (:class:`~tieeval.metrics.measures.base.Measure`)."""


class BlockTable(Protocol):
    """A batch sorted into tie blocks, as a measure reads it.

    Attributes
    ----------
    rows : int
        Number of rows.
    size : int
        Number of positions of the table (candidates; on a compact table, those of its
        blocks).
    n : ndarray of int64, shape (rows,)
        Each row's number of candidates (its length).
    offsets : ndarray of int64, shape (rows + 1,)
        Row boundaries into the per-position arrays.
    row, pos : ndarray of int64, shape (size,)
        Per position, its row and its 0-based place in the row's ranking.
    bst, bsz, bid, brow, ba : ndarray of int64
        The block table: each block's first position, its size (items tied), its row and
        the candidates above it (``a_t``), shape (blocks,); ``bid`` is each position's
        block, shape (size,).
    p_t, q_t, j_t, jd_t : ndarray of int64, shape (blocks,)
        Per block its relevant items, explicit negatives (label < 0), judged non-relevant
        items and judged items.
    lab_first : ndarray of float64, shape (size,)
        Labels by position in the 'first' ordering (labels descending inside every tie
        block, judged before unjudged among equal labels).
    judged_first : ndarray of bool, shape (size,)
        The judged mask in the 'first' ordering.
    n_pos, n_neg : ndarray of int64, shape (rows,)
        Per row R, its relevant items (unranked ones included), and |N|, its explicit
        negatives among the candidates.
    n_pos_ranked : ndarray of int64, shape (rows,)
        Per row its relevant items among the candidates.
    n_gated : ndarray of int64, shape (rows,)
        Per row the relevant items scored <= 0 that the table counts as not relevant (its
        labels read 0 there; ``relevant_scores="positive"``): ``n_pos`` still counts
        them. Zeros on a table of every relevant item.
    n_judged_nonrel : ndarray of int64, shape (rows,)
        Per row its judged non-relevant items, ranked or not (bpref's denominator).
    compact : bool
        True for a compact table: only the tie blocks holding a labelled or judged item.
    depth : int or None
        trec_eval's ``-M``: only the top ``depth`` of each ranking is retrieved.
    level : float or None
        trec_eval's ``-l``: an item is relevant iff ``label >= level`` (None: label > 0).
    max_grade : float or None
        ERR's g_max for every row when the metric sets none (None: each row's largest
        label).
    read_depth : int or None
        The deepest place any metric evaluated on the table reads (None: every
        position); on a compact table the tie blocks below it were left out (but each
        row's first block holding a relevant item).
    unranked : (ndarray of float64, ndarray of int64) or None
        The labels of judged items no row ranks, flat, and their ``rows + 1`` offsets.
    planned : tuple of MetricOptions
        The metrics that will be evaluated on the batch (what several of them share is
        computed once).
    shared : dict
        The store of what a measure computes once for every metric of the batch, under a
        key naming the measure and what it depends on.
    marked : (ndarray of int64, ndarray of float64)
        Each marked item's row and label, in input order: on a compact table its marked
        items, on a full table every item.
    lab_input : ndarray of float64, shape (size,)
        On a full table only: the labels in the batch's input order.
    """

    rows: int
    size: int
    n: Ints
    offsets: Ints
    row: Ints
    pos: Ints
    bst: Ints
    bsz: Ints
    bid: Ints
    brow: Ints
    ba: Ints
    p_t: Ints
    q_t: Ints
    j_t: Ints
    jd_t: Ints
    lab_first: Floats
    judged_first: Bools
    n_pos: Ints
    n_neg: Ints
    n_pos_ranked: Ints
    n_gated: Ints
    n_judged_nonrel: Ints
    compact: bool
    depth: int | None
    level: float | None
    max_grade: float | None
    read_depth: int | None
    unranked: tuple[Floats, Ints] | None
    shared: dict[Hashable, Any]
    marked: tuple[Ints, Floats]
    lab_input: Floats

    @property
    def planned(self) -> tuple[MetricOptions, ...]:
        """The metrics that will be evaluated on the batch (read-only here)."""

    def relevant(self, lab: Floats) -> Bools:
        """Which of the labels ``lab`` (any shape) are relevant: ``label >= level``, by
        default ``label > 0``."""

    def relevant_places(self, lab: Floats) -> tuple[Ints, Ints, Ints, Ints, Ints, Ints]:
        """The relevant items of the ordering whose labels by position are ``lab``, by row
        and place: ``(at, row, nth, place, first, count)``, ``at`` their positions,
        ``nth`` each one's number among its row's relevant items (1 for the best placed),
        ``place`` its 0-based place, then per row (shape (rows,)) the index of its first
        one and how many it has."""

    def row_max_label(self) -> Floats:
        """Per row (shape (rows,)) its largest label, ranked or unranked (-inf: none)."""

    def block_sum(self, x: npt.NDArray[_Number]) -> npt.NDArray[_Number]:
        """Per block (shape (blocks,)) the sum of the per-position ``x`` over its
        positions."""

    def row_any(self, block_mask: Bools) -> Bools:
        """Per row (shape (rows,)) whether any of its blocks has ``block_mask``."""

    def within_row_exclusive(self, x_t: npt.NDArray[_Number]) -> npt.NDArray[_Number]:
        """Per block, the sum of the per-block ``x_t`` over the earlier blocks of its row
        (exact for integer counts)."""

    def by_length(self, rows: Ints) -> Iterator[tuple[Ints, Ints]]:
        """The ``rows`` (on a full table) in groups of one length: ``(base, idx)``, with
        ``idx`` of shape (group, length) the positions of each row in order."""

    def ideal_labels(self, k: int | None = None) -> Floats:
        """On a full table: per position (shape (size,)) each row's labels sorted
        descending; with ``k``, its first ``k`` places only (0 after)."""


class TableEvaluation(Protocol):
    """One metric on one :class:`BlockTable`: the cutoff arrays and the block-table
    services a measure computes with.

    Attributes
    ----------
    k : ndarray of int64, shape (rows,)
        Per row the metric's cutoff as a denominator (P@K divides by K); the row length
        without a cutoff.
    kc : ndarray of int64, shape (rows,)
        Per row the counting cutoff: ``k`` capped at the retrieval depth.
    m_t : ndarray of int64, shape (blocks,)
        Per block its places inside the counting cutoff.
    defined : ndarray of bool, shape (rows,)
        The rows where the measure exists; a measure may narrow it (``&=``) while it
        binds.
    R : ndarray of float64, shape (rows,)
        A safe denominator: R where defined, else 1.
    """

    k: Ints
    kc: Ints
    m_t: Ints
    defined: Bools
    R: Floats

    @property
    def b(self) -> BlockTable:
        """The batch's block table."""

    @property
    def m(self) -> MetricOptions:
        """The metric, with its options."""

    @property
    def in_k(self) -> Bools:
        """Per position (shape (size,)) whether its place is inside the counting cutoff."""

    def hits(self, lab: Floats, sign: int) -> Floats:
        """Per row the relevant items (``sign`` +1) or the explicit negatives (-1) inside
        the cutoff, in the ordering whose labels by position are ``lab``."""

    def first_block_stats(self, mark_t: Bools, count_t: npt.NDArray[_Number]
                          ) -> tuple[Ints, Ints, Ints, Ints, npt.NDArray[_Number], Ints]:
        """Each row's first block with ``mark_t``: ``(block, row, a, n, count, m)``, its
        index, row, candidates above it, size, ``count_t`` and places inside the cutoff
        (rows without such a block are absent)."""

    def hits_moments(self, x_t: Ints) -> tuple[Floats, Floats, Bools]:
        """Per row the expectation and variance of the number of marked items inside the
        cutoff (``x_t`` marked items per block; hypergeometric), and whether ties decide
        it."""

    def live_blocks(self) -> Ints:
        """The blocks reaching into the cutoff (``m_t > 0``)."""

    def row_sum_blocks(self, x_t: npt.NDArray[Any]) -> Floats:
        """Per row (shape (rows,)) the sum of the per-block ``x_t``."""

    def k_safe(self) -> Floats:
        """``k`` as a denominator (1 where the row is undefined)."""

    def label_span(self, lab: Floats) -> int | None:
        """The number of whole-number values ``lab`` spans, or None when they are not
        whole numbers (:func:`tieeval.kernels.sparse_blocks.label_span`)."""
