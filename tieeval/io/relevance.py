"""Reading relevance fields next to the scores: ``labels``, ``positives`` / ``negatives``
and ``items``.

:func:`tieeval.io.open.open_dump` opens the scores as always (parts, streaming, memory maps) and
then hands the dump to :func:`with_relevance`, which looks for these optional fields
and, when one is there, wraps the dump so that every :class:`~tieeval.io.base.Batch` it yields
carries them:

* ``labels``: one label per candidate, in the scores' layout. Parquet: a list column
  aligned with ``scores`` (same length per row); NPZ: an ``(instances, candidates)`` array.
  ``label > 0`` is relevant with that gain (graded 0-4 or continuous), ``0`` unobserved,
  ``< 0`` an explicit negative (a dislike). Integers, floats or booleans.
* ``positives`` / ``negatives``: per-row candidate column indices, turned into labels +1 /
  -1 (0 elsewhere). Parquet: ``list<int>`` columns (rows may hold any number, none
  included). NPZ: an integer array ``(instances,)`` (one index per row) or
  ``(instances, m)`` padded with ``-1``. In both formats ``-1`` entries are padding; any
  other negative index, an index past the row's end, or one index in both lists is an
  input error. Either field may be absent (no explicit negatives, say).
* ``items``: candidate ids (integers or strings) in the scores' layout, for the duplicate
  check of :mod:`tieeval.kernels.general` (the same item twice in one row, e.g. the held-out
  positive drawn again as a sampled negative). Works with labelled and single-positive
  dumps alike.

* ``ranking``: each row's candidate indices in the order the codebase ranked them, top
  first (at least K of them), as ``save_scores(..., ranking=...)`` writes it. Parquet: a
  list of integers per row; NPZ: an integer array ``(instances, K)``. Batches carry it as
  :class:`~tieeval.io.base.RankLists` (``batch.ranking``); ``--original given`` reads the
  Original column from it (:mod:`tieeval.kernels.original`). It is not a relevance field:
  a dump with only scores and ``ranking`` stays a single-positive dump.

A dump has ``labels`` or ``positives``/``negatives``, not both, and then no ``positive``
field or ``--positive-index`` (those describe the single-positive layout). NPY dumps hold
scores only. The long layout has one ``label`` column for both protocols; its reader
(:mod:`tieeval.io.long`) gives the dump ``relevance`` (source ``labels``) once the column
proves to hold relevance labels, and its batches then carry them as here. Field names are
options (``--labels-column`` ...), see :class:`RelevanceReadOptions`. NPZ members are
read by rows as the scores are (:mod:`tieeval.io.npz`).
"""


from __future__ import annotations

import functools
import zipfile
from dataclasses import dataclass
from typing import Any, Collection, Iterator

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import (
    RELEVANCE_FIELDS,
    Dump,
    ReadOptions,
    RelevanceInfo,
    WithRelevance,
    filled,
    relabel,
)
from tieeval.records.batch import Batch, RankLists

RANKING_FIELD = "ranking"


def field_names(options: ReadOptions) -> dict[str, str]:
    """``{kind: field name}`` for the relevance fields (defaults for plain ReadOptions)."""
    return {kind: getattr(options, kind, kind) or kind for kind in RELEVANCE_FIELDS}


def _check_renamed(path: str, names: dict, available) -> None:
    """A field the user named explicitly (``--labels-column rel``) must exist."""
    for kind, name in names.items():
        if name != kind and name not in available:
            raise InputError(f"{path}: no field '{name}' (--{kind}-column); found: "
                             f"{', '.join(sorted(available)) or 'nothing'}")


def with_relevance(dump: Dump, options: ReadOptions) -> Dump:
    """``dump`` (as its reader opened it) with any relevance fields it carries attached,
    and the labels of ``options.labels_file`` when it is set."""
    labels_file = getattr(options, "labels_file", None)
    dump, stored = _with_own_fields(dump, options)
    if labels_file is None:
        return dump
    from tieeval.io.labels_file import with_labels_file
    return with_labels_file(dump, labels_file, options, stored)


def _with_own_fields(dump: Dump, options: ReadOptions) -> tuple[Dump, Collection[str]]:
    """The dump with its own relevance fields, and the names of every field it stores
    beside its scores (none for NPY or the long layout)."""
    from tieeval.io.readers import reader
    if dump.layout != "wide":
        return dump, ()
    if "labels" not in reader(dump.format).carries:
        _check_renamed(dump.path, field_names(options), ())
        return dump, ()
    if dump.format == "parquet":
        from tieeval.io.arrow import damaged_metadata
        with damaged_metadata(dump.path):
            return _attach_parquet(dump, options)
    return _attach_npz(dump, options)


def _info(source, present: dict) -> RelevanceInfo | None:
    relevance = {k: v for k, v in present.items() if k != RANKING_FIELD}
    if not relevance:
        return None
    return RelevanceInfo(source, items="items" in relevance,
                         fields=tuple(relevance.values()))


def _check_combination(path: str, present: dict[str, str], options: ReadOptions,
                       has_positive: bool) -> str | None:
    """The label source of a dump with these fields present; refuse contradictions."""
    given = [present[kind] for kind in ("labels", "positives", "negatives") if kind in present]
    if "labels" in present and len(given) > 1:
        raise InputError(f"{path}: has both '{given[0]}' and '{given[1]}'; a dump gives "
                         "relevance one way (keep one of them)")
    if not given:
        return None
    if has_positive:
        raise InputError(f"{path}: has both '{given[0]}' and the single-positive field "
                         f"'{options.positive}'; keep one of them")
    if options.positive_index is not None:
        raise InputError(f"{path}: --positive-index does not apply to a dump with "
                         f"relevance labels ('{given[0]}')")
    return "labels" if "labels" in present else "positives"


# ---------------------------------------------------------------------------------------
# Converting one batch's relevance fields (shared by both formats)

def _row_label(batch: Batch, i: int) -> str:
    return batch.where(i) if hasattr(batch, "where") else f"row {batch.start + i}"


def _check_layout(path: str, batch: Batch, name: str, values: np.ndarray,
                  offsets: np.ndarray | None) -> np.ndarray:
    """``values`` (flat with offsets, or 2-D) in the layout of ``batch.scores``."""
    lengths = batch.lengths()
    have = (np.full(values.shape[0], values.shape[1], dtype=np.int64)
            if offsets is None else np.diff(offsets))
    if have.shape != lengths.shape or (have != lengths).any():
        i = int(np.flatnonzero(have != lengths)[0]) if have.shape == lengths.shape else 0
        raise InputError(f"{path}: {_row_label(batch, i)}: '{name}' has {int(have[i])} "
                         f"entries but the row has {int(lengths[i])} candidates")
    if batch.offsets is None:
        return values.reshape(batch.scores.shape) if offsets is not None else values
    return values.reshape(-1)


def _indices_to_labels(path: str, batch: Batch, names: dict, columns: dict) -> np.ndarray:
    """``{"positives": (idx, offsets | None), "negatives": ...}`` -> int8 labels in the
    batch layout."""
    lengths = batch.lengths()
    starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
    labels = np.zeros(int(lengths.sum()), dtype=np.int8)
    for kind, value in (("positives", 1), ("negatives", -1)):
        if kind not in columns:
            continue
        idx, offsets = columns[kind]
        if offsets is None:  # 2-D padded (NPZ) or 1-D one index per row
            idx = idx.reshape(idx.shape[0], -1)
            offsets = np.arange(idx.shape[0] + 1, dtype=np.int64) * idx.shape[1]
            idx = idx.reshape(-1)
        row = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
        _check_kind(path, kind, names[kind], idx.dtype)
        idx = idx.astype(np.int64)
        keep = idx != -1  # padding
        idx, row = idx[keep], row[keep]
        bad = np.flatnonzero((idx < 0) | (idx >= lengths[row]))
        if bad.size:
            j = int(bad[0])
            raise InputError(f"{path}: {_row_label(batch, int(row[j]))}: '{names[kind]}' index "
                             f"{int(idx[j])} is out of range for {int(lengths[row[j]])} "
                             "candidate(s) (-1 is padding)")
        flat = starts[row] + idx
        if value < 0:
            clash = np.flatnonzero(labels[flat] > 0)
            if clash.size:
                j = int(clash[0])
                raise InputError(f"{path}: {_row_label(batch, int(row[j]))}: candidate "
                                 f"{int(idx[j])} is in both '{names['positives']}' and "
                                 f"'{names['negatives']}'")
        labels[flat] = value
    if batch.offsets is None:
        return labels.reshape(batch.scores.shape)
    return labels


# ---------------------------------------------------------------------------------------
# Parquet

def _attach_parquet(dump: Dump, options: ReadOptions) -> tuple[Dump, Collection[str]]:
    from tieeval.io.arrow import check_same_columns, parquet_file
    given = dump.parts or []
    files = list(dict.fromkeys(getattr(p, "path", dump.path) for p in given))
    if not files or not all(hasattr(p, "group") for p in given):
        return dump, ()
    schema = parquet_file(files[0]).schema_arrow
    present, info = schema_relevance(dump.path, files[0], options, schema.names,
                                     lambda name: schema.field(name).type, with_ranking=True)
    if not present:
        return dump, schema.names
    check_same_columns(files[0], schema,
                       [(file, parquet_file(file).schema_arrow) for file in files[1:]],
                       list(present.values()))
    parts = [ParquetRelevancePart(p, tuple(sorted(present.items()))) for p in given]
    return relabel(dump, info, parts=parts), schema.names


def schema_relevance(path: str, where: str, options: ReadOptions, names, type_of,
                     with_ranking: bool = False) -> tuple[dict, RelevanceInfo | None]:
    """The relevance fields of a wide Arrow schema (a Parquet file's, or a Spark
    DataFrame's converted to Arrow): ``({kind: column name}, RelevanceInfo)``, or
    ``({}, None)`` when it has none. ``names``: the schema's column names; ``type_of(name)``:
    a column's Arrow type. Contradictions and wrong types are input errors naming ``where``
    (a file of the dataset) or ``path``. ``with_ranking``: also the codebase's ``ranking``
    field (in ``present``; it is not relevance, so it alone gives no RelevanceInfo)."""
    from tieeval.io.arrow import _pyarrow
    pa, _ = _pyarrow()
    wanted = field_names(options)
    _check_renamed(where, wanted, names)
    if with_ranking:
        wanted[RANKING_FIELD] = RANKING_FIELD
    present = {kind: name for kind, name in wanted.items() if name in names}
    if not present:
        return {}, None
    source = _check_combination(path, present, options, options.positive in names)
    for kind, name in present.items():
        _check_parquet_type(pa, where, type_of(name), kind, name)
    return present, _info(source, present)


_INDEX_LISTS = (("integer",), "a list of integer column indices per row")
# each field's Arrow list value types (pyarrow.types.is_...), and what the refusal wants
_PARQUET_LISTS = {
    "labels": (("integer", "floating", "boolean"), "a list of numbers per row"),
    "positives": _INDEX_LISTS,
    "negatives": _INDEX_LISTS,
    RANKING_FIELD: (("integer",), "a list of integer candidate indices per row, top first"),
    "items": (("integer", "string", "large_string"),
              "a list of integer or string item ids per row"),
}


def _check_parquet_type(pa, path, typ, kind, name):
    values, want = _PARQUET_LISTS[kind]
    if not ((pa.types.is_list(typ) or pa.types.is_large_list(typ)
             or pa.types.is_fixed_size_list(typ))
            and any(getattr(pa.types, f"is_{v}")(typ.value_type) for v in values)):
        raise InputError(f"{path}: column '{name}' must be {want}, got {typ}")


class _Feeder:
    """Exactly ``n`` rows at a time from an iterator of Arrow record batches."""

    def __init__(self, records, where: str = ""):
        self.records = iter(records)
        self.where = where
        self.pending: list = []
        self.rows = 0

    def take(self, n: int):
        import pyarrow as pa
        while self.rows < n:
            rec = next(self.records, None)
            if rec is None:
                break
            if rec.num_rows:
                self.pending.append(rec)
                self.rows += rec.num_rows
        table = pa.Table.from_batches(self.pending) if self.pending else None
        if table is None or table.num_rows < n:
            raise InputError(f"{self.where}relevance columns end before the scores "
                             "(corrupted file?)")
        out, rest = table.slice(0, n), table.slice(n)
        self.pending = rest.to_batches() if rest.num_rows else []
        self.rows = rest.num_rows
        return out


@dataclass(frozen=True)
class ParquetRelevancePart(WithRelevance):
    """A Parquet part (one row group) plus its relevance columns, read alongside."""

    base: Any  # the reader's own part
    fields: tuple  # ((kind, column name), ...)

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        from tieeval.io.arrow import _parquet_error, _pyarrow, iter_row_group, parquet_file
        pa, _ = _pyarrow()
        path = self.base.path
        names = dict(self.fields)
        try:
            records = iter_row_group(path, parquet_file(path), self.base.group, batch_rows,
                                     [name for _, name in self.fields])
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _parquet_error(path, exc, f"row group {self.base.group}: ") from None
        feeder = _Feeder(records, f"{path}: row group {self.base.group}: ")
        for batch in self.base.batches(batch_rows):
            try:
                table = feeder.take(batch.rows)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise _parquet_error(path, exc, f"row group {self.base.group}: ") from None
            fill_from_arrow(path, batch, names, table)
            yield batch
        try:
            extra = feeder.rows + sum(rec.num_rows for rec in feeder.records)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _parquet_error(path, exc, f"row group {self.base.group}: ") from None
        if extra:  # the relevance columns decoded more rows than the scores
            from tieeval.io.arrow import check_rows_decoded
            check_rows_decoded(path, self.base.group, self.base.rows + extra, self.base.rows)


def fill_from_arrow(path: str, batch: Batch, names: dict, table) -> Batch:
    """Set ``batch.labels`` / ``batch.items`` from the list columns ``names``
    (``{kind: column name}``) of an Arrow table or record batch holding the batch's rows."""
    from tieeval.io.arrow import arrow_lists
    columns = {kind: arrow_lists(path, table.column(name), name,
                                 functools.partial(_row_label, batch))
               for kind, name in names.items()}
    return fill_batch(path, batch, names, columns)


def fill_batch(path: str, batch: Batch, names: dict, columns: dict) -> Batch:
    """Set ``batch.labels`` / ``batch.items`` from ``{kind: (values, offsets | None)}``."""
    if "labels" in columns:
        values, offsets = columns["labels"]
        values = _check_layout(path, batch, names["labels"], values, offsets)
        _check_kind(path, "labels", names["labels"], values.dtype)
        if values.dtype.kind == "f":
            bad = ~np.isfinite(values)
            if bad.any():
                flat = np.flatnonzero(bad.reshape(-1))[0]
                row = (flat // batch.scores.shape[1] if batch.offsets is None else
                       int(np.searchsorted(batch.offsets, flat, side="right") - 1))
                raise InputError(f"{path}: {_row_label(batch, int(row))}: '{names['labels']}' "
                                 f"holds {values.reshape(-1)[flat]} (labels must be finite)")
        batch.labels = values
    if "positives" in columns or "negatives" in columns:
        batch.labels = _indices_to_labels(path, batch, names, columns)
    if "items" in columns:
        values, offsets = columns["items"]
        batch.items = _check_layout(path, batch, names["items"], values, offsets)
    if RANKING_FIELD in columns:
        values, offsets = columns[RANKING_FIELD]
        batch.ranking = RankLists.from_rows(values, offsets)
    return batch


# ---------------------------------------------------------------------------------------
# NPZ

class _NpzField:
    """Rows of one NPZ member: positioned reads when stored, else decompressed in row
    chunks (rows are asked for in order; a request out of order starts the member over)."""

    def __init__(self, path: str, name: str, spec=None, shape=None, dtype=None):
        self.path, self.name, self.spec = path, name, spec
        self.shape, self.dtype = shape, dtype
        self._reader: Any = None  # a compressed member's _RowStream
        self._archive: zipfile.ZipFile | None = None
        self._next = 0

    def __getstate__(self):  # a worker opens the member itself
        return {**self.__dict__, "_reader": None, "_archive": None, "_next": 0}

    def rows(self, lo: int, hi: int) -> np.ndarray:
        if self.spec is not None:  # a reader of its own: positioned reads share no position
            with self.spec.reader() as reader:
                return reader.rows(lo, hi)
        from tieeval.io.npz import _NpzMember, _RowStream
        if self._reader is None or lo != self._next:
            if self._archive is None:
                self._archive = zipfile.ZipFile(self.path)
            self._reader = _RowStream(_NpzMember(self.path, self._archive,
                                                 self.name + ".npy"))
            if lo:
                self._reader.read(lo)
        out = np.array(self._reader.read(hi - lo))
        self._next = hi
        if hi == self.shape[0]:
            self._reader.check_all()
            self._reader = None
            self._next = 0
        return out


def _attach_npz(dump: Dump, options: ReadOptions) -> tuple[Dump, Collection[str]]:
    from tieeval.io.npy import _load_error
    from tieeval.io.npz import _NpzMember, with_crcs
    names = field_names(options)
    try:
        archive = zipfile.ZipFile(dump.path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _load_error(dump.path, exc) from None
    with archive:
        members = {n[:-4]: n for n in archive.namelist() if n.endswith(".npy")}
        _check_renamed(dump.path, names, members)
        names[RANKING_FIELD] = RANKING_FIELD
        present = {kind: name for kind, name in names.items() if name in members}
        if not present:
            return dump, members
        source = _check_combination(dump.path, present, options, options.positive in members)
        scores = _NpzMember(dump.path, archive, members[options.scores])
        rows, cols = scores.shape[0], scores.shape[1]
        sources = {}
        for kind, name in present.items():
            member = _NpzMember(dump.path, archive, members[name])
            _check_npz_member(dump.path, kind, name, member, rows, cols)
            if member.fortran and not member.stored and member.nbytes > 0 and \
                    len(member.shape) > 1 and member.shape[1] > 1:
                raise InputError(f"{dump.path}: '{name}' is a compressed Fortran-order array, "
                                 "which cannot be read by rows; save it in C order "
                                 "(np.ascontiguousarray) or uncompressed (np.savez)")
            spec = member.spec() if member.stored else None
            sources[kind] = _NpzField(dump.path, name, spec, member.shape, member.dtype)
    # every member stored: any rows can be read on their own, in any thread
    stored = all(src.spec is not None for src in sources.values())
    fill = functools.partial(_fill_npz, dump.path, present, sources)
    dump = filled(dump, _info(source, present), fill, by_rows=stored)
    return with_crcs(dump, [src.spec for src in sources.values()]), members


# each NPZ field's numpy dtype kinds, and what the refusal wants
_NPZ_KINDS = {"labels": ("biuf", "numbers or booleans"),
              "items": ("iuU", "integer or string item ids"),
              RANKING_FIELD: ("iu", "integer candidate indices"),
              "positives": ("iu", "integer column indices"),
              "negatives": ("iu", "integer column indices")}


def _check_kind(path: str, kind: str, name: str, dtype) -> None:
    """A field's values must be of its :data:`_NPZ_KINDS` (a Parquet list's values too)."""
    kinds, want = _NPZ_KINDS[kind]
    if np.dtype(dtype).kind not in kinds:
        raise InputError(f"{path}: '{name}' must hold {want}, got {dtype}")


def _check_npz_member(path, kind, name, member, rows, cols):
    shape = tuple(member.shape)
    if kind in ("labels", "items"):
        if shape != (rows, cols):
            raise InputError(f"{path}: '{name}' must have the scores' shape {(rows, cols)}, got "
                             f"{shape}")
    elif kind == RANKING_FIELD:
        if len(shape) != 2 or shape[0] != rows:
            raise InputError(f"{path}: '{name}' must be a ({rows}, K) array of candidate "
                             f"indices, top first, got shape {shape}")
    elif len(shape) not in (1, 2) or shape[0] != rows:
        raise InputError(f"{path}: '{name}' must be ({rows},) or ({rows}, m) column "
                         f"indices padded with -1, got shape {shape}")
    _check_kind(path, kind, name, member.dtype)


def _fill_npz(path, names, sources, batch):
    lo, hi = batch.start, batch.start + batch.rows
    columns = {kind: (src.rows(lo, hi), None) for kind, src in sources.items()}
    return fill_batch(path, batch, names, columns)
