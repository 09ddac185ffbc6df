"""``open_dump``: the one entry from a path to a :class:`~tieeval.io.base.Dump`.

It picks the reader by format (NPY, NPZ, Parquet file or dataset directory, long-layout CSV
or Parquet, TREC run with ``qrels``) and lets :mod:`tieeval.io.relevance` attach the
relevance fields a wide dump carries next to its scores.
"""

from __future__ import annotations

import os

from tieeval.errors import InputError, ParameterError
from tieeval.io.arrow import damaged_metadata, open_parquet_files
from tieeval.io.base import (
    SCORE_DTYPES,
    Dump,
    ReadOptions,
    check_layout,
    detect_format,
    not_found,
    require_regular_file,
)
from tieeval.io.npy import _open_npy
from tieeval.io.npz import _open_npz
from tieeval.io.validate import table_layout


def open_dump(path: str, options: ReadOptions | None = None) -> Dump:
    """Open ``path``: a score dump with whatever relevance fields it carries (``labels``,
    ``positives``/``negatives``, ``items``), or a TREC run read with ``options.qrels``."""
    from tieeval.io.relevance import open_with_relevance
    return open_with_relevance(_open_scores, path, options)


def _open_scores(path: str, options: ReadOptions | None = None) -> Dump:
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
        raise not_found(path)
    require_regular_file(path)
    fmt = detect_format(path)
    if os.path.getsize(path) == 0:
        raise InputError(f"{path}: empty file")
    if fmt == "csv":
        if options.layout == "wide":
            raise InputError(f"{path}: CSV dumps are read in the long layout only (one row "
                             "per instance and candidate); drop --layout wide")
        from tieeval.io.long import open_long_csv
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

    def unreadable(exc: OSError):
        # os.walk skips a folder it cannot list; its files would be silently left out
        where = exc.filename or directory
        raise InputError(f"{where}: cannot read the dataset folder: {exc.strerror or exc}")

    for root, dirs, files in os.walk(directory, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in files:
            if name.startswith((".", "_")):
                continue
            if name.lower().endswith((".parquet", ".pq")):
                # a FIFO (or socket, device) named like a Parquet file would block the
                # reader forever: refused by name, never opened
                require_regular_file(os.path.join(root, name))
                found.append(os.path.join(root, name))
    return sorted(found)


def _open_parquet(path: str, files: list[str], options: ReadOptions) -> Dump:
    """A Parquet file or dataset, wide (a list column of scores) or long (one row per
    instance and candidate), as its schema and ``options.layout`` say."""
    opened = open_parquet_files(files)
    with damaged_metadata(path if len(files) == 1 else files[0]):
        if table_layout(options, opened[0][2].names) == "long":
            from tieeval.io.long import open_long_parquet
            return open_long_parquet(path, opened, options)
        from tieeval.io.parquet import open_wide_parquet  # not loaded for NPY / NPZ dumps
        return open_wide_parquet(path, opened, options)
