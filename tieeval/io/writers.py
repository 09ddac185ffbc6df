"""Writing score dumps: the one line a codebase adds at its evaluation point,
:func:`save_scores`, which writes a dump that every tieeval command reads.

Everything is checked before a byte is written, against the rules the readers apply
(:mod:`tieeval.io.relevance`), so a saved dump always reads back. The scores keep their
dtype: ties are judged on exactly what the model produced, so a float32 tensor is stored as
float32.
"""


from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from typing import cast

import numpy as np

from tieeval.errors import ParameterError
from tieeval.records.batch import RankLists
from tieeval.sink import atomic_output

SAVE_FORMATS = {".npz": "npz", ".parquet": "parquet", ".pq": "parquet"}
# The field tieeval diff aligns runs by (tieeval.analysis.diff.INSTANCE_FIELD).
INSTANCE_FIELD = "instance"
# Field names of a dump: a run label by one of these names would be read as the field.
FIELDS = ("scores", "positive", "labels", "positives", "negatives", "items", INSTANCE_FIELD,
          "ranking")
_RUN_LABEL_HINT = ("run labels go in as keywords (method=..., dataset=..., task=..., "
                   "seed=...) or in meta={...}")


def _as_array(value, what: str) -> np.ndarray:
    # np.asarray calls __array__ (a CPU torch tensor, a JAX or CuPy host array...) without
    # importing the library it comes from, and never casts when no dtype is asked for.
    try:
        arr = np.asarray(value)
    except (TypeError, RuntimeError, ValueError) as exc:
        raise ParameterError(f"{what} cannot be turned into a numpy array ({exc}); pass a "
                             "CPU array, e.g. tensor.detach().cpu()") from None
    if arr.dtype == object:
        raise ParameterError(f"{what} must be a numeric array, got an object array "
                             "(ragged rows?)")
    return arr


class _Rows:
    """Per-row values: flat ``values`` and int64 ``offsets`` (instances + 1); ``shape`` is
    the 2-D shape when every row has the same length (a matrix), else None."""

    def __init__(self, values: np.ndarray, offsets: np.ndarray):
        self.values, self.offsets = values, offsets
        lengths = self.lengths
        same = lengths.size and lengths.min() == lengths.max()
        self.shape = (lengths.size, int(lengths[0])) if same else None

    @classmethod
    def matrix(cls, arr: np.ndarray) -> _Rows:
        rows, cols = arr.shape
        return cls(np.ascontiguousarray(arr).reshape(-1),
                   np.arange(rows + 1, dtype=np.int64) * cols)

    @property
    def rows(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows, dtype=np.int64), self.lengths)

    def dense(self) -> np.ndarray:
        return self.values.reshape(self.shape)

    def row_of(self, flat: int) -> int:
        return int(np.searchsorted(self.offsets, flat, side="right") - 1)


def _rows(value, what: str, index: bool = False) -> _Rows:
    """``value`` as rows: a 2-D array (``index``: also a 1-D array, one entry per row), or
    a list of 1-D rows of any lengths. Row dtypes must agree (strings may differ in width;
    ``index`` fields take any integers), since nothing is cast."""
    arr: np.ndarray | None
    try:
        arr = np.asarray(value)
    except ValueError:  # "inhomogeneous shape": rows of different lengths
        arr = None
    except (TypeError, RuntimeError):
        arr = _as_array(value, what)  # raises the usual message
    # a list of rows is ragged when numpy cannot make one array of it, or only of objects
    if not isinstance(value, (list, tuple)) or (arr is not None and arr.dtype != object):
        arr = _as_array(value if arr is None else arr, what)  # refuses objects
        if index and arr.ndim == 1:
            arr = arr.reshape(-1, 1)  # one index per row
        if arr.ndim != 2:
            shape = "(instances,) or (instances, m)" if index else "(instances, candidates)"
            raise ParameterError(f"{what} must be a 2-D {shape} array, got shape "
                                 f"{arr.shape} (rows of different lengths: a list of 1-D "
                                 "rows)")
        if index and arr.size == 0:
            arr = arr.astype(np.int64)  # [[], []]: no indices, and no dtype to keep
        return _Rows.matrix(arr)
    rows = []
    for i, row in enumerate(value):
        r = _as_array(row, f"{what}[{i}]")
        if r.ndim != 1:
            raise ParameterError(f"{what}[{i}] must be a 1-D row, got shape {r.shape}"
                                 + ("; concatenate batches into one array first"
                                    if r.ndim == 2 else ""))
        rows.append(r)
    typed = [(i, r.dtype) for i, r in enumerate(rows) if r.size]
    kinds = {dt.kind for _, dt in typed}
    if not typed:
        dtype = np.dtype(np.int64) if index else np.result_type(*[r.dtype for r in rows])
    elif len({dt for _, dt in typed}) == 1 or kinds == {"U"}:
        dtype = np.result_type(*[dt for _, dt in typed])
    elif index and kinds <= set("iu"):
        dtype = np.dtype(np.int64)
        rows = [_index_values(r) for r in rows]
    else:
        (i, a), (j, b) = typed[0], next(t for t in typed if t[1] != typed[0][1])
        raise ParameterError(f"{what}: rows differ in dtype ({a} in row {i}, {b} in row {j}); "
                             "convert them to one dtype (nothing is cast)")
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([r.size for r in rows])
    values = (np.concatenate([r.astype(dtype, copy=False) for r in rows]) if rows
              else np.zeros(0, dtype))
    return _Rows(values, offsets)


def _index_values(arr: np.ndarray) -> np.ndarray:
    """Integer indices as int64; huge unsigned values stay out of range, never wrap."""
    if arr.dtype.kind == "u":
        return np.minimum(arr, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
    return arr.astype(np.int64)


def _scores(scores) -> _Rows:
    rows = _rows(scores, "scores")
    dtype = rows.values.dtype
    if not (dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize <= 8)):
        raise ParameterError(f"scores must be float16/32/64 or integers, got {dtype}")
    if rows.rows == 0 or (rows.shape is not None and rows.shape[1] == 0):
        shape = rows.shape if rows.shape is not None else (rows.rows,)
        raise ParameterError(f"scores must have at least one instance and one candidate, got "
                             f"shape {shape}")
    empty = np.flatnonzero(rows.lengths == 0)
    if empty.size:
        raise ParameterError(f"scores[{int(empty[0])}] has no candidates (a row needs at "
                             "least one)")
    return rows


def _same_layout(rows: _Rows, scores: _Rows, what: str) -> None:
    if rows.rows != scores.rows:
        raise ParameterError(f"{what} has {rows.rows} rows but scores has {scores.rows}")
    if rows.shape is not None and scores.shape is not None and rows.shape != scores.shape:
        raise ParameterError(f"{what} has shape {rows.shape} but scores has shape "
                             f"{scores.shape}")
    bad = np.flatnonzero(rows.lengths != scores.lengths)
    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"{what}[{i}] has {int(rows.lengths[i])} entries but scores[{i}] "
                             f"has {int(scores.lengths[i])} candidates")


def _positive(positive, scores: _Rows) -> np.ndarray | None:
    if positive is None:
        return None
    arr = _as_array(positive, "positive")
    if arr.dtype.kind not in "iu":
        raise ParameterError(f"positive must hold integer column indices, got {arr.dtype}")
    rows, lengths = scores.rows, scores.lengths
    if arr.ndim == 0:
        arr = np.broadcast_to(arr, (rows,))  # one index for every row, dtype kept
    if arr.ndim != 1 or arr.shape[0] != rows:
        raise ParameterError(f"positive must be one column index per instance ({rows}), got "
                             f"shape {arr.shape}")
    idx = _index_values(arr)
    bad = np.flatnonzero((idx < -lengths) | (idx >= lengths))
    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"positive[{i}] = {int(arr[i])} is out of range for "
                             f"{int(lengths[i])} candidates")
    # Stored as 0..n-1: readers take a negative stored index for an error, not the end.
    return np.where(idx < 0, idx + lengths, idx)


def _labels(labels, scores: _Rows) -> _Rows | None:
    if labels is None:
        return None
    if isinstance(labels, (str, bytes)) or (not isinstance(labels, (list, tuple))
                                            and np.ndim(labels) == 0):
        raise ParameterError(f"labels={labels!r} is a single value, but labels= takes "
                             "relevance labels now: one label per candidate in the scores' "
                             "layout (> 0 relevant with that gain, 0 unobserved, < 0 an "
                             f"explicit negative); {_RUN_LABEL_HINT}")
    rows = _aligned(labels, "labels", scores, "biuf", "numbers or booleans")
    if rows.values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(rows.values))
        if bad.size:
            flat = int(bad[0])
            i = rows.row_of(flat)
            raise ParameterError(f"labels[{i}][{flat - int(rows.offsets[i])}] = "
                                 f"{rows.values[flat]}: labels must be finite")
    return rows


def _indices(value, what: str, scores: _Rows, padding: bool) -> _Rows | None:
    """Per-row column indices, checked against each row's length; with ``padding`` the
    ``-1`` entries are dropped (padding), else any negative index is out of range."""
    if value is None:
        return None
    rows = value if isinstance(value, _Rows) else _rows(value, what, index=True)
    if rows.values.dtype.kind not in "iu":
        raise ParameterError(f"{what} must hold integer column indices, got "
                             f"{rows.values.dtype}")
    if rows.rows != scores.rows:
        raise ParameterError(f"{what} has {rows.rows} rows but scores has {scores.rows}")
    idx = _index_values(rows.values)
    row = rows.row_ids
    keep = idx != -1 if padding else np.ones(idx.size, dtype=bool)
    length = scores.lengths[row]
    bad = np.flatnonzero(keep & ((idx < 0) | (idx >= length)))
    if bad.size:
        j = int(bad[0])
        rule = "; -1 is padding" if padding else ""
        raise ParameterError(f"{what}[{int(row[j])}] holds {int(rows.values[j])}, out of range "
                             f"for {int(length[j])} candidates (indices are 0..n-1{rule})")
    idx, row = idx[keep], row[keep]
    offsets = np.zeros(rows.rows + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(row, minlength=rows.rows))
    return _Rows(idx, offsets)


def _repeated(row: np.ndarray, values: np.ndarray):
    """The first (row, index) pair, by row then index, listed twice, else None."""
    order = np.lexsort((values, row))
    v, r = values[order], row[order]
    same = np.flatnonzero((v[1:] == v[:-1]) & (r[1:] == r[:-1]))
    return None if not same.size else (int(r[same[0]]), int(v[same[0]]))


def _ranking(ranking, scores: _Rows) -> _Rows | None:
    if ranking is None:
        return None
    given = _rows(ranking, "ranking", index=True)
    rows = cast(_Rows, _indices(given, "ranking", scores, padding=False))  # given is set
    dup = _repeated(rows.row_ids, rows.values)
    if dup is not None:
        raise ParameterError(f"ranking[{dup[0]}] lists candidate {dup[1]} twice (a ranking "
                             "holds each candidate at most once)")
    if given.values.dtype == np.int32:
        rows.values = rows.values.astype(np.int32)  # int32 indices stay int32
    return rows


def ranking_lists(ranking, lengths: np.ndarray) -> RankLists:
    """``ranking`` as :func:`save_scores` takes it (per row, candidate indices top first),
    checked against rows of ``lengths`` candidates and given back as a dump's reader gives
    its ``ranking`` field, so in-memory arrays rank exactly as the saved file does."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(lengths)
    rows = cast(_Rows, _ranking(ranking, _Rows(np.empty(0), offsets)))
    return RankLists(rows.values, rows.offsets)


def _aligned(value, what: str, scores: _Rows, kinds: str, want: str) -> _Rows:
    """``value`` as rows of ``kinds`` values in the layout of ``scores``."""
    rows = _rows(value, what)
    if rows.values.dtype.kind not in kinds:
        raise ParameterError(f"{what} must hold {want}, got {rows.values.dtype}")
    _same_layout(rows, scores, what)
    return rows


def _instances(instances, rows: int) -> np.ndarray | None:
    if instances is None:
        return None
    arr = _as_array(instances, "instances")
    if arr.ndim != 1 or arr.shape[0] != rows:
        raise ParameterError(f"instances must be one id per instance ({rows}), got shape "
                             f"{arr.shape}")
    if arr.dtype.kind not in "iuU":
        raise ParameterError(f"instances must be integers or strings, got {arr.dtype}")
    order = np.argsort(arr, kind="stable")
    same = np.flatnonzero(arr[order][1:] == arr[order][:-1])
    if same.size:
        a, b = int(order[same[0]]), int(order[same[0] + 1])
        value = arr[a].item()
        raise ParameterError(f"instances[{b}] = {value!r} repeats instances[{a}]: instance ids "
                             "must be unique (tieeval diff matches runs by them)")
    return arr


def _run_labels(meta, run_labels: dict) -> dict[str, str]:
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        raise ParameterError(f"meta must be a dict of run labels, got {type(meta).__name__}")
    both = sorted(set(meta) & set(run_labels))
    if both:
        raise ParameterError(f"run label {both[0]!r} is given both in meta= and as a keyword")
    out = {}
    for key, value in {**meta, **run_labels}.items():
        if value is None:
            continue
        if not isinstance(key, str):
            raise ParameterError(f"run label names must be strings, got {key!r}")
        if key in FIELDS:
            raise ParameterError(f"label {key!r} would clash with the {key!r} field")
        if isinstance(value, (list, tuple, dict, set)) or np.ndim(value) != 0:
            raise ParameterError(f"label {key}={value!r} must be a single value "
                                 "(a string or a number)")
        out[key] = str(value.item() if isinstance(value, np.generic) else value)
    return out


def _padded(rows: _Rows) -> np.ndarray:
    """Index lists as an (instances, m) int64 array padded with -1 (m >= 1)."""
    width = max(1, int(rows.lengths.max(initial=0)))
    out = np.full((rows.rows, width), -1, dtype=np.int64)
    out[rows.row_ids, np.arange(rows.values.size) - rows.offsets[rows.row_ids]] = rows.values
    return out


def _npz_arrays(fields: dict) -> dict:
    """The NPZ members; NPZ holds rectangular arrays only."""
    scores = fields["scores"]
    if scores.shape is None:
        lengths = scores.lengths
        j = int(np.flatnonzero(lengths != lengths[0])[0])
        raise ParameterError(f"scores has rows of different lengths (row 0: {int(lengths[0])}, "
                             f"row {j}: {int(lengths[j])} candidates); NPZ holds (instances, "
                             "candidates) arrays only: save ragged rows to .parquet")
    out = {}
    for name, value in fields.items():
        if name in ("positives", "negatives"):
            out[name] = _padded(value)
        elif isinstance(value, _Rows):
            if name == "ranking" and value.shape is None:
                raise ParameterError("ranking rows differ in length; NPZ holds an "
                                     "(instances, K) array only: give every row the same "
                                     "number of indices, or save to .parquet")
            out[name] = value.dense()
        else:
            out[name] = value
    return out


def _write_npz(fh, arrays: dict, meta: dict) -> None:
    # np.savez's own parameter names (file, allow_pickle) could swallow a run label; the
    # archive is written as np.savez writes it: stored (uncompressed) members, memory-mapped
    # by the readers.
    members = {**arrays, **{k: np.array(v) for k, v in meta.items()}}
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as archive:
        for name, arr in members.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)


def _native(arr: np.ndarray) -> np.ndarray:
    # Arrow only takes native byte order; swapping bytes keeps the value type.
    arr = arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _list_column(pa, rows: _Rows, fixed: bool):
    values = pa.array(_native(rows.values))
    if fixed and rows.shape is not None:
        return pa.FixedSizeListArray.from_arrays(values, rows.shape[1])
    if rows.offsets[-1] <= np.iinfo(np.int32).max:
        return pa.ListArray.from_arrays(pa.array(rows.offsets.astype(np.int32)), values)
    return pa.LargeListArray.from_arrays(pa.array(rows.offsets), values)


def _write_parquet(fh, fields: dict, meta: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for name, value in fields.items():
        if isinstance(value, _Rows):
            # a matrix stays a fixed_size_list, as do labels and items aligned with it
            columns[name] = _list_column(pa, value, name in ("scores", "labels", "items"))
        else:
            columns[name] = pa.array(_native(value))
    table = pa.table(columns).replace_schema_metadata(meta)
    pq.write_table(table, fh)


def save_scores(path, scores, positive=None, *, labels=None, positives=None, negatives=None,
                items=None, instances=None, ranking=None, meta=None, **run_labels) -> str:
    """Write a score dump that ``tieeval`` reads: Parquet or NPZ, chosen by the suffix.

    Every argument is checked before anything is written, with the readers' rules, so the
    dump reads back; a bad one raises :class:`~tieeval.errors.ParameterError` naming it.

    Parameters
    ----------
    path : str or os.PathLike
        Ends in ``.npz`` or ``.parquet`` (``.pq``). Written through the output sink
        (:mod:`tieeval.sink`): atomically, so a crash or a full disk leaves no
        half-written dump behind, and never over a device, a folder or a FIFO
        (:class:`~tieeval.errors.OutputError`).
    scores : array-like, shape (instances, candidates), or a list of 1-D rows
        float16/32/64 or integer scores; anything with ``__array__`` works (a CPU torch
        tensor), and its dtype is kept as is. Rows of different lengths (a list of 1-D
        arrays) need Parquet.
    positive : int or array-like of shape (instances,), optional
        Each row's positive column (negative counts from the end of the row). Omitted, and
        no other relevance given: column 0.
    labels : array-like or list of rows, optional
        Relevance labels, one per candidate in the scores' layout: ``> 0`` relevant with
        that gain, ``0`` unobserved, ``< 0`` an explicit negative (numbers or booleans).
    positives, negatives : list of index lists, or int array (instances,) / (instances, m)
        padded with -1, optional
        Each row's relevant / explicitly negative columns (labels +1 / -1, 0 elsewhere).
        A dump gives relevance one way: ``positive``, ``labels``, or ``positives`` and/or
        ``negatives``.
    items : array-like or list of rows, optional
        Candidate ids (integers or strings) in the scores' layout, for the duplicate check.
    instances : array-like of shape (instances,), optional
        One unique id per row (integers or strings), stored as the field ``instance`` by
        which ``tieeval diff`` aligns runs.
    ranking : list of index lists or int array (instances, K), optional
        Each row's candidate columns in the codebase's rank order, top first (any K; NPZ
        needs the same K for every row). Stored as the field ``ranking``.
    meta : dict, optional
        Run labels, as the keywords below.
    **run_labels
        Run labels stored as metadata (Parquet key-value metadata, NPZ 0-d string
        entries), e.g. ``method="ConsRec", dataset="Mafengwo", task="group", seed=1``
        (values are stored as strings; None is skipped). Field names
        (``scores``, ``positive``, ``labels``, ``positives``, ``negatives``, ``items``,
        ``instance``, ``ranking``) cannot be run labels.

    Returns
    -------
    str
        The path written.

    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = save_scores(os.path.join(d, "run.npz"), np.ones((2, 3), np.float32), seed=1)
    >>> from tieeval.io.open import open_dump
    >>> dump = open_dump(p); dump.dtype, dump.metadata
    (dtype('float32'), {'seed': '1'})
    >>> p = save_scores(os.path.join(d, "graded.parquet"), [[0.9, 0.5, 0.1], [0.3, 0.3]],
    ...                 labels=[[2, 0, -1], [0, 1]], method="M")
    >>> [b.labels.tolist() for b in open_dump(p).batches()]
    [[2, 0, -1, 0, 1]]
    """
    path = os.fspath(path)
    fmt = SAVE_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise ParameterError(f"{path}: the file name must end in .npz or .parquet (it "
                             "decides the format)")
    rows = _scores(scores)
    lab = _labels(labels, rows)
    pos_lists = _indices(positives, "positives", rows, padding=True)
    neg_lists = _indices(negatives, "negatives", rows, padding=True)
    given = [name for name, value in (("labels", lab), ("positives", pos_lists),
                                      ("negatives", neg_lists)) if value is not None]
    if positive is not None and given:
        raise ParameterError(f"positive={positive!r} describes a single-positive dump, and "
                             f"{given[0]}= gives relevance another way; a dump gives relevance "
                             "one way: leave positive out")
    if lab is not None and len(given) > 1:
        raise ParameterError(f"labels= and {given[1]}= both give relevance; a dump gives it "
                             f"one way: pass labels=, or positives=/negatives=")
    if pos_lists is not None and neg_lists is not None:
        # the first (row, index) in both lists: repeated once each list's pairs are unique
        pairs = np.concatenate([np.unique(np.stack([part.row_ids, part.values]), axis=1)
                                for part in (pos_lists, neg_lists)], axis=1)
        clash = _repeated(pairs[0], pairs[1])
        if clash is not None:
            raise ParameterError(f"candidate {clash[1]} of row {clash[0]} is in both "
                                 "positives and negatives")
    fields = {"scores": rows, "positive": _positive(positive, rows), "labels": lab,
              "positives": pos_lists, "negatives": neg_lists,
              "items": None if items is None else _aligned(
                  items, "items", rows, "iuU", "integer or string item ids"),
              INSTANCE_FIELD: _instances(instances, rows.rows), "ranking": _ranking(ranking, rows)}
    fields = {name: value for name, value in fields.items() if value is not None}
    meta = _run_labels(meta, run_labels)
    arrays = _npz_arrays(fields) if fmt == "npz" else fields
    with atomic_output(path, what="the dump") as fh:
        if fmt == "npz":
            _write_npz(fh, arrays, meta)
        else:
            _write_parquet(fh, arrays, meta)
    return path
