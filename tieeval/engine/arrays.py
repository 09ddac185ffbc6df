"""In-memory arrays as one :class:`~tieeval.io.base.Batch`: the Python form of a dump.

Scores come as an ``(instances, candidates)`` matrix (a numpy array, a list of equal-length
lists, anything with ``__array__``), as ragged rows (a list of 1-D numpy arrays), or flat
with ``offsets`` (``instances + 1`` row boundaries). Relevance comes the ways a dump gives
it (:mod:`tieeval.io.relevance`): ``labels`` in the scores' layout, or ``positives`` /
``negatives`` column indices (one per row, a ``-1``-padded 2-D array, or ragged lists),
converted to labels by the readers' own code (:func:`tieeval.io.relevance.fill_batch`), with
the readers' checks and messages; ``items`` in the scores' layout.

A ragged list of Python lists is refused: it is more often a matrix with a row gone wrong
than a request for ragged rows, so ragged rows are asked for explicitly (1-D arrays, or
offsets).
"""

from __future__ import annotations

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.io.base import RELEVANCE_FIELDS, ReadOptions, RelevanceInfo
from tieeval.io.relevance import _check_combination, fill_batch
from tieeval.io.validate import _check_matrix, check_score_dtype, resolve_positive
from tieeval.records.batch import Batch

_NAMES = {kind: kind for kind in RELEVANCE_FIELDS}


def as_array(value, what: str = "scores", path: str = "<array>") -> np.ndarray:
    """``np.asarray(value)``, never cast; object arrays (ragged or mixed rows, huge
    integers) are an :class:`InputError`."""
    arr: np.ndarray | None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        arr = np.asarray(value, dtype=object) if _is_sequence(value) else None
    if arr is None or arr.dtype == object:
        if _is_sequence(value) and value and all(_is_sequence(v) or _is_row(v) for v in value):
            lengths = [len(v) for v in value]
            if len(set(lengths)) > 1:
                i = next(i for i, n in enumerate(lengths) if n != lengths[0])
                raise InputError(f"{path}: {what}: row {i} has {lengths[i]} entries but row 0 "
                                 f"has {lengths[0]}; pass ragged rows as a list of 1-D numpy "
                                 f"arrays, or flat {what} with offsets")
        if what != "scores":
            raise InputError(f"{path}: '{what}' must be a numeric array, got an object array "
                             "(mixed types, ragged rows, or integers beyond int64?)")
        raise InputError(f"{path}: {what} must be a numeric (instances, candidates) array, "
                         "got an object array (ragged rows? pass a list of 1-D numpy arrays, "
                         "or flat arrays with offsets)")
    return arr


def _is_sequence(value) -> bool:
    return isinstance(value, (list, tuple))


def _is_row(value) -> bool:
    """A 1-D array-like that is not a Python list (a numpy array, a tensor)."""
    return (not _is_sequence(value) and not isinstance(value, (str, bytes))
            and (hasattr(value, "__array__") or isinstance(value, np.ndarray))
            and np.ndim(value) == 1)


def _ragged_rows(value, what: str, path: str, lists: bool) -> tuple | None:
    """A list of 1-D rows of different lengths -> ``(flat, offsets)``; else None. Python
    lists count as rows only when ``lists`` (index lists, and relevance fields of ragged
    scores)."""
    if not _is_sequence(value) or not value:
        return None
    if not all(_is_row(v) or (lists and _is_sequence(v)) for v in value):
        return None
    rows = [as_array(v, what, path) for v in value]
    if any(r.ndim != 1 for r in rows):
        return None
    lengths = np.array([r.size for r in rows], dtype=np.int64)
    if not lists and lengths.min() == lengths.max():
        return None  # a matrix after all
    kinds = {r.dtype for r in rows if r.size}
    if what == "scores" and len(kinds) > 1:
        raise InputError(f"{path}: scores rows hold different dtypes "
                         f"({', '.join(sorted(map(str, kinds)))}); ties are judged in the "
                         "stored dtype, so give every row the same one")
    filled = [r for r in rows if r.size]  # an empty Python list is float64 to numpy
    flat = np.concatenate(filled) if filled else np.zeros(0, np.int64)
    return flat, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


def _check_offsets(path: str, offsets, size: int) -> np.ndarray:
    off = as_array(offsets, "offsets", path)
    if off.ndim != 1 or off.dtype.kind not in "iu":
        raise ParameterError(f"{path}: offsets must be a 1-D array of integer row boundaries "
                             f"(instances + 1 of them), got shape {off.shape}, dtype {off.dtype}")
    off = off.astype(np.int64)
    if off.size < 2:
        raise InputError(f"{path}: no instances (empty dump)")
    if off[0] != 0 or off[-1] != size or (np.diff(off) < 0).any():
        raise ParameterError(f"{path}: offsets must start at 0, never decrease and end at the "
                             f"number of flat values ({size}); got {off[0]} .. {off[-1]}")
    return off


def score_rows(scores, offsets, path: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(scores, offsets)``: a checked matrix (offsets None) or flat values with offsets.
    Ragged rows whose lengths all agree become a matrix, as the Parquet reader reads them."""
    if offsets is not None:
        flat = as_array(scores, "scores", path)
        if flat.ndim != 1:
            raise InputError(f"{path}: with offsets, scores must be flat (1-D), got shape "
                             f"{flat.shape}")
        off = _check_offsets(path, offsets, flat.size)
    else:
        ragged = _ragged_rows(scores, "scores", path, lists=False)
        if ragged is None:
            arr = as_array(scores, "scores", path)
            _check_matrix(path, arr, "scores")
            return arr, None
        flat, off = ragged
    check_score_dtype(path, flat.dtype, "scores")
    lengths = np.diff(off)
    if lengths.min() < 1:
        i = int(np.flatnonzero(lengths < 1)[0])
        raise InputError(f"{path}: row {i}: no candidates (a row needs at least one)")
    if lengths.min() == lengths.max():
        return flat.reshape(lengths.size, int(lengths[0])), None
    return flat, off


def _field(value, kind: str, scores: np.ndarray, offsets, path: str, flat: bool) -> tuple:
    """One relevance field as ``(values, offsets | None)`` for :func:`fill_batch`; ``flat``:
    the scores came flat with offsets (then so may the field, even if the rows turned out
    equally long)."""
    rows = scores.shape[0] if offsets is None else offsets.size - 1
    index = kind in ("positives", "negatives")
    ragged = _ragged_rows(value, kind, path, lists=index or offsets is not None)
    if ragged is not None:
        values, off = ragged
        if off.size - 1 != rows:
            raise InputError(f"{path}: '{kind}' must have one row per instance ({rows}), got "
                             f"{off.size - 1}")
        return values, off
    values = as_array(value, kind, path)
    if index:
        if values.size == 0:
            values = values.astype(np.int64)
        if values.ndim not in (1, 2) or values.shape[0] != rows:
            raise InputError(f"{path}: '{kind}' must be ({rows},) or ({rows}, m) column "
                             f"indices padded with -1, got shape {values.shape}")
        return values, None
    if offsets is None:
        if flat and values.ndim == 1 and values.size == scores.size:
            values = values.reshape(scores.shape)
        if values.shape != scores.shape:
            raise InputError(f"{path}: '{kind}' must have the scores' shape {scores.shape}, "
                             f"got {values.shape}")
        return values, None
    if values.ndim != 1 or values.size != scores.size:
        raise InputError(f"{path}: '{kind}' must be flat like the scores ({scores.size} values "
                         f"with the same offsets), got shape {values.shape}")
    return values, offsets


def _positive_column(positive, lengths: np.ndarray, path: str) -> np.ndarray:
    """The positive's column in each row: one int or one per row, checked as a dump's."""
    rows = lengths.size
    pos = as_array(positive, "positive", path)
    if pos.ndim > 1 or (pos.ndim == 1 and pos.size != rows):
        raise InputError(f"{path}: positive must be one int or one per row ({rows}), got "
                         f"shape {pos.shape}")
    return resolve_positive(path, np.broadcast_to(pos, (rows,)), lengths, 0)


def _masked(value) -> bool:
    return isinstance(value, np.ma.MaskedArray) and bool(np.ma.getmaskarray(value).any())


def unmask(scores, positive, fields: dict, offsets, path: str):
    """Honour a numpy masked array's mask: a masked score is not a candidate. Each row
    keeps its unmasked scores, in order (rows become ragged, as a dump's may be); the
    positive's column index and fields in the scores' layout (``labels``, ``items``) follow.
    A masked positive is an error: it cannot be ranked among candidates it is not one of.
    Masks anywhere else are refused (:class:`ParameterError`): what they would mean is not
    clear. Returns ``(scores, positive, fields, offsets)``."""
    for kind, value in [("positive", positive), ("offsets", offsets), *fields.items()]:
        if _masked(value):
            raise ParameterError(f"{path}: '{kind}' is a masked array; only the scores' mask "
                                 "is read (masked = not a candidate): mask the scores, or "
                                 "pass plain arrays")
    if not isinstance(scores, np.ma.MaskedArray):
        return scores, positive, fields, offsets
    data = np.ma.getdata(scores)
    keep = ~np.ma.getmaskarray(scores)
    fields = {kind: np.ma.getdata(value) if isinstance(value, np.ma.MaskedArray) else value
              for kind, value in fields.items()}
    if keep.all():
        return data, positive, fields, offsets
    for kind in ("positives", "negatives"):
        if kind in fields:
            raise ParameterError(f"{path}: masked scores with '{kind}' column indices: give "
                                 "'labels' in the scores' shape instead (their masked entries "
                                 "are dropped with the scores)")
    if offsets is None:
        if data.ndim != 2:
            raise InputError(f"{path}: masked scores must be a 2-D (instances, candidates) "
                             f"array, or flat with offsets; got shape {data.shape}")
        old = np.arange(data.shape[0] + 1, dtype=np.int64) * data.shape[1]
    else:
        old = _check_offsets(path, offsets, data.size)
        if data.ndim != 1:
            raise InputError(f"{path}: with offsets, scores must be flat (1-D), got shape "
                             f"{data.shape}")
    flat_keep = keep.reshape(-1)
    lengths = np.add.reduceat(flat_keep.astype(np.int64), old[:-1]) if data.size else \
        np.zeros(old.size - 1, np.int64)
    lengths[np.diff(old) == 0] = 0  # reduceat gives a value for an empty row
    new_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    if positive is None and not fields:
        positive = 0
    if positive is not None:
        pos = _positive_column(positive, np.diff(old), path)
        at = old[:-1] + pos
        masked = np.flatnonzero(~flat_keep[at])
        if masked.size:
            i = int(masked[0])
            raise InputError(f"{path}: row {i}: the positive (column {int(pos[i])}) is masked; "
                             "a masked score is not a candidate")
        # the positive's place among its row's kept candidates
        rank = np.cumsum(flat_keep) - 1
        positive = rank[at] - new_offsets[:-1]
    out = {}
    for kind, value in fields.items():
        arr = as_array(value, kind, path)
        if arr.size != data.size or (offsets is None and arr.shape != data.shape):
            raise InputError(f"{path}: '{kind}' must have the scores' shape {data.shape}, got "
                             f"{arr.shape}")
        out[kind] = arr.reshape(-1)[flat_keep]
    return data.reshape(-1)[flat_keep], positive, out, new_offsets


def array_batch(scores, positive=None, *, labels=None, positives=None, negatives=None,
                items=None, offsets=None, ranking=None, path: str = "<array>"
                ) -> tuple[Batch, RelevanceInfo | None]:
    """The one batch, and what relevance it carries, of in-memory arrays; ``ranking``
    (per row, candidate indices top first) is checked and stored as ``save_scores`` stores
    it, for ``original="given"``. A masked scores array: see :func:`unmask`."""
    fields = {kind: value for kind, value in (("labels", labels), ("positives", positives),
                                              ("negatives", negatives), ("items", items))
              if value is not None}
    if ranking is not None and _masked(scores):
        raise ParameterError(f"{path}: masked scores with a 'ranking': its indices name the "
                             "columns before the mask; drop the masked candidates from both")
    scores, positive, fields, offsets = unmask(scores, positive, fields, offsets, path)
    arr, off = score_rows(scores, offsets, path)
    rows = arr.shape[0] if off is None else off.size - 1
    present = {kind: kind for kind in fields}
    source = _check_combination(path, present, ReadOptions(), positive is not None)
    lengths = (np.full(rows, arr.shape[1], dtype=np.int64) if off is None
               else np.diff(off).astype(np.int64))
    if source is None:
        pos = _positive_column(0 if positive is None else positive, lengths, path)
    else:
        pos = np.zeros(rows, dtype=np.int64)
    batch = Batch(arr, pos, 0, off)
    columns = {kind: _field(value, kind, arr, off, path, offsets is not None)
               for kind, value in fields.items()}
    if "items" in columns and columns["items"][0].dtype.kind not in "iuU":
        raise InputError(f"{path}: 'items' must hold integer or string item ids, got "
                         f"{columns['items'][0].dtype}")
    fill_batch(path, batch, _NAMES, columns)
    if ranking is not None:
        from tieeval.io.writers import ranking_lists
        batch.ranking = ranking_lists(ranking, lengths)
    if not present:
        return batch, None
    return batch, RelevanceInfo(source, items="items" in present, fields=tuple(present))
