"""The pipeline on this machine: open -> batches -> kernel -> accumulator -> result.

:func:`evaluate_dump` reads every batch of an opened dump through the kernel chosen for it
(:func:`tieeval.kernels.choose.choose_kernel`, once per pass over the dump) into one
:class:`~tieeval.kernels.accumulator.Accumulator`, in this process or in worker processes
(:mod:`tieeval.engine.parallel`), and returns one :class:`~tieeval.results.RunResult`.
The accumulator keeps only exact sums, so the result does not depend on the batch size,
the split or the number of workers.

A reader may learn part-way that it must read differently (a long layout whose rows are
not sorted by instance, or whose label column holds relevance labels): it raises
:class:`~tieeval.io.base.ReadAgain`, and the run starts over with the kernel chosen anew
for what the dump now says it carries.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from typing import Iterator

import numpy as np

from tieeval.engine.arguments import (
    check_batch_rows,
    check_engine,
    check_flag,
    check_path,
    metric_list,
    rel_options,
    run_labels_of,
    what_if_of,
)
from tieeval.errors import InputError, ParameterError
from tieeval.io.base import Dump, ReadAgain, ReadOptions, RelevanceInfo, RelevanceReadOptions
from tieeval.io.open import open_dump
from tieeval.io.trec import check_missing_queries
from tieeval.kernels import fused
from tieeval.kernels.base import Entry, InstanceValues, Kernel
from tieeval.kernels.choose import choose_kernel, spec_for
from tieeval.kernels.counts import check_nan_policy
from tieeval.kernels.single import SinglePositiveKernel
from tieeval.kernels.threads import available_cores
from tieeval.metrics.metric import DEFAULT_KS, Metric
from tieeval.metrics.options import RelOptions
from tieeval.records.batch import Batch
from tieeval.results import RunResult

AUTO_POOL_MIN_CORES = 5  # with fewer cores, --jobs 0 starts worker processes only for NPY
AUTO_POOL_FEW_CORES_BYTES = 1 << 30  # and stored NPZ matrices from this size: below it one
# process that evaluates batches and sorts rows on every core (threads) measured as fast
# as a pool on 2 cores, or faster; on a 4 GB NPY a pool gained about 10%
# (benchmarks/bench_scale.py)
AUTO_POOL_BYTES = 256 << 20  # --jobs 0 starts worker processes for dumps from this size
# ... and, for a memory-mapped single-positive matrix (NPY, stored NPZ), only when the
# estimated single-core time of its Original sorts is at least this: in one process the
# counts and the sorts already use every core (threads), so worker processes win back their
# start-up (about 0.4 s, and a copy of the batches per worker) only on long sort work.
AUTO_POOL_SORT_SECONDS = 2.0
# np.argsort of n scores costs about this many seconds per n * log2(n) on one core
# (float32, measured on the benchmark machine, benchmarks/bench_floor.py)
SORT_SECONDS_PER_NLOGN = 2e-9
SAMPLE_SCORES = 1 << 20  # the first-batch sample that estimates the sort work
_MAX_PASSES = 3  # a reader restarts at most twice (unsorted, then relevance labels)


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


def kernel_for(dump: Dump, metrics=None, *, relevance: RelOptions | None = None,
               nan_policy: str = "raise", what_if=None, original: str | None = None) -> Kernel:
    """The kernel that evaluates ``dump`` as it reads now (see
    :func:`tieeval.kernels.choose.spec_for`); ``original``: the Original column's rule
    (None: the dump's default)."""
    check_query_options(dump, relevance)
    spec = spec_for(getattr(dump, "relevance", None), metrics, options=relevance,
                    nan_policy=nan_policy, what_if=what_if, path=dump.path,
                    original=original)
    return choose_kernel(spec)


def check_query_options(dump: Dump, relevance: RelOptions | None) -> None:
    """``judged_only`` with ``depth`` is refused: trec_eval cuts the ranking at ``-M``
    before it drops the unjudged documents, an order a reader that drops them first cannot
    follow."""
    query_set = getattr(dump, "query_set", None)
    if (query_set is not None and query_set.judged_only
            and getattr(relevance, "depth", None) is not None):
        raise ParameterError("--judged-only cannot be combined with --depth (trec_eval -J "
                             "-M cuts the ranking at depth before dropping unjudged "
                             "documents); give one of them")


def trec_query_report(result: RunResult, dump: Dump, relevance: RelOptions | None) -> None:
    """Put a TREC run's query set in ``result``: ``relevance.queries`` (the counts) and,
    when a query is left out or counted as 0 without results, a ``trec_queries`` data
    warning and a warning line."""
    query_set = getattr(dump, "query_set", None)
    if query_set is None or result.relevance is None:
        return
    summary, warning = query_set.report(getattr(relevance, "relevance_level", None),
                                        getattr(relevance, "no_relevant", "skip"))
    result.relevance["queries"] = summary
    if warning is not None:
        result.data_warnings = [*(result.data_warnings or []), warning]
        result.warnings.append(warning["message"])


def run_passes(dump: Dump, make_kernel, consume, progress=None):
    """``consume(kernel, tick)`` over ``dump`` with the kernel ``make_kernel()`` picks,
    again from the start when the reader asks to (:class:`ReadAgain`); ``progress``
    receives negative values that take back what a restarted pass reported."""
    report = progress_callback(progress)
    for _ in range(_MAX_PASSES):
        done = [0, 0]

        def tick(rows, nbytes, *, done=done):
            done[0] += rows
            done[1] += nbytes
            if report is not None:
                report(rows, nbytes)
        kernel = make_kernel()
        try:
            return kernel, consume(kernel, tick)
        except InputError:
            dump.verify()  # a damaged input explains the data error: report the damage
            raise
        except ReadAgain as exc:  # the reader changed strategy (long layout): start over
            if report is not None and (done[0] or done[1]):
                report(-done[0], -done[1])
            dump.start_over(exc)
    raise InputError(f"{dump.path}: the reader could not settle on a way to read it")


def evaluate_dump(dump: Dump, metrics: list[Metric] | None = None, *, nan_policy: str = "raise",
                  batch_rows: int | None = None, labels: dict | None = None,
                  progress=None, jobs: int = 1, relevance: RelOptions | None = None,
                  what_if=None, run_labels: dict | None = None,
                  original: str | None = None) -> RunResult:
    """Evaluate an opened dump.

    ``metrics``: Metric values or names (None: the defaults of the dump's kind).
    ``batch_rows``: rows per batch (None: about 16 MB of scores); the result does not depend
    on it. ``jobs``: worker processes (1: this process; 0: one per core); the result does
    not depend on it either. ``progress(rows, nbytes)`` (or ``progress(rows)``) is called
    after each batch or part; negative values take back a run that had to start over.
    ``relevance``: options of labelled metrics (:class:`tieeval.metrics.options.RelOptions`).
    ``what_if``: a :class:`tieeval.records.whatif.WhatIf` (cast and/or tolerance); the
    result then carries it. ``run_labels`` (``labels``, its older name): method / dataset /
    task / seed over the dump's own metadata, as ``--meta`` sets them; not relevance labels,
    which a dump carries in its ``labels`` field. ``original``: the Original column's rule,
    one of :data:`tieeval.results.ORIGINAL_RULES` (None: ``argsort``, or ``trec`` for TREC
    runs; ``given`` reads the dump's ``ranking`` field); the result records a rule other
    than that default as ``original_rule``.
    """
    check_nan_policy(nan_policy)
    auto = jobs is None or (isinstance(jobs, int) and not isinstance(jobs, bool) and jobs == 0)
    jobs = check_jobs(jobs)
    if auto and dump.nbytes and dump.nbytes < AUTO_POOL_BYTES:
        # Below this the sorts already use every core in this process (threads), and a
        # pool of worker processes costs more to start than it saves.
        jobs = 1
    given = {**(labels or {}), **(run_labels or {})}
    dump.batch_size(batch_rows)  # a bad batch_rows fails before any reading

    def make_kernel():
        kernel = kernel_for(dump, metrics, relevance=relevance, nan_policy=nan_policy,
                            what_if=what_if, original=original)
        # the fused numba count kernel serves the single-positive counts of big dumps
        fused.use(isinstance(kernel, SinglePositiveKernel) and fused.wanted(dump.nbytes))
        return kernel

    def consume(kernel, tick):
        size = kernel.batch_rows(dump, batch_rows)
        workers = auto_jobs(dump, kernel, jobs) if auto else jobs
        if workers > 1:
            from tieeval.engine.parallel import accumulate_parallel
            return accumulate_parallel(dump, kernel, jobs=workers, batch_rows=size,
                                       progress=tick)
        from tieeval.engine.readahead import read_ahead
        return kernel.accumulate(read_ahead(dump.batches(size)), tick)

    kernel, acc = run_passes(dump, make_kernel, consume, progress)
    result = kernel.result(acc, dump.path, dump.dtype, {**dump.metadata, **given},
                           dump.warnings)
    trec_query_report(result, dump, relevance)
    return result


def auto_jobs(dump: Dump, kernel: Kernel, cores: int) -> int:
    """Worker processes for ``--jobs 0`` (``cores`` available), following the work.

    This process already evaluates batches on every core (threads). With fewer than
    :data:`AUTO_POOL_MIN_CORES` cores a pool pays only for an NPY or stored NPZ matrix of
    :data:`AUTO_POOL_FEW_CORES_BYTES` or more (a Parquet worker holds its decoded row
    groups: two of them would double the memory for a tenth of the time). A memory-mapped
    single-positive matrix costs little to read: a pool pays only for a long Original
    sort, estimated from the first rows (:func:`sort_seconds`). With more cores, other
    dumps (decoded Parquet row groups, labelled rows) keep the size rule: a pool from
    :data:`AUTO_POOL_BYTES`.
    """
    if cores <= 1:
        return 1
    matrix = dump.format in ("npy", "npz") and bool(dump.parts) and bool(dump.rows)
    if cores < AUTO_POOL_MIN_CORES and not (matrix
                                             and dump.nbytes >= AUTO_POOL_FEW_CORES_BYTES):
        return 1
    if not (isinstance(kernel, SinglePositiveKernel) and matrix):
        return cores
    if kernel.spec.what_if is not None:
        return cores  # a cast makes its own ties, which the stored scores do not show
    if kernel.spec.original != "argsort":
        return 1  # the other rules are counted without a sort
    return cores if sort_seconds(dump) >= AUTO_POOL_SORT_SECONDS else 1


def sort_seconds(dump: Dump) -> float:
    """Single-core seconds of the dump's Original sorts, from its first rows: the share of
    rows whose positive is tied, times rows, times ``n log2 n`` of a row's ``n`` scores."""
    cols = max(1, dump.row_bytes // max(1, np.dtype(dump.dtype).itemsize))
    rows = max(1, min(int(dump.rows or 0), SAMPLE_SCORES // cols))
    try:
        batch = next(iter(dump.parts[0].batches(rows)))  # type: ignore[index]
    except (StopIteration, InputError, ReadAgain):
        return 0.0
    if batch.offsets is not None or batch.rows == 0:
        return 0.0
    scores = np.asarray(batch.scores)
    p = scores[np.arange(batch.rows), batch.positive][:, None]
    tied = np.count_nonzero(np.count_nonzero(scores == p, axis=1) > 1) / batch.rows
    cols = scores.shape[1]
    return tied * int(dump.rows or 0) * cols * math.log2(max(2, cols)) * SORT_SECONDS_PER_NLOGN


def evaluate_path(path, metrics=None, *, k=DEFAULT_KS, jobs: int | None = 1,
                  engine: str = "local", options: ReadOptions | None = None,
                  nan_policy: str = "raise", batch_rows: int | None = None, progress=None,
                  gamma=1.0, gain: str | None = None, discount: str | None = None,
                  alpha: float = 1.0, log_base: float = 2.0, short_list: str | None = None,
                  ap_norm: str | None = None, both: bool = False,
                  no_relevant: str | None = None, convention: str | None = None, qrels=None,
                  missing_queries: str | None = None, judged_only: bool = False,
                  relevance_level: int | None = None, depth: int | None = None,
                  what_if=None, cast: str | None = None,
                  tolerance: float | None = None, run_labels: dict | None = None,
                  original: str | None = None,
                  relevance: RelOptions | None = None, labels: dict | None = None
                  ) -> RunResult:
    """Open and evaluate one dump file: the Python form of ``tieeval compare PATH``.

    ``metrics``: a name (``"NDCG@10"``, ``"MRR"``), a :class:`Metric`, or a list of them;
    None gives the defaults for ``k`` (one cutoff or several) of the dump's kind.
    ``jobs``: worker processes (1: this process; 0 or None: one per core); ``engine``:
    ``"local"`` or ``"spark"`` (:func:`tieeval.engine.spark.evaluate_path`; needs pyspark).
    ``options``: field names and layout (:class:`~tieeval.io.base.ReadOptions`, or
    :class:`~tieeval.io.base.RelevanceReadOptions` for renamed relevance fields); ``qrels``
    reads ``path`` as a TREC run judged by that qrels file; then ``missing_queries``
    (``"skip"``, the default, or ``"zero"``: trec_eval ``-c``, judged queries the run does
    not answer count 0) and ``judged_only`` (trec_eval ``-J``: unjudged documents leave the
    ranking; not with ``depth``) choose its query set and documents. ``relevance_level``
    (trec_eval ``-l``: relevant means label >= N) and ``depth`` (trec_eval ``-M``: the top
    N documents of each ranking) apply to every labelled dump. ``gamma``, ``gain``,
    ``discount``, ``alpha``, ``log_base``, ``short_list``, ``ap_norm``, ``both``,
    ``no_relevant``: the labelled options, as on the command line (or
    ``relevance=RelOptions(...)``); None is the default, or the ``convention``'s
    (``"paper"``, ``"recbole"``, ``"trec_eval"``, ``"ranx"``, ``"sklearn"``: that
    library's metrics at each ``k`` and its definitions; options given override it).
    ``cast`` / ``tolerance`` (or ``what_if=WhatIf(...)``): a precision what-if.
    ``run_labels``: method / dataset / task / seed for this run, as ``--meta`` (over the
    file's own metadata); ``labels`` is their older keyword. ``batch_rows`` and ``jobs``
    never change the result. Bad arguments raise :class:`~tieeval.errors.ParameterError`,
    bad data :class:`~tieeval.errors.InputError`, with the command line's messages.
    """
    path = check_path(path)
    chosen = metric_list(metrics, k)
    check_nan_policy(nan_policy)
    jobs = check_jobs(jobs)
    batch_rows = check_batch_rows(batch_rows)
    rel = rel_options(relevance, gamma=gamma, gain=gain, discount=discount, alpha=alpha,
                      log_base=log_base, short_list=short_list, ap_norm=ap_norm, both=both,
                      no_relevant=no_relevant, convention=convention,
                      relevance_level=relevance_level, depth=depth)
    what_if = what_if_of(what_if, cast, tolerance)
    names = run_labels_of(run_labels, labels)
    engine = check_engine(engine)
    read = _read_options(options, qrels, missing_queries, judged_only)
    if engine == "spark":
        if what_if is not None:
            raise ParameterError("cast and tolerance run on the local engine only (got "
                                 "engine='spark')")
        from tieeval.engine.spark import evaluate_path as spark_evaluate_path
        from tieeval.engine.spark import refuse_spark
        refuse_spark(read)  # TREC runs are read by the local engine
        result = spark_evaluate_path(path, chosen, options=read, nan_policy=nan_policy,
                                     relevance=rel)
        result.run_labels = {**result.run_labels, **names}
        return result
    return evaluate_dump(open_dump(path, read), chosen, nan_policy=nan_policy,
                         batch_rows=batch_rows, run_labels=names, progress=progress,
                         original=original,
                         jobs=jobs, relevance=rel, what_if=what_if)


def _read_options(options, qrels, missing_queries=None, judged_only=False
                  ) -> ReadOptions | None:
    """``options`` with ``qrels`` (and a TREC run's ``missing_queries`` and
    ``judged_only``) set (a :class:`RelevanceReadOptions` then)."""
    if options is not None and not isinstance(options, ReadOptions):
        raise ParameterError(f"options must be a tieeval.ReadOptions, got {options!r}")
    check_missing_queries(missing_queries)
    judged_only = check_flag("judged_only", judged_only)
    trec = {k: v for k, v in (("missing_queries", missing_queries),
                              ("judged_only", judged_only)) if v not in (None, False)}
    if qrels is None:
        if not trec:
            return options
        if options is None or getattr(options, "qrels", None) is None:
            raise ParameterError(f"{' and '.join(trec)} only "
                                 f"{'applies' if len(trec) == 1 else 'apply'} to TREC runs "
                                 "(give qrels=)")
        return dataclasses.replace(options, **trec)
    qrels = check_path(qrels)
    if isinstance(options, RelevanceReadOptions):
        if options.qrels is not None and options.qrels != qrels:
            raise ParameterError("give qrels= or options.qrels, not both")
        return dataclasses.replace(options, qrels=qrels, **trec)
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(ReadOptions)
             } if options is not None else {}
    return RelevanceReadOptions(**given, qrels=qrels, **trec)


def iter_instance_values(dump: Dump, metrics: list[Metric] | None = None, *,
                         nan_policy: str = "raise", batch_rows: int | None = None,
                         relevance: RelOptions | None = None, what_if=None,
                         original: str | None = None) -> Iterator[tuple[Batch, dict]]:
    """Per-batch, per-instance values: ``(batch, {key: InstanceValues})`` in the kernel's
    entry order; the key is the :class:`Metric`, or ``(Metric, gamma)`` for a signed
    metric (one entry per gamma).

    The dump is settled first (a long layout checks its order and labels), so this is a
    single pass.
    """
    check_nan_policy(nan_policy)
    dump.settle()
    kernel = kernel_for(dump, metrics, relevance=relevance, nan_policy=nan_policy,
                        what_if=what_if, original=original)
    for batch in dump.batches(batch_rows):
        values = kernel.instance_values(batch)
        yield batch, {(e.metric if e.gamma is None else (e.metric, e.gamma)): v
                      for e, v in zip(kernel.entries, values)}


def collect_instance_values(dump: Dump, metrics=None, *, nan_policy: str = "raise",
                            batch_rows: int | None = None, relevance: RelOptions | None = None,
                            what_if=None, progress=None, original: str | None = None
                            ) -> tuple[Kernel, list[InstanceValues], np.ndarray | None]:
    """Every instance's values for each of the kernel's entries, concatenated over
    batches, and the instance ids the reader attached to its batches (the long layout and
    TREC runs; else None). Restarts with the reader when it asks to."""

    def make_kernel():
        return kernel_for(dump, metrics, relevance=relevance, nan_policy=nan_policy,
                          what_if=what_if, original=original)

    def consume(kernel, tick):
        parts, ids = [], []
        for batch in dump.batches(batch_rows):
            parts.append(kernel.instance_values(batch))
            ids.append(batch.ids)
            tick(batch.rows, batch.nbytes)
        return parts, ids

    kernel, (parts, ids) = run_passes(dump, make_kernel, consume, progress)
    if not parts:
        raise InputError(f"{dump.path}: no instances (empty dump)")
    values = [_concat([p[i] for p in parts]) for i in range(len(kernel.entries))]
    batch_ids = None
    if ids and all(i is not None for i in ids):
        batch_ids = np.concatenate([np.asarray(i) for i in ids])
        if batch_ids.dtype == object:
            batch_ids = batch_ids.astype(str)
    return kernel, values, batch_ids


PER_INSTANCE_COLUMNS = ("original", "first", "last", "tie_aware")


def per_instance_name(entry: Entry, column: str) -> str:
    """``NDCG@10_tie_aware``; a signed metric's gamma as ``SNDCG@10_g0.5_tie_aware``."""
    label = str(entry.metric) if entry.gamma is None else f"{entry.metric}_g{entry.gamma:g}"
    return f"{label}_{column}"


def per_instance(dump: Dump, out: str, metrics: list[Metric] | None = None, *,
                 nan_policy: str = "raise", batch_rows: int | None = None,
                 relevance: RelOptions | None = None, what_if=None,
                 original: str | None = None, ids=None, progress=None) -> int:
    """Write one Parquet row per instance of ``dump`` to ``out``; returns the row count.

    Columns: ``instance`` (the ids the reader attaches to batches (long layout, TREC
    query ids); else ``ids``, one per dump row, when given; else the row number), for
    single-positive dumps ``a`` (candidates above the positive), ``b`` (tied with it,
    itself included) and ``original_rank``, then per metric
    ``<metric>_original``, ``_first``, ``_last`` and ``_tie_aware`` (a signed metric once
    per gamma, ``<metric>_g<gamma>_...``); a value is null where the metric is undefined
    for the instance (no relevant item, say), so the mean of a column over its non-null
    rows is the run's figure.

    One pass over the dump, batch by batch (bounded memory), in this process: the rows do
    not depend on ``batch_rows`` or on how the run itself was split. The file is written
    beside ``out`` under a temporary name and renamed when complete.
    """
    import tempfile

    from tieeval.io.arrow import _pyarrow
    pa, pq = _pyarrow()
    check_nan_policy(nan_policy)
    dump.settle()
    kernel = kernel_for(dump, metrics, relevance=relevance, nan_policy=nan_policy,
                        what_if=what_if, original=original)
    report = progress_callback(progress)
    ids = None if ids is None else np.asarray(ids)
    if ids is not None and ids.dtype == object:
        ids = ids.astype(str)
    out = os.fspath(out)
    folder = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(out)}.",
                               suffix=".tmp")
    os.close(fd)
    writer = None
    rows = 0
    try:
        for batch in dump.batches(batch_rows):
            if isinstance(kernel, SinglePositiveKernel):
                counts, values = kernel.instance_counts(batch)
            else:
                counts, values = None, kernel.instance_values(batch)
            if batch.ids is not None:
                inst = np.asarray(batch.ids)
                inst = inst.astype(str) if inst.dtype == object else inst
            elif ids is not None:
                if batch.start + batch.rows > ids.size:
                    raise InputError(f"{dump.path}: {ids.size} instance id(s) for more rows")
                inst = ids[batch.start:batch.start + batch.rows]
            else:
                inst = np.arange(batch.start, batch.start + batch.rows, dtype=np.int64)
            columns = {"instance": pa.array(inst)}
            if counts is not None:
                columns.update(a=pa.array(counts.a), b=pa.array(counts.b),
                               original_rank=pa.array(counts.original))
            for entry, v in zip(kernel.entries, values):
                mask = None if v.defined is None else ~np.asarray(v.defined)
                for column in PER_INSTANCE_COLUMNS:
                    data = np.asarray(getattr(v, column), dtype=np.float64)
                    columns[per_instance_name(entry, column)] = pa.array(data, mask=mask)
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
            rows += batch.rows
            if report is not None:
                report(batch.rows, batch.nbytes)
        if writer is None:
            raise InputError(f"{dump.path}: no instances (empty dump)")
        writer.close()
        writer = None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # a temporary file is private; the output is not
        os.replace(tmp, out)
    except BaseException:
        if writer is not None:
            writer.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return rows


def _concat(values: list[InstanceValues]) -> InstanceValues:
    def cat(name):
        got = [getattr(v, name) for v in values]
        if any(g is None for g in got):
            return None
        return np.concatenate(got)
    return InstanceValues(*(cat(name) for name in ("original", "first", "last", "tie_aware",
                                                   "variance", "tie_decided", "defined")))


# ---------------------------------------------------------------------------------------
# In-memory arrays


class _ArrayDump:
    """An in-memory batch dressed as a dump, so arrays take the one pipeline too."""

    def __init__(self, batch: Batch, path: str, dtype, relevance: RelevanceInfo | None):
        self.batch, self.path, self.dtype, self.relevance = batch, path, dtype, relevance
        self.metadata: dict = {}
        self.warnings: list = []
        self.nbytes = 0
        self.parts = None

    def batch_size(self, batch_rows=None) -> int:
        return max(1, self.batch.rows)

    def batches(self, batch_rows=None):
        yield self.batch

    def verify(self) -> None:
        pass

    def settle(self) -> None:
        pass

    def start_over(self, reason) -> None:  # pragma: no cover - arrays never restart
        raise InputError(f"{self.path}: {reason}")


def evaluate(scores, k=DEFAULT_KS, positive=None, *, labels=None, positives=None,
             negatives=None, items=None, offsets=None, metrics=None, gamma=1.0,
             gain: str | None = None, discount: str | None = None, alpha: float = 1.0,
             log_base: float = 2.0, short_list: str | None = None,
             ap_norm: str | None = None, both: bool = False,
             no_relevant: str | None = None, convention: str | None = None,
             nan_policy: str = "raise", what_if=None,
             cast: str | None = None, tolerance: float | None = None, path: str = "<array>",
             relevance: RelOptions | None = None, run_labels: dict | None = None,
             relevance_level: int | None = None, depth: int | None = None,
             ranking=None, original: str | None = None) -> RunResult:
    """Evaluate in-memory scores: the Python form of ``tieeval compare`` on a dump.

    ``scores``: an ``(instances, candidates)`` array (numpy, a list of equal-length lists,
    anything with ``__array__`` such as a CPU torch tensor; never cast), ragged rows as a
    list of 1-D numpy arrays, or flat values with ``offsets`` (``instances + 1`` row
    boundaries). Relevance, as a dump gives it:

    * ``positive``: each row's one positive column (an int, or one per row; default 0;
      negative counts from the end), the single-positive protocol;
    * ``labels`` in the scores' layout (``> 0`` relevant with that gain, ``0`` unobserved,
      ``< 0`` an explicit negative);
    * ``positives`` / ``negatives``: column indices per row (one int per row, a ``-1``-padded
      2-D array, or a list of lists), read as labels +1 / -1 exactly as from a file.

    ``items`` (the scores' layout) enables the duplicate check. ``k``: one cutoff or
    several; ``metrics`` (a name such as ``"NDCG@10"``, a :class:`Metric`, or a list)
    overrides it. ``gamma`` (one value or several), ``gain``, ``discount``, ``alpha``,
    ``log_base``, ``short_list``, ``ap_norm``, ``both``, ``no_relevant``: the labelled
    options of the command line (or ``relevance=RelOptions(...)``); ``convention`` presets
    the metrics and their definitions as :func:`evaluate_path` does; ``relevance_level``
    (trec_eval ``-l``) and ``depth`` (trec_eval ``-M``) as there. ``original``: the
    Original column's rule, as ``--original`` (None: ``argsort``); ``ranking``: what the
    codebase ranked, per row its candidate indices top first (a 2-D int array or a list of
    lists, as ``save_scores(..., ranking=...)`` takes it), read by ``original="given"``.
    The figures are those of :func:`evaluate_path` on the same arrays saved with
    :func:`~tieeval.io.writers.save_scores`. ``cast`` /
    ``tolerance`` (or ``what_if``): a precision what-if. ``run_labels``: method / dataset /
    task / seed. ``path`` names the data in messages and in the result. Returns a
    :class:`~tieeval.results.RunResult` whose ``to_dict()`` is what ``tieeval compare
    --format json`` gives for the same data in a file. Bad arguments raise
    :class:`~tieeval.errors.ParameterError`, bad data :class:`~tieeval.errors.InputError`.

    >>> import numpy as np
    >>> r = evaluate(np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]], dtype=np.float32), k=[1])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.5, 0.75)
    >>> r = evaluate(np.array([[0.9, 0.9, 0.1]]), positives=[[0, 2]], metrics="HR@1")
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.0, 0.5)
    """
    path = check_path(path)
    chosen = metric_list(metrics, k)
    check_nan_policy(nan_policy)
    rel = rel_options(relevance, gamma=gamma, gain=gain, discount=discount, alpha=alpha,
                      log_base=log_base, short_list=short_list, ap_norm=ap_norm, both=both,
                      no_relevant=no_relevant, convention=convention,
                      relevance_level=relevance_level, depth=depth)
    what_if = what_if_of(what_if, cast, tolerance)
    names = run_labels_of(run_labels)
    from tieeval.engine.arrays import array_batch  # arrays only: not for dumps
    batch, info = array_batch(scores, positive, labels=labels, positives=positives,
                              negatives=negatives, items=items, offsets=offsets,
                              ranking=ranking, path=path)
    dump = _ArrayDump(batch, path, batch.scores.dtype, info)
    # _ArrayDump has the part of the Dump interface evaluate_dump uses
    return evaluate_dump(dump, chosen, nan_policy=nan_policy,  # type: ignore[arg-type]
                         relevance=rel, what_if=what_if, run_labels=names,
                         original=original)


def evaluate_labels(scores, labels, offsets=None, *, k=DEFAULT_KS, metrics=None,
                    items=None, gamma=1.0, gain: str | None = None,
                    discount: str | None = None, alpha: float = 1.0, log_base: float = 2.0,
                    short_list: str | None = None, ap_norm: str | None = None,
                    both: bool = False, no_relevant: str | None = None,
                    convention: str | None = None, nan_policy: str = "raise",
                    path: str = "<array>", what_if=None, cast: str | None = None,
                    tolerance: float | None = None) -> RunResult:
    """Evaluate in-memory labelled rows: ``evaluate(scores, labels=labels, ...)``.

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
    if labels is None:
        raise ParameterError("evaluate_labels needs labels (for one positive per row use "
                             "evaluate(scores, positive=...))")
    return evaluate(scores, k, labels=labels, offsets=offsets, items=items, metrics=metrics,
                    gamma=gamma, gain=gain, discount=discount, alpha=alpha, log_base=log_base,
                    short_list=short_list, ap_norm=ap_norm, both=both, nan_policy=nan_policy,
                    no_relevant=no_relevant, convention=convention, path=path,
                    what_if=what_if, cast=cast, tolerance=tolerance)


__all__ = ["evaluate", "evaluate_dump", "evaluate_path", "evaluate_labels", "Entry",
           "per_instance", "iter_instance_values", "collect_instance_values", "kernel_for",
           "check_jobs"]
