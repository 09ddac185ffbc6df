"""The types every reader shares: :class:`ReadOptions`, :class:`Dump`, and the format and
path helpers. A dump yields :class:`~tieeval.records.batch.Batch` records (scores plus
whatever relevance the dump carries), imported here for the readers."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.records.batch import Batch, RankLists, instance_name  # noqa: F401 - readers' names

# what a TREC run read with qrels does with the qrels' queries it does not answer (here,
# not in tieeval.io.trec, so that declaring the option does not import that reader)
MISSING_QUERIES = ("skip", "zero")
LAYOUTS = ("auto", "wide", "long")
DEFAULT_BATCH_ROWS = 1 << 16  # the most rows in one batch
TARGET_BATCH_BYTES = 16 << 20  # automatic batches hold about this many bytes of scores
PART_BYTES = 64 << 20  # matrix dumps are cut into parts of about this size for workers
LARGE_ROW_GROUP_BYTES = 512 << 20
SCORE_DTYPES = ("float16", "float32", "float64")
# The most candidates one row (instance, query) may have. Rows are evaluated whole, and
# the kernels hold a few arrays of a row's size: this bound keeps one process's memory
# under about 1.5 GB for any input. TIEEVAL_MAX_ROW_CANDIDATES raises (or lowers) it.
MAX_ROW_CANDIDATES = 5_000_000
MAX_ROW_ENV = "TIEEVAL_MAX_ROW_CANDIDATES"


def check_missing_queries(value) -> str:
    if value is None:
        return "skip"
    if not isinstance(value, str) or value not in MISSING_QUERIES:
        raise ParameterError(f"missing_queries must be one of {', '.join(MISSING_QUERIES)}, "
                             f"got {value!r}")
    return value


def max_row_candidates() -> int:
    """The per-row candidate bound: ``$TIEEVAL_MAX_ROW_CANDIDATES`` or the default."""
    raw = os.environ.get(MAX_ROW_ENV)
    if raw is None or not raw.strip():
        return MAX_ROW_CANDIDATES
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ParameterError(f"{MAX_ROW_ENV} must be a whole number >= 1, got {raw!r}")
    return value


def check_row_length(where: str, candidates: int, what: str = "a row") -> None:
    """Refuse a row longer than :func:`max_row_candidates` before it is read."""
    limit = max_row_candidates()
    if candidates > limit:
        raise InputError(f"{where}: {what} has {candidates} candidates, more than the "
                         f"{limit} one row may have (a bound that keeps memory in check; "
                         f"raise it with {MAX_ROW_ENV}={candidates}, at about 150 bytes of "
                         "memory per candidate)")


class ReadAgain(Exception):
    """Raised by a dump's batch iterator that changed how it reads (the long layout found
    its rows were not sorted by instance and regrouped them): start the run over.

    A consumer that catches it calls :meth:`Dump.start_over` with it before reading again.
    """


class RelevanceLabelsFound(ReadAgain):
    """Raised by a long-layout reader whose ``label`` column turned out to hold relevance
    labels: a value other than 0 and 1 (``by_value``), or an instance without exactly one
    positive. :meth:`Dump.start_over` then switches the dump to the relevance-label path
    (it gains ``relevance``, as a wide dump with a ``labels`` field), and the run starts
    over."""

    def __init__(self, message: str = "", by_value: bool = False):
        super().__init__(message, by_value)  # both in args: it crosses process boundaries
        self.by_value = by_value

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


@dataclass
class ReadOptions:
    """Names of the fields to read, the layout, and where the positive sits.

    Wide layout: ``scores`` (a matrix or list column) and ``positive``. Long layout:
    ``instance``, ``position``, ``score`` and ``label`` columns (None: the defaults
    ``instance``, ``position``, ``score``, ``label``). ``score_dtype`` parses CSV scores
    (text has no dtype; default float64).
    """

    scores: str = "scores"
    positive: str = "positive"
    positive_index: int | None = None  # None: column 0 unless the dump has a positive field
    layout: str = "auto"
    instance: str | None = None
    position: str | None = None
    score: str | None = None
    label: str | None = None
    score_dtype: str | None = None

    @property
    def long_columns(self) -> dict[str, str]:
        return {"instance": self.instance or "instance", "position": self.position or "position",
                "score": self.score or "score", "label": self.label or "label"}

    @property
    def long_options_given(self) -> list[str]:
        return [f"--{k}-column" for k in ("instance", "position", "score", "label")
                if getattr(self, k) is not None] + (
                    ["--score-dtype"] if self.score_dtype is not None else [])


def check_batch_rows(batch_rows):
    """``batch_rows``: None (automatic) or a whole number >= 1."""
    if batch_rows is None:
        return None
    if isinstance(batch_rows, (bool, np.bool_)) or not isinstance(batch_rows, (int, np.integer)) \
            or batch_rows < 1:
        raise ParameterError(f"batch_rows must be a whole number >= 1, got {batch_rows!r}")
    return int(batch_rows)


def _nothing(*_) -> None:
    """What a dump does when its reader gives no callback for it."""


@dataclass
class Dump:
    """An opened score dump: its format, score dtype, metadata, and a batch iterator.

    ``rows`` is the instance count when known before reading (None for the long layout),
    ``nbytes`` the input size for progress reports, ``row_bytes`` the bytes of one row of
    scores (for automatic batch sizes), ``warnings`` what the reader noticed on opening.
    ``parts``, when not None, lists independently readable pieces in dump order.
    """

    path: str
    format: str
    dtype: np.dtype
    metadata: dict[str, str] = field(default_factory=dict)
    _batches: Callable[[int], Iterator[Batch]] | None = None  # or parts
    layout: str = "wide"
    rows: int | None = None
    nbytes: int = 0
    row_bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    parts: list | None = None
    _settle: Callable[[], None] = _nothing
    _verify: Callable[[], None] = _nothing
    # checks due once every row has been read (a stored NPZ member's CRC-32)
    _finish: Callable[[], None] = _nothing
    _start_over: Callable[[ReadAgain], None] = _nothing
    _ids: Callable[[str], np.ndarray | None] = _nothing  # stored instance ids, by name
    # a reader whose batches may come out of the dump's order (a streamed TREC run)
    _order: Callable[[], np.ndarray | None] = _nothing
    _keep_order: Callable[[], None] = _nothing

    def verify(self) -> None:
        """Raise the input's own corruption error, if it has one. Called when a batch gave a
        data error: a damaged compressed member decodes to garbage (say, a NaN) before its
        CRC is checked at the end, and the damage is the error to report."""
        self._verify()

    def finish(self) -> None:
        """Raise the input's corruption error found once every row was read, if any. Called
        at the end of a pass, before its result is made."""
        self._finish()

    def settle(self) -> None:
        """Make :meth:`batches` a single pass that never raises :class:`ReadAgain` (the
        long layout checks its order, and what its label column holds, first); callers
        that cannot start over call this."""
        self._settle()

    def start_over(self, reason: ReadAgain) -> None:
        """Prepare to be read from the start after :meth:`batches` raised ``reason`` (a
        :class:`ReadAgain`, possibly from a worker process reading a part)."""
        self._start_over(reason)

    def instance_order(self) -> np.ndarray | None:
        """After a complete pass, the positions of the instances, counted in the order
        their batches came, that put them in the dump's order (a streamed TREC run's
        queries come in the run's order, the dump's order sorts their ids); None when the
        batches came in the dump's order."""
        return self._order()

    def keep_order(self) -> None:
        """Make the next passes give their batches in the dump's order (for consumers
        that keep something per batch that :meth:`instance_order` cannot reorder)."""
        self._keep_order()

    def instance_ids(self, name: str = "instance") -> np.ndarray | None:
        """The instance ids stored beside a wide dump's scores (the NPZ array or Parquet
        column ``name``), read by the reader that opened the dump
        (:mod:`tieeval.io.ids`); None when there are none (NPY dumps, or no such field).
        The long layout's and TREC runs' ids come with their batches instead."""
        return self._ids(name)

    def batch_size(self, batch_rows: int | None = None) -> int:
        """``batch_rows``, or (None) as many rows as fit :data:`TARGET_BATCH_BYTES`."""
        if batch_rows is not None:
            return check_batch_rows(batch_rows)
        if self.row_bytes <= 0:
            return DEFAULT_BATCH_ROWS
        # at least one row, never a fixed minimum: a long row alone may fill a batch
        return int(max(1, min(DEFAULT_BATCH_ROWS, TARGET_BATCH_BYTES // self.row_bytes)))

    def batches(self, batch_rows: int | None = None) -> Iterator[Batch]:
        size = self.batch_size(batch_rows)
        if self.parts is not None:
            return self._part_batches(self.parts, size)
        if self._batches is None:  # a reader gives parts or a batch generator, never neither
            raise InputError(f"{self.path}: the reader gave nothing to read")
        return self._batches(size)

    def batch_tasks(self, batch_rows: int, balance: int = 1, together: bool = False
                    ) -> list | None:
        """The pass as independent tasks (:func:`row_tasks` of the dump's parts). After
        the last task, :meth:`finish` makes the checks due once every row was read, and
        :meth:`end_pass` ends the pass."""
        return row_tasks(self.parts, batch_rows, balance, together)

    def end_pass(self) -> None:
        """The end of a pass by :meth:`batch_tasks`, complete or not: its batch buffers go
        (the checks due once every row was read are :meth:`finish`'s)."""
        from tieeval.io import buffers
        buffers.release()

    def _part_batches(self, parts, size: int) -> Iterator[Batch]:
        try:
            for part in parts:
                yield from part.batches(size)
            self.finish()
        except ReadAgain as exc:  # a part learned something about the dump: tell it
            self.start_over(exc)
            raise
        finally:
            from tieeval.io import buffers  # the pass is over: its batch buffers go
            buffers.release()


def row_tasks(parts: list | None, batch_rows: int, balance: int = 1,
              together: bool = False) -> list | None:
    """A pass over ``parts`` as independent tasks, each a call that gives one batch of
    rows, in dump order, read in the thread that uses it (a matrix's scores only as they
    are used, :class:`tieeval.io.npy.LazyBatch`); None when the parts read only in order.
    ``batch_rows``: the most rows of a task; ``balance`` > 1 evens the batches out over
    that many threads (a multiple of it, of equal sizes), so that no thread is left with
    a short last round. ``together``: the tasks run on several threads at once."""
    # the part's own class says so: a wrapper that adds fields to a part's batches
    # (relevance members) hands other attributes on to the part, but not these
    if not parts or not all(getattr(type(p), "reads_rows", False) for p in parts):
        return None
    first = parts[0]
    if not all(p.scores is first.scores and p.positive is first.positive for p in parts):
        return None
    lo, hi = first.lo, parts[-1].hi
    rows = hi - lo
    size = max(1, batch_rows)
    if balance > 1 and rows > size:
        batches = -(-rows // size)
        count = min(rows, -(-batches // balance) * balance)
        bounds = [lo + rows * i // count for i in range(count + 1)]  # sizes differ by 1
    else:
        bounds = list(range(lo, hi, size)) + [hi]
    read = (functools.partial(first.lazy_rows, together=together)
            if hasattr(type(first), "lazy_rows") else first.read_rows)
    return [functools.partial(read, start, stop)
            for start, stop in zip(bounds[:-1], bounds[1:])]


_URI_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def remote_uri(path) -> bool:
    """True for a URI only Spark can open (``hdfs://``, ``s3a://``, ``gs://``, ...): nothing
    here may look for it on the local disk. Plain paths and ``file://`` URIs are local."""
    m = _URI_SCHEME.match(os.fspath(path))
    return m is not None and m.group(1).lower() != "file"


def local_path(path) -> str:
    """A local path or ``file://`` URI as a path of this machine's file system."""
    path = os.fspath(path)
    if path.lower().startswith("file://"):
        from urllib.parse import unquote, urlparse  # only for file:// paths
        return unquote(urlparse(path).path)
    return path


def not_found(path: str) -> InputError:
    """The error for an input ``path`` that cannot be reached: "no such file" only when it
    is not there; a folder on its path the user may not search (or another reason the
    system gives) is said as such."""
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        return InputError(f"{path}: a part of the path is not a folder")
    except PermissionError as exc:
        return InputError(f"{path}: cannot open: {exc.strerror or exc} (a folder on its "
                          "path may not be searched)")
    except OSError as exc:
        return InputError(f"{path}: cannot open: {exc.strerror or exc}")
    return InputError(f"{path}: no such file")


def error_text(exc: BaseException) -> str:
    """The first line of a library's exception, or its type when it says nothing."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def require_regular_file(path: str) -> None:
    """Refuse a FIFO, socket or device without opening it (a FIFO would block forever)."""
    import stat
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise InputError(f"{path}: not a regular file (a FIFO, socket or device); tieeval "
                         "reads files it can seek in")
    if stat.S_ISREG(mode):
        # opened once here, so that a file the user may not read is reported as such and
        # not as damaged by a reader that sees only "cannot open"
        try:
            open(path, "rb").close()
        except OSError as exc:
            raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None


def open_input(path: str, what: str):
    """``path`` open for reading bytes; a file that cannot be opened is an input error
    (``what`` names it: ``run``, ``qrels``)."""
    if os.path.exists(path):
        require_regular_file(path)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open {what}: {exc.strerror or exc}") from None


HOW_TO_DUMP = ("dump the scores as a numeric array: tieeval.save_scores(path, scores, "
               "positive=...) or np.save('scores.npy', tensor.detach().cpu().numpy()) (one "
               "row per instance; the positive in column 0, or --positive-index N)")


def not_a_dump(path: str, what: str) -> InputError:
    """The error for a file that holds Python objects rather than score arrays."""
    return InputError(f"{path}: {what}, which tieeval does not read (it never unpickles); "
                      f"{HOW_TO_DUMP}")


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ParameterError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return layout

RELEVANCE_FIELDS = ("labels", "positives", "negatives", "items")


@dataclass
class RelevanceReadOptions(ReadOptions):
    """:class:`~tieeval.io.base.ReadOptions` plus the names of the relevance fields.

    ``qrels``: a TREC qrels file; the path opened is then a TREC run (:mod:`tieeval.io.trec`).
    ``missing_queries`` (``"skip"``, the default, or ``"zero"``: trec_eval ``-c``) and
    ``judged_only`` (trec_eval ``-J``) choose a TREC run's query set and documents;
    ``judged_depth`` (trec_eval ``-J -M N``, set by the request from its depth): under
    ``judged_only``, the top N lines of each query in trec_eval's order are kept before
    the unjudged ones leave; ``trec_grades`` (set by the request under a trec_eval
    convention, its name): the qrels grades are read as trec_eval reads them, with C's
    ``atol`` (``2.9`` -> 2), instead of as written. ``labels_file``: an ``.npy`` file of
    relevance labels aligned with a wide dump's scores (``--labels``,
    :mod:`tieeval.io.labels_file`).
    """

    labels: str = "labels"
    positives: str = "positives"
    negatives: str = "negatives"
    items: str = "items"
    qrels: str | None = None
    missing_queries: str | None = None
    judged_only: bool = False
    judged_depth: int | None = None
    trec_grades: str | None = None
    labels_file: str | None = None


@dataclass(frozen=True)
class RelevanceInfo:
    """What a dump carries besides scores.

    ``source``: where the labels come from, ``"labels"``, ``"positives"`` (the
    ``positives`` / ``negatives`` fields) or ``"trec"`` (a run and its qrels); None for a
    single-positive dump. ``items``: candidate ids are present. ``original``: the
    'original' ordering, ``"argsort"`` (``np.argsort(row * -1)``) or ``"given"`` (rows are
    listed as the system ranked them). ``unranked``: batches carry judged items missing
    from the ranking (TREC). ``fields``: the field names read.
    """

    source: str | None
    items: bool = False
    original: str = "argsort"
    unranked: bool = False
    fields: tuple = ()


@dataclass
class LabelledDump(Dump):
    """A :class:`~tieeval.io.base.Dump` whose batches carry relevance fields (see module doc)."""

    relevance: RelevanceInfo | None = None
    query_set: object | None = None  # a TREC run's tieeval.io.trec.QuerySet


def relabel(dump: Dump, info: RelevanceInfo | None, parts=None, batches=None,
            **changes) -> Dump:
    """The dump with new parts or batches (and ``changes``); a :class:`LabelledDump`
    with ``info`` when it is set (a dump whose only extra field is ``ranking`` stays a
    plain dump)."""
    values = {f.name: getattr(dump, f.name) for f in fields(dump) if f.init}
    values.pop("relevance", None)  # a LabelledDump's, replaced by ``info``
    values.update(changes)
    if parts is not None:
        values["parts"] = parts
    if batches is not None:
        values["_batches"] = batches
    if info is None:
        return Dump(**values)
    return LabelledDump(**values, relevance=info)


class WithRelevance:
    """A part of the scores (``base``) whose batches gain relevance fields (from the same
    file, or from a labels file: :mod:`tieeval.io.labels_file`); its rows, size,
    path and anything else a part offers (start, group, ...) are ``base``'s."""

    def __getattr__(self, name):
        if name == "base":  # not set yet (unpickling): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.base, name)


@dataclass(frozen=True)
class FilledPart(WithRelevance):
    """A part whose batches pass through ``fill`` (:func:`filled`)."""

    base: Any  # the reader's own part
    fill: Callable[[Batch], Batch]

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        for batch in self.base.batches(batch_rows):
            yield self.fill(batch)


@dataclass(frozen=True)
class FilledRowsPart(FilledPart):
    """:class:`FilledPart` of a part that reads any range of rows on its own, as ``fill``
    does: the pass may run as independent tasks (Dump.batch_tasks)."""

    reads_rows = True

    def read_rows(self, lo: int, hi: int) -> Batch:
        return self.fill(self.base.read_rows(lo, hi))


def filled(dump: Dump, info: RelevanceInfo | None, fill: Callable[[Batch], Batch],
           by_rows: bool = True, **changes) -> Dump:
    """``dump`` with ``info`` (:func:`relabel`) and ``changes``, its batches passed through
    ``fill``, which sets their relevance fields from the same rows of another source
    (members of the same file, a labels file). ``by_rows``: ``fill`` fills any rows in any
    thread, so parts that read any range of rows on their own keep doing so."""
    if dump.parts is not None:
        part = (FilledRowsPart if by_rows and all(getattr(type(p), "reads_rows", False)
                                                  for p in dump.parts) else FilledPart)
        return relabel(dump, info, parts=[part(p, fill) for p in dump.parts], **changes)
    base = dump._batches

    def batches(batch_rows: int) -> Iterator[Batch]:
        for batch in base(batch_rows):  # type: ignore[misc]
            yield fill(batch)
    return relabel(dump, info, batches=batches, **changes)
