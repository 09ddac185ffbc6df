"""Relevance labels from a separate ``.npy`` file (``--labels FILE.npy``,
``RelevanceReadOptions(labels_file=...)``).

A score matrix saved on its own (``np.save("scores.npy", scores)``) has nowhere to keep
its labels; the labels saved beside it (``np.save("labels.npy", labels)``) are then given
by path. The file holds one label per candidate, an ``(instances, candidates)`` array
aligned with the scores' rows and columns, as a dump's own ``labels`` field
(:mod:`tieeval.io.relevance`): ``label > 0`` relevant with that gain, ``0`` unobserved,
``< 0`` an explicit negative; integers, floats or booleans, finite. Its rows are read by
positioned reads beside each batch of scores (any range on its own, in any thread or
worker process), never loaded whole.

Checked when the dump is opened: the file is a plain ``.npy`` array (never unpickled) of
that dtype, 2-D, with as many rows as the dump; the dump is in the wide layout and gives
no relevance of its own (a ``labels`` / ``positives`` / ``negatives`` field, a single
``positive`` field or ``--positive-index``). Each batch checks its rows' candidate count
and that its labels are finite.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Collection

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import Dump, RelevanceInfo, filled, not_found, require_regular_file
from tieeval.records.batch import Batch

OPTION = "--labels"


def open_labels(path: str):
    """The :class:`~tieeval.io.npy.ArraySpec` of the labels file at ``path``, checked: a
    plain 2-D ``.npy`` array of numbers or booleans that fills the file."""
    from tieeval.io.npy import check_fills_file, read_npy_header
    path = os.fspath(path)
    if not os.path.exists(path):
        raise not_found(path)
    require_regular_file(path)
    try:
        spec = read_npy_header(path, "the labels", f"{OPTION} takes a single .npy array "
                               "(np.save), not an .npz archive")
        if spec.dtype.kind not in "biuf":
            raise InputError(f"{path}: {OPTION} needs labels that are numbers or booleans, "
                             f"got {spec.dtype}")
        if len(spec.shape) != 2:
            raise InputError(f"{path}: {OPTION} needs a 2-D (instances, candidates) array, "
                             f"one label per score, got shape {spec.shape}")
        check_fills_file(path, spec)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return spec


def with_labels_file(dump: Dump, labels: str, options, stored: Collection[str]) -> Dump:
    """``dump`` whose batches carry the labels of the ``.npy`` file ``labels``; ``stored``:
    the fields the dump stores beside its scores."""
    spec = open_labels(labels)
    if dump.layout != "wide":
        raise InputError(f"{dump.path}: {OPTION} applies to wide dumps (a row of scores per "
                         "instance); a long-layout dump has its labels in its label column")
    own = getattr(dump, "relevance", None) or RelevanceInfo(None)
    if own.source is not None:
        name = next((f for f in own.fields if f != "items"), own.source)
        raise InputError(f"{dump.path}: has its own relevance field '{name}'; give "
                         f"relevance one way (drop {OPTION} or the field)")
    if options.positive_index is not None:
        raise InputError(f"{dump.path}: --positive-index does not apply with {OPTION} (the "
                         "labels say which candidates are relevant)")
    if options.positive in stored:
        raise InputError(f"{dump.path}: has a single-positive field '{options.positive}'; "
                         f"give relevance one way (drop {OPTION} or the field)")
    rows = int(spec.shape[0])
    if dump.rows is not None and dump.rows != rows:
        raise InputError(f"{labels}: {rows} rows of labels, but {dump.path} has "
                         f"{dump.rows} instances (the labels align with the scores' rows)")
    info = RelevanceInfo("labels", items=own.items, original=own.original,
                         fields=(*own.fields, labels))
    nbytes = dump.nbytes + os.path.getsize(labels)
    return filled(dump, info, LabelsFile(labels, spec, dump.path).fill, nbytes=nbytes)


@dataclass(frozen=True)
class LabelsFile:
    """The labels file of a dump: its rows read beside each batch of scores."""

    path: str
    spec: Any  # tieeval.io.npy.ArraySpec
    dump: str  # the dump's path, for messages

    def fill(self, batch: Batch) -> Batch:
        """``batch`` with ``labels`` set from the same rows of the file, checked."""
        lo, hi = batch.start, batch.start + batch.rows
        rows, cols = (int(n) for n in self.spec.shape)
        if hi > rows:
            raise InputError(f"{self.path}: {rows} rows of labels, but {self.dump} has more "
                             "instances (the labels align with the scores' rows)")
        lengths = batch.lengths()
        bad = np.flatnonzero(lengths != cols)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{self.path}: {cols} labels per row, but {self.dump} row "
                             f"{lo + i} has {int(lengths[i])} candidates (the labels align "
                             "with the scores' columns)")
        with self.spec.reader() as reader:
            values = reader.rows(lo, hi)
        if values.dtype.kind == "f":
            finite = np.isfinite(values)
            if not finite.all():
                flat = int(np.flatnonzero(~finite.reshape(-1))[0])
                raise InputError(f"{self.path}: row {lo + flat // max(1, cols)}: label "
                                 f"{values.reshape(-1)[flat]} (labels must be finite)")
        batch.labels = values if batch.offsets is None else values.reshape(-1)
        return batch
