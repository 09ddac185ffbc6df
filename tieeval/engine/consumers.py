"""What one pass over a dump feeds besides the totals: per-instance consumers.

The driver (:func:`tieeval.engine.local.drive`) reads each batch once, adds it to the
totals and, when a consumer wants them, computes the batch's per-instance values with the
same kernel (:meth:`~tieeval.kernels.base.Kernel.add_values`). Each consumer then makes a
*part* of the batch (on the batch's thread: it may run beside other batches) and *takes*
the parts in batch order (in the driver's thread), as the totals merge their per-batch
accumulators. A pass that starts over (:class:`~tieeval.io.base.ReadAgain`) starts every
consumer over too.

* :class:`InstanceRows` streams one Parquet row per instance to a file (``--per-instance``);
* :class:`InstanceCollector` keeps every instance's values in memory (``--per-query``,
  ``diff``), with whatever a caller wants to note per batch beside them (``diff``'s
  candidate keys).

A streamed TREC run gives its queries in the run's order, not the dump's (query ids
sorted as trec_eval sorts them): both consumers put the instances back in the dump's order
when the pass is complete (:meth:`~tieeval.io.base.Dump.instance_order`; per-query rows
are small), and a collector that notes something per batch asks the dump for batches in
its order instead (:meth:`~tieeval.io.base.Dump.keep_order`).

A new consumer is a :class:`Consumer`, asked for by an :class:`EvalOptions` field
(:mod:`tieeval.engine.request`) and made by :func:`tieeval.engine.local.evaluate_request`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tieeval.errors import InputError
from tieeval.io.arrow import from_numpy
from tieeval.io.base import Dump
from tieeval.kernels.base import Entry, Kernel
from tieeval.records.batch import Batch
from tieeval.records.values import InstanceValues

__all__ = ["Consumer", "InstanceRows", "InstanceCollector", "Collected",
           "PER_INSTANCE_COLUMNS", "per_instance_name", "take_instances"]

PER_INSTANCE_COLUMNS = ("original", "first", "last", "tie_aware")


@contextmanager
def finishing(consumers):
    """Finish every consumer when the block (the pass that fed them) succeeds; abort every
    one, so that no partial output is left, when the block or a finish fails. Both engines
    end their consumers here."""
    try:
        yield
        for consumer in consumers:
            consumer.finish()
    except BaseException:
        for consumer in consumers:
            consumer.abort()
        raise


def per_instance_name(entry: Entry, column: str) -> str:
    """``NDCG@10_tie_aware``; a signed metric's gamma as ``SNDCG@10_g0.5_tie_aware``."""
    label = str(entry.metric) if entry.gamma is None else f"{entry.metric}_g{entry.gamma:g}"
    return f"{label}_{column}"


class Consumer:
    """A consumer's interface: each method says when a pass calls it."""

    def start(self, kernel: Kernel, dump: Dump) -> None:
        """A pass begins (again, when the reader started over)."""

    def part(self, batch: Batch, counts, values: list[InstanceValues]) -> Any:
        """What this consumer keeps of one batch, on the batch's thread; ``counts``: the
        single-positive kernel's row counts, else None."""
        return None

    def take(self, part: Any) -> None:
        """A batch's part, in batch order."""

    def finish(self) -> None:
        """The pass is complete."""

    def abort(self) -> None:
        """The pass failed: leave nothing half-done behind."""


class InstanceRows(Consumer):
    """One Parquet row per instance, streamed to ``out`` through the output sink (see
    :func:`tieeval.engine.local.per_instance`); ``rows`` counts the rows written."""

    def __init__(self, out: str, ids=None, inputs=()):
        self.out = os.fspath(out)
        ids = None if ids is None else np.asarray(ids)
        self.ids = ids.astype(str) if ids is not None and ids.dtype == object else ids
        self.inputs = list(inputs)
        self.rows = 0
        self._pending: Any = None
        self._writer: Any = None

    def start(self, kernel: Kernel, dump: Dump) -> None:
        from tieeval.io.arrow import _pyarrow
        from tieeval.sink import open_output
        self.abort()  # a pass that started over writes a new file
        self._pa, self._pq = _pyarrow()
        self._kernel, self._path, self._dump = kernel, dump.path, dump
        # batches that may come out of the dump's order (a streamed TREC run, one row a
        # query) are held and written in its order at the end
        self._held: list | None = [] if _may_reorder(dump) else None
        self._pending = open_output(self.out, inputs=[dump.path, *self.inputs],
                                    what="the per-instance file")
        self.rows = 0

    def part(self, batch: Batch, counts, values: list[InstanceValues]):
        pa = self._pa
        # the reader's ids (long layout, TREC query ids); else set by take(), which
        # counts the rows in dump order
        given = batch.ids is not None
        inst = np.asarray(batch.ids) if given else np.zeros(batch.rows, dtype=np.int64)
        columns = {"instance": pa.array(inst.astype(str) if inst.dtype == object else inst)}
        if counts is not None:
            columns.update(a=pa.array(counts.a), b=pa.array(counts.b),
                           original_rank=pa.array(counts.original))
        for entry, v in zip(self._kernel.entries, values):
            mask = None if v.defined is None else ~np.asarray(v.defined)
            for column in PER_INSTANCE_COLUMNS:
                data = np.asarray(getattr(v, column), dtype=np.float64)
                columns[per_instance_name(entry, column)] = pa.array(data, mask=mask)
        return pa.table(columns), batch.rows, given

    def take(self, part) -> None:
        table, rows, given = part
        if not given:  # the dump rows' ids (counted over the whole dump, every file of a
            # dataset; a batch's ``start`` counts within its file), else their numbers
            first, ids = self.rows, self.ids
            if ids is not None and first + rows > ids.size:
                raise InputError(f"{self._path}: {ids.size} instance id(s) for more rows")
            inst = (np.arange(first, first + rows, dtype=np.int64) if ids is None else
                    ids[first:first + rows])
            table = table.set_column(0, "instance", self._pa.array(inst))
        self.rows += rows
        if self._held is not None:
            self._held.append(table)
        else:
            self._write(table)

    def _write(self, table) -> None:
        if self._writer is None:
            self._writer = self._pq.ParquetWriter(self._pending.file, table.schema)
        self._writer.write_table(table)

    def finish(self) -> None:
        held, self._held = self._held, None
        if held:
            table = self._pa.concat_tables(held)
            del held
            order = _instance_order(self._dump)
            self._write(table if order is None else table.take(from_numpy(order)))
        if self._writer is None:
            raise InputError(f"{self._path}: no instances (empty dump)")
        self._writer.close()
        self._writer = None
        pending, self._pending = self._pending, None
        pending.commit()

    def abort(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()  # the footer of a file about to be removed
            except Exception:
                pass
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.discard()


@dataclass
class Collected:
    """Every instance's values of one pass: one :class:`InstanceValues` per kernel entry
    (concatenated over batches), the instance ids the reader attached to its batches (the
    long layout and TREC runs; else None), and what ``note`` kept of each batch."""

    kernel: Kernel
    values: list[InstanceValues]
    ids: np.ndarray | None
    notes: list = field(default_factory=list)


class InstanceCollector(Consumer):
    """Every instance's values, kept in memory; ``note(batch, kernel)`` (optional) keeps
    something more of each batch, computed on the batch's thread."""

    def __init__(self, note: Callable[[Batch, Kernel], Any] | None = None):
        self.note = note
        self.collected: Collected | None = None

    def start(self, kernel: Kernel, dump: Dump) -> None:
        self._kernel, self._path, self._dump = kernel, dump.path, dump
        if self.note is not None and _may_reorder(dump):
            dump.keep_order()  # the notes are per batch: they need the dump's order
        self._parts: list = []  # (values, ids, note) of each batch

    def part(self, batch: Batch, counts, values: list[InstanceValues]):
        note = None if self.note is None else self.note(batch, self._kernel)
        return values, batch.ids, note

    def take(self, part) -> None:
        self._parts.append(part)

    def finish(self) -> None:
        if not self._parts:
            raise InputError(f"{self._path}: no instances (empty dump)")
        parts, given, notes = (list(column) for column in zip(*self._parts))
        entries = len(self._kernel.entries)
        values = [_concat([p[i] for p in parts]) for i in range(entries)]
        ids = None
        if all(i is not None for i in given):
            ids = np.concatenate([np.asarray(i) for i in given])
            if ids.dtype == object:
                ids = ids.astype(str)
        order = _instance_order(self._dump)
        if order is not None:  # instances in the dump's order (a streamed TREC run)
            values = [take_instances(v, order) for v in values]
            ids = None if ids is None else ids[order]
        self.collected = Collected(self._kernel, values, ids, notes)


def _may_reorder(dump) -> bool:
    """Whether ``dump``'s batches may come out of its order (see
    :meth:`~tieeval.io.base.Dump.instance_order`)."""
    return getattr(dump, "_order", None) is not None


def _instance_order(dump) -> np.ndarray | None:
    order = getattr(dump, "instance_order", None)
    return None if order is None else order()


# the fields of InstanceValues that the consumers keep and reorder
_KEPT = ("original", "first", "last", "tie_aware", "variance", "tie_decided", "defined")


def take_instances(values: InstanceValues, order: np.ndarray) -> InstanceValues:
    """``values`` with its instances in ``order`` (the fields :func:`_concat` keeps)."""
    def at(name):
        x = getattr(values, name)
        return None if x is None else np.asarray(x)[order]
    return InstanceValues(*(at(name) for name in _KEPT))


def _concat(values: list[InstanceValues]) -> InstanceValues:
    def cat(name):
        got = [getattr(v, name) for v in values]
        return None if any(g is None for g in got) else np.concatenate(got)
    return InstanceValues(*(cat(name) for name in _KEPT))
