"""Writing score dumps: the one line a codebase adds at its evaluation point.

``save_scores(path, scores, positive=None, **labels)`` writes a dump that every tieeval
command reads, with the run's labels stored as metadata (Parquet key-value metadata, NPZ 0-d
string entries). The scores keep their dtype: ties are judged on exactly what the model
produced, so a float32 tensor is stored as float32.
"""


from __future__ import annotations

import os
import uuid

import numpy as np

from tieeval.errors import ParameterError

SAVE_FORMATS = {".npz": "npz", ".parquet": "parquet", ".pq": "parquet"}
_RESERVED = ("scores", "positive")


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


def _scores(scores) -> np.ndarray:
    arr = _as_array(scores, "scores")
    if not (arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and arr.dtype.itemsize <= 8)):
        raise ParameterError(f"scores must be float16/32/64 or integers, got {arr.dtype}")
    if arr.ndim != 2:
        raise ParameterError(f"scores must be a 2-D (instances, candidates) array, got shape "
                             f"{arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ParameterError(f"scores must have at least one instance and one candidate, got "
                             f"shape {arr.shape}")
    return arr


def _positive(positive, rows: int, cols: int) -> np.ndarray | None:
    if positive is None:
        return None
    arr = _as_array(positive, "positive")
    if arr.dtype.kind not in "iu":
        raise ParameterError(f"positive must hold integer column indices, got {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(rows, int(arr), dtype=np.int64)
    if arr.ndim != 1 or arr.shape[0] != rows:
        raise ParameterError(f"positive must be one column index per instance ({rows}), got "
                             f"shape {arr.shape}")
    bad = np.flatnonzero((arr < -cols) | (arr >= cols))
    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"positive[{i}] = {int(arr[i])} is out of range for {cols} "
                             "candidates")
    # Stored as 0..cols-1: readers take a negative stored index for an error, not the end.
    arr = arr.astype(np.int64)
    return np.where(arr < 0, arr + cols, arr)


def _labels(labels: dict) -> dict[str, str]:
    out = {}
    for key, value in labels.items():
        if value is None:
            continue
        if key in _RESERVED:
            raise ParameterError(f"label {key!r} would clash with the {key!r} field")
        if isinstance(value, (list, tuple, dict, set)) or np.ndim(value) != 0:
            raise ParameterError(f"label {key}={value!r} must be a single value "
                                 "(a string or a number)")
        out[key] = str(value.item() if isinstance(value, np.generic) else value)
    return out


def _format(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in SAVE_FORMATS:
        raise ParameterError(f"{path}: the file name must end in .npz or .parquet (it "
                             "decides the format)")
    return SAVE_FORMATS[suffix]


def _write_npz(fh, scores, positive, labels) -> None:
    arrays = {"scores": scores}
    if positive is not None:
        arrays["positive"] = positive
    arrays.update({k: np.array(v) for k, v in labels.items()})
    np.savez(fh, **arrays)


def _write_parquet(fh, scores, positive, labels) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Arrow only takes native byte order; swapping bytes keeps the value type.
    native = scores if scores.dtype.isnative else scores.astype(scores.dtype.newbyteorder("="))
    values = pa.array(np.ascontiguousarray(native).ravel())
    columns = {"scores": pa.FixedSizeListArray.from_arrays(values, scores.shape[1])}
    if positive is not None:
        columns["positive"] = pa.array(positive)
    table = pa.table(columns).replace_schema_metadata(labels)
    pq.write_table(table, fh)


def save_scores(path, scores, positive=None, **labels) -> str:
    """Write a score dump that ``tieeval`` reads: Parquet or NPZ, chosen by the suffix.

    Parameters
    ----------
    path : str or os.PathLike
        Ends in ``.npz`` or ``.parquet`` (``.pq``). Written atomically: a crash mid-write
        leaves no half-written dump behind.
    scores : array-like, shape (instances, candidates)
        float16/32/64 or integer scores; anything with ``__array__`` works (a CPU torch
        tensor), and its dtype is kept as is.
    positive : int or array-like of shape (instances,), optional
        Each row's positive column (negative counts from the end). Omitted: column 0.
    **labels
        Run labels stored as metadata, e.g. ``method="ConsRec", dataset="Mafengwo",
        task="group", seed=1`` (values are stored as strings; None is skipped).

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
    """
    path = os.fspath(path)
    fmt = _format(path)
    arr = _scores(scores)
    pos = _positive(positive, *arr.shape)
    meta = _labels(labels)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ParameterError(f"{path}: folder {folder} does not exist")
    # a temporary name beside the target, then one rename; open() applies the umask
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "xb") as fh:
            (_write_npz if fmt == "npz" else _write_parquet)(fh, arr, pos, meta)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
