"""A TREC run read query by query: memory bounded by a chunk of the file and a batch.

Every TREC run a tool writes holds each query's lines together. Such a run is read in
chunks of about :data:`CHUNK_BYTES` (cut after a line end, parsed by pyarrow's CSV parser
in a background thread while the previous chunk's queries are evaluated); a query is
evaluated as soon as its last line has been read, the partly read last query of a chunk
carried over to the next. What stays for the whole run is what the output needs: the
query ids seen, the qrels (parsed once, up front) and, in the engine, the per-query values
and the exact sums of the means.

Batches come in the run's query order; the dump's own order -- the query ids sorted as
trec_eval sorts them, the order of every per-query output -- is restored by the consumers
from :meth:`TrecSource.instance_order` (the per-query rows are small). The exact sums do
not depend on the order.

The whole-run reader (:func:`tieeval.io.trec.load`) takes over, from the start of the
pass (:class:`~tieeval.io.base.ReadAgain`), when a query's lines turn out not to be
together, when a line is not one the fast parser takes (say, extra fields, which trec_eval
ignores), and on any input error: it then reports the error as it always did, naming the
line, and the rare run out of query order costs the memory it always did. Callers that
cannot start over (:meth:`~tieeval.io.base.Dump.settle`) and consumers that keep
something per batch beside the values (:meth:`TrecSource.keep_order`) get the whole-run
reader's batches, in the dump's order.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.io.arrow import from_numpy, to_numpy
from tieeval.io.base import (
    LabelledDump,
    RelevanceInfo,
    open_input,
)
from tieeval.io.buffers import release_freed
from tieeval.io.straddle import mixture
from tieeval.io.trec import (
    _RUN_FIELDS,
    LINE_BYTES,
    QuerySet,
    TrecBatch,
    WholeRun,
    _array,
    _Columns,
    _label,
    _offsets,
    _parsed_chunks,
    _Qrels,
    _unranked,
    bom_warning,
    check_missing_queries,
    load,
)

#: Bytes of the run parsed at a time (tests shrink it to put chunk ends inside queries).
CHUNK_BYTES = 1 << 20
#: The lines a query is taken to have when a streamed run's batches are sized.
STREAM_LINES = 16


class TrecSource:
    """The batches of a TREC run with its qrels: streamed (see the module docstring), or
    the whole-run reader's once streaming gave up or was declined."""

    def __init__(self, path: str, qrels: str, missing: str, judged_only: bool,
                 judged_depth: int | None = None, grades: str | None = None):
        self.path, self.qrels_path = path, qrels
        self.grades = grades
        self.missing, self.judged_only = missing, judged_only
        self.judged_depth = judged_depth if judged_only else None
        self.whole: tuple = ()  # the whole-run reader's load(), once read
        self.dump: Any = None  # set by open_trec_run
        self.order: np.ndarray | None = None
        open_input(path, "run").close()
        self.q: _Qrels | None = None
        if self.judged_depth is not None:
            # -J -M: the cut at the depth is the whole-run reader's, made on opening
            self.read_whole()
            return
        try:
            self.q = _Qrels(qrels, grades)
        except InputError:
            # the whole-run reader reads the run first and names the error it always named
            self.read_whole()
        release_freed()  # the qrels parser's buffers, before the run's

    def read_whole(self, reason: object = None) -> None:
        """Batches of the whole-run reader, in the dump's order, from now on: what starting
        over (after ``reason``), settling and keeping the order ask of the dump."""
        if not self.whole:
            self.whole = load(self.path, self.qrels_path, self.missing, self.judged_only,
                              self.judged_depth, self.grades)
            self.order = None
        if self.dump is not None:  # the same figures each time: the whole run's
            qids, scores, query_set, tags = (self.whole[i] for i in (0, 1, 5, 6))
            self._settle_dump(query_set, tags, qids.size, scores.size)

    def _settle_dump(self, query_set, tags: list, rows: int, lines: int) -> None:
        dump = self.dump
        dump.query_set = query_set
        dump.metadata.pop("tag", None)
        if len(tags) == 1:
            dump.metadata["tag"] = tags[0]
        dump.rows = rows
        dump.row_bytes = max(1, int(LINE_BYTES * lines // max(1, rows)))

    def batches(self, batch_rows: int):
        if not self.whole:
            return self._stream(batch_rows)
        qids, scores, labels, offsets, unranked, query_set, _, judged, _, max_label = self.whole
        return _slices(0, qids, scores, labels, judged, offsets, unranked, max_label,
                       batch_rows, None, query_set.straddles)

    # -- streaming

    def _stream(self, batch_rows: int):
        """One pass, query by query; :class:`WholeRun` where it cannot go on."""
        import pyarrow as pa
        import pyarrow.compute as pc

        q = self.q
        assert q is not None and self.dump is not None
        # a batch: at most batch_rows queries and the lines the automatic size allows
        max_lines = max(1, batch_rows * max(1, self.dump.row_bytes) // LINE_BYTES)
        state = _Pass(self, q, batch_rows, max_lines)
        tags: dict[str, None] = {}
        for table, value, _ in _parsed_chunks(self.path, "run", _RUN_FIELDS, "score", False,
                                              CHUNK_BYTES, tags):
            enc = pc.dictionary_encode(_array(table["qid"]))
            codes = to_numpy(enc.indices)
            raw = enc.dictionary.to_pylist()
            starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
            if starts.size != len(raw):  # a query in two places of one chunk
                raise WholeRun("a query's lines are not together")
            state.add([raw[c] for c in codes[starts].tolist()], _array(table["docno"]), value,
                      np.diff(np.append(starts, codes.size)))
            del table, enc, value, codes
            yield from state.ready()
            pa.default_memory_pool().release_unused()
        yield from state.ready(final=True)
        yield from state.finish(list(tags))


def open_trec_run(path: str, qrels: str, options=None) -> LabelledDump:
    """Open a TREC run with its qrels as a labelled dump (see :mod:`tieeval.io.trec` for
    the rules, and this module's docstring for how the run is read).

    ``options`` (:class:`~tieeval.io.base.RelevanceReadOptions`) may set
    ``missing_queries`` (``"skip"`` or ``"zero"``), ``judged_only`` and ``trec_grades`` (a
    trec_eval convention's name: grades read as trec_eval reads them, with a warning when
    one changes). The qrels are read
    here; the run during each pass, so that its input errors come from the pass, and its
    row count, query set and tag are known once a pass has read it.
    """
    path, qrels = os.fspath(path), os.fspath(qrels)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a TREC run file")
    missing = check_missing_queries(getattr(options, "missing_queries", None))
    judged_only = getattr(options, "judged_only", False)
    if not isinstance(judged_only, (bool, np.bool_)):
        raise ParameterError(f"judged_only must be True or False, got {judged_only!r}")
    depth = getattr(options, "judged_depth", None)
    grades = getattr(options, "trec_grades", None)
    source = TrecSource(path, qrels, missing, bool(judged_only), depth, grades)
    info = RelevanceInfo("trec", items=False, original="given", unranked=True,
                         fields=(os.path.basename(qrels),))
    # until a pass has read the run: the query set's options (its counts come with the
    # pass), no row count, and batches sized for queries of STREAM_LINES lines: a
    # streamed batch holds at most the lines that size allows (about 60,000 for the
    # general kernel) and as many queries as those lines hold
    placeholder = QuerySet(path, qrels, 0, 0, 0, [], [], missing, bool(judged_only),
                           np.zeros(0), judged_depth=source.judged_depth)
    read = source.q if source.q is not None else source.whole[5]  # the qrels, by either reader
    # each file is its own run, named after the file; the tag is kept as metadata
    # (--group-by-tag labels runs by it instead), set once the pass has read every tag
    dump = LabelledDump(path, "trec", np.dtype(np.float64), {}, source.batches, rows=None,
                        nbytes=os.path.getsize(path), row_bytes=LINE_BYTES * STREAM_LINES,
                        warnings=[w for w in (bom_warning(path, "run"),
                                              bom_warning(qrels, "qrels"),
                                              read.grade_warning) if w],
                        relevance=info, query_set=placeholder,
                        _settle=source.read_whole, _start_over=source.read_whole,
                        _order=lambda: source.order, _keep_order=source.read_whole)
    source.dump = dump
    if source.whole:
        source.read_whole()
    return dump


class _Pass:
    """One streaming pass: queries waiting for a batch, what the query set counts, and
    the batches' dump order."""

    def __init__(self, source: TrecSource, q: _Qrels, batch_rows: int, max_lines: int):
        self.source, self.q = source, q
        self.batch_rows, self.max_lines = batch_rows, max_lines
        self.seen: dict[bytes, None] = {}  # every query id of the run, in file order
        self.rows: list[int] = []  # the rows' queries in the qrels, in the batches' order
        self.run_only: list[str] = []
        self.in_run = np.zeros(len(q.names), dtype=bool)
        self.no_ranked: dict = {}
        self.ranked = np.zeros(q.keys.size, dtype=bool)  # judgements a line matched
        # the queries waiting for a batch, the last one read perhaps only in part: their
        # ids and lengths, and their lines' docnos and scores in pieces
        self.qids: list[bytes] = []
        self.lengths = np.zeros(0, dtype=np.int64)
        self.docnos: list = []
        self.scores: list[np.ndarray] = []
        self.total_lines = 0

    def add(self, qids: list, docnos, scores: np.ndarray, lengths: np.ndarray) -> None:
        """A chunk's lines: those of the queries ``qids``, ``lengths`` lines each; the first
        query goes on with the last one waiting when it has its id."""
        goes_on = self.qids[-1:] == qids[:1]
        if goes_on:
            self.lengths[-1] += lengths[0]
        for qid in qids[goes_on:]:
            if qid in self.seen:
                raise WholeRun("a query's lines are not together")
            self.seen[qid] = None
        self.qids += qids[goes_on:]
        self.lengths = np.concatenate([self.lengths, lengths[goes_on:]])
        self.docnos.append(docnos)
        self.scores.append(scores)
        self.total_lines += scores.size

    def ready(self, final: bool = False):
        """The batches of the waiting queries: all of them at the end, else as many
        full batches as the queries read whole fill (the rest waits for the next chunk)."""
        while True:
            whole = len(self.qids) - (not final)  # the last one may go on in the next chunk
            if whole <= 0 or not (final or whole >= self.batch_rows
                                  or self.lengths[:whole].sum() >= self.max_lines):
                return
            yield from self._group(whole)

    def _take(self, whole: int):
        """The next queries out of the first ``whole`` waiting ones: ``(qids, docnos,
        scores, lengths)``, at most ``batch_rows`` queries and ``max_lines`` lines (or one
        query)."""
        import pyarrow as pa

        ends = np.cumsum(self.lengths[:whole])
        fit = int(np.searchsorted(ends, self.max_lines, side="right"))
        take = max(1, min(self.batch_rows, fit, whole))  # a long query goes alone
        cut = int(ends[take - 1])
        if len(self.scores) > 1:  # the pieces read since the last batch, joined
            self.docnos = [pa.concat_arrays(self.docnos)]
            self.scores = [np.concatenate(self.scores)]
        docnos, scores, qids, lengths = self.docnos[0], self.scores[0], self.qids, self.lengths
        self.docnos, self.scores = [docnos.slice(cut)], [scores[cut:]]
        self.qids, self.lengths = qids[take:], lengths[take:]
        return qids[:take], docnos.slice(0, cut), scores[:cut], lengths[:take]

    def _group(self, whole: int):
        """The batches of the next batch's worth of the first ``whole`` waiting queries:
        their judgements found, the queries dropped that have none, the lines put in
        trec_eval's order and cut into batches (one, unless ``-J`` or a long query left
        room)."""
        q = self.q
        qids, docnos, scores, lengths = self._take(whole)
        # the queries with judgements are the rows; the others are ignored, as trec_eval
        # ignores them
        qrow = np.array([q.index.get(x, -1) for x in qids], dtype=np.int64)
        try:
            self.run_only += [x.decode("utf-8") for x, i in zip(qids, qrow.tolist()) if i < 0]
        except UnicodeDecodeError:
            raise WholeRun("a query id is not UTF-8") from None  # named by the whole-run reader
        self.in_run[qrow[qrow >= 0]] = True
        rows = np.flatnonzero(qrow >= 0)
        if rows.size == 0:
            return
        # each line's row, numbered in the batch (-1: a query without judgements)
        renumber = np.full(len(qids), -1, dtype=np.int64)
        renumber[rows] = np.arange(rows.size)
        query = np.repeat(renumber, lengths)
        if rows.size < len(qids):
            idx = np.flatnonzero(query >= 0)
            docnos, scores, query = docnos.take(from_numpy(idx)), scores[idx], query[idx]
        qrow = qrow[rows]
        names = [q.names[i] for i in qrow.tolist()]
        try:
            lines = _Columns(query, None, None, docnos, scores)
            scores, labels, judged, counts, _ = _label(self.source.path, q, qrow, names, lines,
                                                       self.source.judged_only, self.ranked)
        except InputError:  # a document retrieved twice, a query too long
            raise WholeRun("an input error") from None  # named by the whole-run reader
        yield from self._slices(qrow, scores, labels, judged, counts)

    def _slices(self, qrow, scores, labels, judged, counts):
        """The batches of rows of the qrels queries ``qrow`` (:func:`_slices`)."""
        names = [self.q.names[i] for i in qrow.tolist()]
        unranked = _unranked(self.q, self.ranked, qrow, counts, names,
                             self.no_ranked if self.source.judged_only else None)
        lo = len(self.rows)
        self.rows += qrow.tolist()
        return _slices(lo, np.array(names, dtype=object), scores, labels, judged,
                       _offsets(counts), unranked, self.q.max_label, self.batch_rows,
                       self.max_lines)

    def finish(self, tags: list):
        """The qrels' queries the run does not answer (rows under ``-c``), then the query
        set, the tag and the order of the rows."""
        q, source = self.q, self.source
        if not self.seen:
            raise WholeRun("an empty run")  # the whole-run reader says so
        if not self.in_run.any():
            raise WholeRun("no query with judgements")
        missing = np.flatnonzero(~self.in_run)
        qrels_only = sorted(q.names[i] for i in missing.tolist())
        if source.missing == "zero" and missing.size:
            qrow = np.array(sorted(missing.tolist(), key=q.names.__getitem__), dtype=np.int64)
            yield from self._slices(qrow, np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool),
                                    np.zeros(qrow.size, dtype=np.int64))
        # the rows in the dump's order: their query ids sorted as the whole-run reader
        # sorts them (Python's str order, trec_eval's strcmp on UTF-8)
        order = sorted(range(len(self.rows)), key=lambda r: q.names[self.rows[r]])
        source.order = (None if all(a < b for a, b in zip(order, order[1:]))
                        else np.array(order, dtype=np.int64))
        best = q.best[np.array(self.rows, dtype=np.int64)[order]]
        both = int(self.in_run.sum())
        query_set = QuerySet(source.path, source.qrels_path, len(self.seen), len(q.names), both,
                             sorted(self.run_only), qrels_only, source.missing,
                             bool(source.judged_only), best, self.no_ranked,
                             grade_warning=q.grade_warning)
        source._settle_dump(query_set, tags, len(order), self.total_lines)


def _slices(start: int, ids: np.ndarray, scores: np.ndarray, labels: np.ndarray,
            judged: np.ndarray, offsets: np.ndarray, unranked: tuple, max_label: float,
            batch_rows: int, max_lines: int | None, straddles: list | tuple = ()):
    """The batches of rows ``start`` on, their lines together in row order: at most
    ``batch_rows`` rows and ``max_lines`` lines (or one row) each; ``straddles``: -J -M's
    queries whose tie block straddles the cut (:mod:`tieeval.io.straddle`)."""
    un_labels, un_offsets = unranked
    lo = 0
    while lo < ids.size:
        hi = min(lo + batch_rows, ids.size)
        if max_lines is not None:
            fit = int(np.searchsorted(offsets, offsets[lo] + max_lines, side="right")) - 1
            hi = max(lo + 1, min(hi, fit))
        a, b = offsets[lo], offsets[hi]
        ua, ub = un_offsets[lo], un_offsets[hi]
        mix = None
        here = [replace(s, row=s.row - lo) for s in straddles if lo <= s.row < hi]
        if here:
            mix = mixture(here, scores[a:b], labels[a:b], offsets[lo:hi + 1] - a)
        yield TrecBatch(scores[a:b], np.zeros(hi - lo, dtype=np.int64), start + lo,
                        offsets[lo:hi + 1] - a, labels=labels[a:b], ids=ids[lo:hi],
                        nbytes=int((b - a) * 8), items=None, judged=judged[a:b],
                        unranked=(un_labels[ua:ub], un_offsets[lo:hi + 1] - ua),
                        unranked_judged=un_labels[ua:ub] >= 0, max_label=max_label,
                        mixture=mix)
        lo = hi


__all__ = ["open_trec_run", "TrecSource", "WholeRun", "CHUNK_BYTES"]
