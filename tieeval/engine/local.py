"""The pipeline on this machine: open -> batches -> kernel -> accumulator -> result.

:func:`evaluate_dump` reads every batch of an opened dump through the kernel chosen for it
(:func:`tieeval.kernels.choose.choose_kernel`, once per pass over the dump) into one
:class:`~tieeval.kernels.accumulator.Accumulator`, in this process or in worker processes
(:mod:`tieeval.engine.parallel`), and returns one :class:`~tieeval.records.results.RunResult`.
The accumulator keeps only exact sums, so the result does not depend on the batch size,
the split or the number of workers.

A reader may learn part-way that it must read differently (a long layout whose rows are
not sorted by instance, or whose label column holds relevance labels): it raises
:class:`~tieeval.io.base.ReadAgain`, and the run starts over with the kernel chosen anew
for what the dump now says it carries.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from tieeval.engine.arguments import check_path
from tieeval.engine.consumers import (
    Collected,
    Consumer,
    InstanceCollector,
    InstanceRows,
    finishing,
)
from tieeval.engine.request import (
    EvalOptions,
    check_batch_rows,
    check_jobs,
    check_trec_options,
    request_kernel,
    request_result,
)
from tieeval.errors import InputError, ParameterError
from tieeval.io.base import (
    Dump,
    LabelledDump,
    ReadAgain,
    ReadOptions,
    RelevanceInfo,
)
from tieeval.io.open import open_dump
from tieeval.kernels import fused
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.base import Entry, InstanceValues, Kernel
from tieeval.kernels.single import SinglePositiveKernel
from tieeval.kernels.threads import available_cores, threads
from tieeval.metrics.metric import DEFAULT_KS, Metric
from tieeval.metrics.options import RelOptions
from tieeval.records.batch import Batch
from tieeval.records.results import RunResult

AUTO_POOL_MIN_CORES = 5  # with fewer cores, --jobs 0 never starts worker processes: one
# process that evaluates batches and sorts rows on every core (threads) measured as fast
# as a pool on 2 cores (a 1.25 GB labelled NPZ, a 4 GB NPY), and a pool holds a copy of
# the working memory per worker, twice the memory or more (benchmarks/bench_memory.py)
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


def kernel_for(dump: Dump, metrics=None, *, relevance: RelOptions | None = None,
               nan_policy: str = "raise", what_if=None, original: str | None = None) -> Kernel:
    """The kernel that evaluates ``dump`` as it reads now (see :func:`request_kernel`);
    ``original``: the Original column's rule (None: the dump's default)."""
    return request_kernel(dump, EvalOptions(metrics, relevance=relevance, nan_policy=nan_policy,
                                            what_if=what_if, original=original))


def run_passes(dump: Dump, make_kernel, consume, progress=None):
    """``consume(kernel, tick)`` over ``dump`` with the kernel ``make_kernel()`` picks,
    again from the start when the reader asks to (:class:`ReadAgain`); ``progress``
    receives negative values that take back what a restarted pass reported (a callback
    takes (rows, nbytes), or just rows)."""
    report = progress
    try:
        if progress is not None:
            inspect.signature(progress).bind(0, 0)
    except (TypeError, ValueError):
        report = lambda rows, nbytes: progress(rows)  # noqa: E731
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
    """Evaluate an opened dump: :func:`evaluate_path`'s run once the dump is open.

    ``metrics``: Metric values or names (None: the defaults of the dump's kind);
    ``relevance``: the labelled options as one :class:`~tieeval.metrics.options.RelOptions`;
    ``what_if``: a :class:`tieeval.records.whatif.WhatIf`, which the result then carries;
    ``batch_rows``, ``jobs``, ``progress``, ``run_labels`` (``labels``) and ``original``
    as for :func:`evaluate_path` (``progress`` may receive negative values that take back
    a run that had to start over); the result records an ``original`` rule other than
    the dump's default as ``original_rule``.
    """
    request = EvalOptions(metrics, nan_policy=nan_policy, jobs=check_jobs(jobs),
                      batch_rows=check_batch_rows(batch_rows), relevance=relevance,
                      what_if=what_if, original=original,
                      run_labels={**(labels or {}), **(run_labels or {})})
    query_set = getattr(dump, "query_set", None)
    check_trec_options(bool(query_set is not None and query_set.judged_only), relevance,
                       getattr(query_set, "judged_depth", None))
    result = drive(dump, request, progress=progress)
    assert result is not None
    return result


def drive(dump: Dump, request: EvalOptions, consumers: Sequence[Consumer] = (), progress=None,
          *, totals: bool = True) -> RunResult | None:
    """One pass over ``dump`` for a checked ``request``: each batch is added to the totals
    (unless ``totals`` is False) and its per-instance values, when ``consumers`` want them,
    go to every consumer (:mod:`tieeval.engine.consumers`). Returns the run's result (None
    without totals). The kernel is chosen anew when the reader starts over.

    Without consumers the batches may go to worker processes (``request.jobs``); with
    them, the pass stays in this process, its batches on the sort threads, the parts taken
    in batch order.
    """
    jobs = request.jobs
    auto = jobs == 0
    if auto:
        jobs = available_cores()
        if dump.nbytes and dump.nbytes < AUTO_POOL_BYTES:
            # Below this the sorts already use every core in this process (threads), and
            # a pool of worker processes costs more to start than it saves.
            jobs = 1

    def make_kernel():
        kernel = request_kernel(dump, request)
        # the fused numba count kernel serves the single-positive counts of big dumps
        fused.use(isinstance(kernel, SinglePositiveKernel) and fused.wanted(dump.nbytes))
        return kernel

    def consume(kernel, tick):
        size = kernel.batch_rows(dump, request.batch_rows)
        from tieeval.engine.readahead import read_ahead
        for consumer in consumers:
            consumer.start(kernel, dump)
        workers = 1 if consumers else auto_jobs(dump, kernel, jobs) if auto else jobs
        if workers > 1:
            from tieeval.engine.parallel import accumulate_parallel
            return accumulate_parallel(dump, kernel, jobs=workers, batch_rows=size,
                                       progress=tick)
        # a matrix dump (NPY, stored NPZ) as tasks that each read and evaluate one batch in
        # the thread that runs it, as the floor does with a memory map: no reading thread
        # to hand batches over, every core reading and counting its own rows (on one core,
        # one after another in this thread), automatic batch sizes evened out over the
        # threads; other formats, and kernels without batch threads, read batches in turn
        count, matrix = threads(), kernel.batch_threads and not consumers
        tasks = (dump.batch_tasks(size, count if request.batch_rows is None else 1,
                                  together=count > 1)
                 if matrix and hasattr(dump, "batch_tasks") else None)
        if tasks is None:
            return one_pass(kernel, read_ahead(dump.batches(size)), consumers, tick, totals)
        try:  # the tasks read the batches: the pass ends here, as a dump's batches end it
            acc = one_pass(kernel, (), (), tick, tasks=tasks)
            dump.finish()
        finally:
            dump.end_pass()
        return acc

    with finishing(consumers):
        kernel, acc = run_passes(dump, make_kernel, consume, progress)
    if acc is None:
        return None
    return request_result(request, kernel, acc, dump, dump.path, dump.dtype, dump.metadata,
                          dump.warnings)


def one_pass(kernel: Kernel, batches, consumers: Sequence[Consumer], tick,
             totals: bool = True, tasks: list | None = None) -> Accumulator | None:
    """The totals of ``batches`` (None without ``totals``) and, with ``consumers``, each
    batch's per-instance values handed to them, as :meth:`Kernel.accumulate` adds them:
    with batch threads (:attr:`Kernel.batch_threads`) each batch into its own accumulator
    and parts, merged and taken in batch order (exact sums: the result of a single pass,
    bit for bit). ``tasks`` (a matrix dump's) instead of ``batches``: each reads its
    batch in the sort thread that evaluates it, an error raised where its batch comes."""
    from tieeval.kernels.threads import map_batches, map_tasks
    acc = kernel.new() if totals else None

    def one(batch: Batch, into: Accumulator | None = None):
        part = into if into is not None or not totals else kernel.new()
        if not consumers:  # the totals alone
            assert part is not None
            kernel.add(part, batch)
            return part, (), batch.rows, batch.nbytes
        counts, values = kernel.add_values(part, batch)
        return (part, [c.part(batch, counts, values) for c in consumers], batch.rows,
                batch.nbytes)

    if tasks is not None:
        results = map_tasks(lambda task: one(task()), tasks)
    elif kernel.batch_threads and threads() > 1:
        results = map_batches(one, batches)
    else:
        results = (one(batch, acc) for batch in batches)
    for part, parts, rows, nbytes in results:
        if acc is not None and part is not acc:
            acc.merge(part)
        for consumer, got in zip(consumers, parts):
            consumer.take(got)
        tick(rows, nbytes)
    return acc


def auto_jobs(dump: Dump, kernel: Kernel, cores: int) -> int:
    """Worker processes for ``--jobs 0`` (``cores`` available), following the work.

    This process already evaluates batches on every core (threads). With fewer than
    :data:`AUTO_POOL_MIN_CORES` cores that is the whole answer: no pool (it was never
    faster there, and each worker holds its own batches). A memory-mapped
    single-positive matrix costs little to read: a pool pays only for a long Original
    sort, estimated from the first rows (:func:`sort_seconds`). With more cores, other
    dumps (decoded Parquet row groups, labelled rows) keep the size rule: a pool from
    :data:`AUTO_POOL_BYTES`.
    """
    if cores < AUTO_POOL_MIN_CORES:
        return 1
    matrix = dump.format in ("npy", "npz") and bool(dump.parts) and bool(dump.rows)
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
                  recall_norm: str | None = None, precision_norm: str | None = None,
                  relevant_scores: str | None = None,
                  missing_queries: str | None = None, judged_only: bool = False,
                  relevance_level: int | None = None, depth: int | None = None,
                  what_if=None, cast: str | None = None,
                  tolerance: float | None = None, run_labels: dict | None = None,
                  original: str | None = None,
                  relevance: RelOptions | None = None, labels: dict | None = None,
                  spark_conf=None) -> RunResult:
    """Open and evaluate one dump file: the Python form of ``tieeval compare PATH``.

    The metrics and their options are :func:`evaluate`'s (``metrics``, ``k``, ``gamma``,
    ``convention``, ``relevance_level``, ``cast``, ``original`` ...), with the same
    meanings and errors; what differs:

    ``options``: field names and layout (:class:`~tieeval.io.base.ReadOptions`, or
    :class:`~tieeval.io.base.RelevanceReadOptions` for renamed relevance fields); ``qrels``
    reads ``path`` as a TREC run judged by that qrels file; then ``missing_queries``
    (``"skip"``, the default, or ``"zero"``: trec_eval ``-c``, judged queries the run does
    not answer count 0) and ``judged_only`` (trec_eval ``-J``: unjudged documents leave the
    ranking; not with ``depth``) choose its query set and documents. The Original rule
    defaults to ``trec`` for TREC runs. ``jobs``: worker processes (1: this process; 0 or
    None: one per core); ``engine``: ``"local"`` or ``"spark"``
    (:func:`tieeval.engine.spark.evaluate_path`; needs pyspark); ``spark_conf``: Spark
    settings for the session the Spark engine starts, as ``--spark-conf`` (a dict,
    ``(key, value)`` pairs or ``"KEY=VALUE"`` strings; over ``spark-defaults.conf``,
    ``PYSPARK_SUBMIT_ARGS`` and ``TIEEVAL_SPARK_MASTER``). ``run_labels`` go over the
    file's own metadata; ``labels`` is their older keyword. ``progress(rows, nbytes)`` (or
    ``progress(rows)``) is called as the dump is read. ``batch_rows`` and ``jobs`` never
    change the result.
    """
    # every keyword but the path and the callback is an option (KEYWORDS, checked by
    # tests/engine/test_options.py): a new option reaches the run without a line here
    given = {name: value for name, value in locals().items() if name not in ("path", "progress")}
    path = check_path(path)
    request = EvalOptions.from_keywords(**given)
    result = evaluate_request(request, path, progress).result
    assert result is not None
    return result


@dataclass
class RunOutcome:
    """What one run of a request gave: the totals' result, the per-instance rows written
    (``request.per_instance``) and every instance's values (``request.per_query``)."""

    result: RunResult | None
    instance_rows: int | None = None
    values: Collected | None = None


def open_request(request: EvalOptions, path: str) -> Dump:
    """The dump at ``path`` as ``request`` reads it: the local engine's, or the local
    dump of the files Spark reads (:func:`tieeval.engine.spark.open_for_spark`, which
    refuses the formats Spark does not read)."""
    if request.engine == "spark":
        from tieeval.engine.spark import open_for_spark
        dump = open_for_spark(request, path)
        if dump is None:
            raise InputError(f"{path}: a URI only Spark can open; diff reads dumps on this "
                             "machine's file system (or file:// URIs)")
        return dump
    return open_dump(path, request.read)


def evaluate_request(request: EvalOptions, path, progress=None, *, progress_for=None,
                     ids_for=None) -> RunOutcome:
    """Run a checked ``request`` on the dump at ``path`` (or an opened local dump) on the
    engine it chose: its totals and, in the same pass, the outputs it asks for.
    ``progress``: a callback (see :func:`evaluate_dump`), or ``progress_for(dump)`` gives
    one for the opened dump (a progress bar's task); ``ids_for(dump)``: instance ids for
    the per-instance rows of a wide dump whose batches carry none (or None)."""
    spark = request.engine == "spark"
    if spark:  # the local dump of the same files (None for a URI only Spark can open)
        from tieeval.engine import spark as spark_engine
        dump = spark_engine.open_for_spark(request, path) if isinstance(path, str) else path
    else:
        dump = open_request(request, path) if isinstance(path, str) else path
    if progress_for is not None and dump is not None:
        progress = progress_for(dump)
    name = path if dump is None else dump.path
    rows = None if request.per_instance is None else InstanceRows(
        request.per_instance, None if ids_for is None or dump is None else ids_for(dump),
        inputs=[name, getattr(request.read, "qrels", None)])
    collector = InstanceCollector() if request.per_query else None
    consumers: list[Consumer] = [c for c in (rows, collector) if c is not None]
    if spark:
        result = spark_engine.drive(request, name, consumers, dump=dump)
    else:
        result = drive(dump, request, consumers, progress)
    return RunOutcome(result, None if rows is None else rows.rows,
                   None if collector is None else collector.collected)


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
    request = EvalOptions(metrics, nan_policy=nan_policy, relevance=relevance, what_if=what_if,
                      original=original)
    dump.settle()
    kernel = request_kernel(dump, request)
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
    request = EvalOptions(metrics, nan_policy=nan_policy, batch_rows=batch_rows,
                      relevance=relevance, what_if=what_if, original=original)
    collector = InstanceCollector()
    drive(dump, request, [collector], progress, totals=False)
    got = collector.collected
    assert got is not None
    return got.kernel, got.values, got.ids


def per_instance(dump: Dump, out: str, metrics: list[Metric] | None = None, *,
                 nan_policy: str = "raise", batch_rows: int | None = None,
                 relevance: RelOptions | None = None, what_if=None,
                 original: str | None = None, ids=None, progress=None, inputs=()) -> int:
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
    not depend on ``batch_rows`` or on how the run itself was split. The file goes through
    the output sink (:mod:`tieeval.sink`), which keeps it off the dump and ``inputs`` (other
    files the run reads, such as its qrels). ``compare --per-instance`` writes the same rows
    in the pass that makes the totals (:func:`evaluate_request`).
    """
    request = EvalOptions(metrics, nan_policy=nan_policy, batch_rows=batch_rows,
                      relevance=relevance, what_if=what_if, original=original)
    rows = InstanceRows(out, ids, inputs=[dump.path, *inputs])
    drive(dump, request, [rows], progress, totals=False)
    return rows.rows


# ---------------------------------------------------------------------------------------
# In-memory arrays


def _array_dump(batch: Batch, path: str, relevance: RelevanceInfo | None) -> LabelledDump:
    """In-memory arrays dressed as a dump, so arrays take the one pipeline too: cut into
    batches of the size a file of the same rows would be read in (views of the arrays,
    :meth:`Batch.take`), so that the kernel's working memory is bounded by the batch and
    batches run on the sort threads, as a file's do."""
    rows, nbytes = batch.rows, int(batch.scores.nbytes)

    def batches(size: int) -> Iterator[Batch]:
        if rows <= size:
            yield batch
            return
        for lo in range(0, rows, size):
            yield batch.take(lo, min(lo + size, rows))
    # a dump's automatic batch size follows the bytes of a row of scores
    return LabelledDump(path, "array", batch.scores.dtype, _batches=batches, rows=rows,
                        nbytes=nbytes, row_bytes=-(-nbytes // max(1, rows)),
                        relevance=relevance)


#: evaluate()'s keywords that carry the data, not options (see :func:`array_batch`)
ARRAY_KEYWORDS = ("scores", "positive", "labels", "positives", "negatives", "items", "offsets",
                  "ranking")


def evaluate(scores, k=DEFAULT_KS, positive=None, *, labels=None, positives=None,
             negatives=None, items=None, offsets=None, metrics=None, gamma=1.0,
             gain: str | None = None, discount: str | None = None, alpha: float = 1.0,
             log_base: float = 2.0, short_list: str | None = None,
             ap_norm: str | None = None, both: bool = False,
             no_relevant: str | None = None, convention: str | None = None,
             recall_norm: str | None = None, precision_norm: str | None = None,
             relevant_scores: str | None = None,
             nan_policy: str = "raise", what_if=None,
             cast: str | None = None, tolerance: float | None = None, path: str = "<array>",
             relevance: RelOptions | None = None, run_labels: dict | None = None,
             relevance_level: int | None = None, depth: int | None = None,
             ranking=None, original: str | None = None) -> RunResult:
    """Evaluate in-memory scores: the Python form of ``tieeval compare`` on a dump.

    ``scores``: an ``(instances, candidates)`` array (numpy, a list of equal-length lists,
    anything with ``__array__`` such as a CPU torch tensor; never cast), ragged rows as a
    list of 1-D numpy arrays, or flat values with ``offsets`` (``instances + 1`` row
    boundaries). A numpy masked array's masked scores are not candidates: each row is its
    unmasked scores, and ``positive`` and ``labels`` / ``items`` follow (a masked
    positive is an error). Relevance, as a dump gives it:

    * ``positive``: each row's one positive column (an int, or one per row; default 0;
      negative counts from the end), the single-positive protocol;
    * ``labels`` in the scores' layout (``> 0`` relevant with that gain, ``0`` unobserved,
      ``< 0`` an explicit negative);
    * ``positives`` / ``negatives``: column indices per row (one int per row, a ``-1``-padded
      2-D array, or a list of lists), read as labels +1 / -1 exactly as from a file.

    ``items`` (the scores' layout) enables the duplicate check. ``k``: one cutoff or
    several; ``metrics``: a name such as ``"NDCG@10"``, a :class:`Metric`, or a list (a
    name without a cutoff, ``"NDCG"``, is one metric per given ``k``; ``"NDCG@all"`` the
    whole list); None gives the defaults for ``k`` of the data's kind. ``gamma`` (one
    value or several), ``gain``, ``discount``, ``alpha``, ``log_base``, ``short_list``,
    ``ap_norm``, ``recall_norm``, ``precision_norm``, ``relevant_scores`` (``"positive"``:
    Precision, Recall's hits, MRR and MAP count a relevant item only when its score is
    > 0, as torchmetrics does), ``both``, ``no_relevant``: the labelled options, as on the
    command line (or ``relevance=RelOptions(...)``); None is the default, or the
    ``convention``'s (``"paper"``, ``"recbole"``, ``"trec_eval"``, ``"ranx"``,
    ``"sklearn"``, ``"lenskit"``, ``"cornac"``, ``"recommenders"``, ``"implicit"``,
    ``"torchmetrics"``: that library's metrics at each ``k`` and its definitions; options
    given override it). ``relevance_level`` (trec_eval ``-l``: relevant means label >= N)
    and ``depth`` (trec_eval ``-M``: the top N documents of each ranking) apply to every
    labelled row. ``original``: the Original column's rule, as ``--original`` (None:
    ``argsort``); ``ranking``: what the codebase ranked, per row its candidate indices top
    first (a 2-D int array or a list of lists, as ``save_scores(..., ranking=...)`` takes
    it), read by ``original="given"``. ``cast`` / ``tolerance`` (or ``what_if=WhatIf(...)``):
    a precision what-if. ``run_labels``: method / dataset / task / seed for this run, as
    ``--meta``. ``path`` names the data in messages and in the result.

    The figures are those of :func:`evaluate_path` on the same arrays saved with
    :func:`~tieeval.io.writers.save_scores`: a :class:`~tieeval.records.results.RunResult`
    whose ``to_dict()`` is what ``tieeval compare --format json`` gives for the same data
    in a file. Bad arguments raise :class:`~tieeval.errors.ParameterError`, bad data
    :class:`~tieeval.errors.InputError`, with the command line's messages.

    >>> import numpy as np
    >>> r = evaluate(np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]], dtype=np.float32), k=[1])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.5, 0.75)
    >>> r = evaluate(np.array([[0.9, 0.9, 0.1]]), positives=[[0, 2]], metrics="HR@1")
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.0, 0.5)
    """
    given = dict(locals())  # the options: every keyword but the arrays and the path
    arrays = {name: given.pop(name) for name in ARRAY_KEYWORDS}
    del given["path"]
    path = check_path(path)
    request = EvalOptions.from_keywords(**given)
    from tieeval.engine.arrays import array_batch  # arrays only: not for dumps
    batch, info = array_batch(**arrays, path=path)
    result = drive(_array_dump(batch, path, info), request)
    assert result is not None
    return result


def evaluate_labels(scores, labels, offsets=None, *, k=DEFAULT_KS, metrics=None,
                    items=None, gamma=1.0, gain: str | None = None,
                    discount: str | None = None, alpha: float = 1.0, log_base: float = 2.0,
                    short_list: str | None = None, ap_norm: str | None = None,
                    both: bool = False, no_relevant: str | None = None,
                    convention: str | None = None, nan_policy: str = "raise",
                    path: str = "<array>", what_if=None, cast: str | None = None,
                    tolerance: float | None = None) -> RunResult:
    """Evaluate in-memory labelled rows: ``evaluate(scores, labels=labels, ...)``, whose
    arguments these are; ``labels`` is required. Without ``metrics``: HR@K, Recall@K,
    NDCG@K for every ``k``, MRR and MAP.

    >>> import numpy as np
    >>> r = evaluate_labels(np.array([[0.9, 0.9, 0.1]]), np.array([[1, 0, 2]]),
    ...                     metrics=["HR@1", "NDCG@3"])
    >>> r.metric("HR@1").first, r.metric("HR@1").last, r.metric("HR@1").tie_aware
    (1.0, 0.0, 0.5)
    """
    if labels is None:
        raise ParameterError("evaluate_labels needs labels (for one positive per row use "
                             "evaluate(scores, positive=...))")
    return evaluate(**locals())


__all__ = ["evaluate", "evaluate_dump", "evaluate_path", "evaluate_labels", "Entry",
           "per_instance", "iter_instance_values", "collect_instance_values", "kernel_for",
           "check_jobs", "drive", "evaluate_request", "RunOutcome"]
