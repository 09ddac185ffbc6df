"""Shared pyarrow helpers: open Parquet files for streaming, turn list columns into
flat numpy arrays with row offsets, and name a damaged file in one line.

pyarrow is imported on first use only, so NPY and NPZ dumps never pay for it.
"""

from __future__ import annotations

import contextlib
import functools
import os

import numpy as np

from tieeval.errors import InputError, TieevalError
from tieeval.io.base import check_row_length, error_text

# ---------------------------------------------------------------------------------------
# Parquet

def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a run-time dependency
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow") from None
    return pa, pq


def to_numpy(arr) -> np.ndarray:
    """An Arrow array as numpy. A numeric or boolean array without nulls is read from its
    data buffer (numeric: a zero-copy, read-only view, as pyarrow's own ``to_numpy``
    gives): pyarrow's ``to_numpy`` imports pandas whenever pandas is installed, 0.2-0.5 s
    of start-up for nothing. Anything else goes through ``to_numpy(zero_copy_only=False)``."""
    import pyarrow as pa
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    n = len(arr)
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)
                                or pa.types.is_boolean(t)):
        dtype = numpy_dtype(t)
        data = arr.buffers()[1]
        if n == 0 or data is None:
            return np.zeros(0, dtype=dtype)
        if dtype.kind == "b":
            bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
            return bits[arr.offset:arr.offset + n].astype(bool)
        return np.frombuffer(data, dtype=dtype, count=n, offset=arr.offset * dtype.itemsize)
    return arr.to_numpy(zero_copy_only=False)


def from_numpy(values: np.ndarray):
    """A 1-D numeric numpy array as an Arrow array, through its buffer: ``pa.array`` looks
    for pandas types first and so imports pandas whenever it is installed."""
    import pyarrow as pa
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        return pa.array(values)
    typ = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


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
    # page checksums, where the writer stored them, are verified as pages are read
    return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20,
                          page_checksum_verification=True)


def iter_row_group(file: str, pf, group: int, batch_size: int, columns):
    """``pf.iter_batches`` over one row group's ``columns``, once its page headers are
    checked against its column chunks (:func:`~tieeval.io.parquet_footer.check_pages`): a
    damaged header declaring a huge page is refused before pyarrow allocates it. The
    refusal is a :class:`~tieeval.io.parquet_footer.FooterError` (a ValueError), reported
    by the callers as the damage they report for pyarrow's errors (:func:`_parquet_error`).
    """
    from tieeval.io.parquet_footer import check_pages, read_footer
    chunks = read_footer(file)[group].columns
    wanted = set(columns)
    check_pages(file, [c for c in chunks if c.path[:1] and c.path[0] in wanted],
                os.path.getsize(file))
    return pf.iter_batches(batch_size=batch_size, row_groups=[group], columns=columns,
                           use_threads=False)


def dataset_with(files: list[str], name: str):
    """The pyarrow dataset of the Parquet ``files`` when it has a column ``name``, else None.
    The dataset's schema is its first file's: without the column, pyarrow.dataset (and
    pandas with it: 0.5 s) is not imported."""
    _, pq = _pyarrow()
    if not files or name not in pq.read_schema(files[0]).names:
        return None
    import pyarrow.dataset as ds
    dataset = ds.dataset(files, format="parquet")
    return dataset if name in dataset.schema.names else None


def arrow_metadata(schema) -> dict[str, str]:
    """A schema's key-value metadata as run metadata (pandas and Arrow keys left out);
    bytes that are not UTF-8 are shown escaped, never an error."""
    raw = schema.metadata or {}
    return {k.decode("utf-8", "backslashreplace"): v.decode("utf-8", "backslashreplace")
            for k, v in raw.items() if not k.startswith(b"ARROW:") and k != b"pandas"}


def check_same_fields(opened, fields) -> None:
    """Every file of a dataset has the same optional ``fields`` as its first file: a field
    present in some files only would be used or ignored depending on file order."""
    if len(opened) < 2:
        return
    first, _, schema = opened[0]
    for file, _, other in opened[1:]:
        for name in fields:
            if (name in schema.names) != (name in other.names):
                has, lacks = (first, file) if name in schema.names else (file, first)
                raise InputError(f"{has} has a column '{name}' and {lacks} has not; the "
                                 "files of a dataset must have the same columns")


def _parquet_error(path: str, exc: Exception, where: str = "") -> InputError:
    if isinstance(exc, OSError) and exc.errno:  # the system refused: not the file's damage
        return InputError(f"{path}: cannot read: {os.strerror(exc.errno)}")
    return InputError(f"{path}: corrupted or truncated Parquet file ({where}{error_text(exc)})")


@contextlib.contextmanager
def damaged_metadata(path: str):
    """Errors pyarrow raises from a damaged file's metadata (a name that is not UTF-8, an
    index out of range) as the one-line input error they are."""
    pa, _ = _pyarrow()
    try:
        yield
    except TieevalError:
        raise
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError) as exc:
        raise _parquet_error(path, exc) from None


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


def row_groups(file: str, pf) -> list:
    """The row groups of ``pf`` (the ParquetFile of ``file``) with their column chunks'
    value counts and sizes (:class:`~tieeval.io.parquet_footer.GroupInfo`), read from the
    footer without ``RowGroupMetaData.column``, which aborts the process on a column
    metadata pyarrow's C++ code rejects (see :mod:`tieeval.io.parquet_footer`)."""
    from tieeval.io.parquet_footer import FooterError, read_footer
    meta = pf.metadata
    try:
        groups = read_footer(file)
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except FooterError as exc:
        raise InputError(f"{file}: corrupted or truncated Parquet file (footer: {exc})"
                         ) from None
    if len(groups) != meta.num_row_groups or any(
            g.num_rows != meta.row_group(i).num_rows for i, g in enumerate(groups)):
        raise InputError(f"{file}: corrupted Parquet file (the footer's row groups do not "
                         "match what pyarrow read from it)")
    return groups


def check_rows_decoded(file: str, group: int, decoded: int, declared: int) -> None:
    """A row group must yield the rows its footer declares: a data page damaged without a
    page checksum can decode to fewer, and averaging over the survivors would be a
    silently wrong figure."""
    if decoded != declared:
        raise InputError(f"{file}: corrupted Parquet file (row group {group}: {decoded} rows "
                         f"decoded, its footer declares {declared})")


def arrow_lists(path: str, column, what: str, where) -> tuple[np.ndarray, np.ndarray]:
    """A list-typed Arrow column -> (flat numpy values, int64 offsets from 0); a null row or
    value is an InputError naming the row as ``where(i)`` (i counted in this column)."""
    pa, _ = _pyarrow()
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        i = int(np.flatnonzero(to_numpy(arr.is_null()))[0])
        raise InputError(f"{path}: {where(i)}: '{what}' is null")
    if pa.types.is_fixed_size_list(arr.type):
        flat = arr.flatten()
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * arr.type.list_size
    else:
        offsets = to_numpy(arr.offsets).astype(np.int64)
        flat = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
    if flat.null_count:
        pos = int(np.flatnonzero(to_numpy(flat.is_null()))[0])
        i = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise InputError(f"{path}: {where(i)}: '{what}' holds a null value")
    return to_numpy(flat), offsets


def list_to_numpy(path: str, column, start: int, what: str):
    """A list-typed Arrow column -> (values, offsets) or a dense 2-D array (offsets None)."""
    values, offsets = arrow_lists(path, column, what, lambda i: f"row {start + i}")
    lengths = np.diff(offsets)
    if not lengths.size:
        return values, offsets
    longest = int(np.argmax(lengths))
    check_row_length(path, int(lengths[longest]), f"row {start + longest}")
    if lengths.min() < 1:
        i = int(np.flatnonzero(lengths < 1)[0])
        raise InputError(f"{path}: row {start + i}: no candidates (a row needs at least one)")
    if lengths.min() == lengths.max():
        return values.reshape(len(lengths), int(lengths[0])), None
    return values, offsets


def open_parquet_files(files: list[str]) -> list:
    """``[(file, ParquetFile, schema)]`` for each file, a damaged one named in one line."""
    pa, _ = _pyarrow()
    opened = []
    for file in files:
        try:
            pf = parquet_file(file)
            schema = pf.schema_arrow
        except (pa.ArrowException, OSError, ValueError, UnicodeDecodeError) as exc:
            raise _parquet_error(file, exc) from None
        # a table whose columns share a name cannot say which one is meant
        twice = next((n for i, n in enumerate(schema.names) if n in schema.names[:i]), None)
        if twice is not None:
            raise InputError(f"{file}: two columns are named '{twice}' (column names must be "
                             "unique)")
        opened.append((file, pf, schema))
    return opened


def numpy_dtype(arrow_type) -> np.dtype:
    """The numpy dtype of an Arrow value type, without pandas (pyarrow's own
    ``to_pandas_dtype`` imports pandas in some versions). Non-numeric types map to
    ``object``, which the callers refuse by name."""
    pa, _ = _pyarrow()
    t = pa.types
    if t.is_boolean(arrow_type):
        return np.dtype(bool)
    if t.is_floating(arrow_type):
        return np.dtype({16: "f2", 32: "f4", 64: "f8"}[arrow_type.bit_width])
    if t.is_integer(arrow_type):
        kind = "i" if t.is_signed_integer(arrow_type) else "u"
        return np.dtype(f"{kind}{arrow_type.bit_width // 8}")
    return np.dtype(object)
