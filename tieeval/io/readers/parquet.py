"""Parquet, a file or a folder of files (a dataset as Spark writes it), wide
(:mod:`tieeval.io.parquet`: a list column of scores) or long (:mod:`tieeval.io.long`: a row
per instance and candidate), as its schema and ``--layout`` say."""

from __future__ import annotations

import os

from tieeval.errors import InputError
from tieeval.io.base import require_regular_file
from tieeval.io.readers import Reader

_SUFFIXES = (".parquet", ".pq")


def open_parquet(path, options):
    files = dataset_files(path) if os.path.isdir(path) else [path]
    if not files:
        raise InputError(f"{path}: is a directory with no Parquet files "
                         f"({', '.join('*' + s for s in _SUFFIXES)})")
    from tieeval.io.arrow import damaged_metadata, open_parquet_files
    from tieeval.io.validate import table_layout
    opened = open_parquet_files(files)
    with damaged_metadata(path if len(files) == 1 else files[0]):
        if table_layout(options, opened[0][2].names) == "long":
            from tieeval.io.long import open_long_parquet
            return open_long_parquet(path, opened, options)
        from tieeval.io.parquet import open_wide_parquet
        return open_wide_parquet(path, opened, options)


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
            if name.lower().endswith(_SUFFIXES):
                # a FIFO (or socket, device) named like a Parquet file would block the
                # reader forever: refused by name, never opened
                require_regular_file(os.path.join(root, name))
                found.append(os.path.join(root, name))
    return sorted(found)


READER = Reader("parquet", "Parquet", open_parquet, suffixes=_SUFFIXES, magic=(b"PAR1",),
                layouts=("wide", "long"), folder=True,
                carries=frozenset({"positive", "labels", "items", "ranking", "ids", "metadata"}),
                order=2)
