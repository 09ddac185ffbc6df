"""Instance ids stored beside a wide dump's scores: an NPZ array or a Parquet column.

The NPZ and Parquet readers give the dumps they open an ids reader
(:meth:`tieeval.io.base.Dump.instance_ids`), so that ``diff`` and ``--per-instance`` get a
wide dump's ids from the reader that opened it, with the same checks whichever asks. The
long layout's and TREC runs' ids come with their batches instead (``Batch.ids``).
"""

from __future__ import annotations

import numpy as np

from tieeval.errors import InputError

INSTANCE_FIELD = "instance"


def npz_ids(path: str, name: str = INSTANCE_FIELD) -> np.ndarray | None:
    """The ids array ``name`` of the NPZ archive at ``path``, or None if absent."""
    ids = None
    with np.load(path, allow_pickle=False) as archive:
        if name in archive.files:
            try:
                ids = archive[name]
            except ValueError:
                raise InputError(f"{path}: '{name}' holds pickled Python objects; "
                                 "instance ids must be integers or strings") from None
    return checked_ids(path, name, ids)


def parquet_ids(path: str, files: list[str], name: str = INSTANCE_FIELD
                ) -> np.ndarray | None:
    """The ids column ``name`` of a Parquet file or dataset (``files`` in dump order),
    or None if absent."""
    from tieeval.io.arrow import dataset_with, to_numpy
    dataset = dataset_with(files, name)
    if dataset is None:
        return None
    column = dataset.to_table(columns=[name]).column(name)
    if column.null_count:
        i = int(np.flatnonzero(to_numpy(column.is_null()))[0])
        raise InputError(f"{path}: row {i}: instance id '{name}' is null")
    ids = to_numpy(column)
    if ids.dtype == object:
        try:
            ids = ids.astype(str)
        except (TypeError, ValueError):
            ids = np.empty(0, dtype=object)  # not strings either: refused below
        if ids.dtype.kind != "U":
            raise InputError(f"{path}: instance ids '{name}' must be integers or "
                             f"strings, got {column.type}")
    return checked_ids(path, name, ids)


def checked_ids(path: str, name: str, ids) -> np.ndarray | None:
    """``ids`` as one integer or string per row, or None."""
    if ids is None:
        return None
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise InputError(f"{path}: instance ids '{name}' must be 1-D (one per row), got "
                         f"shape {ids.shape}")
    if ids.dtype.kind not in "iuUS":
        raise InputError(f"{path}: instance ids '{name}' must be integers or strings, got "
                         f"{ids.dtype}")
    return ids


__all__ = ["INSTANCE_FIELD", "npz_ids", "parquet_ids", "checked_ids"]
