"""Readers: a score dump on disk -> batches of rows ready for the kernels, in bounded memory.

Supported layouts (one path = one run):

* NPY: a bare ``(instances, candidates)`` score matrix, memory-mapped; pages already read are
  released after each batch, so the resident set stays near one batch.
* NPZ: array ``scores`` (same shape) and optional integer array ``positive`` (one column
  index per row); 0-d string entries become run metadata. Never unpickled. Members stored
  uncompressed (``np.savez``) are memory-mapped in place like NPY; compressed members
  (``np.savez_compressed``) are decompressed in row chunks through the zip member, never
  whole, and their CRC is checked at the end.
* Parquet, a file or a directory of files (a multi-file dataset as Spark writes it): column
  ``scores`` of list / large_list / fixed_size_list of numbers (rows may differ in length)
  and optional integer column ``positive``; key-value metadata becomes run metadata. Read
  row group by row group, page by page (``pre_buffer`` off), so memory follows the batch,
  not the file or the row group.
* Long (tidy) layout, Parquet or CSV: one row per (instance, candidate); see
  :mod:`tieeval.longformat`.

Without a ``positive`` field the positive is column ``positive_index`` (default 0).
Nothing here casts the scores: they reach the kernels in their stored dtype.

A dump is cut into *parts* (row ranges of a matrix, Parquet row groups, spill partitions)
that can be read independently, in another process; :mod:`tieeval.parallel` hands them to
workers. Sources that can only be read front to back (a compressed NPZ member, a sorted
long-format stream) have no parts and are read by one process.
"""

from __future__ import annotations

import functools
import mmap
import os
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import unquote, urlparse

import numpy as np

from .errors import InputError, ParameterError

FORMATS = ("npy", "npz", "parquet", "csv")
LAYOUTS = ("auto", "wide", "long")
_SUFFIXES = {".npy": "npy", ".npz": "npz", ".parquet": "parquet", ".pq": "parquet",
             ".csv": "csv", ".gz": "csv"}
_MAGIC = ((b"\x93NUMPY", "npy"), (b"PK\x03\x04", "npz"), (b"PAR1", "parquet"))
DEFAULT_BATCH_ROWS = 1 << 16  # the most rows in one batch
TARGET_BATCH_BYTES = 16 << 20  # automatic batches hold about this many bytes of scores
PART_BYTES = 64 << 20  # matrix dumps are cut into parts of about this size for workers
LARGE_ROW_GROUP_BYTES = 512 << 20
SCORE_DTYPES = ("float16", "float32", "float64")


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


@dataclass
class Batch:
    """Consecutive rows of a dump.

    Dense: ``scores`` is 2-D and ``offsets`` is None. Ragged: ``scores`` is the flat values
    and row i is ``scores[offsets[i]:offsets[i+1]]``. ``positive`` holds each row's positive
    column (int64, already range-checked); ``start`` is the dump row of the first row.
    ``labels``, when the dump carries relevance labels, has the same layout as ``scores``
    (graded gains > 0, 0 unobserved, < 0 explicit negatives); ``positive`` is then unused.
    ``ids`` (long layout) holds each row's instance id, for messages; ``nbytes`` is the
    share of the input this batch accounts for (for progress reports). ``items``, when the
    dump carries candidate ids, has the scores' layout too (see :mod:`tieeval.labelled_io`).
    """

    scores: np.ndarray
    positive: np.ndarray
    start: int
    offsets: np.ndarray | None = None
    labels: np.ndarray | None = None
    ids: np.ndarray | None = None
    nbytes: int = 0
    items: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.positive)

    def lengths(self) -> np.ndarray:
        if self.offsets is None:
            return np.full(self.rows, self.scores.shape[1], dtype=np.int64)
        return np.diff(self.offsets).astype(np.int64)

    def where(self, i: int) -> str:
        """How messages name batch row ``i``: the dump row, or the long layout's instance."""
        if self.ids is not None:
            return f"instance {instance_name(self.ids[i])}"
        return f"row {self.start + i}"


def instance_name(value) -> str:
    """An instance id as messages show it: integers plain, strings quoted."""
    if isinstance(value, (str, bytes)):
        return repr(value)
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


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
    _batches: object = None
    layout: str = "wide"
    rows: int | None = None
    nbytes: int = 0
    row_bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    parts: list | None = None
    _settle: object = None
    _verify: object = None
    _start_over: object = None

    def verify(self) -> None:
        """Raise the input's own corruption error, if it has one. Called when a batch gave a
        data error: a damaged compressed member decodes to garbage (say, a NaN) before its
        CRC is checked at the end, and the damage is the error to report."""
        if self._verify is not None:
            self._verify()

    def settle(self) -> None:
        """Make :meth:`batches` a single pass that never raises :class:`ReadAgain` (the
        long layout checks its order, and what its label column holds, first); callers
        that cannot start over call this."""
        if self._settle is not None:
            self._settle()

    def start_over(self, reason: ReadAgain) -> None:
        """Prepare to be read from the start after :meth:`batches` raised ``reason`` (a
        :class:`ReadAgain`, possibly from a worker process reading a part)."""
        if self._start_over is not None:
            self._start_over(reason)

    def batch_size(self, batch_rows: int | None = None) -> int:
        """``batch_rows``, or (None) as many rows as fit :data:`TARGET_BATCH_BYTES`."""
        if batch_rows is not None:
            if isinstance(batch_rows, bool) or int(batch_rows) < 1:
                raise ParameterError(f"batch_rows must be a whole number >= 1, got {batch_rows!r}")
            return int(batch_rows)
        if self.row_bytes <= 0:
            return DEFAULT_BATCH_ROWS
        return int(max(64, min(DEFAULT_BATCH_ROWS, TARGET_BATCH_BYTES // self.row_bytes)))

    def batches(self, batch_rows: int | None = None) -> Iterator[Batch]:
        size = self.batch_size(batch_rows)
        if self.parts is not None:
            return self._part_batches(self.parts, size)
        return self._batches(size)

    def _part_batches(self, parts, size: int) -> Iterator[Batch]:
        try:
            for part in parts:
                yield from part.batches(size)
        except ReadAgain as exc:  # a part learned something about the dump: tell it
            self.start_over(exc)
            raise


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
        return unquote(urlparse(path).path)
    return path


def detect_format(path: str) -> str:
    """The dump format from the file suffix, else from its first bytes."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".gz" and not path.lower().endswith(".csv.gz"):
        suffix = ""
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    for magic, fmt in _MAGIC:
        if head.startswith(magic):
            return fmt
    raise InputError(f"{path}: unknown format (expected .npy, .npz or .parquet); long-layout "
                     "dumps may also be .csv")


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ParameterError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return layout


def _with_relevance(opener):
    """Hook: relevance fields next to the scores (``labels``, ``positives``/``negatives``,
    ``items``) and TREC runs (``qrels``) are read by :mod:`tieeval.labelled_io`."""
    @functools.wraps(opener)
    def open_dump(path, options=None):
        from .labelled_io import open_with_relevance
        return open_with_relevance(opener, path, options)
    return open_dump


@_with_relevance
def open_dump(path: str, options: ReadOptions | None = None) -> Dump:
    """Open ``path`` and validate its schema; rows are read lazily by :meth:`Dump.batches`.

    ``path`` is a file, or a directory holding a Parquet dataset (its ``*.parquet`` files,
    recursively, in path order; names starting with ``_`` or ``.`` are skipped as Spark and
    Hadoop write them).
    """
    options = options or ReadOptions()
    check_layout(options.layout)
    if options.score_dtype is not None and options.score_dtype not in SCORE_DTYPES:
        raise ParameterError(f"score_dtype must be one of {', '.join(SCORE_DTYPES)}, got "
                             f"{options.score_dtype!r}")
    path = os.fspath(path)
    if os.path.isdir(path):
        files = dataset_files(path)
        if not files:
            raise InputError(f"{path}: is a directory with no Parquet files (*.parquet, *.pq)")
        return _open_parquet(path, files, options)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    fmt = detect_format(path)
    if os.path.getsize(path) == 0:
        raise InputError(f"{path}: empty file")
    if fmt == "csv":
        from .longformat import open_long_csv
        if options.layout == "wide":
            raise InputError(f"{path}: CSV dumps are read in the long layout only (one row "
                             "per instance and candidate); drop --layout wide")
        return open_long_csv(path, options)
    if fmt in ("npy", "npz") and options.layout == "long":
        raise InputError(f"{path}: the long layout is read from Parquet or CSV, not "
                         f".{fmt}")
    if fmt == "parquet":
        return _open_parquet(path, [path], options)
    given = options.long_options_given
    if given:
        raise ParameterError(f"{', '.join(given)} only apply to long-layout Parquet or CSV "
                             "dumps")
    return {"npy": _open_npy, "npz": _open_npz}[fmt](path, options)


def dataset_files(directory: str) -> list[str]:
    """The Parquet files of a dataset directory, in path order (hidden and _ files skipped)."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in files:
            if name.startswith((".", "_")):
                continue
            if name.lower().endswith((".parquet", ".pq")):
                found.append(os.path.join(root, name))
    return sorted(found)


# ---------------------------------------------------------------------------------------
# validation shared by every layout

def table_layout(options: ReadOptions, names) -> str:
    """The layout of a table with columns ``names``: ``options.layout``, or for ``auto``
    long when it has the instance and score columns and no scores column, else wide."""
    if options.layout != "auto":
        return options.layout
    cols = options.long_columns
    return ("long" if options.scores not in names and cols["instance"] in names
            and cols["score"] in names else "wide")


def require_scores_column(where: str, options: ReadOptions, names) -> None:
    """A wide table must have the scores column; the message lists what it has."""
    if options.scores not in names:
        raise InputError(f"{where}: no column '{options.scores}' (found: {', '.join(names)})")


def positive_index_conflict(where: str, name: str, what: str) -> InputError:
    """A dump with its own positive (or label) ``what`` ``name`` and --positive-index."""
    return InputError(f"{where}: the dump has a '{name}' {what}; --positive-index would "
                      "contradict it")


def check_score_dtype(path: str, dtype: np.dtype, what: str = "scores") -> np.dtype:
    dtype = np.dtype(dtype)
    if (dtype.kind == "f" and dtype.itemsize <= 8) or dtype.kind in "iu":
        return dtype
    raise InputError(f"{path}: {what} must be numbers (float16/32/64 or integers), got {dtype}")


def resolve_positive(path: str, positive, lengths: np.ndarray, start: int, *,
                     count_back: bool = True) -> np.ndarray:
    """Turn per-row positive indices into checked int64.

    With ``count_back`` (``--positive-index`` and the Python API) a negative index counts
    from the end of the row. A ``positive`` field stored in a dump must hold 0..n-1: there a
    negative value is more likely a "no positive" sentinel than a request for the last
    column, and evaluating the last column would be a silently wrong number.
    """
    positive = np.asarray(positive)
    if positive.dtype.kind not in "iu":
        raise InputError(f"{path}: positive must hold integer column indices, got "
                         f"{positive.dtype}")
    if positive.dtype.kind == "u":
        # Unsigned indices never count back: 2**64 - 1 must not wrap to -1 (the last column).
        pos = np.minimum(positive, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
    elif not count_back:
        pos = positive.astype(np.int64)
    else:
        pos = positive.astype(np.int64)
        pos = np.where(pos < 0, pos + lengths, pos)
    bad = np.flatnonzero((pos < 0) | (pos >= lengths))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{path}: row {start + i}: positive index {int(positive[i])} is out of "
                         f"range for {int(lengths[i])} candidate(s)")
    return pos


def _positive_for(path, options, lengths, start, stored):
    if stored is not None:
        return resolve_positive(path, stored, lengths, start, count_back=False)
    index = 0 if options.positive_index is None else options.positive_index
    return resolve_positive(path, np.full(len(lengths), index, dtype=np.int64), lengths, start)


def _check_matrix(path: str, arr, what: str) -> None:
    check_score_dtype(path, arr.dtype, what)
    if len(arr.shape) != 2:
        raise InputError(f"{path}: {what} must be a 2-D (instances, candidates) array, got "
                         f"shape {tuple(arr.shape)}")
    if arr.shape[0] == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    if arr.shape[1] == 0:
        raise InputError(f"{path}: rows have no candidates (shape {tuple(arr.shape)})")


def _check_positive_field(path, options, positive, rows):
    """Check a stored positive array (or its header: anything with dtype and shape)."""
    if positive is None:
        return None
    if options.positive_index is not None:
        raise positive_index_conflict(path, options.positive, "field")
    if len(positive.shape) != 1 or positive.shape[0] != rows:
        raise InputError(f"{path}: '{options.positive}' must have one entry per instance "
                         f"({rows}), got shape {tuple(positive.shape)}")
    if np.dtype(positive.dtype).kind not in "iu":
        raise InputError(f"{path}: '{options.positive}' must hold integer column indices, got "
                         f"{positive.dtype}")
    return positive


# ---------------------------------------------------------------------------------------
# NPY and NPZ: arrays located in a file (memory-mapped) or in a compressed zip member

@dataclass(frozen=True)
class ArraySpec:
    """Where an uncompressed .npy array lies in a file: enough to memory-map it anywhere."""

    file: str
    offset: int
    dtype: np.dtype
    shape: tuple
    fortran: bool

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def map(self):
        """(array view, mmap) of the whole array; read-only, nothing read yet."""
        with open(self.file, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if hasattr(mmap, "MADV_SEQUENTIAL"):
            mm.madvise(mmap.MADV_SEQUENTIAL)
        arr = np.ndarray(self.shape, self.dtype, buffer=mm, offset=self.offset,
                         order="F" if self.fortran else "C")
        return arr, mm

    def release(self, mm, lo: int, hi: int) -> None:
        """Drop the pages of rows lo..hi from this process's resident set (C order only).

        The mapping is read-only and file-backed, so the kernel re-reads them from the page
        cache if they are touched again; this only keeps RSS near one batch.
        """
        if self.fortran or not hasattr(mmap, "MADV_DONTNEED"):
            return
        begin = self.offset + lo * self.row_bytes
        end = self.offset + hi * self.row_bytes
        begin -= begin % mmap.PAGESIZE
        if end > begin:
            try:
                mm.madvise(mmap.MADV_DONTNEED, begin, end - begin)
            except (OSError, ValueError):  # pragma: no cover - advisory only
                pass


def _npy_header(fh, path: str, what: str):
    """Read an .npy header from ``fh``: (dtype, shape, fortran). Never unpickles."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:  # pragma: no cover - numpy raises first
            raise ValueError(f"unknown .npy version {version}")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise _load_error(path, exc) from None
    if dtype.hasobject:
        raise InputError(f"{path}: holds pickled Python objects; tieeval never unpickles "
                         "(save plain numeric arrays)")
    return dtype, tuple(shape), bool(fortran)


def _load_error(path: str, exc: Exception) -> InputError:
    text = str(exc)
    if ("allow_pickle" in text and "Object arrays" not in text
            and not _starts_like_pickle(path)):
        # np.load found no numpy magic and offers to unpickle; a file cut inside its magic
        # (or any other non-pickle bytes) is damaged, not pickled.
        return InputError(f"{path}: corrupted or truncated file (no .npy/.npz header)")
    if "allow_pickle" in text or "Python objects" in text or "Object arrays" in text:
        return InputError(f"{path}: holds pickled Python objects; tieeval never unpickles "
                          "(save plain numeric arrays)")
    return InputError(f"{path}: corrupted or truncated file ({type(exc).__name__}: "
                      f"{text.splitlines()[0] if text else 'unreadable'})")


def _starts_like_pickle(path: str) -> bool:
    # pickle protocols 2 and later (numpy, torch and joblib all use them) open with PROTO
    try:
        with open(path, "rb") as fh:
            return fh.read(1) == b"\x80"
    except OSError:
        return False


@dataclass(frozen=True)
class MatrixPart:
    """Rows ``lo..hi`` of a memory-mapped score matrix (and of its positive vector)."""

    path: str
    scores: ArraySpec
    positive: ArraySpec | None
    positive_index: int | None
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo

    @property
    def nbytes(self) -> int:
        return self.rows * self.scores.row_bytes

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        scores, mm = self.scores.map()
        positive = self.positive.map()[0] if self.positive is not None else None
        cols = scores.shape[1]
        options = ReadOptions(positive_index=self.positive_index)
        for start in range(self.lo, self.hi, batch_rows):
            stop = min(start + batch_rows, self.hi)
            try:
                block = np.asarray(scores[start:stop])
                stored = None if positive is None else np.array(positive[start:stop])
            except (OSError, ValueError) as exc:  # pragma: no cover - file shrank under us
                raise InputError(f"{self.path}: corrupted or truncated file ({exc})") from None
            lengths = np.full(stop - start, cols, dtype=np.int64)
            yield Batch(block, _positive_for(self.path, options, lengths, start, stored), start,
                        nbytes=(stop - start) * self.scores.row_bytes)
            self.scores.release(mm, start, stop)


def _matrix_parts(path, scores: ArraySpec, positive, options) -> list[MatrixPart]:
    rows = scores.shape[0]
    step = max(1, PART_BYTES // max(1, scores.row_bytes))
    return [MatrixPart(path, scores, positive, options.positive_index, lo, min(lo + step, rows))
            for lo in range(0, rows, step)]


def _check_extent(path: str, spec: ArraySpec, limit: int) -> None:
    need = spec.offset + int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
    if need > limit:
        raise InputError(f"{path}: corrupted or truncated file (the array needs {need} bytes, "
                         f"{limit} are there)")


def _open_npy(path: str, options: ReadOptions) -> Dump:
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            fh.seek(0)
            # not an .npy: let np.load say whether it is a pickle or damaged
            try:
                np.load(fh, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise _load_error(path, exc) from None
            raise InputError(f"{path}: not a single .npy array")
        fh.seek(0)
        dtype, shape, fortran = _npy_header(fh, path, "scores")
        offset = fh.tell()
    spec = ArraySpec(path, offset, dtype, shape, fortran)
    _check_matrix(path, spec, "scores")
    _check_extent(path, spec, os.path.getsize(path))
    return Dump(path, "npy", dtype, {}, None, rows=shape[0], nbytes=os.path.getsize(path),
                row_bytes=spec.row_bytes, parts=_matrix_parts(path, spec, None, options))


class _NpzMember:
    """One ``.npy`` member of an NPZ archive: its header, and where or how to read it."""

    def __init__(self, path: str, archive: zipfile.ZipFile, name: str):
        self.path, self.archive, self.name = path, archive, name
        self.info = archive.getinfo(name)
        try:
            with archive.open(self.info) as fh:
                self.dtype, self.shape, self.fortran = _npy_header(fh, path, name)
                self.header_bytes = fh.tell()
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
                NotImplementedError, RuntimeError) as exc:
            raise _load_error(path, exc) from None

    @property
    def stored(self) -> bool:
        return self.info.compress_type == zipfile.ZIP_STORED and not self.info.flag_bits & 1

    def spec(self) -> ArraySpec:
        """Where the array's bytes lie in the archive file (stored members only)."""
        with open(self.path, "rb") as fh:
            fh.seek(self.info.header_offset)
            local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise InputError(f"{self.path}: corrupted or truncated file (bad local header of "
                             f"member {self.name})")
        name_len = int.from_bytes(local[26:28], "little")
        extra_len = int.from_bytes(local[28:30], "little")
        data = self.info.header_offset + 30 + name_len + extra_len
        spec = ArraySpec(self.path, data + self.header_bytes, self.dtype, self.shape,
                         self.fortran)
        _check_extent(self.path, spec, min(os.path.getsize(self.path),
                                           data + self.info.file_size))
        return spec

    def load(self) -> np.ndarray:
        """The whole array (for small members: metadata, or a Fortran-order matrix)."""
        try:
            with self.archive.open(self.info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise _load_error(self.path, exc) from None


class _RowStream:
    """Row chunks of a compressed ``.npy`` member, decompressed as they are read."""

    def __init__(self, member: _NpzMember):
        self.member = member
        self.fh = member.archive.open(member.info)
        self.fh.read(member.header_bytes)
        self.row_bytes = int(np.prod(member.shape[1:], dtype=np.int64)) * member.dtype.itemsize

    def read(self, rows: int) -> np.ndarray:
        m = self.member
        want = rows * self.row_bytes
        try:
            data = self.fh.read(want)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                             ) from None
        if len(data) != want:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name} ends "
                             "early)")
        return np.frombuffer(data, dtype=m.dtype).reshape((rows,) + m.shape[1:])

    def finish(self) -> None:
        """Read to the end, which makes zipfile check the member's CRC."""
        rest = 0
        try:
            while True:
                chunk = self.fh.read(1 << 22)
                if not chunk:
                    break
                rest += len(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            m = self.member
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                             ) from None
        finally:
            self.fh.close()
        if rest:
            raise InputError(f"{self.member.path}: corrupted or truncated file (member "
                             f"{self.member.name} is longer than its header says)")


def _open_npz(path: str, options: ReadOptions) -> Dump:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        # not a zip at all: np.load says whether it is a pickle or damaged
        try:
            np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc2:
            raise _load_error(path, exc2) from None
        raise _load_error(path, exc) from None
    names = {n[:-4]: n for n in archive.namelist() if n.endswith(".npy")}
    if options.scores not in names:
        raise InputError(f"{path}: no array '{options.scores}' (found: "
                         f"{', '.join(sorted(names)) or 'nothing'})")
    scores = _NpzMember(path, archive, names[options.scores])
    positive = (_NpzMember(path, archive, names[options.positive])
                if options.positive in names else None)
    metadata = {}
    for name in sorted(set(names) - {options.scores, options.positive}):
        member = _NpzMember(path, archive, names[name])  # refuses object arrays
        if member.dtype.kind == "U" and int(np.prod(member.shape, dtype=np.int64)) == 1:
            metadata[name] = str(member.load().reshape(()))
    _check_matrix(path, scores, f"'{options.scores}'")
    _check_positive_field(path, options, positive, scores.shape[0])
    rows = scores.shape[0]
    row_bytes = int(np.prod(scores.shape[1:], dtype=np.int64)) * scores.dtype.itemsize
    common = dict(rows=rows, nbytes=os.path.getsize(path), row_bytes=row_bytes)
    if scores.stored and (positive is None or positive.stored):
        spec = scores.spec()
        pspec = positive.spec() if positive is not None else None
        archive.close()
        return Dump(path, "npz", scores.dtype, metadata, None,
                    parts=_matrix_parts(path, spec, pspec, options), **common)

    warnings = []
    if scores.fortran and not scores.stored:
        warnings.append(f"{path}: '{options.scores}' is a compressed Fortran-order array, "
                        "which cannot be read by rows: it is loaded whole (save it in C order "
                        "with np.ascontiguousarray to stream it)")

    def gen(batch_rows):
        pos_all = positive.load() if positive is not None else None
        if scores.fortran and not scores.stored:
            whole = scores.load()
            stream = None
        else:
            stream = _RowStream(scores)
        cols = scores.shape[1]
        for start in range(0, rows, batch_rows):
            n = min(batch_rows, rows - start)
            block = whole[start:start + n] if stream is None else stream.read(n)
            stored = None if pos_all is None else pos_all[start:start + n]
            lengths = np.full(n, cols, dtype=np.int64)
            yield Batch(block, _positive_for(path, options, lengths, start, stored), start,
                        nbytes=n * row_bytes)
        if stream is not None:
            stream.finish()
    def verify():
        for member in (scores, positive):
            if member is not None and not member.stored:
                _RowStream(member).finish()
    return Dump(path, "npz", scores.dtype, metadata, gen, warnings=warnings, _verify=verify,
                **common)


# ---------------------------------------------------------------------------------------
# Parquet

def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a run-time dependency
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow") from None
    return pa, pq


def parquet_file(path: str):
    """A ParquetFile that streams: no pre-buffering, pages read through a 1 MB buffer.

    Measured with pyarrow 26 (benchmarks/README.md): ``iter_batches`` over a whole file
    with the default ``pre_buffer=True`` keeps every row group's column chunks cached until
    the iterator ends, so memory grows with the file; one row group at a time with
    ``pre_buffer=False`` and a read buffer stays near one batch, whatever the row group size.
    """
    st = os.stat(path)
    return _parquet_file(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _parquet_file(path: str, mtime_ns: int, size: int):
    _, pq = _pyarrow()
    return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)


def _parquet_error(path: str, exc: Exception, where: str = "") -> InputError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(f"{path}: corrupted or truncated Parquet file ({where}{text})")


def _open_parquet(path: str, files: list[str], options: ReadOptions) -> Dump:
    pa, pq = _pyarrow()
    opened = []
    for file in files:
        try:
            pf = parquet_file(file)
            schema = pf.schema_arrow
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _parquet_error(file, exc) from None
        opened.append((file, pf, schema))
    schema = opened[0][2]
    names = schema.names
    if table_layout(options, names) == "long":
        from .longformat import open_long_parquet
        return open_long_parquet(path, opened, options)
    given = options.long_options_given
    if given:
        raise ParameterError(f"{', '.join(given)} only apply to long-layout Parquet or CSV "
                             f"dumps; {path} has a '{options.scores}' list column")
    where = path if len(files) == 1 else files[0]
    require_scores_column(where, options, names)
    stype = schema.field(options.scores).type
    if not (pa.types.is_list(stype) or pa.types.is_large_list(stype)
            or pa.types.is_fixed_size_list(stype)):
        raise InputError(f"{where}: column '{options.scores}' must be a list of numbers per "
                         f"row, got {stype}")
    vtype = stype.value_type
    if not (pa.types.is_floating(vtype) or pa.types.is_integer(vtype)):
        raise InputError(f"{where}: column '{options.scores}' must hold numbers, got {vtype}")
    dtype = check_score_dtype(where, vtype.to_pandas_dtype(), f"'{options.scores}'")
    has_positive = options.positive in names
    if has_positive:
        ptype = schema.field(options.positive).type
        if not pa.types.is_integer(ptype):
            raise InputError(f"{where}: column '{options.positive}' must hold integer column "
                             f"indices, got {ptype}")
        if options.positive_index is not None:
            raise positive_index_conflict(where, options.positive, "column")
    wanted = [options.scores] + ([options.positive] if has_positive else [])
    check_same_columns(files[0], schema, [(file, other) for file, _, other in opened[1:]],
                       wanted)
    raw = schema.metadata or {}
    metadata = {k.decode(): v.decode() for k, v in raw.items()
                if not k.startswith(b"ARROW:") and k != b"pandas"}
    parts, warnings, total_rows, total_bytes = [], [], 0, 0
    for file, pf, _ in opened:
        meta = pf.metadata
        start = 0
        big = []
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            if rg.num_rows == 0:
                continue
            size = compressed_size(rg)
            parts.append(RowGroupPart(file, g, start, rg.num_rows, wanted, has_positive,
                                      options.scores, options.positive, options.positive_index,
                                      int(size)))
            if rg.total_byte_size > LARGE_ROW_GROUP_BYTES:
                big.append(rg.total_byte_size)
            start += rg.num_rows
            total_bytes += int(size)
        total_rows += start
        if big:
            warnings.append(
                f"{file}: {len(big)} row group(s) of up to {max(big) / 2**20:.0f} MB; they are "
                "streamed page by page, but a row group is the unit of parallel work (--jobs, "
                "Spark tasks), so large ones serialise the run. Rewrite with smaller row groups, "
                "e.g. pyarrow.parquet.write_table(table, path, row_group_size=N) with N rows "
                "of about 64 MB, or Spark's parquet.block.size")
    if total_rows == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    row_bytes = dtype.itemsize * (stype.list_size if pa.types.is_fixed_size_list(stype) else 0)
    if not row_bytes:  # variable-length lists: estimate from the uncompressed size
        unc = sum(pf.metadata.row_group(g).total_byte_size for _, pf, _ in opened
                  for g in range(pf.metadata.num_row_groups))
        row_bytes = max(1, unc // max(1, total_rows))
    return Dump(path, "parquet", dtype, metadata, None, rows=total_rows, nbytes=total_bytes,
                row_bytes=int(row_bytes), warnings=warnings, parts=parts)


def check_same_columns(first: str, schema, others, columns) -> None:
    """Every ``(file, schema)`` of ``others`` has each of ``columns`` with the type it has in
    ``schema``, the schema of the dataset's ``first`` file."""
    for file, other in others:
        for col in columns:
            if col not in other.names or other.field(col).type != schema.field(col).type:
                found = other.field(col).type if col in other.names else "no such column"
                raise InputError(f"{file}: column '{col}' differs from {first} "
                                 f"({found} vs {schema.field(col).type}); a dataset's files "
                                 "must share one schema")


def compressed_size(rg) -> int:
    """Bytes a row group occupies in its file (the sum of its column chunks)."""
    return int(sum(rg.column(i).total_compressed_size for i in range(rg.num_columns)))


@dataclass(frozen=True)
class RowGroupPart:
    """One row group of one Parquet file: rows ``start..start+rows`` of that file."""

    path: str
    group: int
    start: int
    rows: int
    columns: list
    has_positive: bool
    scores: str
    positive: str
    positive_index: int | None
    nbytes: int

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        pa, _ = _pyarrow()
        options = ReadOptions(scores=self.scores, positive=self.positive,
                              positive_index=self.positive_index)
        start = self.start
        try:
            pf = parquet_file(self.path)
            it = pf.iter_batches(batch_size=batch_rows, row_groups=[self.group],
                                 columns=self.columns, use_threads=False)
            for record in it:
                if record.num_rows == 0:
                    continue
                share = self.nbytes * record.num_rows // max(1, self.rows)
                batch = parquet_batch(self.path, options, record, self.has_positive, start)
                batch.nbytes = share
                yield batch
                start += record.num_rows
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _parquet_error(self.path, exc, f"row group {self.group}: ") from None


def arrow_lists(path: str, column, what: str, where) -> tuple[np.ndarray, np.ndarray]:
    """A list-typed Arrow column -> (flat numpy values, int64 offsets from 0); a null row or
    value is an InputError naming the row as ``where(i)`` (i counted in this column)."""
    pa, _ = _pyarrow()
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"{path}: {where(i)}: '{what}' is null")
    if pa.types.is_fixed_size_list(arr.type):
        flat = arr.flatten()
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * arr.type.list_size
    else:
        offsets = arr.offsets.to_numpy().astype(np.int64)
        flat = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
    if flat.null_count:
        pos = int(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))[0])
        i = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise InputError(f"{path}: {where(i)}: '{what}' holds a null value")
    return flat.to_numpy(zero_copy_only=False), offsets


def list_to_numpy(path: str, column, start: int, what: str):
    """A list-typed Arrow column -> (values, offsets) or a dense 2-D array (offsets None)."""
    values, offsets = arrow_lists(path, column, what, lambda i: f"row {start + i}")
    lengths = np.diff(offsets)
    if lengths.size and lengths.min() < 1:
        i = int(np.flatnonzero(lengths < 1)[0])
        raise InputError(f"{path}: row {start + i}: no candidates (a row needs at least one)")
    if lengths.size and lengths.min() == lengths.max():
        return values.reshape(len(lengths), int(lengths[0])), None
    return values, offsets


def parquet_batch(path, options, table, has_positive, start) -> Batch:
    """An Arrow table or record batch of the wide layout -> a :class:`Batch`."""
    scores, offsets = list_to_numpy(path, table.column(options.scores), start, options.scores)
    lengths = (np.full(scores.shape[0], scores.shape[1], dtype=np.int64) if offsets is None
               else np.diff(offsets).astype(np.int64))
    stored = None
    if has_positive:
        col = table.column(options.positive)
        if col.null_count:
            i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(f"{path}: row {start + i}: '{options.positive}' is null")
        stored = col.to_numpy()
    positive = _positive_for(path, options, lengths, start, stored)
    return Batch(scores, positive, start, offsets)


_parquet_batch = parquet_batch  # the name other modules used before it was public
