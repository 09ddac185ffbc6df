"""What the Spark engine's executors run, and how their answers come back in the local
engine's order.

Every task runs the local kernel on Arrow batches (``DataFrame.mapInArrow``, or an RDD of
the local reader's own batches for a TREC run) and answers with rows of
:data:`ANSWER_SCHEMA`: its accumulator's state, an input error, a request to run again
(a long label column found to hold relevance labels) and, when the request wants
per-instance outputs (``--per-instance``, ``--per-query``, ``diff``), one *piece* per run of
consecutive rows: the kernel's per-instance values (:meth:`Kernel.add_values`, the call
the local driver makes) with what the consumers need of the batch.

Totals are exact sums and merge in any order. Per-instance values must come back in the
order the local engine reads the rows, because ``diff``'s means and the per-instance file
follow it. Each piece carries a key ``(file, block, seq)`` that sorts it there:

* a wide dump: the file (``_metadata.file_path``), the file split a task reads whole and in
  order (``_metadata.file_block_start``) and the row's place in that split; a task cuts
  its Arrow batches where the file or split changes, so a piece's rows are consecutive;
* a long dump: the local reader gives instances by id (sorted rows stream, and a
  regrouped dump of one spill partition orders its instances by id) or, regrouped through
  several spill partitions, by (partition, id); Spark range-partitions the rows by the same
  key and the piece's key is (Spark partition, batch number);
* a TREC run: the local reader's batches, numbered.
"""

from __future__ import annotations

import itertools
import json
import pickle
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

import numpy as np

from tieeval.errors import TieevalError
from tieeval.io.base import RelevanceLabelsFound
from tieeval.kernels.base import Kernel
from tieeval.records.batch import Batch

ANSWER_SCHEMA = "kind string, file string, block long, seq long, data binary"
FILE_COLUMN = "__tieeval_file"  # the order columns selected beside a dump's own
BLOCK_COLUMN = "__tieeval_block"
SPILL_COLUMN = "__tieeval_spill"  # a long row's spill partition in the local reader


@dataclass(frozen=True)
class Wants:
    """What a task sends back: its totals (``totals``), per-instance pieces (``values``),
    and ``note(batch, kernel)`` of each piece (``diff``'s candidate keys)."""

    totals: bool = True
    values: bool = False
    note: Callable[[Batch, Kernel], Any] | None = None


@dataclass
class Piece:
    """Consecutive rows' per-instance values, and what a consumer's ``part`` reads of
    their batch (its row count, instance ids, single-positive counts, values, the note),
    so that the piece itself is the batch the consumers are given (:func:`feed`)."""

    rows: int
    ids: Any
    counts: Any
    values: list
    note: Any


def _answer(kind: str, data: bytes, file: str = "", block: int = 0, seq: int = 0):
    import pyarrow as pa
    return pa.RecordBatch.from_arrays(
        [pa.array([kind]), pa.array([file]), pa.array([block], pa.int64()),
         pa.array([seq], pa.int64()), pa.array([data], pa.binary())],
        names=["kind", "file", "block", "seq", "data"])


def answers(kernel: Kernel, wants: Wants, added):
    """One partition's answers: the kernel on each ``(batch, file, block, seq)`` of
    ``added`` into its accumulator and, when values are wanted, each batch's piece; then
    the totals (JSON, big integers as strings; an empty answer without totals). A
    reader's error, or its finding that the labels are relevance labels, is the last
    answer instead."""
    acc = kernel.new() if wants.totals else None
    try:
        for batch, file, block, seq in added:
            if not wants.values:  # the totals alone
                assert acc is not None
                kernel.add(acc, batch)
                continue
            counts, values = kernel.add_values(acc, batch)
            note = None if wants.note is None else wants.note(batch, kernel)
            piece = Piece(batch.rows, batch.ids, counts, values, note)
            yield _answer("piece", pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL),
                          file, block, seq)
    except TieevalError as exc:
        yield _answer("error", str(exc).encode())
        return
    except RelevanceLabelsFound as exc:  # graded, signed or multi-positive labels
        yield _answer("again", str(exc).encode())
        return
    yield (_answer("done", b"") if acc is None else
           _answer("state", json.dumps(acc.to_state()).encode()))


def partition_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _runs(change: np.ndarray):
    """``(lo, hi)`` of each run of rows, ``change[i]`` telling whether row ``i + 1``
    starts a new one."""
    cuts = [0, *(np.flatnonzero(change) + 1).tolist(), len(change) + 1]
    return zip(cuts[:-1], cuts[1:])


def runs_of(batches, ordered: bool):
    """``(file, block, seq, rows)`` of each run of rows from one file split in the
    records of ``batches``, the order columns dropped, ``seq`` the place of its first row
    in that split (each whole record a run of ``("", 0)`` when not ``ordered``)."""
    import pyarrow.compute as pc
    seen: dict = {}
    for record in batches:
        n = record.num_rows
        if n == 0:
            continue
        data, change = record, np.zeros(n - 1, dtype=bool)
        if ordered:
            files, blocks = record.column(FILE_COLUMN), record.column(BLOCK_COLUMN)
            change = pc.or_(pc.not_equal(files.slice(1), files.slice(0, n - 1)),
                            pc.not_equal(blocks.slice(1), blocks.slice(0, n - 1))
                            ).to_numpy(zero_copy_only=False)
            data = record.select([c for c in record.schema.names
                                  if c not in (FILE_COLUMN, BLOCK_COLUMN)])
        for lo, hi in _runs(change):
            key = (files[lo].as_py(), int(blocks[lo].as_py())) if ordered else ("", 0)
            seq = seen.get(key, 0)
            seen[key] = seq + hi - lo
            yield *key, seq, data.slice(lo, hi - lo)


def wide_task(path, options, has_positive, fields, kernel, wants: Wants, ordered: bool):
    """A wide dump's partition: each Arrow batch (each run of one file split in it) made
    into the local reader's :class:`Batch`; ``fields``: ``{kind: column}`` of the relevance
    fields to attach (may be empty); ``ordered``: the order columns are selected."""
    from tieeval.io.parquet import parquet_batch
    from tieeval.io.relevance import fill_from_arrow

    def run(batches):
        where = f"{path} (Spark partition {partition_id()})"

        def added():
            start = 0
            for file, block, seq, rows in runs_of(batches, ordered):
                batch = parquet_batch(where, options, rows, has_positive, start)
                if fields:
                    fill_from_arrow(where, batch, fields, rows)
                yield batch, file, block, seq
                start += rows.num_rows
        return answers(type(kernel)(kernel.spec.at(where)), wants, added())
    return run


def long_task(path, options, has_label, kernel, batch_rows, relevance, wants: Wants,
              spilled: bool = False):
    """A long dump's partition, its rows sorted by (instance, position) (``spilled``: by
    (local spill partition, instance, position)), grouped per instance by the local
    reader's streaming code. ``relevance``: the label column holds relevance labels (else
    one positive per instance, until an instance says otherwise)."""
    from tieeval.io.long import _rows_from, sorted_batches

    def run(batches):
        cols = {key: key for key in ("instance", "position", "score", "label")}
        block = partition_id()
        seq = itertools.count()

        def added():
            for records in _spill_groups(batches, spilled):
                chunks = (_rows_from(path, record, cols, has_label, 0) for record in records)
                for batch in sorted_batches(path, chunks, options, batch_rows, relevance):
                    yield batch, "", block, next(seq)
        return answers(kernel, wants, added())
    return run


def _spill_groups(batches, spilled: bool):
    """The records of one partition as groups that each stream sorted by instance: all
    of them, or one group per local spill partition (rows sorted by it first)."""
    records = (r for r in batches if r.num_rows)
    if not spilled:
        yield records
        return

    def runs():
        for record in records:
            spill = record.column(SPILL_COLUMN).to_numpy(zero_copy_only=False)
            for lo, hi in _runs(spill[1:] != spill[:-1]):
                yield int(spill[lo]), record.slice(lo, hi - lo)
    for _, group in itertools.groupby(runs(), key=lambda run: run[0]):
        yield (rows for _, rows in group)


def spill_task(source_column: str, parts: int):
    """Each long row's spill partition in the local reader (:func:`tieeval.io.long.spill`),
    as a column beside the row."""
    def run(batches):
        import pyarrow as pa

        from tieeval.io.long import _partition_of
        for record in batches:
            ids = record.column(source_column)
            if pa.types.is_dictionary(ids.type):
                ids = ids.dictionary_decode()
            where = _partition_of(ids, parts) if record.num_rows else np.zeros(0, np.int64)
            yield pa.RecordBatch.from_arrays(
                [*record.columns, pa.array(where, pa.int64())],
                names=[*record.schema.names, SPILL_COLUMN])
    return run


def batches_task(kernel, wants: Wants):
    """A TREC run's partition: ``(number, Batch)`` pairs of the local reader."""
    def run(numbered):
        return answers(kernel, wants, ((batch, "", 0, n) for n, batch in numbered))
    return run


def sortedness_task(instance: str):
    """Per run of one file split's rows: its key, first and last instance ids, and
    whether it is sorted by instance (the local reader's test), to tell on the driver
    whether the dump streams sorted or is regrouped."""
    def run(batches):
        from tieeval.io.long import _is_sorted  # the local reader's test
        for file, block, seq, rows in runs_of(batches, True):
            ids = rows.column(instance)
            ends = (ids[0].as_py(), ids[len(ids) - 1].as_py(), _is_sorted(ids))
            yield _answer("run", pickle.dumps(ends), file, block, seq)
    return run


# ---------------------------------------------------------------------------------------
# on the driver

def file_order(uri: str) -> str:
    """A file's place in the local engine's order (sorted paths): its path, decoded."""
    if uri.startswith("file:"):
        uri = uri[len("file:"):]
        while uri.startswith("//"):
            uri = uri[1:]
    return unquote(uri)


@dataclass
class Answers:
    """A job's answers, sorted: the partitions' states, pieces in the local order, and
    the first error or request to run again."""

    states: list
    pieces: list
    error: str | None = None
    again: str | None = None


def gather(rows) -> Answers:
    """The collected answer rows of one job, sorted (its totals merge on the driver:
    :func:`tieeval.engine.spark._finish`)."""
    states, pieces, first = [], [], dict[str, str]()
    for row in rows:  # Rows of a DataFrame, or dicts
        kind, data = row["kind"], row["data"]
        if kind == "state":
            states.append(json.loads(data))
        elif kind == "piece":
            pieces.append(((file_order(row["file"]), row["block"], row["seq"]), data))
        elif kind in ("error", "again"):  # the first of each
            first.setdefault(kind, bytes(data).decode())
    pieces.sort(key=lambda p: p[0])
    return Answers(states, [pickle.loads(data) for _, data in pieces], first.get("error"),
                   first.get("again"))


def feed(consumers, kernel: Kernel, dump, pieces: list) -> None:
    """The consumers' pass over the pieces, in order, as the local driver feeds them (a
    consumer's note was made by the executors, beside the values: see :func:`wants_of`)."""
    for consumer in consumers:
        consumer.start(kernel, dump)
        if getattr(consumer, "note", None) is not None:
            consumer.note = lambda piece, kernel: piece.note
    for piece in pieces:
        for consumer in consumers:
            consumer.take(consumer.part(piece, piece.counts, piece.values))


def wants_of(consumers, totals: bool = True) -> Wants:
    """What the tasks send back for these consumers (at most one note: ``diff``'s)."""
    notes = [c.note for c in consumers if getattr(c, "note", None) is not None]
    return Wants(totals=totals, values=bool(consumers), note=notes[0] if notes else None)
