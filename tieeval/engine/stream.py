"""Tie-aware figures inside a training loop: :class:`TieAware`, a streaming, mergeable metric.

A :class:`TieAware` takes the options :func:`tieeval.evaluate` takes (checked once, by the
same declaration: :meth:`~tieeval.engine.request.EvalOptions.from_keywords`), is fed
batches of rows with :meth:`TieAware.update` and gives, with :meth:`TieAware.compute`,
the :class:`~tieeval.records.results.RunResult` ``evaluate`` gives on all those rows at
once: the same kernel adds each batch to the same
:class:`~tieeval.kernels.accumulator.Accumulator` (exact integer counts and exact sums,
nothing per row), so the figures do not depend on how the rows were cut into batches, and
two objects fed different shards :meth:`~TieAware.merge` into the figures of the whole.
Its memory does not grow with the rows seen (per-instance values are kept only when asked
for, ``keep_values=True``).

Torch tensors are read where they are: for one positive per row (``positive``, or
``positives`` one column per row), the per-row counts (candidates above the positive,
tied with it, the row's top tie, its Original rank) are made where the tensor is
(:mod:`tieeval.kernels.device`) and only those small arrays reach the sums, a few thousand
rows at a time. The single-positive kernel adds them as it adds its own counts; the
general kernel (a metric such as Recall@K or MRR@K, or ``positives``) builds from them
the sparse table the scores would give (one relevant item per row,
:meth:`~tieeval.kernels.tie_blocks.RelBatch.one_relevant`), so its result, JSON keys and
all, is the one ``evaluate`` gives. Other batches (labels, several positives, a what-if,
a NaN score) are read on the host, as ``evaluate`` reads a CPU tensor.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np

from tieeval.engine.arrays import array_batch
from tieeval.engine.local import ARRAY_KEYWORDS, evaluate
from tieeval.engine.request import EvalOptions, NamedRows, request_kernel
from tieeval.errors import InputError, ParameterError
from tieeval.io.base import RelevanceInfo
from tieeval.io.validate import check_score_dtype
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.base import Kernel
from tieeval.kernels.counts import RowCounts
from tieeval.kernels.single import SinglePositiveKernel
from tieeval.metrics.metric import DEFAULT_KS
from tieeval.records.batch import Batch
from tieeval.records.results import RunResult
from tieeval.records.values import InstanceValues

__all__ = ["TieAware", "OPTION_NAMES"]

PENDING_ROWS = 8192
"""Rows of device counts (five int64 per row) kept before they are added to the sums."""

#: The options a :class:`TieAware` takes: :func:`~tieeval.evaluate`'s, read off its
#: signature (every keyword but the arrays and ``path``), so that the two never differ.
OPTION_NAMES = tuple(name for name in inspect.signature(evaluate).parameters
                     if name not in (*ARRAY_KEYWORDS, "path"))


_Route = tuple[Kernel, int | None, int | None]
"""A batch kind's kernel, its rank depth and list depth (:meth:`TieAware._route`)."""


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "device")


def _host(value: Any) -> Any:
    """A torch tensor (any device) as a numpy array, never cast; lists of tensors (ragged
    rows) row by row; anything else as given."""
    if _is_tensor(value):
        from tieeval.kernels.device import to_numpy
        return to_numpy(value)
    if isinstance(value, (list, tuple)) and value and any(_is_tensor(v) for v in value):
        return [_host(v) for v in value]
    return value


class TieAware:
    """A streaming, mergeable tie-aware evaluation: the figures of :func:`tieeval.evaluate`
    over every row given to :meth:`update`, in any batches.

    ``k`` and the keyword options are :func:`~tieeval.evaluate`'s (``metrics``,
    ``convention``, ``original``, ``gamma``, ``nan_policy``, ``cast`` ...), checked with its
    messages; ``path`` names the rows in messages and in the result; ``keep_values``:
    keep every row's per-instance values too (:meth:`instance_values`; memory then grows
    with the rows).

    >>> import numpy as np
    >>> m = TieAware(metrics=["HR@1"])
    >>> m.update(np.array([[1.0, 1.0, 0.5]], dtype=np.float32), positive=[0])
    >>> m.update(np.array([[0.9, 0.1, 0.2]], dtype=np.float32), positive=[0])
    >>> r = m.compute()
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.5, 0.75)
    """

    def __init__(self, k: Any = DEFAULT_KS, *, path: str = "<stream>",
                 keep_values: bool = False, **options: Any):
        unknown = [name for name in options if name not in OPTION_NAMES]
        if unknown:
            raise TypeError(f"TieAware() got an unexpected keyword argument {unknown[0]!r}")
        if not isinstance(path, str):
            raise ParameterError(f"path must be a string, got {path!r}")
        self.request = EvalOptions.from_keywords(k=k, **options)
        self.path = path
        self.keep_values = bool(keep_values)
        # decided once per object, as the options stay: each relevance kind's kernel and
        # route, each torch dtype's numpy one (reset() keeps them)
        self._routes: dict[Any, _Route | None] = {}
        self._dtypes: dict[Any, np.dtype[Any]] = {}
        self.reset()

    # -- state ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every row seen (the options stay)."""
        self._kernel: Kernel | None = None
        self._kind: tuple[Any, ...] | None = None
        self._dtype: np.dtype[Any] | None = None
        self._acc: Accumulator | None = None
        self._values: list[list[InstanceValues]] = []
        self._pending: list[RowCounts] = []  # device counts not yet in the sums
        self._pending_rows = 0
        self.rows = 0

    def _like(self) -> "TieAware":
        """A TieAware of the same options that has seen no rows."""
        other = TieAware.__new__(TieAware)
        other.request, other.path, other.keep_values = self.request, self.path, self.keep_values
        other._routes, other._dtypes = self._routes, self._dtypes  # the same options' choices
        other.reset()
        return other

    def _kernel_of(self, kind: tuple[Any, ...] | None) -> Kernel:
        """The kernel of these options for rows whose relevance is of ``kind`` (None: one
        positive per row; else the source, the items flag and the fields given)."""
        route = self._routes.get(kind)
        if route is not None:
            return route[0]
        relevance = None if kind is None else RelevanceInfo(kind[0], items=kind[1],
                                                            fields=tuple(kind[2]))
        return request_kernel(NamedRows(self.path, relevance), self.request)

    def _start(self, kind: tuple[Any, ...] | None, dtype: np.dtype[Any], where: str,
               kernel: Kernel | None = None) -> Kernel:
        """The kernel of the first batch (``kernel``: the one of the object merged in);
        later batches must carry the same kind of relevance (one positive per row, labels,
        positives ...) in the same dtype."""
        if self._kernel is None:
            self._kernel = kernel if kernel is not None else self._kernel_of(kind)
            self._kind, self._dtype = kind, np.dtype(dtype)
            self._acc = self._kernel.new()
            return self._kernel
        if kind != self._kind:
            raise ParameterError(f"{self.path}: {where} carries {_describe(kind)}, earlier "
                                 f"batches {_describe(self._kind)}: every batch of one "
                                 "evaluation gives its relevance the same way")
        if np.dtype(dtype) != self._dtype:
            raise InputError(f"{self.path}: {where} has {np.dtype(dtype)} scores, earlier "
                             f"batches {self._dtype}: ties are judged in the scores' own "
                             "dtype, so every batch must have the same one")
        return self._kernel

    # -- feeding -------------------------------------------------------------------------

    def update(self, scores: Any, positives: Any = None, labels: Any = None, *,
               positive: Any = None, negatives: Any = None, items: Any = None,
               offsets: Any = None, ranking: Any = None) -> None:
        """Add a batch of rows: ``scores`` ``(rows, candidates)`` (numpy, a torch tensor
        on any device, ragged rows or flat values with ``offsets``, as
        :func:`~tieeval.evaluate` takes them); their relevance (``positive``, default
        column 0, ``positives`` / ``negatives`` or ``labels``), ``items`` and ``ranking``
        as ``evaluate`` takes them. A ``-inf`` score is a masked candidate, as in
        ``evaluate``: it ranks below every finite score and never ties with a finite
        positive."""
        where = f"the batch from row {self.rows}"
        if (_is_tensor(scores) and labels is None and negatives is None and items is None
                and offsets is None and ranking is None and scores.dim() == 2
                and scores.shape[0] > 0 and scores.shape[1] > 0
                and (positive is None or positives is None)):
            done = self._update_device(scores, positive, positives, where)
            if done:
                return
        arrays = {"scores": scores, "positive": positive, "labels": labels,
                  "positives": positives, "negatives": negatives, "items": items,
                  "offsets": offsets, "ranking": ranking}
        arrays = {name: _host(value) for name, value in arrays.items()}
        given = arrays["scores"]
        if (len(given) == 0 if isinstance(given, (list, tuple)) else
                len(getattr(given, "shape", ())) == 2 and given.shape[0] == 0):
            return  # a batch without rows (0 rows of a 2-D array, an empty list)
        batch, info = array_batch(**arrays, path=self.path)
        batch.start = self.rows
        kind = None if info is None else (info.source, info.items, tuple(info.fields))
        kernel = self._start(kind, batch.scores.dtype, where)
        self._add(kernel, batch)

    def _add(self, kernel: Kernel, batch: Batch) -> None:
        assert self._acc is not None
        self._flush()  # the rows counted on their device come first
        part = kernel.new()  # a failing batch leaves the sums as they were
        if self.keep_values:
            _, values = kernel.add_values(part, batch)
            self._values.append(values)
        else:
            kernel.add(part, batch)
        self._acc.merge(part)
        self.rows += batch.rows

    def _update_device(self, scores: Any, positive: Any, positives: Any, where: str) -> bool:
        """A dense torch batch with one positive per row (``positive``, or ``positives``
        one column per row), counted on its device; False where the batch is read on the
        host instead, as ``evaluate`` reads it: a what-if, NaN ranked worst, relevance
        given otherwise, a metric the counts do not give (:meth:`_route`), a NaN score
        (the host's message names it)."""
        kind = None if positives is None else _POSITIVES
        if self._kernel is not None and kind != self._kind:
            return False  # the host path says what differs
        route = self._route(kind)
        if route is None:
            return False
        kernel, depth, k = route
        single = isinstance(kernel, SinglePositiveKernel)
        dtype = self._dtypes.get(scores.dtype)
        if dtype is None:
            from tieeval.kernels.device import numpy_dtype
            dtype = numpy_dtype(scores, self.path)
            check_score_dtype(self.path, dtype, "scores")
            self._dtypes[scores.dtype] = dtype
        rows, cols = int(scores.shape[0]), int(scores.shape[1])
        if kind is None:
            from tieeval.engine.arrays import _positive_column
            pos = _positive_column(0 if positive is None else _host(positive),
                                   np.full(rows, cols, dtype=np.int64), self.path)
        else:  # one column per row ((rows,) or (rows, 1) integers, each a column of its
            # row); else (-1 padding, several per row ...) the host reads and checks them
            given = _host(positives)
            if isinstance(given, (list, tuple)):
                return False
            pos = np.asarray(given)
            if pos.dtype.kind not in "iu" or pos.shape not in ((rows,), (rows, 1)):
                return False
            pos = pos.reshape(rows).astype(np.int64, copy=False)
            if rows and (int(pos.min()) < 0 or int(pos.max()) >= cols):
                return False
        self._start(kind, dtype, where)
        from tieeval.kernels import device
        counts = device.row_counts(scores, pos, kernel, depth, k)
        if counts is None:
            return False  # a NaN score: the host's message names its row
        if self._pending and int(self._pending[0].n[0]) != cols:
            self._flush()  # one table per width
        if self.keep_values and single:
            from tieeval.kernels.closed_forms import single_positive
            self._values.append([single_positive(m, counts.a, counts.b, counts.original)
                                 for m in kernel.metrics])  # type: ignore[attr-defined]
        self._pending.append(counts)
        self._pending_rows += rows
        self.rows += rows
        if self._pending_rows >= PENDING_ROWS or (self.keep_values and not single):
            self._flush()
        return True

    def _route(self, kind: tuple[Any, ...] | None) -> _Route | None:
        """The kernel of a batch whose relevance is of ``kind`` (its device counts reach the
        sums by the single-positive kernel's
        :meth:`~tieeval.kernels.single.SinglePositiveKernel.add_counts`, or the general
        kernel's sparse table of one relevant item per row,
        :meth:`~tieeval.kernels.general.GeneralKernel.add_counts`), the rank depth
        below which no Original rank is read and the depth ``torch.topk`` lists
        (:func:`~tieeval.kernels.device.row_counts`); None where the batch is read on
        the host. Decided once per kind."""
        if kind in self._routes:
            return self._routes[kind]
        from tieeval.kernels import device
        from tieeval.kernels.general import GeneralKernel
        kernel = self._kernel if self._kernel is not None else self._kernel_of(kind)
        route: _Route | None = None
        k = device.list_depth(kernel) if kernel.spec.original == "topk" else None
        if device.counts_on_device(kernel):
            if isinstance(kernel, SinglePositiveKernel):
                route = (kernel, None, k)
            elif isinstance(kernel, GeneralKernel) and kernel.one_relevant_table():
                route = (kernel, kernel.rank_depth, k)
        self._routes[kind] = route
        return route

    def _flush(self) -> None:
        """Add the counts of the batches counted on their device to the sums (a few
        thousand rows at a time: the sums' own work is per call, not per row)."""
        if not self._pending:
            return
        assert self._kernel is not None and self._acc is not None
        pending, self._pending, self._pending_rows = self._pending, [], 0
        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(c, name) for c in pending])
        counts = RowCounts(a=joined("a"), b=joined("b"), n=joined("n"), top=joined("top"),
                           original=joined("original"))
        if isinstance(self._kernel, SinglePositiveKernel):
            self._kernel.add_counts(self._acc, counts)
            return
        from tieeval.kernels.general import GeneralKernel
        assert isinstance(self._kernel, GeneralKernel)
        values = self._kernel.add_counts(self._acc, counts, self.keep_values)
        if values is not None:
            self._values.append(values)

    def merge(self, other: "TieAware") -> None:
        """Add the rows ``other`` has seen (another shard, another process's batches):
        the figures are those of both objects' rows together. Both must have the same
        options and relevance kind."""
        if not isinstance(other, TieAware):
            raise ParameterError(f"merge takes another TieAware, got {type(other).__name__}")
        if other.request != self.request:
            raise ParameterError("merge: the two TieAware objects were made with different "
                                 "options")
        if other._kernel is None or other._acc is None:
            return
        other._flush()
        self._flush()
        if self._kernel is not None and other._kind != self._kind:
            raise ParameterError(f"merge: {_describe(other._kind)} and "
                                 f"{_describe(self._kind)} do not merge")
        if self._kernel is not None and other._dtype != self._dtype:
            raise InputError(f"merge: {other._dtype} and {self._dtype} scores do not merge "
                             "(ties are judged in the scores' own dtype)")
        assert other._dtype is not None
        self._start(other._kind, other._dtype, "", other._kernel)
        assert self._acc is not None
        self._acc.merge(other._acc)
        if self.keep_values:
            self._values.extend(other._values)
        self.rows += other.rows

    # -- results -------------------------------------------------------------------------

    def compute(self) -> RunResult:
        """The :class:`~tieeval.records.results.RunResult` of every row seen: what
        :func:`tieeval.evaluate` gives on those rows at once. The state is left as it was
        (more batches may follow)."""
        if self._kernel is None or self._acc is None or self.rows == 0:
            raise InputError(f"{self.path}: no instances (nothing was given to update)")
        self._flush()
        # a kernel that settles its tables into the sums works on a copy (more rows may
        # follow); the others only read them
        acc = copy.deepcopy(self._acc) if self._kernel.settles else self._acc
        return self._kernel.result(acc, self.path, self._dtype, dict(self.request.run_labels))

    def instance_values(self) -> dict[Any, InstanceValues]:
        """Every row's values per output row of the result, in the order the rows came
        (``keep_values=True``): the key is the metric, or ``(metric, gamma)`` for a signed
        metric."""
        if not self.keep_values:
            raise ParameterError("instance_values needs TieAware(..., keep_values=True)")
        if self._kernel is None:
            return {}
        self._flush()
        from tieeval.engine.consumers import _concat as concat_values
        out = {}
        for i, entry in enumerate(self._kernel.entries):
            key = entry.metric if entry.gamma is None else (entry.metric, entry.gamma)
            out[key] = concat_values([values[i] for values in self._values])
        return out

    def __repr__(self) -> str:
        return f"TieAware({self.path!r}, rows={self.rows})"


_POSITIVES = ("positives", False, ("positives",))
"""The relevance kind of a batch given ``positives`` (and nothing else)."""


def _describe(kind: tuple[Any, ...] | None) -> str:
    if kind is None:
        return "one positive per row"
    source, _, fields = kind
    return f"relevance from {', '.join(fields) or source}"
