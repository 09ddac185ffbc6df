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

from tieeval.errors import InputError, TieevalError
from tieeval.io.base import RelevanceLabelsFound
from tieeval.kernels.accumulator import Accumulator
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
    """Consecutive rows' per-instance values: what a consumer's ``part`` reads of a batch
    (its row count, instance ids, single-positive counts, values, and the note)."""

    rows: int
    ids: Any
    counts: Any
    values: list
    note: Any
    nbytes: int


def _answer(kind: str, data: bytes, file: str = "", block: int = 0, seq: int = 0):
    import pyarrow as pa
    return pa.RecordBatch.from_arrays(
        [pa.array([kind]), pa.array([file]), pa.array([block], pa.int64()),
         pa.array([seq], pa.int64()), pa.array([data], pa.binary())],
        names=["kind", "file", "block", "seq", "data"])


def state_answer(acc: Accumulator | None):
    """The partition's totals (JSON, big integers as strings), or an empty answer."""
    if acc is None:
        return _answer("done", b"")
    return _answer("state", json.dumps(acc.to_state()).encode())


def error_answer(exc: TieevalError):
    return _answer("error", str(exc).encode())


def again_answer(exc: RelevanceLabelsFound):
    return _answer("again", str(exc).encode())


class Task:
    """One partition's work: the kernel on each batch, into its accumulator and pieces."""

    def __init__(self, kernel: Kernel, wants: Wants):
        self.kernel, self.wants = kernel, wants
        self.acc = kernel.new() if wants.totals else None

    def add(self, batch: Batch, file: str = "", block: int = 0, seq: int = 0):
        """The batch into the totals; its piece's answer when values are wanted, else
        None."""
        if not self.wants.values:
            assert self.acc is not None
            self.kernel.add(self.acc, batch)
            return None
        counts, values = self.kernel.add_values(self.acc, batch)
        note = None if self.wants.note is None else self.wants.note(batch, self.kernel)
        piece = Piece(batch.rows, batch.ids, counts, values, note, batch.nbytes)
        return _answer("piece", pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL),
                       file, block, seq)

    def done(self):
        return state_answer(self.acc)

    def answers(self, added):
        """The answers of a partition: the piece of each ``(batch, file, block, seq)`` of
        ``added`` (when values are wanted), then the totals; a reader's error, or its
        finding that the labels are relevance labels, as the last answer instead."""
        try:
            for batch, file, block, seq in added:
                piece = self.add(batch, file, block, seq)
                if piece is not None:
                    yield piece
        except TieevalError as exc:
            yield error_answer(exc)
            return
        except RelevanceLabelsFound as exc:  # graded, signed or multi-positive labels
            yield again_answer(exc)
            return
        yield self.done()


def partition_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def runs_of(record, ordered: bool):
    """``(file, block, rows)`` of each run of ``record``'s rows from one file split, the
    order columns dropped (the whole record when not ``ordered``)."""
    if not ordered:
        yield "", 0, record
        return
    import pyarrow.compute as pc
    names = [n for n in record.schema.names if n not in (FILE_COLUMN, BLOCK_COLUMN)]
    files, blocks = record.column(FILE_COLUMN), record.column(BLOCK_COLUMN)
    n = record.num_rows
    cuts = [0]
    if n > 1:
        change = pc.or_(pc.not_equal(files.slice(1), files.slice(0, n - 1)),
                        pc.not_equal(blocks.slice(1), blocks.slice(0, n - 1)))
        cuts += (np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1).tolist()
    cuts.append(n)
    data = record.select(names)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        yield files[lo].as_py(), int(blocks[lo].as_py()), data.slice(lo, hi - lo)


def wide_task(path, options, has_positive, fields, kernel, wants: Wants, ordered: bool):
    """A wide dump's partition: each Arrow batch (each run of one file split in it) made
    into the local reader's :class:`Batch`; ``fields``: ``{kind: column}`` of the relevance
    fields to attach (may be empty); ``ordered``: the order columns are selected."""
    from tieeval.io.parquet import parquet_batch
    from tieeval.io.relevance import fill_from_arrow

    def run(batches):
        where = f"{path} (Spark partition {partition_id()})"
        task = Task(type(kernel)(kernel.spec.at(where)), wants)

        def added():
            start = 0
            seen: dict = {}
            for record in batches:
                if record.num_rows == 0:
                    continue
                for file, block, rows in runs_of(record, ordered):
                    batch = parquet_batch(where, options, rows, has_positive, start)
                    if fields:
                        fill_from_arrow(where, batch, fields, rows)
                    seq = seen.get((file, block), 0)
                    seen[(file, block)] = seq + rows.num_rows
                    yield batch, file, block, seq
                    start += rows.num_rows
        return task.answers(added())
    return run


def long_task(path, options, has_label, kernel, batch_rows, relevance, wants: Wants,
              spilled: bool = False):
    """A long dump's partition, its rows sorted by (instance, position) (``spilled``: by
    (local spill partition, instance, position)), grouped per instance by the local
    reader's streaming code. ``relevance``: the label column holds relevance labels (else
    one positive per instance, until an instance says otherwise)."""
    from tieeval.io.long import _rows_from, sorted_batches

    def run(batches):
        cols = {"instance": "instance", "position": "position", "score": "score",
                "label": "label"}
        block = partition_id()
        seq = itertools.count()

        def added():
            for records in _spill_groups(batches, spilled):
                chunks = (_rows_from(path, record, cols, has_label, 0) for record in records)
                for batch in sorted_batches(path, chunks, options, batch_rows, relevance):
                    yield batch, "", block, next(seq)
        return Task(kernel, wants).answers(added())
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
            cuts = [0, *(np.flatnonzero(spill[1:] != spill[:-1]) + 1).tolist(), len(spill)]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
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
        return Task(kernel, wants).answers((batch, "", 0, n) for n, batch in numbered)
    return run


def sortedness_task(instance: str):
    """Per run of one file split's rows: its key, first and last instance ids, and
    whether it is sorted by instance (the local reader's test), to tell on the driver
    whether the dump streams sorted or is regrouped."""
    def run(batches):
        from tieeval.io.long import _is_sorted  # the local reader's test
        seen: dict = {}
        for record in batches:
            if record.num_rows == 0:
                continue
            for file, block, rows in runs_of(record, True):
                ids = rows.column(instance)
                seq = seen.get((file, block), 0)
                seen[(file, block)] = seq + rows.num_rows
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
    """The collected answer rows of one job."""
    states, pieces = [], []
    error = again = None
    for row in rows:
        if row.kind == "state":
            states.append(json.loads(row.data))
        elif row.kind == "piece":
            pieces.append(((file_order(row.file), row.block, row.seq), row.data))
        elif row.kind == "error" and error is None:
            error = bytes(row.data).decode()
        elif row.kind == "again" and again is None:
            again = bytes(row.data).decode()
    pieces.sort(key=lambda p: p[0])
    return Answers(states, [pickle.loads(data) for _, data in pieces], error, again)


def merged(kernel: Kernel, answers: Answers) -> Accumulator:
    """The exact totals of every partition."""
    if answers.error is not None:
        raise InputError(answers.error)
    total = kernel.new()
    for state in answers.states:
        total.merge(Accumulator.from_state(state))
    return total


def sorted_runs(rows) -> bool:
    """Whether the runs of :func:`sortedness_task` read in file order are sorted by
    instance, as the local reader streams them."""
    runs = sorted(((file_order(r.file), r.block, r.seq), pickle.loads(r.data)) for r in rows)
    last = None
    for _, (first, final, inside) in runs:
        if not inside or (last is not None and first < last):
            return False
        last = final
    return True


class PieceBatch:
    """A piece dressed as the batch a consumer's ``part`` reads: rows, ids, the dump row
    of its first row (``start``), its note."""

    def __init__(self, piece: Piece, start: int):
        self.rows, self.ids, self.start = piece.rows, piece.ids, start
        self.nbytes, self.note = piece.nbytes, piece.note


def piece_note(batch: PieceBatch, kernel: Kernel) -> Any:
    """A consumer's note of a piece: made on the executor, beside its values."""
    return batch.note


def feed(consumers, kernel: Kernel, dump, pieces: list) -> None:
    """The consumers' pass over the pieces, in order, as the local driver feeds them (a
    consumer's note was made by the executors: see :func:`wants_of`)."""
    for consumer in consumers:
        consumer.start(kernel, dump)
        if getattr(consumer, "note", None) is not None:
            consumer.note = piece_note
    start = 0
    for piece in pieces:
        batch = PieceBatch(piece, start)
        for consumer in consumers:
            consumer.take(consumer.part(batch, piece.counts, piece.values))
        start += piece.rows


def wants_of(consumers, totals: bool = True) -> Wants:
    """What the tasks send back for these consumers (at most one note: ``diff``'s)."""
    notes = [c.note for c in consumers if getattr(c, "note", None) is not None]
    return Wants(totals=totals, values=bool(consumers), note=notes[0] if notes else None)
