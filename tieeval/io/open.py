"""``open_dump``: the one entry from a path to a :class:`~tieeval.io.base.Dump`.

It asks the registry of readers (:mod:`tieeval.io.readers`) which reader the path needs
(by an option such as ``qrels``, by a folder, a suffix or magic bytes), checks the layout
options against what that reader reads, and lets :mod:`tieeval.io.relevance` attach the
relevance fields a wide dump carries next to its scores. Only the chosen reader is imported.
"""

from __future__ import annotations

import os

from tieeval.errors import InputError, ParameterError
from tieeval.io import readers
from tieeval.io.base import (
    SCORE_DTYPES,
    Dump,
    ReadOptions,
    check_layout,
    not_found,
    require_regular_file,
)
from tieeval.io.readers.parquet import dataset_files  # noqa: F401 - its callers' name


def open_dump(path: str, options: ReadOptions | None = None) -> Dump:
    """Open ``path``: a score dump with whatever relevance fields it carries (``labels``,
    ``positives``/``negatives``, ``items``), or a TREC run read with ``options.qrels``.

    ``path`` is a file, or a directory holding a Parquet dataset (its ``*.parquet`` files,
    recursively, in path order; names starting with ``_`` or ``.`` are skipped as Spark and
    Hadoop write them). Rows are read lazily by :meth:`Dump.batches`.
    """
    options = options or ReadOptions()
    chosen = readers.chosen_by(options)
    if chosen is not None:
        if getattr(options, "labels_file", None) is not None:
            raise ParameterError("--labels does not apply to TREC runs (the qrels give "
                                 "their relevance)")
        return chosen.open(os.fspath(path), options)
    from tieeval.io.relevance import with_relevance
    check_layout(options.layout)
    if options.score_dtype is not None and options.score_dtype not in SCORE_DTYPES:
        raise ParameterError(f"score_dtype must be one of {', '.join(SCORE_DTYPES)}, got "
                             f"{options.score_dtype!r}")
    path = os.fspath(path)
    if os.path.isdir(path):
        # a folder is a dataset of files, as Spark writes them
        return with_relevance(next(r for r in readers.readers() if r.folder).open(
            path, options), options)
    if not os.path.exists(path):
        raise not_found(path)
    require_regular_file(path)
    reader = readers.detect(path)
    if os.path.getsize(path) == 0:
        raise InputError(f"{path}: empty file")
    # a layout, or a long-layout option, that the reader cannot read
    if options.layout != "auto" and options.layout not in reader.layouts:
        if reader.layouts == ("long",):
            raise InputError(f"{path}: {reader.title} dumps are read in the long layout only "
                             "(one row per instance and candidate); drop --layout wide")
        raise InputError(f"{path}: the long layout is read from "
                         f"{readers.titles(readers.with_layout('long'))}, not .{reader.name}")
    given = options.long_options_given
    if given and "long" not in reader.layouts:
        raise ParameterError(f"{', '.join(given)} only apply to long-layout "
                             f"{readers.titles(readers.with_layout('long'))} dumps")
    return with_relevance(reader.open(path, options), options)
