"""What a measure is: :class:`Measure`, one object per metric name, holding everything the
kernels and the engine ask about it.

A measure says what it needs from a row (:attr:`Measure.needs`), how deep it reads one
(:meth:`Measure.read_depth`: the kernels sort and keep each row only that deep), on which
rows it is defined (:meth:`Measure.defined`), its realised value for one ordering of a row
(:meth:`Measure.realise`; the ``first`` and ``last`` orderings give its best and worst case
over the tie orders), its exact expectation under uniform random tie-breaking with the
variance where one exists (:meth:`Measure.closed`), and its names in every vocabulary
users bring (:attr:`Measure.names`). Kernels call these methods on the measure of a metric
and never test a metric's name; the per-batch machinery they share (the block table, the
cutoff arrays, hypergeometric counts of the top K) is the ``ev`` argument, one evaluation of
one metric on one batch (:class:`tieeval.kernels.tie_blocks.Evaluation`).

Each family of measures lives in one module of this package, with its formula and a
reference in the class docstring; ``tieeval.metrics.registry`` registers every measure of
:data:`tieeval.metrics.measures.MEASURES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from tieeval.errors import ParameterError
from tieeval.metrics.measures.protocol import (
    BlockTable,
    Bools,
    Closed,
    Depth,
    Floats,
    Ints,
    Numbers,
    Realise,
    TableEvaluation,
)

if TYPE_CHECKING:
    from tieeval.metrics.measures.geometric import Spread

#: The vocabularies of :attr:`Measure.names`: tieeval's own, then the tools and libraries
#: whose spellings users bring.
VOCABULARIES = ("tieeval", "trec_eval", "ir_measures", "RecBole", "LensKit", "Cornac", "ranx")

#: What a measure may need from a row (:attr:`Measure.needs`): the single held-out
#: ``positive`` (it has sort-free closed forms for one), relevance ``labels``, an explicit
#: negative (``negatives``: a row without one is undefined), the ``judged`` set, a rank
#: ``cutoff`` or a recall ``level``, and ``every_position`` of a row (not only the tie
#: blocks holding a labelled item).
NEEDS = frozenset({"positive", "labels", "negatives", "judged", "cutoff", "level",
                   "every_position"})

#: Which orderings a measure's first / last columns rank (:attr:`Measure.orders`): the
#: label orderings (labels descending / ascending inside ties), the judged orderings
#: (judged items first / last inside ties), or the label orderings with each one's judged
#: mask.
BY_LABELS, BY_JUDGED, BY_LABELS_AND_JUDGED = "labels", "judged items", "labels and judged"
ORDERS = (BY_LABELS, BY_JUDGED, BY_LABELS_AND_JUDGED)


class _Asked(Protocol):
    """A metric as :func:`deepest` reads it: its measure and its parameter."""

    @property
    def spec(self) -> Measure: ...

    @property
    def k(self) -> int | float | None: ...


def deepest(metrics: Iterable[_Asked]) -> int | None:
    """The deepest place any of ``metrics`` (each with ``spec``, its :class:`Measure`, and
    ``k``) reads, as the kernels plan it before reading a row
    (:meth:`Measure.read_depth` with R and n unknown); None when one of them reads every
    position, or there are none."""
    depths = [m.spec.read_depth(m.k) for m in metrics]
    if not depths or any(d is None for d in depths):
        return None
    # with R and n unknown a depth is a number (one per row needs R or n)
    return int(max(cast("list[int | float]", depths)))


@dataclass(frozen=True)
class Measure:
    """One metric: canonical name, cutoff rule, options, description, and its math.

    ``cutoff`` is ``"required"`` (``HR@10``), ``"optional"`` (``MRR`` is untruncated,
    ``MRR@10`` truncated), ``"none"`` (V-AUC ranks whole lists) or ``"level"`` (a required
    recall level in [0, 1] instead of a rank cutoff: ``IPrec@0.1``). ``options`` names the
    :class:`~tieeval.metrics.options.RelMetric` options that change its value (``gain``,
    ``discount``, ``alpha``, ``gamma``, ``ap_norm``, ``recall_norm``). ``single_positive``
    marks the metrics with sort-free closed forms for one held-out positive (HR@K, NDCG@K, MRR).
    ``aggregate`` is how per-row values become the dataset figure: ``"mean"`` (most
    metrics), ``"sum"`` (the counts NumRet, NumRel, NumRelRet, NumQ, as trec_eval prints
    them) or ``"geometric"`` (GMAP: ``exp(mean(log(max(x, 1e-5))))``).

    ``names`` maps a vocabulary of :data:`VOCABULARIES` to the measure's spellings there
    (``{"trec_eval": ("recip_rank",), "RecBole": ("MRR",), ...}``; a vocabulary without
    the measure is absent). ``needs`` is what the measure reads of a row (:data:`NEEDS`).
    ``zero_without_relevant``: under ``no_relevant="zero"`` a row without a relevant item
    counts 0 (False for the pair measures, which stay undefined there).
    ``has_variance``: the per-row tie-break variance is exact (else the dataset's
    ``tie_aware_std`` is null). ``orders``: which orderings first / last rank
    (:data:`ORDERS`). ``level_max``: the largest parameter of a level measure (1 for a
    recall level; trec_eval's ``Rprec_mult`` takes any multiple of R >= 0).
    """

    name: str
    cutoff: str
    description: str
    aliases: tuple[str, ...] = ()
    options: frozenset[str] = frozenset()
    single_positive: bool = False
    aggregate: str = "mean"
    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    needs: frozenset[str] = frozenset({"labels"})
    zero_without_relevant: bool = True
    has_variance: bool = True
    orders: str = BY_LABELS
    level_max: float = 1.0

    @property
    def takes_k(self) -> bool:
        """True when a cutoff is required (``HR@10``)."""
        return self.cutoff == "required"

    @property
    def takes_level(self) -> bool:
        """True when the parameter is a recall level in [0, 1] (``IPrec@0.1``)."""
        return self.cutoff == "level"

    @property
    def signed(self) -> bool:
        """True for the sign-aware metrics, whose value depends on gamma."""
        return "gamma" in self.options

    @property
    def every_position(self) -> bool:
        """True when the measure reads every position of a row (a sparse block table
        evaluates it on the full table)."""
        return "every_position" in self.needs

    def read_depth(self, k: int | float | None, r: int | Ints | None = None,
                   n: int | Ints | None = None) -> Depth:
        """How deep the measure reads a row: its value in an ordering depends on the labels
        of the first ``read_depth(k, r, n)`` places only (and on counts over the whole row,
        such as R or the ideal DCG, which no ordering changes); None: on any place, as deep
        as the row goes.

        ``k`` is the metric's parameter (a rank cutoff, a recall level, or None), ``r`` the
        row's number of relevant items and ``n`` its number of candidates: ints, or int64
        arrays of one value per row (then the answer is one per row, or one for all).
        ``r`` or ``n`` is None where it is not known yet: the kernels plan how much of each
        row to sort and keep before they read one (:mod:`tieeval.kernels.general`: a tie
        block starting at or below the deepest place any metric asked for reads is left
        unsorted, or out of the table), and the listed-ranking checks ask every row's
        list for ``min(n, depth)`` places (``--original given`` / ``topk``). A depth that
        needs an unknown ``r`` or ``n`` is None there (every position), never a guess:
        a measure that reads deeper than it declares gets a wrong Original column.

        The default is right for a measure that reads no deeper than its rank cutoff: K
        for ``cutoff`` ``"required"`` or ``"optional"`` with a K, else None (MRR and MAP
        without a cutoff, a level measure, V-AUC and every measure of whole lists). A
        measure reading past K (a hit within the top 2K: ``2 * k``) or to a depth set by
        the row (R-precision: ``r``) overrides it. Places past a row's end are empty, so a
        depth may exceed ``n``."""
        if k is None or self.cutoff not in ("required", "optional"):
            return None
        return k

    def full_table(self, b: BlockTable) -> bool:
        """True when the measure is evaluated on the full block table of the batch ``b``
        (:meth:`tieeval.kernels.tie_blocks.RelBatch.full`), not on its compact table of
        the tie blocks holding a labelled or judged item: by default when it reads
        :attr:`every_position`."""
        return self.every_position

    #: A judged-orderings measure (:data:`BY_JUDGED`) that counts an item with a negative
    #: label as judged (ir_measures' Judged@K); trec_eval reads it as unjudged.
    negatives_judged: ClassVar[bool] = False

    def names_in(self, vocabulary: str) -> tuple[str, ...]:
        """The measure's spellings in one vocabulary of :data:`VOCABULARIES` (empty when
        that vocabulary has no such measure)."""
        if vocabulary not in VOCABULARIES:
            raise ParameterError(f"vocabulary must be one of {', '.join(VOCABULARIES)}, "
                                 f"got {vocabulary!r}")
        return tuple(self.names.get(vocabulary, ()))

    # -- the general kernel: one metric on one block table ----------------------------------
    def defined(self, ev: TableEvaluation) -> Bools:
        """The rows where the measure exists: a relevant item (R >= 1), by default."""
        return ev.b.n_pos >= 1

    def bind(self, ev: TableEvaluation) -> tuple[Callable[[], Closed], Realise]:
        """``(closed, realise)`` for one evaluation: ``closed()`` gives the exact
        expectation, variance (None: no exact variance) and first != last (None: read
        it off the realised first and last); ``realise(lab, judged)`` the value of the
        ordering whose labels by position are ``lab`` (``judged`` its judged mask)."""
        return (lambda: self.closed(ev)), (lambda lab, judged=None: self.realise(ev, lab,
                                                                                judged))

    def closed(self, ev: TableEvaluation) -> Closed:
        """``(expectation, variance, tie_decided)`` per row (:data:`Closed`)."""
        raise ParameterError(f"{self.name} has no tie-aware kernel")

    def extremes(self, ev: TableEvaluation) -> tuple[Floats, Floats] | None:
        """``(first, last)``: the measure's maximum and minimum over the tie orders, for a
        measure the label orderings do not take to its extremes (a count of unjudged
        items); None (the default): first and last are the realised values of the
        orderings of :attr:`orders`."""
        return None

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None) -> Numbers:
        """The value per row in the ordering whose labels by position are ``lab``;
        ``judged`` is that ordering's judged mask for a measure of
        :data:`BY_LABELS_AND_JUDGED` (:meth:`judged_mask`), None otherwise."""
        raise ParameterError(f"{self.name} has no tie-aware kernel")

    def realise_judged(self, ev: TableEvaluation, judged: Bools) -> Numbers:
        """A measure of the judged orderings (:data:`BY_JUDGED`, which rank no labels): the
        value per row in the ordering whose judged mask by position is ``judged``."""
        raise ParameterError(f"{self.name} has no tie-aware kernel")

    def rank_cutoff(self, k: int | float | None) -> int:
        """``k`` as the whole-number rank cutoff the registry checked it to be, for a
        measure evaluated here with one (HR@K, ERR@K, NDCG@K of one positive)."""
        if k is None:
            raise ParameterError(f"{self.name} needs a cutoff, e.g. {self.name}@10")
        return int(k)

    def judged_mask(self, judged: Bools | None) -> Bools:
        """``judged`` as :meth:`realise` receives it for a measure of
        :data:`BY_LABELS_AND_JUDGED`: the kernels pass the judged mask of every ordering."""
        if judged is None:
            raise ParameterError(f"{self.name} reads the judged mask of each ordering")
        return judged

    def weight(self, ev: TableEvaluation) -> Floats | None:
        """Each row's weight in the dataset's mean (a micro average: a ratio's
        denominator), the same in every column; None (the default): the plain mean."""
        return None

    def spread(self, ev: TableEvaluation, first: Floats) -> Spread | None:
        """The exact distribution of each row whose value ties decide
        (:class:`tieeval.metrics.measures.geometric.Spread`), for a geometric mean's
        tie-aware figure; ``first`` is each row's value in the 'first' ordering. None: the
        measure has none."""
        return None

    # -- the single-positive closed forms ---------------------------------------------------
    def covers_single_positive(self, k: int | float | None) -> bool:
        """True when the sort-free single-positive closed forms cover this measure at
        cutoff ``k``."""
        return False

    def rank_value(self, k: int | float | None, rank: Ints) -> Floats:
        """The value for a single positive at the deterministic 1-based ``rank``."""
        raise ParameterError(f"{self.name} is not defined for the single-positive protocol")

    def tie_moments(self, k: int | float | None, a: Ints, b: Ints
                    ) -> tuple[Floats, Floats, Bools]:
        """``E[X]``, ``E[X^2]`` and first != last for a single positive with ``a``
        candidates above it and ``b`` tied with it (itself included)."""
        raise ParameterError(f"{self.name} is not defined for the single-positive protocol")

    def nan_without_ranked(self, k: int | float | None, big_r: int,
                           options: dict[str, Any]) -> bool:
        """True when trec_eval divides 0 by 0 for a query left without a ranked document
        (``-J``; ``big_r`` relevant documents, ``options`` the run's relevance options): its
        value and its mean print ``-nan`` in trec_eval's format."""
        return False

    # -- what reports say -------------------------------------------------------------------
    def tie_aware_reason(self) -> str:
        """Why the dataset's tie-aware figure is null (some row has no exact value)."""
        return f"no exact tie-aware {self.name} for some rows"

    def undefined_reason(self) -> str:
        """Why a row is left out of the measure's mean."""
        return "no instance has a relevant item (label > 0)"
