"""The long (tidy) layout: one row per (instance, candidate), rows in any order.

SQL and Spark pipelines write scores this way. Columns (names configurable):

* ``instance``: the test instance (integer or string id);
* ``position``: the candidate's place in the codebase's candidate list (integers, distinct
  within an instance). The engines that write long tables do not keep row order, and the
  Original column needs the list order back: rows are regrouped per instance and ordered by
  position, so ``np.argsort(scores * -1)`` sees the same row the codebase saw;
* ``score``: the score, in its stored dtype (CSV text is parsed as ``score_dtype``);
* ``label`` (optional): 1 for the positive and 0 otherwise, exactly one positive per
  instance: the single-positive protocol and its sort-free path. Any other content -- a
  graded or continuous gain, a negative value (an explicit dislike), several positives in an
  instance, or none -- makes them relevance labels, read as a wide dump's ``labels`` field
  (:mod:`tieeval.io.relevance`): ``> 0`` relevant with that gain, ``0`` unobserved, ``< 0``
  an explicit negative. Without the column the positive is the candidate at
  ``positive_index`` in position order (default the first), as in the wide layout.

Which of the two a label column holds is known only once every instance has been seen, so
the reader starts on the single-positive path and, at the first instance that says
otherwise, raises :class:`~tieeval.io.base.RelevanceLabelsFound`: the consumer calls
:meth:`~tieeval.io.base.Dump.start_over`, which gives the dump ``relevance`` (source
``"labels"``), and the run starts over on the relevance path. Single-positive dumps never
pay for the check beyond a comparison per row.

Memory. Rows sorted by instance (``ORDER BY instance``; the order inside an instance does
not matter) stream in one pass with memory bounded by the batch: an instance is complete
when the next one starts. Otherwise, the first out-of-order row makes the reader start over
and regroup through temporary Arrow files (hash partitions of about
:data:`SPILL_PART_BYTES` under ``$TMPDIR``, at most :data:`MAX_SPILL_PARTS` of them), one
partition in memory at a time: memory stays bounded, at the cost of writing the data once
more to disk. Either way one instance must fit in memory.
"""


from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
import weakref
import zlib
from dataclasses import dataclass
from typing import IO, Any, Iterator

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.io.arrow import (
    _parquet_error,
    _pyarrow,
    arrow_metadata,
    check_rows_decoded,
    from_numpy,
    iter_row_group,
    numpy_dtype,
    parquet_file,
    row_groups,
    to_numpy,
)
from tieeval.io.base import (
    DEFAULT_BATCH_ROWS,
    HOW_TO_DUMP,
    Dump,
    LabelledDump,
    ReadAgain,
    ReadOptions,
    RelevanceLabelsFound,
    check_row_length,
    error_text,
    max_row_candidates,
)
from tieeval.io.validate import (
    check_score_dtype,
    positive_index_conflict,
    resolve_positive,
)
from tieeval.records.batch import Batch, instance_name

SPILL_PART_BYTES = 16 << 20  # measured: smaller partitions group faster and leaner
MAX_SPILL_PARTS = 512  # open files at once while spilling
# pyarrow's streaming CSV reader reads about 33 blocks ahead of the batch it returns
# (33 MB of the file with 1 MB blocks, 280 MB with 8 MB ones, held as Arrow buffers).
# benchmarks/bench_memory.py --readers csv, 200,000 / 2,000,000 x 101 rows: 231 / 241 MB
# with 1 MB blocks, 774 / 793 MB with 8 MB ones; on 1M x 101 rows 240 against 784 MB,
# in 0.96x the time.
CSV_BLOCK_BYTES = 1 << 20


# ---------------------------------------------------------------------------------------
# rows as they come from a source: arrays of one chunk

@dataclass
class Rows:
    """A chunk of long-layout rows: instance ids (an Arrow array), position, score, label."""

    ids: Any  # pyarrow.Array (integer or string)
    position: np.ndarray
    score: np.ndarray
    label: np.ndarray | None
    nbytes: int = 0

    def __len__(self) -> int:
        return len(self.position)

    def slice(self, lo: int, hi: int | None = None, nbytes: int = 0) -> "Rows":
        hi = len(self) if hi is None else hi
        return Rows(self.ids.slice(lo, hi - lo), self.position[lo:hi], self.score[lo:hi],
                    None if self.label is None else self.label[lo:hi], nbytes)

    @staticmethod
    def concat(a: "Rows | None", b: "Rows") -> "Rows":
        if a is None or len(a) == 0:
            return b
        pa, _ = _pyarrow()
        return Rows(pa.concat_arrays([a.ids, b.ids]), np.concatenate([a.position, b.position]),
                    np.concatenate([a.score, b.score]),
                    None if b.label is None else np.concatenate([a.label, b.label]), b.nbytes)


def _is_int_ids(ids) -> bool:
    pa, _ = _pyarrow()
    return pa.types.is_integer(ids.type)


def _with_previous(ids, op: str) -> np.ndarray:
    """``op`` (``not_equal``, ``less``: numpy's and pyarrow's names) of each id after the
    first with its predecessor."""
    if _is_int_ids(ids):
        v = to_numpy(ids)
        return getattr(np, op)(v[1:], v[:-1])
    import pyarrow.compute as pc
    return to_numpy(getattr(pc, op)(ids.slice(1), ids.slice(0, len(ids) - 1)))


def _is_sorted(ids) -> bool:
    return len(ids) < 2 or not _with_previous(ids, "less").any()


def _id_values(ids, index: np.ndarray) -> np.ndarray:
    taken = ids.take(from_numpy(index))
    if _is_int_ids(ids):
        return to_numpy(taken)
    return np.array(taken.to_pylist(), dtype=object)


# ---------------------------------------------------------------------------------------
# complete instances -> batches

def _order(codes: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Row order by (instance code, position): one argsort of a combined int64 key when the
    ranges allow it (about 4x faster than the two-key lexsort), else the lexsort."""
    cmin, cmax = int(codes.min()), int(codes.max())
    pmin, pmax = int(position.min()), int(position.max())
    span = pmax - pmin + 1
    if (cmax - cmin + 1) * span < (1 << 62):
        key = (codes - cmin) * span + (position - pmin)
        return np.argsort(key)
    return np.lexsort((position, codes))


def group_rows(path: str, rows: Rows, codes: np.ndarray, options: ReadOptions,
               batch_rows: int, start: int = 0, relevance: bool = False) -> Iterator[Batch]:
    """Batches of the complete instances in ``rows``; ``codes`` numbers each row's instance.

    Candidates are ordered by position inside each instance; instances in code order.
    ``relevance``: the label column holds relevance labels (batches carry them, ``positive``
    is unused); otherwise labels other than one 1 per instance raise
    :class:`~tieeval.io.base.RelevanceLabelsFound`.
    """
    n = len(rows)
    if n == 0:
        return
    order = _order(codes, rows.position)
    c = codes[order]
    p = rows.position[order]
    new = np.ones(n, dtype=bool)
    new[1:] = c[1:] != c[:-1]
    starts = np.flatnonzero(new)
    ids = _id_values(rows.ids, order[starts])
    dup = np.flatnonzero(~new[1:] & (p[1:] == p[:-1]))
    if dup.size:
        g = int(np.searchsorted(starts, dup[0] + 1, side="right") - 1)
        raise InputError(f"{path}: instance {instance_name(ids[g])}: position "
                         f"{int(p[dup[0] + 1])} appears twice (positions must be distinct "
                         "within an instance)")
    scores = rows.score[order]
    offsets = np.append(starts, n).astype(np.int64)
    lengths = np.diff(offsets)
    g = int(np.argmax(lengths))
    check_row_length(path, int(lengths[g]), f"instance {instance_name(ids[g])}")
    labels = None
    if rows.label is not None:
        labels = rows.label[order]
        if relevance:
            bad = (np.flatnonzero(~np.isfinite(labels)) if labels.dtype.kind == "f"
                   else np.zeros(0, dtype=np.int64))
            if bad.size:
                g = int(np.searchsorted(starts, bad[0], side="right") - 1)
                raise InputError(f"{path}: instance {instance_name(ids[g])}: "
                                 f"'{options.long_columns['label']}' holds {labels[bad[0]]} "
                                 "(labels must be finite)")
            positive = np.zeros(len(starts), dtype=np.int64)
        else:
            positive = _single_positive(path, labels, starts, ids,
                                        options.long_columns["label"])
    else:
        index = 0 if options.positive_index is None else options.positive_index
        try:
            positive = resolve_positive(path, np.full(len(starts), index, dtype=np.int64),
                                        lengths, 0)
        except InputError:
            g = int(np.flatnonzero((index >= lengths) | (index < -lengths))[0])
            raise InputError(f"{path}: instance {instance_name(ids[g])}: positive index "
                             f"{index} is out of range for {int(lengths[g])} candidate(s)"
                             ) from None
    share = rows.nbytes
    total = len(starts)
    for lo in range(0, total, batch_rows):
        hi = min(lo + batch_rows, total)
        a, b = int(offsets[lo]), int(offsets[hi])
        off: np.ndarray | None = offsets[lo:hi + 1] - a
        lens = lengths[lo:hi]
        s = scores[a:b]
        lab = None if labels is None else labels[a:b]
        if lens.min() == lens.max():  # equal lengths: the dense kernel
            s = s.reshape(hi - lo, int(lens[0]))
            lab = None if lab is None else lab.reshape(hi - lo, int(lens[0]))
            off = None
        yield Batch(s, positive[lo:hi], start + lo, off, lab, ids[lo:hi],
                    share * (hi - lo) // total)


def _single_positive(path, labels, starts, ids, name) -> np.ndarray:
    """Each instance's positive when the labels are one 1 per instance and 0 elsewhere;
    else :class:`~tieeval.io.base.RelevanceLabelsFound` naming the first instance that differs."""
    is_pos = labels == 1
    count = np.add.reduceat(is_pos.astype(np.int64), starts)
    other = np.flatnonzero((labels != 0) & ~is_pos)
    if other.size or (count != 1).any():
        first = (int(np.searchsorted(starts, other[0], side="right") - 1) if other.size
                 else len(starts))
        wrong = np.flatnonzero(count != 1)
        g = min(first, int(wrong[0]) if wrong.size else len(starts))
        what = (f"label {labels[other[0]].item()!r}" if g == first else
                f"{int(count[g])} candidates with label 1")
        raise RelevanceLabelsFound(f"{path}: instance {instance_name(ids[g])}: {what} in column "
                                   f"'{name}', so it holds relevance labels", g == first)
    return np.flatnonzero(is_pos) - starts


# ---------------------------------------------------------------------------------------
# sources: Parquet files or a CSV file -> Rows chunks

def _id_type(typ):
    """The type instance ids are compared in: a dictionary-encoded column (what pandas
    writes for a ``category``) by its values, the ids the user wrote."""
    pa, _ = _pyarrow()
    return typ.value_type if pa.types.is_dictionary(typ) else typ


# each column's Arrow types (pyarrow.types.is_...), and what the refusal wants
_COLUMN_TYPES = (("instance", ("integer", "string", "large_string"), "integer or string ids"),
                 ("position", ("integer",), "integers"),
                 ("score", ("floating", "integer"), "numbers"),
                 ("label", ("integer", "floating", "boolean"),
                  "numbers (1 for the positive, or relevance labels)"))


def _check_columns(path, names, options, types):
    pa, _ = _pyarrow()
    cols = options.long_columns
    for key in ("instance", "position", "score"):
        if cols[key] not in names:
            need = {"instance": "the test instance each row belongs to",
                    "position": "each candidate's place in the codebase's list, which the "
                                "Original column needs",
                    "score": "the candidate's score"}[key]
            raise InputError(f"{path}: long layout: no column '{cols[key]}' ({need}; found: "
                             f"{', '.join(names)}; rename with --{key}-column)")
    has_label = cols["label"] in names
    if options.label is not None and not has_label and options.positive_index is None:
        raise InputError(f"{path}: long layout: no column '{cols['label']}' (--label-column; "
                         f"found: {', '.join(names)})")
    if has_label and options.positive_index is not None:
        raise positive_index_conflict(path, cols["label"], "column")
    for key, kinds, want in _COLUMN_TYPES[:4 if has_label else 3]:
        typ = types(cols[key])
        typ = _id_type(typ) if key == "instance" else typ
        if not any(getattr(pa.types, f"is_{kind}")(typ) for kind in kinds):
            raise InputError(f"{path}: column '{cols[key]}' must hold {want}, got {typ}")
    dtype = check_score_dtype(path, numpy_dtype(types(cols["score"])), f"'{cols['score']}'")
    return has_label, dtype


def _rows_from(path: str, table, cols, has_label, nbytes: int) -> Rows:
    pa, _ = _pyarrow()
    arrays = {}
    for key in ("instance", "position", "score") + (("label",) if has_label else ()):
        col = table.column(cols[key])
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if key == "instance" and pa.types.is_dictionary(col.type):
            # ids by value: the codes of a dictionary differ between row groups and files
            col = col.dictionary_decode()
        if col.null_count:
            raise InputError(f"{path}: column '{cols[key]}' holds null values (every row needs "
                             f"{'an' if key == 'instance' else 'a'} {key})")
        arrays[key] = col
    ids = arrays["instance"]
    if pa.types.is_large_string(ids.type):
        ids = ids.cast(pa.string())
    label = None
    if has_label:
        label = to_numpy(arrays["label"])
        if label.dtype == bool:
            label = label.astype(np.int8)
    return Rows(ids, to_numpy(arrays["position"]).astype(np.int64, copy=False),
                to_numpy(arrays["score"]), label, nbytes)


class _Source:
    """Where long rows come from; ``chunks()`` reads them front to back."""

    path: str
    cols: dict
    has_label: bool
    dtype: np.dtype
    size_hint: int  # bytes of the rows as read, for the number of spill partitions
    metadata: dict
    nbytes: int

    def chunks(self, rows: int) -> Iterator[Rows]:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def columns(self) -> list[str]:
        """The columns read, in :class:`Rows` order."""
        keys = ("instance", "position", "score") + (("label",) if self.has_label else ())
        return [self.cols[k] for k in keys]


class _ParquetSource(_Source):
    def __init__(self, path, files, options):
        self.path, self.files = path, files
        first = files[0]
        schema = parquet_file(first).schema_arrow
        self.cols = options.long_columns
        self.has_label, self.dtype = _check_columns(
            first if len(files) > 1 else path, schema.names, options,
            lambda name: schema.field(name).type)
        total_rows, self.size_hint, self.nbytes = 0, 0, 0
        from tieeval.io.arrow import check_same_fields
        check_same_fields([(f, None, parquet_file(f).schema_arrow) for f in files],
                          [self.cols["label"]])
        for file in files:
            pf = parquet_file(file)
            other = pf.schema_arrow
            for col in self.columns:
                theirs = other.field(col).type if col in other.names else None
                ours = schema.field(col).type
                if col == self.cols["instance"] and theirs is not None:
                    # ids compare by value: dictionary-encoded or not, files may differ
                    theirs, ours = _id_type(theirs), _id_type(ours)
                if theirs is None or theirs != ours:
                    raise InputError(f"{file}: column '{col}' differs from {first}; a "
                                     "dataset's files must share one schema")
            meta = pf.metadata
            total_rows += meta.num_rows
            for g, info in enumerate(row_groups(file, pf)):
                self.size_hint += meta.row_group(g).total_byte_size
                self.nbytes += info.compressed_size
        # Parquet's sizes are of the encoded columns: long rows' run-length and dictionary
        # encoded ids, positions and labels decode to 4-5x that. The rows as read (int64
        # ids and positions, the scores, the labels) size the spill partitions, so that
        # each holds about SPILL_PART_BYTES: unsorted dumps of 200,000 and 2,000,000 x 101
        # rows were regrouped in 234 and 237 MB, where partitions sized by the encoded
        # bytes took 471 and 505 MB (benchmarks/bench_memory.py --readers unsorted), and
        # a 1M-instance one in 0.84x the time.
        label = (max(1, schema.field(self.cols["label"]).type.bit_width // 8)
                 if self.has_label else 0)
        self.size_hint = max(self.size_hint, total_rows * (16 + self.dtype.itemsize + label))
        if total_rows == 0:
            raise InputError(f"{path}: no instances (empty dump)")
        self.metadata = arrow_metadata(schema)

    def chunks(self, rows):
        pa, _ = _pyarrow()
        for file in self.files:
            pf = parquet_file(file)
            for g, info in enumerate(row_groups(file, pf)):
                if info.num_rows == 0:
                    continue
                decoded = 0
                try:
                    for record in iter_row_group(file, pf, g, rows, self.columns):
                        share = info.compressed_size * record.num_rows // info.num_rows
                        decoded += record.num_rows
                        yield _rows_from(file, record, self.cols, self.has_label, share)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise _parquet_error(file, exc, f"row group {g}: ") from None
                check_rows_decoded(file, g, decoded, info.num_rows)


class _CsvSource(_Source):
    def __init__(self, path, options):
        pa, _ = _pyarrow()
        self.path = path
        self.cols = options.long_columns
        header = self._header()
        self.metadata = {}
        self.nbytes = os.path.getsize(path)
        self.size_hint = self.nbytes * (4 if path.lower().endswith(".gz") else 1)
        missing_core = [self.cols[k] for k in ("instance", "score") if self.cols[k] not in header]
        if missing_core and options.layout == "auto" and not options.long_options_given:
            from tieeval.io.readers import expected
            raise InputError(f"{path}: unknown format (expected {expected()}); a .csv is "
                             "read in the long layout, with columns instance, position, "
                             f"score and optionally label (found: {', '.join(header)}; "
                             "rename with --instance-column, --score-column ...); for a "
                             f"score matrix, {HOW_TO_DUMP}")
        dtype = options.score_dtype or "float64"
        # text is parsed as float64 and rounded to float16 by numpy (pyarrow parses no
        # float16): ties are then judged in float16, as the model stored them
        self.half = dtype == "float16"
        parse = "float64" if self.half else dtype
        self.column_types = {self.cols["score"]: pa.from_numpy_dtype(np.dtype(parse)),
                             self.cols["position"]: pa.int64()}
        probe, _ = self._reader(include=[c for c in header])
        try:
            schema = probe.schema
        finally:
            probe.close()
        reader, _ = self._reader([], block=1 << 16)
        try:
            no_rows = all(record.num_rows == 0 for record in self._records(reader))
        except InputError:
            no_rows = False  # the real reading reports it
        if no_rows:
            raise InputError(f"{path}: no rows (the CSV has a header only)")
        self.has_label, self.dtype = _check_columns(path, header, options,
                                                    lambda name: schema.field(name).type)
        if self.half:
            self.dtype = np.dtype(np.float16)
        itype = schema.field(self.cols["instance"]).type
        self.label_type = schema.field(self.cols["label"]).type if self.has_label else None
        # Fix the id type for the whole file, so a later block cannot change it. Ids are
        # integers only when every one is written as a canonical integer: "1" and "01"
        # are different ids, and read as integers they would be merged.
        self.column_types[self.cols["instance"]] = (
            pa.int64() if pa.types.is_integer(itype) and self._canonical_ids() else
            pa.string())

    def _canonical_ids(self) -> bool:
        """Every instance id of the file is a canonical int64 (one pass over the ids)."""
        pa, _ = _pyarrow()
        import pyarrow.compute as pc
        name = self.cols["instance"]
        reader, _ = self._reader([name], types={name: pa.string()})
        for record in self._records(reader):
            ids = record.column(0)
            ok = pc.match_substring_regex(ids, r"^-?(0|[1-9][0-9]{0,18})$")
            if ok.null_count or not pc.all(ok).as_py():
                return False
            try:
                pc.cast(ids, pa.int64())
            except (pa.ArrowException, ValueError):
                return False
        return True

    def _records(self, reader) -> Iterator[Any]:
        """The record batches of ``reader``, closed after them (or with the generator); a
        parse error is the CSV's, in one line."""
        pa, _ = _pyarrow()
        try:
            while True:
                try:
                    record = reader.read_next_batch()
                except StopIteration:
                    return
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise self._unreadable(exc) from None
                yield record
        finally:
            reader.close()

    def _unreadable(self, exc: Exception) -> InputError:
        return InputError(f"{self.path}: unreadable CSV ({error_text(exc)})")

    def _header(self) -> list[str]:
        import csv
        import gzip
        import io as _io
        try:
            # utf-8-sig: a byte-order mark is not part of the first column's name
            fh: IO[str]
            if self.path.lower().endswith(".gz"):
                fh = _io.TextIOWrapper(gzip.open(self.path, "rb"), encoding="utf-8-sig")
            else:
                fh = open(self.path, encoding="utf-8-sig", newline="")
            with fh:
                first = fh.readline()
        except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
            # zlib.error: a damaged deflate stream in its first block (gzip's own checks
            # are OSError and EOFError)
            raise InputError(f"{self.path}: cannot read CSV header ({exc})") from None
        if "\x00" in first:  # Python < 3.11's csv module refuses NUL; never a valid header
            raise InputError(f"{self.path}: the CSV header holds a NUL byte (a binary or "
                             "damaged file?)")
        try:
            return next(csv.reader([first]), [])
        except csv.Error as exc:
            raise InputError(f"{self.path}: cannot read CSV header ({exc})") from None

    def _reader(self, include, block=CSV_BLOCK_BYTES, types=None):
        pa, _ = _pyarrow()
        types = self.column_types if types is None else types
        import pyarrow.csv as pcsv
        raw = pa.OSFile(self.path)
        stream = pa.CompressedInputStream(raw, "gzip") if self.path.lower().endswith(".gz") \
            else raw
        try:
            reader = pcsv.open_csv(
                stream, read_options=pcsv.ReadOptions(block_size=block, use_threads=False),
                convert_options=pcsv.ConvertOptions(
                    include_columns=include, null_values=[""],  # "nan" is a NaN score
                    # an empty field is a missing value in a text column too (an instance
                    # id), as in a numeric one, and is refused as a null
                    strings_can_be_null=True,
                    column_types={k: v for k, v in types.items() if k in include}))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise self._unreadable(exc) from None
        return reader, raw

    def chunks(self, rows):
        reader, raw = self._reader(self.columns)
        seen = 0
        empty = True
        for record in self._records(reader):
            if record.num_rows == 0:
                continue
            empty = False
            now = raw.tell()
            for lo in range(0, record.num_rows, rows):
                part = record.slice(lo, rows)
                share = (now - seen) * part.num_rows // record.num_rows
                got = _rows_from(self.path, part, self.cols, self.has_label, share)
                if self.half:
                    got.score = _to_half(self.path, got.score, self.cols["score"])
                yield got
            seen = now
        if empty:
            raise InputError(f"{self.path}: no instances (empty dump)")


def _to_half(path: str, score: np.ndarray, name: str) -> np.ndarray:
    """float64 scores parsed from text -> float16 (round to nearest even); a finite score
    beyond float16's range is an error, not an infinity that would tie with others."""
    with np.errstate(over="ignore"):
        half = score.astype(np.float16)
    bad = np.flatnonzero(np.isinf(half) & np.isfinite(score))
    if bad.size:
        raise InputError(f"{path}: '{name}' holds {score[bad[0]].item()!r}, beyond the "
                         "range of float16 (--score-dtype float16)")
    return half


# ---------------------------------------------------------------------------------------
# sorted streaming, and regrouping through spill partitions

class NotSorted(InputError):
    """Long-layout rows that were expected sorted by instance are not."""


def sorted_batches(path: str, chunks: Iterator[Rows], options: ReadOptions,
                   batch_rows: int, relevance: bool = False) -> Iterator[Batch]:
    """Batches of long rows sorted by instance (any order inside an instance), streamed:
    an instance is complete when the next one starts. Raises :class:`NotSorted` at the
    first row whose instance id is below its predecessor's. ``relevance``: as for
    :func:`group_rows`."""
    carry = None
    done = 0
    for rows in chunks:
        rows = Rows.concat(carry, rows)
        if not _is_sorted(rows.ids):
            raise NotSorted(f"{path}: rows are not sorted by instance")
        new = np.ones(len(rows), dtype=bool)  # where a new instance id starts
        new[1:] = _with_previous(rows.ids, "not_equal")
        starts = np.flatnonzero(new)
        last = int(starts[-1])
        if last > 0:
            complete = rows.slice(0, last, rows.nbytes)
            codes = np.cumsum(new[:last]) - 1
            yield from group_rows(path, complete, codes, options, batch_rows, done, relevance)
            done += len(starts) - 1
            carry = rows.slice(last)
        else:
            carry = rows
        if len(carry) > max_row_candidates():  # one instance still growing: refuse it early
            check_row_length(path, len(carry),
                             f"instance {instance_name(_id_values(carry.ids, np.array([0]))[0])}")
    if carry is not None and len(carry):
        codes = np.zeros(len(carry), dtype=np.int64)
        yield from group_rows(path, carry, codes, options, batch_rows, done, relevance)


# Input rows per chunk: enough for a few batches of typical instances, and at most
# CHUNK_ROWS_MAX. A chunk's Arrow buffers and its grouping arrays (ids, positions, the
# sort order: 2 MB each at 8 bytes a row) then stay small enough to be reused from one
# chunk to the next. Measured on 1M and 10M x 101 long rows (benchmarks/bench_memory.py),
# against chunks of 524,288 rows: the peak fell from 223-229 to 177-179 MB at 1M rows
# and from 250-253 to 186 MB at 10M (10x the rows: 1.05x the peak, from 1.10-1.13x), and
# the run took 0.74-0.84x the time. Chunks of 131,072 rows peak lower still (154-158 MB)
# but run 1.1x slower than these.
CHUNK_ROWS_MAX = 1 << 18


def _chunk_rows(batch_rows: int) -> int:
    return min(max(batch_rows * 8, 1 << 16), CHUNK_ROWS_MAX)


class _LongReader:
    """The batch iterator of a long-layout dump (see the module docstring)."""

    def __init__(self, source: _Source, options: ReadOptions):
        self.source = source
        self.options = options
        self.dump: LabelledDump = None  # type: ignore[assignment]  # set by _dump()
        # the label column holds relevance labels (found by RelevanceLabelsFound)
        self.relevance = False
        # every instance has been seen with one positive: nothing left to find
        self.labels_checked = not source.has_label

    def __call__(self, batch_rows: int) -> Iterator[Batch]:
        chunk = _chunk_rows(batch_rows)
        try:
            yield from sorted_batches(self.source.path, self.source.chunks(chunk), self.options,
                                      batch_rows, self.relevance)
            self.labels_checked = True
            return
        except NotSorted:
            pass
        except RelevanceLabelsFound as exc:
            # a label other than 0 and 1 is one wherever its row sits, but an instance cut
            # in two by rows out of order can look like it has no positive or two: only
            # sorted rows prove that such labels are relevance labels
            if exc.by_value or self._verified_sorted(chunk):
                self.start_over(exc)
                raise
        except InputError:
            # A grouping error (a repeated position, a label that is not finite) may only
            # mean the rows were not sorted after all: regroup, which finds the real error
            # if any.
            if self.dump.parts is not None or self._verified_sorted(chunk):
                raise
        self._regroup()
        raise ReadAgain()

    def settle(self) -> None:
        if self.dump.parts is None and not self._verified_sorted(1 << 16):
            self._regroup()
        if not self.labels_checked:
            # one pass to learn what the label column holds, so that the caller's pass
            # never has to start over
            size = DEFAULT_BATCH_ROWS
            batches = (self.dump.batches(size) if self.dump.parts is not None else
                       sorted_batches(self.source.path, self.source.chunks(_chunk_rows(size)),
                                      self.options, size))
            try:
                for _ in batches:
                    pass
            except RelevanceLabelsFound as exc:
                self.start_over(exc)
            self.labels_checked = True

    def start_over(self, reason: ReadAgain) -> None:
        """After :class:`~tieeval.io.base.RelevanceLabelsFound`: read the label column as
        relevance labels from now on (the dump gains ``relevance``, source ``labels``)."""
        if not isinstance(reason, RelevanceLabelsFound) or self.relevance:
            return
        from tieeval.io.base import RelevanceInfo
        self.relevance = self.labels_checked = True
        dump = self.dump
        dump.relevance = RelevanceInfo("labels", fields=(self.source.cols["label"],))
        if dump.parts is not None:
            dump.parts = [dataclasses.replace(p, relevance=True) for p in dump.parts]

    def _verified_sorted(self, chunk: int) -> bool:
        last = None
        for rows in self.source.chunks(chunk):
            rows = Rows.concat(last, rows)
            if not _is_sorted(rows.ids):
                return False
            last = rows.slice(len(rows) - 1)
        return True

    def _regroup(self) -> None:
        dump = self.dump
        parts, tmp = spill(self.source, self.options, self.relevance)
        dump.parts = parts
        dump.warnings.append(
            f"{self.source.path}: rows are not sorted by instance, so they were regrouped "
            "through temporary files (sort by instance to stream in one pass)")
        weakref.finalize(dump, shutil.rmtree, tmp, True)


def _partition_of(ids, parts: int) -> np.ndarray:
    if parts == 1:
        return np.zeros(len(ids), dtype=np.int64)
    if _is_int_ids(ids):
        h = to_numpy(ids).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return ((h >> np.uint64(33)) % np.uint64(parts)).astype(np.int64)
    enc = ids.dictionary_encode()
    words = enc.dictionary.to_pylist()
    table = np.array([zlib.crc32(w.encode("utf-8")) % parts for w in words], dtype=np.int64)
    return table[to_numpy(enc.indices)]


def spill(source: _Source, options: ReadOptions, relevance: bool = False):
    """Hash-partition the rows by instance into temporary Arrow files; one part per file.
    ``relevance``: the label column holds relevance labels (see :func:`group_rows`)."""
    pa, _ = _pyarrow()
    parts_n = _spill_count(source)
    tmp = tempfile.mkdtemp(prefix="tieeval-long-")
    writers: dict[int, tuple[Any, Any]] = {}  # pyarrow (OSFile, stream writer) per part
    sizes = {}
    try:
        for rows in source.chunks(1 << 20):
            fields = {"instance": rows.ids, "position": rows.position, "score": rows.score}
            if rows.label is not None:
                fields["label"] = rows.label
            record = pa.record_batch([from_numpy(v) if isinstance(v, np.ndarray) else v
                                      for v in fields.values()], names=list(fields))
            where = _partition_of(rows.ids, parts_n)
            order = np.argsort(where, kind="stable")
            bounds = np.searchsorted(where[order], np.arange(parts_n + 1))
            for p in range(parts_n):
                lo, hi = int(bounds[p]), int(bounds[p + 1])
                if lo == hi:
                    continue
                if p not in writers:
                    sink = pa.OSFile(os.path.join(tmp, f"part-{p:05d}.arrow"), "wb")
                    writers[p] = (sink, pa.ipc.new_stream(sink, record.schema))
                    sizes[p] = 0
                writers[p][1].write_batch(record.take(from_numpy(order[lo:hi])))
                sizes[p] += rows.nbytes * (hi - lo) // max(1, len(rows))
    except BaseException:
        _close(writers)
        shutil.rmtree(tmp, True)
        raise
    _close(writers)
    cols = {"instance": "instance", "position": "position", "score": "score", "label": "label"}
    parts = [SpillPart(source.path, os.path.join(tmp, f"part-{p:05d}.arrow"), options,
                       source.has_label, sizes[p], cols, relevance) for p in sorted(writers)]
    return parts, tmp


def _close(writers: dict) -> None:
    for sink, writer in writers.values():
        writer.close()
        sink.close()


@dataclass(frozen=True)
class SpillPart:
    """One hash partition of a regrouped long dump: whole instances, any order inside."""

    path: str
    file: str
    options: ReadOptions
    has_label: bool
    nbytes: int
    cols: dict
    relevance: bool = False  # the label column holds relevance labels
    rows = None  # instances are counted only once grouped

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        pa, _ = _pyarrow()
        with pa.OSFile(self.file) as fh:
            table = pa.ipc.open_stream(fh).read_all()
        rows = _rows_from(self.path, table, self.cols, self.has_label, self.nbytes)
        if _is_int_ids(rows.ids) and rows.ids.type.bit_width < 64 or \
                str(rows.ids.type) == "int64":
            codes = to_numpy(rows.ids).astype(np.int64, copy=False)  # ids order instances
        elif _is_int_ids(rows.ids):  # uint64 ids may not fit int64
            _, codes = np.unique(to_numpy(rows.ids), return_inverse=True)
        else:  # each distinct id's rank among them
            words = rows.ids.dictionary_encode()
            _, rank = np.unique(np.array(words.dictionary.to_pylist(), dtype=object),
                                return_inverse=True)
            codes = rank.reshape(-1)[to_numpy(words.indices)]
        yield from group_rows(self.path, rows, codes.ravel().astype(np.int64), self.options,
                              batch_rows, relevance=self.relevance)


# ---------------------------------------------------------------------------------------
# openers (called by tieeval.io.open.open_dump)

def _dump(source: _Source, fmt: str, options: ReadOptions) -> Dump:
    reader = _LongReader(source, options)
    # relevance stays None (single-positive) until the label column proves otherwise
    dump = LabelledDump(source.path, fmt, source.dtype, dict(source.metadata), reader,
                        layout="long", rows=None, nbytes=source.nbytes, row_bytes=0)
    reader.dump = dump
    dump._settle = reader.settle
    dump._start_over = reader.start_over
    return dump


def spill_parts(dump: Dump) -> int:
    """How many spill partitions this reader regroups ``dump`` through when its rows are
    not sorted by instance (1 for a dump of another reader): instances come out by
    (partition, id)."""
    reader = getattr(dump, "_batches", None)
    return _spill_count(reader.source) if isinstance(reader, _LongReader) else 1


def _spill_count(source: _Source) -> int:
    return min(MAX_SPILL_PARTS, max(1, math.ceil(source.size_hint / SPILL_PART_BYTES)))


def csv_columns(dump: Dump) -> tuple[list[str], bool, object]:
    """A long CSV dump's header, whether its instance ids are integers, and the Arrow type
    its label column is read as (None without one): for Spark, to read it alike."""
    pa, _ = _pyarrow()
    reader = dump._batches
    if not isinstance(reader, _LongReader) or not isinstance(reader.source, _CsvSource):
        raise ParameterError(f"{dump.path}: not a long-layout CSV dump")
    source = reader.source
    return (source._header(), pa.types.is_integer(source.column_types[source.cols["instance"]]),
            source.label_type)


def open_long_parquet(path: str, opened, options: ReadOptions) -> Dump:
    """A long-layout Parquet file or dataset; ``opened`` is [(file, ParquetFile, schema)]."""
    return _dump(_ParquetSource(path, [f for f, _, _ in opened], options), "parquet", options)


def open_long_csv(path: str, options: ReadOptions) -> Dump:
    """A long-layout CSV file (optionally gzip-compressed, ``.csv.gz``) with a header row
    (``options.score_dtype`` is checked by :func:`tieeval.io.open.open_dump`)."""
    return _dump(_CsvSource(path, options), "csv", options)
