"""Checks every wide reader applies: the scores' dtype and shape, the positive field or
``--positive-index``, and which layout a table holds."""


from __future__ import annotations

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import ReadOptions

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


def check_named_field(where: str, name: str, default: str, names, what: str = "column",
                      options: ReadOptions | None = None) -> None:
    """A field the user named (``--positive-column pos``, ``--label-column rel``) must exist:
    falling back to column 0 or to no labels would give silently wrong figures. The one
    exception is a name given together with ``--positive-index``, which then only says
    which stored field not to use."""
    if name == default or name in names:
        return
    if options is not None and options.positive_index is not None:
        return
    option = "--label-column" if default == "label" else "--positive-column"
    raise InputError(f"{where}: no {what} '{name}' ({option}); found: "
                     f"{', '.join(sorted(map(str, names))) or 'nothing'}")


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
    else:
        pos = positive.astype(np.int64)
        if count_back:
            pos = np.where(pos < 0, pos + lengths, pos)
    bad = np.flatnonzero((pos < 0) | (pos >= lengths))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{path}: row {start + i}: positive index {int(positive[i])} is out of "
                         f"range for {int(lengths[i])} candidate(s)")
    return pos


def _positive_for(path, positive_index, lengths, start, stored):
    if stored is not None:
        return resolve_positive(path, stored, lengths, start, count_back=False)
    index = 0 if positive_index is None else positive_index
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


def _check_positive_field(path, options, positive, rows) -> None:
    """Check a stored positive array (or its header: anything with dtype and shape)."""
    if positive is None:
        return
    if options.positive_index is not None:
        raise positive_index_conflict(path, options.positive, "field")
    if len(positive.shape) != 1 or positive.shape[0] != rows:
        raise InputError(f"{path}: '{options.positive}' must have one entry per instance "
                         f"({rows}), got shape {tuple(positive.shape)}")
    if np.dtype(positive.dtype).kind not in "iu":
        raise InputError(f"{path}: '{options.positive}' must hold integer column indices, got "
                         f"{positive.dtype}")
