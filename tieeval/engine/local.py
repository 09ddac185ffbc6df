"""Run evaluation: batches of a dump -> per-instance values -> exact dataset means.

The accumulator keeps only sums (integer counts and :class:`~tieeval.kernels.summation.ExactSum`),
so batches can be processed in any order, on any number of workers, and merged, and the
result does not depend on the split.
"""

from __future__ import annotations

import inspect
import os
from typing import Iterable, Iterator

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.io.base import Batch, Dump, ReadAgain, ReadOptions
from tieeval.io.checks import resolve_positive
from tieeval.io.open import open_dump
from tieeval.kernels import fused as fused
from tieeval.kernels.closed_forms import single_positive
from tieeval.kernels.counts import check_nan_policy
from tieeval.kernels.duplicates import DuplicateCheck
from tieeval.kernels.general_sums import RelAccumulator, expand, one_hot, rel_batch
from tieeval.kernels.single import Accumulator, accumulate, batch_counts
from tieeval.metrics.metric import DEFAULT_KS, DefaultMetrics, Metric, default_metrics
from tieeval.metrics.options import DEFAULT_OPTIONS, RelOptions, default_rel_metrics
from tieeval.results import RunResult


def wants_general_path(dump, metrics, options: RelOptions | None) -> bool:
    """Whether ``dump`` with ``metrics`` needs this module rather than the sort-free path."""
    info = getattr(dump, "relevance", None)
    if info is not None and (info.source is not None or info.items):
        return True
    if options is not None and options.changes_single_positive:
        return True
    return metrics is not None and not all(m.single_positive for m in metrics)


def _tick(progress):
    pass
    return progress_callback(progress) or (lambda rows, nbytes: None)


def choose_metrics(metrics, info) -> list[Metric]:
    """The user's metrics, or the default set of the dump's kind."""
    if metrics is None:
        from tieeval.metrics.metric import DEFAULT_KS
        return default_rel_metrics(DEFAULT_KS)
    if isinstance(metrics, DefaultMetrics) and info is not None and info.source is not None:
        return default_rel_metrics(metrics.ks)
    return [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]


def evaluate_general(dump, metrics=None, *, nan_policy: str = "raise", batch_rows=None,
                     labels: dict | None = None, progress=None,
                     relevance: RelOptions | None = None) -> RunResult:
    """Evaluate an opened dump through the general kernel (see the module docstring).

    A reader that changes how it reads part-way (:class:`tieeval.io.base.ReadAgain`: long rows
    not sorted by instance, or a long label column found to hold relevance labels) starts
    the run over; ``progress`` then receives negative values that take back what it saw.
    """
    from tieeval.io.base import ReadAgain
    from tieeval.kernels.counts import check_nan_policy
    check_nan_policy(nan_policy)
    tick = _tick(progress)
    for _ in range(3):
        done = [0, 0]

        def counted(rows, nbytes):
            done[0] += rows
            done[1] += nbytes
            tick(rows, nbytes)
        try:
            return _evaluate_general(dump, metrics, nan_policy, batch_rows, labels, counted,
                                     relevance)
        except ReadAgain as exc:
            if done[0] or done[1]:
                tick(-done[0], -done[1])
            dump.start_over(exc)
    raise InputError(f"{dump.path}: the reader could not settle on a way to read it")


def _evaluate_general(dump, metrics, nan_policy, batch_rows, labels, tick, relevance):
    from tieeval.kernels.single import Accumulator, batch_counts
    options = relevance or DEFAULT_OPTIONS
    info = getattr(dump, "relevance", None)
    source = info.source if info is not None else None
    metrics = choose_metrics(metrics, info)
    dups = DuplicateCheck() if info is not None and info.items else None
    merged = {**dump.metadata, **(labels or {})}
    fast = (source is None and all(m.single_positive for m in metrics)
            and not options.changes_single_positive)
    if fast:  # a single-positive dump with item ids: the sort-free path plus the check
        acc = Accumulator(list(metrics))
        for batch in dump.batches(batch_rows):
            acc.add(batch_counts(batch, nan_policy, dump.path))
            if dups is not None and batch.items is not None:
                dups.add(batch.scores, batch.items, batch.offsets, one_hot(batch))
            tick(batch.rows, batch.nbytes)
        base = acc.result(dump.path, dump.dtype, merged)
        entries, lines = dups.report(dump.path) if dups is not None else (None, [])
        base.data_warnings = entries
        base.warnings[:0] = list(dump.warnings) + lines
        return base
    entries = expand(metrics, options)
    ks = [m.k for m in metrics if m.k is not None]
    acc = RelAccumulator(entries, ks, options.both)
    original = info.original if info is not None else "argsort"
    for batch in dump.batches(batch_rows):
        lab = batch.labels if source is not None else one_hot(batch)
        if lab is None:
            raise InputError(f"{dump.path}: {batch.where(0)}: no relevance labels")
        rb = rel_batch(batch, lab, nan_policy, dump.path, original)
        acc.add(rb)
        if dups is not None and batch.items is not None:
            dups.add(batch.scores, batch.items, batch.offsets, np.asarray(lab) > 0)
        tick(batch.rows, batch.nbytes)
    data_entries, lines = dups.report(dump.path) if dups is not None else (None, [])
    result = acc.result(dump.path, dump.dtype, merged, source or "positive", options,
                        data_entries)
    result.warnings[:0] = list(dump.warnings) + lines
    return result


def evaluate_labels(scores, labels, offsets=None, *, k=(1, 5, 10), metrics=None,
                    items=None, gamma=1.0, gain: str = "linear", discount: str = "log2",
                    alpha: float = 1.0, log_base: float = 2.0, short_list: str = "pad",
                    ap_norm: str = "R", both: bool = False, nan_policy: str = "raise",
                    path: str = "<array>") -> RunResult:
    """Evaluate in-memory labelled rows: the Python form of ``tieeval compare`` on a dump
    with ``labels``.

    ``scores`` and ``labels`` are ``(instances, candidates)`` arrays, or flat arrays with
    ``offsets`` (``instances + 1`` row boundaries). Labels: ``> 0`` relevant with that gain,
    ``0`` unobserved, ``< 0`` an explicit negative. ``items`` (same layout) enables the
    duplicate check. ``gamma`` is one value or several (one row per gamma for signed
    metrics). Without ``metrics``: HR@K, Recall@K, NDCG@K for every ``k``, MRR and MAP.

    >>> import numpy as np
    >>> r = evaluate_labels(np.array([[0.9, 0.9, 0.1]]), np.array([[1, 0, 2]]),
    ...                     metrics=["HR@1", "NDCG@3"])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.0, 0.5)
    """
    from tieeval.io.base import Batch
    s = np.asarray(scores)
    lab = np.asarray(labels)
    if s.dtype == object or lab.dtype == object:
        raise InputError("scores and labels must be numeric arrays (ragged rows? pass flat "
                         "arrays with offsets)")
    if offsets is None and s.ndim != 2:
        raise InputError(f"{path}: scores must be a 2-D (instances, candidates) array or flat "
                         f"with offsets, got shape {s.shape}")
    if s.shape != lab.shape:
        raise InputError(f"{path}: scores and labels differ in shape: {s.shape} vs "
                         f"{lab.shape}")
    if s.shape[0] == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    options = RelOptions(gain=gain, discount=discount, alpha=alpha, gammas=gamma,
                         short_list=short_list, ap_norm=ap_norm, both=both, base=log_base)
    if metrics is None:
        chosen = default_rel_metrics(list(k))
    else:
        chosen = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
    off = None if offsets is None else np.asarray(offsets)
    rows = s.shape[0] if off is None else off.size - 1
    batch = Batch(s, np.zeros(rows, dtype=np.int64), 0, off)
    entries = expand(chosen, options)
    acc = RelAccumulator(entries, [m.k for m in chosen if m.k is not None], options.both)
    acc.add(rel_batch(batch, lab, nan_policy, path))
    dup_entries, lines = None, []
    if items is not None:
        dups = DuplicateCheck()
        it = np.asarray(items)
        if it.shape != s.shape:
            raise InputError(f"{path}: items and scores differ in shape: {it.shape} vs "
                             f"{s.shape}")
        dups.add(s, it, off, lab > 0)
        dup_entries, lines = dups.report(path)
    result = acc.result(path, s.dtype, {}, "labels", options, dup_entries)
    result.warnings[:0] = lines
    return result


def evaluate_scores_general(arr, positive, metrics, *, nan_policy="raise",
                            path="<array>") -> RunResult:
    """:func:`tieeval.evaluate` for metrics beyond HR@K / NDCG@K / MRR: one-hot labels."""
    from tieeval.io.base import Batch
    batch = Batch(arr, positive, 0)
    acc = RelAccumulator(expand(metrics, DEFAULT_OPTIONS),
                         [m.k for m in metrics if m.k is not None])
    acc.add(rel_batch(batch, one_hot(batch), nan_policy, path))
    return acc.result(path, arr.dtype, {}, "positive", DEFAULT_OPTIONS)


def progress_callback(progress):
    """Adapt ``progress``: callbacks take (rows, nbytes), or just rows; None stays None."""
    if progress is None:
        return None
    try:
        inspect.signature(progress).bind(0, 0)
        return progress
    except (TypeError, ValueError):
        return lambda rows, nbytes: progress(rows)


def check_jobs(jobs) -> int:
    """``jobs``: worker processes; 0 or None means one per available core."""
    if jobs is None or (isinstance(jobs, int) and not isinstance(jobs, bool) and jobs == 0):
        return available_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 0:
        raise ParameterError(f"jobs must be a whole number >= 0 (0: every core), got {jobs!r}")
    return int(jobs)


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def evaluate_dump(dump: Dump, metrics: list[Metric] | None = None, *, nan_policy: str = "raise",
                  batch_rows: int | None = None, labels: dict | None = None,
                  progress=None, jobs: int = 1, relevance=None) -> RunResult:
    """Evaluate an opened dump.

    ``batch_rows``: rows per batch (None: about 16 MB of scores); the result does not depend
    on it. ``jobs``: worker processes (1: this process; 0: one per core); the result does
    not depend on it either. ``progress(rows, nbytes)`` (or ``progress(rows)``) is called
    after each batch or part; negative values take back a run that had to start over.
    ``relevance``: options of the general path (:class:`tieeval.metrics.options.RelOptions`).

    A long-layout dump whose label column turns out to hold relevance labels (graded,
    signed, several positives) is handed to the general path part-way, from the start.
    """
    requested = metrics = default_metrics(DEFAULT_KS) if metrics is None else metrics
    pass
    if wants_general_path(dump, metrics, relevance):  # labelled rows, or other metrics
        return evaluate_general(dump, metrics, nan_policy=nan_policy, batch_rows=batch_rows,
                                labels=labels, progress=progress, relevance=relevance)
    metrics = list(metrics)
    check_nan_policy(nan_policy)
    jobs = check_jobs(jobs)
    size = dump.batch_size(batch_rows)
    report = progress_callback(progress)
    fused.use(fused.wanted(dump.nbytes))
    for _ in range(3):
        done = [0, 0]

        def tick(rows, nbytes):
            done[0] += rows
            done[1] += nbytes
            if report is not None:
                report(rows, nbytes)
        try:
            if jobs > 1:
                from tieeval.engine.parallel import accumulate_parallel
                acc = accumulate_parallel(dump, metrics, jobs=jobs, nan_policy=nan_policy,
                                          batch_rows=size, progress=tick)
            else:
                acc = accumulate(dump.batches(size), metrics, nan_policy, dump.path, tick)
            break
        except InputError:
            dump.verify()  # a damaged input explains the data error: report the damage
            raise
        except ReadAgain as exc:  # the reader changed strategy (long layout): start over
            if report is not None and (done[0] or done[1]):
                report(-done[0], -done[1])
            dump.start_over(exc)
            if wants_general_path(dump, requested, relevance):  # relevance labels after all
                return evaluate_general(dump, requested, nan_policy=nan_policy,
                                        batch_rows=batch_rows, labels=labels,
                                        progress=progress, relevance=relevance)
    else:  # pragma: no cover - a reader restarts at most twice
        raise InputError(f"{dump.path}: the reader could not settle on a way to read it")
    merged = {**dump.metadata, **(labels or {})}
    result = acc.result(dump.path, dump.dtype, merged)
    result.warnings[:0] = list(dump.warnings)
    return result


def evaluate_path(path: str, metrics: list[Metric] | None = None, *,
                  options: ReadOptions | None = None, **kwargs) -> RunResult:
    """Open and evaluate one dump file."""
    return evaluate_dump(open_dump(path, options), metrics, **kwargs)


def _as_array(scores) -> np.ndarray:
    # Accept anything with __array__ (a CPU torch tensor, a list of lists) without importing
    # the library it comes from; never cast the dtype.
    arr = np.asarray(scores)
    if arr.dtype == object:
        raise InputError("scores must be a numeric (instances, candidates) array, "
                         "got an object array (ragged rows?)")
    return arr


def evaluate(scores, k: Iterable[int] = DEFAULT_KS, positive=None, *,
             metrics: Iterable[Metric | str] | None = None, nan_policy: str = "raise",
             path: str = "<array>") -> RunResult:
    """Evaluate an in-memory score matrix ``scores[instances, candidates]``.

    ``positive`` is each row's positive column (an int, or one int per row; default 0).
    Returns a :class:`~tieeval.results.RunResult` whose ``to_dict()`` matches the JSON
    contract of ``tieeval compare``.

    >>> import numpy as np
    >>> r = evaluate(np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]], dtype=np.float32), k=[1])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.5, 0.75)
    """
    arr = _as_array(scores)
    from tieeval.io.checks import _check_matrix
    _check_matrix(path, arr, "scores")
    if metrics is None:
        chosen = default_metrics(list(k))
    else:
        chosen = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
    lengths = np.full(arr.shape[0], arr.shape[1], dtype=np.int64)
    pos = np.zeros(arr.shape[0], dtype=np.int64) if positive is None else positive
    pos = np.broadcast_to(np.asarray(pos), (arr.shape[0],))
    pos = resolve_positive(path, pos, lengths, 0)
    check_nan_policy(nan_policy)
    if not all(m.single_positive for m in chosen):  # e.g. Recall@K: the general kernel
        pass
        return evaluate_scores_general(arr, pos, chosen, nan_policy=nan_policy, path=path)
    acc = Accumulator(chosen)
    acc.add(batch_counts(Batch(arr, pos, 0), nan_policy, path))
    return acc.result(path, arr.dtype)


def iter_instance_values(dump: Dump, metrics: list[Metric], *, nan_policy: str = "raise",
                         batch_rows: int | None = None) -> Iterator[tuple[Batch, dict]]:
    """Per-batch, per-instance values: ``(batch, {metric: InstanceValues})``, for
    single-positive dumps."""
    check_nan_policy(nan_policy)
    dump.settle()
    pass
    if wants_general_path(dump, [], None):
        raise InputError(f"{dump.path}: has relevance labels; per-instance values cover the "
                         "single-positive protocol only")
    for batch in dump.batches(batch_rows):
        counts = batch_counts(batch, nan_policy, dump.path)
        yield batch, {m: single_positive(m, counts.a, counts.b, counts.original)
                      for m in metrics}
