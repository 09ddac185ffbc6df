"""Readers: a score dump on disk -> batches of rows ready for the kernels.

Supported layouts (one file = one run):

* NPY: a bare ``(instances, candidates)`` score matrix, memory-mapped.
* NPZ: array ``scores`` (same shape) and optional integer array ``positive`` (one column
  index per row); 0-d string entries become run metadata. Always ``allow_pickle=False``.
* Parquet: column ``scores`` of list / large_list / fixed_size_list of numbers (rows may
  differ in length) and optional integer column ``positive``; key-value metadata becomes
  run metadata. Read row group by row group.

Without a ``positive`` field the positive is column ``positive_index`` (default 0).
Nothing here casts the scores: they reach the kernels in their stored dtype.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from .errors import InputError

FORMATS = ("npy", "npz", "parquet")
_SUFFIXES = {".npy": "npy", ".npz": "npz", ".parquet": "parquet", ".pq": "parquet"}
_MAGIC = ((b"\x93NUMPY", "npy"), (b"PK\x03\x04", "npz"), (b"PAR1", "parquet"))
DEFAULT_BATCH_ROWS = 1 << 16


@dataclass
class ReadOptions:
    """Names of the fields to read and where the positive sits when no field says so."""

    scores: str = "scores"
    positive: str = "positive"
    positive_index: int | None = None  # None: column 0 unless the dump has a positive field


@dataclass
class Batch:
    """Consecutive rows of a dump.

    Dense: ``scores`` is 2-D and ``offsets`` is None. Ragged: ``scores`` is the flat values
    and row i is ``scores[offsets[i]:offsets[i+1]]``. ``positive`` holds each row's positive
    column (int64, already range-checked); ``start`` is the dump row of the first row.
    ``labels``, when the dump carries relevance labels, has the same layout as ``scores``
    (graded gains > 0, 0 unobserved, < 0 explicit negatives); ``positive`` is then unused.
    """

    scores: np.ndarray
    positive: np.ndarray
    start: int
    offsets: np.ndarray | None = None
    labels: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.positive)

    def lengths(self) -> np.ndarray:
        if self.offsets is None:
            return np.full(self.rows, self.scores.shape[1], dtype=np.int64)
        return np.diff(self.offsets).astype(np.int64)


@dataclass
class Dump:
    """An opened score dump: its format, score dtype, metadata, and a batch iterator."""

    path: str
    format: str
    dtype: np.dtype
    metadata: dict[str, str] = field(default_factory=dict)
    _batches: object = None

    def batches(self, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Batch]:
        return self._batches(batch_rows)


def detect_format(path: str) -> str:
    """The dump format from the file suffix, else from its first bytes."""
    suffix = os.path.splitext(path)[1].lower()
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
    raise InputError(f"{path}: unknown format (expected .npy, .npz or .parquet)")


def open_dump(path: str, options: ReadOptions | None = None) -> Dump:
    """Open ``path`` and validate its schema; rows are read lazily by :meth:`Dump.batches`."""
    options = options or ReadOptions()
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a score dump")
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    fmt = detect_format(path)
    if os.path.getsize(path) == 0:
        raise InputError(f"{path}: empty file")
    opener = {"npy": _open_npy, "npz": _open_npz, "parquet": _open_parquet}[fmt]
    return opener(path, options)


# ---------------------------------------------------------------------------------------
# validation shared by every layout

def check_score_dtype(path: str, dtype: np.dtype, what: str = "scores") -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or (dtype.kind in "iu"):
        return dtype
    raise InputError(f"{path}: {what} must be numbers (float16/32/64 or integers), got {dtype}")


def resolve_positive(path: str, positive, lengths: np.ndarray, start: int) -> np.ndarray:
    """Turn per-row positive indices (negative counts from the end) into checked int64."""
    positive = np.asarray(positive)
    if positive.dtype.kind not in "iu":
        raise InputError(f"{path}: positive must hold integer column indices, got "
                         f"{positive.dtype}")
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
        return resolve_positive(path, stored, lengths, start)
    index = 0 if options.positive_index is None else options.positive_index
    return resolve_positive(path, np.full(len(lengths), index, dtype=np.int64), lengths, start)


def _check_matrix(path: str, arr: np.ndarray, what: str) -> None:
    check_score_dtype(path, arr.dtype, what)
    if arr.ndim != 2:
        raise InputError(f"{path}: {what} must be a 2-D (instances, candidates) array, got "
                         f"shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    if arr.shape[1] == 0:
        raise InputError(f"{path}: rows have no candidates (shape {arr.shape})")


def _dense_batches(path, options, scores, stored_positive):
    def gen(batch_rows):
        rows, cols = scores.shape
        for start in range(0, rows, batch_rows):
            block = np.asarray(scores[start:start + batch_rows])
            lengths = np.full(block.shape[0], cols, dtype=np.int64)
            stored = None if stored_positive is None else stored_positive[start:start + batch_rows]
            yield Batch(block, _positive_for(path, options, lengths, start, stored), start)
    return gen


def _check_positive_field(path, options, positive, rows):
    if positive is None:
        return None
    if options.positive_index is not None:
        raise InputError(f"{path}: the dump has a '{options.positive}' field; "
                         "--positive-index would contradict it")
    positive = np.asarray(positive)
    if positive.ndim != 1 or positive.shape[0] != rows:
        raise InputError(f"{path}: '{options.positive}' must have one entry per instance "
                         f"({rows}), got shape {positive.shape}")
    if positive.dtype.kind not in "iu":
        raise InputError(f"{path}: '{options.positive}' must hold integer column indices, got "
                         f"{positive.dtype}")
    return positive


# ---------------------------------------------------------------------------------------
# NPY and NPZ

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


def _open_npy(path: str, options: ReadOptions) -> Dump:
    try:
        scores = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise _load_error(path, exc) from None
    if not isinstance(scores, np.ndarray):
        raise InputError(f"{path}: not a single .npy array")
    _check_matrix(path, scores, "scores")
    return Dump(path, "npy", scores.dtype, {}, _dense_batches(path, options, scores, None))


def _open_npz(path: str, options: ReadOptions) -> Dump:
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise _load_error(path, exc) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InputError(f"{path}: not an .npz archive")
    with archive:
        names = set(archive.files)
        if options.scores not in names:
            raise InputError(f"{path}: no array '{options.scores}' (found: "
                             f"{', '.join(sorted(names)) or 'nothing'})")
        try:
            scores = archive[options.scores]
            positive = archive[options.positive] if options.positive in names else None
            metadata = {}
            for name in sorted(names - {options.scores, options.positive}):
                value = archive[name]
                if value.dtype.kind == "U" and value.size == 1:
                    metadata[name] = str(value.reshape(()))
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
            raise _load_error(path, exc) from None
    _check_matrix(path, scores, f"'{options.scores}'")
    positive = _check_positive_field(path, options, positive, scores.shape[0])
    return Dump(path, "npz", scores.dtype, metadata,
                _dense_batches(path, options, scores, positive))


# ---------------------------------------------------------------------------------------
# Parquet

def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a run-time dependency
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow") from None
    return pa, pq


def _open_parquet(path: str, options: ReadOptions) -> Dump:
    pa, pq = _pyarrow()
    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{path}: corrupted or truncated Parquet file ({exc})") from None
    names = schema.names
    if options.scores not in names:
        raise InputError(f"{path}: no column '{options.scores}' (found: {', '.join(names)})")
    stype = schema.field(options.scores).type
    if not (pa.types.is_list(stype) or pa.types.is_large_list(stype)
            or pa.types.is_fixed_size_list(stype)):
        raise InputError(f"{path}: column '{options.scores}' must be a list of numbers per "
                         f"row, got {stype}")
    vtype = stype.value_type
    if not (pa.types.is_floating(vtype) or pa.types.is_integer(vtype)):
        raise InputError(f"{path}: column '{options.scores}' must hold numbers, got {vtype}")
    dtype = check_score_dtype(path, vtype.to_pandas_dtype(), f"'{options.scores}'")
    has_positive = options.positive in names
    if has_positive:
        ptype = schema.field(options.positive).type
        if not pa.types.is_integer(ptype):
            raise InputError(f"{path}: column '{options.positive}' must hold integer column "
                             f"indices, got {ptype}")
        if options.positive_index is not None:
            raise InputError(f"{path}: the dump has a '{options.positive}' column; "
                             "--positive-index would contradict it")
    if pf.metadata.num_rows == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    raw = schema.metadata or {}
    metadata = {k.decode(): v.decode() for k, v in raw.items()
                if not k.startswith(b"ARROW:") and k != b"pandas"}
    columns = [options.scores] + ([options.positive] if has_positive else [])

    def gen(batch_rows):
        start = 0
        for g in range(pf.num_row_groups):
            try:
                table = pf.read_row_group(g, columns=columns)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise InputError(f"{path}: corrupted or truncated Parquet file "
                                 f"(row group {g}: {exc})") from None
            for lo in range(0, table.num_rows, batch_rows):
                part = table.slice(lo, batch_rows)
                yield _parquet_batch(path, options, part, has_positive, start)
                start += part.num_rows
    return Dump(path, "parquet", dtype, metadata, gen)


def list_to_numpy(path: str, column, start: int, what: str):
    """A list-typed Arrow column -> (values, offsets) or a dense 2-D array (offsets None)."""
    pa, _ = _pyarrow()
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"{path}: row {start + i}: '{what}' is null")
    if pa.types.is_fixed_size_list(arr.type):
        flat = arr.flatten()
        width = arr.type.list_size
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * width
    else:
        offsets = arr.offsets.to_numpy().astype(np.int64)
        flat = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
    if flat.null_count:
        pos = int(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))[0])
        i = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise InputError(f"{path}: row {start + i}: '{what}' holds a null value")
    values = flat.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)
    if lengths.size and lengths.min() < 1:
        i = int(np.flatnonzero(lengths < 1)[0])
        raise InputError(f"{path}: row {start + i}: no candidates (a row needs at least one)")
    if lengths.size and lengths.min() == lengths.max():
        return values.reshape(len(lengths), int(lengths[0])), None
    return values, offsets


def _parquet_batch(path, options, table, has_positive, start) -> Batch:
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
