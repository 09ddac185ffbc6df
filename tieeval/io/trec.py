"""TREC interoperability: a run file and its qrels -> labelled rows, one per query.

``tieeval compare --qrels QRELS RUN`` reads

* RUN, a TREC run: one line per retrieved document, ``qid Q0 docno rank score tag``
  (fields separated by any run of spaces or tabs; ``Q0`` and ``rank`` are ignored, as
  trec_eval ignores them);
* QRELS, the judgements: ``qid iter docno relevance`` (``iter`` ignored). A relevance
  ``> 0`` is relevant with that gain, ``0`` judged non-relevant, ``< 0`` an explicit
  negative for the signed metrics (trec_eval reads negative values as "in the pool but
  unjudged": non-relevant either way for the unsigned metrics).

Lines are read as trec_eval reads them (``get_trec_results.c``, ``get_qrels.c``): a line
ends at ``\\n``; fields are separated by ASCII whitespace (space, tab, ``\\r``, ``\\v``,
``\\f``); blank lines are skipped. In a run, a line whose first non-blank character is
``#`` is a comment, and fields after the sixth are ignored (trec_eval keeps the tag of the
last line only; tieeval collects every tag). In qrels, a line starting with ``#`` is a
comment, and a judgement has exactly four fields. A score or relevance is read as
trec_eval's ``atof`` (C's ``strtod``) reads it when that reads the whole field as a decimal
number; a field trec_eval would read in part (``1_000`` as 1, ``abc`` as 0) is an error
that says what trec_eval would read. Query ids must be UTF-8. A relevance grade is kept as
written (``1.5`` a gain of 1.5) unless the reader is told a trec_eval convention
(``grades``), which reads it as trec_eval does, with C's ``atol`` (:func:`atol`:
``2.9`` -> 2), and says how many grades changed (:class:`GradeNote`).

Rows follow trec_eval (usnistgov/trec_eval, ``form_res_rels.c``):

* The 'original' ranking of a query is trec_eval's: documents by score descending, ties
  by docno *descending* (``comp_sim_docno``: ``strcmp(p2->docno, p1->docno)``, byte-wise).
  The run's rank column plays no part. Ties among scores are judged on the scores parsed
  as float64 (trec_eval reads them as C doubles), so ``1.0`` and ``1.00`` tie.
* The query set (:class:`QuerySet`): queries of the run without any qrels are ignored
  (trec_eval: "queries for which there is no relevance information are ignored
  completely"); qrels queries the run does not answer are not evaluated by default, and
  with ``missing_queries="zero"`` (trec_eval ``-c``) they are rows with no candidates, all
  their judged documents unranked, scoring 0 in every column. Both are counted.
* ``judged_only`` (trec_eval ``-J``): retrieved documents without a judgement, or judged
  below 0 (trec_eval's "in the pool but unjudged"), are removed before ranking. A uniform
  random tie-break of the whole list, restricted to the documents kept, is a uniform
  tie-break of the kept list, so the tie-aware value stays exact.
* R, the number of relevant documents of a query, counts every relevant document in the
  qrels, retrieved or not (trec_eval's ``num_rel``): Recall and MAP divide by it, and the
  ideal DCG of NDCG takes the best gains among all judged documents. A query whose only
  relevant documents were not retrieved scores 0.
* A query with no relevant document at all is skipped and counted, as every labelled row
  without one (``--no-relevant zero`` and ``--convention trec_eval`` average it in as 0,
  as trec_eval does).
* A document retrieved twice for one query, or judged twice, is an input error, as in
  trec_eval.

A run is read query by query (:mod:`tieeval.io.trec_stream`, which opens runs:
``open_trec_run``) when each query's lines come together; this module holds the rules,
the parsers and :func:`load`, the whole-run reader it falls back to: vectorised and
chunked (:func:`_chunked_columns`), with the line-by-line reader (:func:`_lines`) for any
line pyarrow's CSV parser cannot take, which reads extra fields as trec_eval does and
names the line of any error.
"""


from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tieeval.errors import InputError
from tieeval.io.arrow import from_numpy, to_numpy
from tieeval.io.base import (
    MISSING_QUERIES,
    ReadAgain,
    check_missing_queries,
    check_row_length,
    open_input,
)
from tieeval.io.buffers import release_freed
from tieeval.io.straddle import Straddle
from tieeval.records.batch import Batch
from tieeval.util.ranges import expand


@dataclass
class TrecBatch(Batch):
    """A batch of queries; ``unranked`` holds the judged documents each query missed.

    ``unranked`` is ``(labels, offsets)``: flat float64 relevance of the qrels documents
    a query did not retrieve, and ``rows + 1`` offsets. ``unranked_judged`` (bool, aligned
    with those labels) marks the judged ones (relevance >= 0; trec_eval reads a negative
    relevance as "in the pool but unjudged"), as ``judged`` does for the retrieved
    documents. ``max_label`` is the largest relevance of the whole qrels file (ERR's
    g_max by default), the same for every batch. ``mixture`` (-J -M): the virtual rows of
    the batch's queries whose tie block straddles the cut (:mod:`tieeval.io.straddle`).
    """

    unranked: tuple | None = None
    unranked_judged: np.ndarray | None = None
    max_label: float | None = None
    mixture: Any = None


BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark: written by some editors, not a byte of a line


def bom_warning(path: str, what: str) -> str | None:
    """The warning for a run or qrels file that starts with a byte-order mark (which the
    readers skip), None for one that does not (or cannot be read: the reader says why)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(3) != BOM:
                return None
    except OSError:
        return None
    return (f"{path}: the {what} file starts with a UTF-8 byte-order mark, ignored (trec_eval "
            "would read it as part of the first query id)")


def _read_bytes(path: str, what: str) -> bytes:
    return b"".join(_read_chunks(path, what))


# ---------------------------------------------------------------------------------------
# the line-by-line reader: the reference for the rules, and the messages with line numbers

_BLANK = b" \t\r\x0b\x0c"  # bytes.split() splits on these and \n, as C's isspace


def _lines(data: bytes, comment_col0: bool):
    """``(line number, fields)`` of every line that is neither blank nor a comment."""
    for number, line in enumerate(data.split(b"\n"), 1):
        if (line if comment_col0 else line.lstrip(_BLANK))[:1] == b"#":
            continue
        fields = line.split()
        if fields:
            yield number, fields


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def _qid(path, number, text: bytes) -> str:
    """A query id as text; an id that is not UTF-8 is refused (decoding it with
    replacement characters would merge different queries)."""
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: line {number}: query id {text!r} is not valid UTF-8 "
                         "(query ids are compared as text)") from None


# C's strtod in the "C" locale, the parser behind trec_eval's atof: an optional sign, then
# a hexadecimal float, "inf"/"infinity", "nan" or "nan(chars)" (any case), or a decimal
# with an optional exponent (taken only when digits follow the e).
_STRTOD = re.compile(
    rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?i:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)"
    rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def strtod_prefix(text: bytes) -> tuple[float, int]:
    """``(value, length)`` of the longest prefix of ``text`` that C's ``strtod`` reads
    (length 0: none, where ``atof`` gives 0.0). Values are correctly rounded, as glibc's
    are; beyond float64's range they are +-inf."""
    m = _STRTOD.match(text)
    if m is None:
        return 0.0, 0
    token = m.group().decode("ascii")
    if token.lstrip("+-")[:2].lower() == "0x":
        return float.fromhex(token), m.end()
    # Python's float() reads inf, infinity and nan in any case; nan(...) it does not
    return float(token.split("(")[0]), m.end()


# The numbers a run or qrels field may hold: a decimal with an optional sign and exponent,
# inf, infinity or nan in any case -- the forms C's strtod reads whole and to the same
# double as Python's float(). Anything else is refused, with what trec_eval would read.
_DECIMAL = re.compile(rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                      rb"|(?i:inf|infinity|nan))\Z")


def _number(path, number, text: bytes, what: str) -> float:
    """A score or relevance field as float64 when trec_eval's ``atof`` reads the whole
    field as a decimal number; else (``1_000``, ``abc``, a hexadecimal float) an error
    naming the line and what trec_eval would read: a silently different number is worse
    than a refusal."""
    if _DECIMAL.match(text):
        return float(text)
    value, length = strtod_prefix(text)
    if length == 0:
        read = "as 0 (no number at its start)"
    elif length < len(text):
        read = f"as {value!r}, ignoring {_text(text[length:])!r}"
    else:
        read = f"as {value!r}; only decimal numbers are read"
    raise InputError(f"{path}: line {number}: {what} {_text(text)!r} is not a number "
                     f"(trec_eval would read it {read})")


# C's strtol in base 10, the parser behind trec_eval's atol: blanks, an optional sign, the
# digits up to the first other byte (none: 0)
_STRTOL = re.compile(rb"[ \t\n\x0b\x0c\r]*([+-]?)([0-9]*)")
_LONG_MAX = (1 << 63) - 1


def atol(text: bytes) -> int:
    """C's ``atol`` (glibc, 64-bit long), as trec_eval reads a relevance grade
    (get_qrels.c): ``0.5`` -> 0, ``2.9`` -> 2, ``-1.5`` -> -1, ``1e2`` -> 1, ``+3`` -> 3;
    beyond a long the value is clamped, as strtol clamps it.

    >>> [atol(t) for t in (b"0.5", b"2.9", b"-1.5", b"1e2", b"+3", b" 7", b"-.5", b"x")]
    [0, 2, -1, 1, 3, 7, 0, 0]
    """
    m = _STRTOL.match(text)
    assert m is not None  # every group may be empty
    if not m.group(2):
        return 0
    return max(-_LONG_MAX - 1, min(_LONG_MAX, int(m.group(1) + m.group(2))))


@dataclass
class GradeNote:
    """The grades :func:`atol` changed while a qrels file was read under a trec_eval
    convention (``convention``): how many, and the first few distinct ones as written."""

    path: str
    convention: str
    changed: int = 0
    examples: dict = field(default_factory=dict)  # text -> value read

    def add(self, texts, read: np.ndarray, values: np.ndarray) -> None:
        differ = np.flatnonzero(read != values)
        self.changed += int(differ.size)
        for i in differ[:8].tolist():
            if len(self.examples) < 2:
                self.examples.setdefault(_text(texts[i]), int(read[i]))

    def warning(self) -> str | None:
        """The one warning of the file, None when no grade changed."""
        if not self.changed:
            return None
        n = self.changed
        shown = ", ".join(f"{text} -> {value}" for text, value in self.examples.items())
        return (f"{self.path}: {n} {'grade' if n == 1 else 'grades'} read as trec_eval reads "
                f"{'it' if n == 1 else 'them'}, as whole numbers (atol: {shown}); without "
                f"the {self.convention} convention they are kept as written")


def _whole_grades(arr, values: np.ndarray, note: GradeNote | None) -> np.ndarray:
    """``values`` (the float64 relevance of ``arr``, a pyarrow binary array) as
    trec_eval's :func:`atol` reads them, the changes counted in ``note``. Only a field
    with a '.', an 'e' or a value beyond 2**53 can read otherwise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    odd = np.asarray(to_numpy(pc.match_substring_regex(pc.cast(arr, pa.string()),
                                                       "[.eE]")), dtype=bool)
    odd |= np.abs(values) >= 2.0 ** 53
    idx = np.flatnonzero(odd)
    if idx.size == 0:
        return values
    picked = arr.take(pa.array(idx)).to_pylist()
    read = np.array([float(atol(t)) for t in picked], dtype=np.float64)
    if note is not None:
        note.add(picked, read, values[idx])
    out = values.copy()
    out[idx] = read
    return out


def _qrels_lines(path: str, data: bytes, grades: GradeNote | None = None):
    """``(qid, docno, relevance)`` per judgement, every line checked; with ``grades``,
    relevance as trec_eval's :func:`atol` reads it (the changes counted there)."""
    seen: set = set()
    for number, fields in _lines(data, comment_col0=True):
        if len(fields) != 4:
            raise InputError(f"{path}: line {number}: expected 4 fields 'qid iter docno "
                             f"relevance', got {len(fields)} (is this a qrels file?)")
        qid, _, doc, rel = fields
        value = _number(path, number, rel, "relevance")
        if not np.isfinite(value):
            raise InputError(f"{path}: line {number}: relevance must be finite")
        q = _qid(path, number, qid)
        if (qid, doc) in seen:
            raise InputError(f"{path}: line {number}: query {q}: document "
                             f"{_text(doc)} is judged twice")
        seen.add((qid, doc))
        if grades is not None:
            read = float(atol(rel))
            if read != value:
                grades.add([rel], np.array([read]), np.array([value]))
            value = read
        yield qid, doc, value


def _run_lines(path: str, data: bytes):
    """``(qid, docno, score, tag)`` per retrieved document, every line checked."""
    for number, fields in _lines(data, comment_col0=False):
        if len(fields) < 6:
            raise InputError(f"{path}: line {number}: expected 6 fields 'qid Q0 docno rank "
                             f"score tag', got {len(fields)} (is this a TREC run?)")
        qid, _, doc, _, score, tag = fields[:6]  # trec_eval ignores fields after the tag
        value = _number(path, number, score, "score")
        _qid(path, number, qid)
        yield qid, doc, value, tag


def read_qrels(path: str, grades: str | None = None) -> dict[str, dict[bytes, float]]:
    """``{qid: {docno: relevance}}`` from a qrels file (``qid iter docno relevance``);
    ``grades``: a trec_eval convention's name, under which grades are read as trec_eval
    reads them (:func:`atol`)."""
    qrels: dict[str, dict[bytes, float]] = {}
    note = None if grades is None else GradeNote(path, grades)
    for qid, doc, value in _qrels_lines(path, _read_bytes(path, "qrels"), note):
        qrels.setdefault(qid.decode("utf-8"), {})[doc] = value
    if not qrels:
        raise InputError(f"{path}: no judgements (empty qrels file)")
    return qrels


def read_run(path: str) -> tuple[dict[str, tuple[list, list]], list[str]]:
    """``({qid: (docnos, scores)}, tags)`` from a run file, in file order."""
    run: dict[str, tuple[list, list]] = {}
    tags: dict[str, None] = {}
    for qid, doc, value, tag in _run_lines(path, _read_bytes(path, "run")):
        docs, scores = run.setdefault(qid.decode("utf-8"), ([], []))
        docs.append(doc)
        scores.append(value)
        tags[_text(tag)] = None
    if not run:
        raise InputError(f"{path}: no results (empty run file)")
    return run, list(tags)


# ---------------------------------------------------------------------------------------
# the vectorised reader

_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_COMMENT_LINE = re.compile(rb"(?m)^#[^\n]*(?:\n|\Z)")
_BLANK_RUN = re.compile(rb" {2,}")
_RUN_FIELDS = ("qid", "q0", "docno", "rank", "score", "tag")
_QRELS_FIELDS = ("qid", "iter", "docno", "relevance")


@dataclass
class _Columns:
    """A file's records in compact arrays: ``qid`` and ``docno`` as int32 codes into
    pyarrow binary dictionaries (each distinct id held once, in order of first
    appearance), ``value`` (score or relevance) as float64, and a run's tags in order of
    first appearance. About 16 bytes per line whatever the ids' length."""

    qid_codes: np.ndarray
    qid_dict: Any
    docno_codes: np.ndarray | None
    docno_dict: Any
    value: np.ndarray
    tags: list = field(default_factory=list)

    @property
    def size(self) -> int:
        return int(self.value.size)

    @property
    def qid(self):
        """The query id of every record, as a pyarrow binary array."""
        return self.qid_dict.take(self.qid_codes)

    @property
    def docno(self):
        """The docno of every record, as a pyarrow binary array."""
        return self.docno_dict.take(self.docno_codes)


def _comment_lines(data: bytes) -> bool:
    return data[:1] == b"#" or b"\n#" in data


def _normalise(data: bytes, comment_col0: bool) -> bytes:
    """The records of ``data`` as single-space separated lines without comments: what
    pyarrow's CSV parser reads with ``delimiter=' '``. Each pass runs only when needed."""
    if comment_col0 and _comment_lines(data):  # qrels: '#' in the first column only
        data = _COMMENT_LINE.sub(b"", data)
    if any(c in data for c in (b"\t", b"\r", b"\x0b", b"\x0c")):
        data = data.translate(_TO_SPACE)
    if b"  " in data:
        data = _BLANK_RUN.sub(b" ", data)
    data = data.replace(b"\n ", b"\n").replace(b" \n", b"\n")
    if data[:1] == b" " or data[-1:] == b" ":
        data = data.strip(b" ")
    if not comment_col0 and _comment_lines(data):  # runs: '#' first after any blanks
        data = _COMMENT_LINE.sub(b"", data)
    return data


def _only_line_ends(data: bytes) -> bool:
    """Whether ``data`` is nothing but line ends (counted only when it starts with one:
    counting a whole chunk's bytes costs as much as a pass of the parser)."""
    return data[:1] in (b"", b"\n") and data.count(b"\n") == len(data)


def _csv_columns(data: bytes, names: tuple, number: str, *, plain: bool = False):
    """``(table, numbers)`` via pyarrow's CSV parser (every field as bytes, ``number``
    also as float64), or None when a line does not fit: a field count other than
    ``len(names)``, a bad number, or -- unless the data was normalised -- an empty field,
    a blank other than a single space, or a line starting with ``#``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv

    if _only_line_ends(data):
        return None
    if data[:3] == BOM:
        # pyarrow drops a byte-order mark; one after the file's first bytes (at the start
        # of a line) is part of the line's query id
        return None
    if plain and any(c in data for c in (b"\t", b"\r", b"\x0b", b"\x0c")):
        return None
    try:
        table = csv.read_csv(
            pa.BufferReader(data),
            # in this thread, 1 MB blocks: the parser's buffers grow with the block
            read_options=csv.ReadOptions(column_names=list(names), block_size=1 << 20,
                                         use_threads=False),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False,
                                           escape_char=False, ignore_empty_lines=True),
            convert_options=csv.ConvertOptions(
                column_types={n: pa.binary() for n in names}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
        if plain:
            if any(pc.min(pc.binary_length(table[n])).as_py() == 0 for n in names):
                return None
            if pc.any(pc.starts_with(table["qid"], "#")).as_py():
                return None
        if pc.any(pc.match_substring(table[number], "(")).as_py():
            return None  # pyarrow reads nan(...), which is refused: the line reader says so
        values = pc.cast(pc.cast(table[number], pa.string()), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return table, np.asarray(to_numpy(values), dtype=np.float64)


def _array(column):
    """One pyarrow array from a table column (chunks joined when there are several)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


# Files are read and parsed this many bytes at a time (cut after a line end), so that
# reading holds two chunks' bytes and parsed columns (one parsed ahead) besides the
# compact arrays of the records read so far, whatever the file's size.
CHUNK_BYTES = 1 << 22


def _read_chunks(path: str, what: str, size: int | None = None):
    """The bytes of a file in pieces of about ``size`` bytes, each ending at a line end
    (the last at the end of the file): every rule of the readers is one line's."""
    size = CHUNK_BYTES if size is None else size
    with open_input(path, what) as fh:
        rest = b""
        first = True
        while True:
            try:
                block = fh.read(size)
            except OSError as exc:
                raise InputError(f"{path}: cannot read {what}: "
                                 f"{exc.strerror or exc}") from None
            if first and block[:3] == BOM:
                block = block[3:]
            first = False
            if not block:
                if rest:
                    yield rest
                return
            if rest:
                block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a chunk: read on
                rest = block
                continue
            rest = block[cut:]  # b"" when the block ends at a line end
            yield block[:cut]
            del block


class WholeRun(ReadAgain):
    """The run cannot be streamed (:mod:`tieeval.io.trec_stream`): read it whole."""


_END = "end"


def _parsed_chunks(path: str, what: str, names: tuple, number: str, comment_col0: bool,
                   size: int | None = None, tags: dict | None = None):
    """``(table, numbers, bytes)`` of each chunk of a file that holds records (not only
    blank and comment lines), parsed by the fast readers (:func:`_csv_columns`: the bytes
    as they are, else normalised) one chunk ahead in a background thread (pyarrow's
    parser and the read hold no lock): the next chunk is parsed while this one is used.
    :class:`WholeRun` for a chunk they do not take; ``tags``: a run's tags are added to
    it, in order of first appearance."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.compute as pc

    chunks = _read_chunks(path, what, size)

    def parse_next():
        for chunk in chunks:
            got = _csv_columns(chunk, names, number, plain=True)
            if got is None:
                data = _normalise(chunk, comment_col0)
                if _only_line_ends(data):
                    continue
                got = _csv_columns(data, names, number)
            return got, len(chunk)
        return _END

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tieeval-trec")
    pending = None
    try:
        pending = pool.submit(parse_next)
        while True:
            got = pending.result()
            pending = None
            if got is _END:
                return
            if got[0] is None:
                raise WholeRun("a line the fast parser does not take")
            pending = pool.submit(parse_next)
            (table, value), read = got
            del got
            if tags is not None:
                tags.update((_text(t), None)
                            for t in pc.unique(_array(table["tag"])).to_pylist())
            yield table, value, read
            del table, value
    finally:
        if pending is not None:
            try:
                pending.result()
            except BaseException:  # noqa: BLE001 - the consumer's own error wins
                pass
        pool.shutdown(wait=True)
        chunks.close()


class _Growing:
    """A flat array filled chunk by chunk, grown by half again when full: the records
    land in place instead of in pieces joined at the end (which would hold both)."""

    def __init__(self, dtype, capacity: int):
        self.data = np.empty(max(1, capacity), dtype=dtype)
        self.size = 0

    def add(self, values: np.ndarray) -> None:
        end = self.size + values.size
        if end > self.data.size:
            grown = np.empty(max(end, self.data.size * 3 // 2), dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:end] = values
        self.size = end

    def array(self) -> np.ndarray:
        return self.data[:self.size]


def _dictionary_codes(codes: np.ndarray, parts: list) -> object:
    """Turn ``codes``, in pieces ``(start, stop, binary dictionary)`` each coded into its
    own dictionary, into codes into one dictionary (each distinct value once, in order of
    first appearance), in place; returns that dictionary."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not parts:
        return pa.array([], type=pa.binary())
    if len(parts) == 1:
        return parts[0][2]
    enc = pc.dictionary_encode(pa.concat_arrays([d for _, _, d in parts]))
    merged = to_numpy(enc.indices).astype(np.int32, copy=False)
    base = 0
    for start, stop, d in parts:
        codes[start:stop] = merged[base:base + len(d)][codes[start:stop]]
        base += len(d)
    return enc.dictionary


def _encode(column) -> tuple[np.ndarray, object]:
    """``(int32 codes, dictionary)`` of a binary column."""
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(_array(column))
    return to_numpy(enc.indices).astype(np.int32, copy=False), enc.dictionary


def _chunked_columns(path: str, what: str, names: tuple, number: str, comment_col0: bool,
                     *, tags: bool = False, finite: bool = False,
                     grades: GradeNote | None = None) -> _Columns | None:
    """The records of a file read chunk by chunk with the fast readers, kept as compact
    arrays; None when a chunk does not fit them (the caller reads the file line by line,
    which names the line of any error)."""
    import pyarrow as pa

    pool = pa.default_memory_pool()
    qids: list = []
    docnos: list = []
    columns = None
    seen_tags: dict[str, None] = {}
    try:
        parsed = _parsed_chunks(path, what, names, number, comment_col0,
                                tags=seen_tags if tags else None)
        for table, value, read in parsed:
            if finite and not np.isfinite(value).all():
                return None
            if grades is not None:
                value = _whole_grades(_array(table[number]), value, grades)
            if columns is None:  # room for the whole file at the first chunk's line length
                lines = int(value.size * max(1.0, os.path.getsize(path) / read) * 1.02) + 16
                columns = (_Growing(np.int32, lines), _Growing(np.int32, lines),
                           _Growing(np.float64, lines))
            start = columns[2].size
            for grow, parts, name in ((columns[0], qids, "qid"), (columns[1], docnos, "docno")):
                codes, dictionary = _encode(table[name])
                grow.add(codes)
                parts.append((start, grow.size, dictionary))
            columns[2].add(value)
            del table, value
            pool.release_unused()  # the parser's buffers, which the allocator would keep
    except WholeRun:
        return None
    if columns is None:
        columns = (_Growing(np.int32, 0), _Growing(np.int32, 0), _Growing(np.float64, 0))
    qid_codes, docno_codes, values = (c.array() for c in columns)
    qid_dict = _dictionary_codes(qid_codes, qids)
    docno_dict = _dictionary_codes(docno_codes, docnos)
    del qids, docnos
    pool.release_unused()  # the last chunks' and the merge's buffers
    return _Columns(qid_codes, qid_dict, docno_codes, docno_dict, values, list(seen_tags))


def _line_columns(rows: list, tags: list | None = None) -> _Columns:
    """:class:`_Columns` of the line-by-line reader's records."""
    import pyarrow as pa

    qid_codes, qid_dict = _encode(pa.chunked_array([[r[0] for r in rows]], pa.binary()))
    docno_codes, docno_dict = _encode(pa.chunked_array([[r[1] for r in rows]], pa.binary()))
    return _Columns(qid_codes, qid_dict, docno_codes, docno_dict,
                    np.array([r[2] for r in rows], dtype=np.float64), tags or [])


def _run_columns(path: str) -> _Columns:
    got = _chunked_columns(path, "run", _RUN_FIELDS, "score", False, tags=True)
    if got is not None:
        return got
    rows = list(_run_lines(path, _read_bytes(path, "run")))
    return _line_columns(rows, list(dict.fromkeys(_text(r[3]) for r in rows)))


def _qrels_columns(path: str, *, grades: GradeNote | None = None) -> _Columns:
    """The judgements; with ``grades``, read as trec_eval reads them (:func:`atol`), the
    changes counted there."""
    got = _chunked_columns(path, "qrels", _QRELS_FIELDS, "relevance", True, finite=True,
                           grades=grades)
    if got is not None:
        return got
    if grades is not None:  # counted again by the line-by-line reader
        grades.changed, grades.examples = 0, {}
    return _line_columns(list(_qrels_lines(path, _read_bytes(path, "qrels"), grades)))


# ---------------------------------------------------------------------------------------
# run + qrels -> rows


def trec_order(docnos: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """trec_eval's ranking: score descending, ties by docno descending (byte-wise); NaN
    scores (``--nan-policy worst``) last.

    >>> trec_order(np.array([b"d1", b"d3", b"d2"]), np.array([1.0, 1.0, 2.0])).tolist()
    [2, 1, 0]
    """
    # lexsort is ascending with the last key primary; reversing gives descending on both
    return np.lexsort((docnos, scores, ~np.isnan(scores)))[::-1]


@dataclass
class QuerySet:
    """Which queries a TREC run's figures average, and why the others are left out.

    ``run`` / ``qrels``: queries in each file; ``both``: in both (trec_eval's query set);
    ``run_only``: ignored (no judgements); ``qrels_only``: not answered by the run, rows
    scoring 0 under ``missing_queries="zero"`` (trec_eval ``-c``), else not evaluated;
    ``best``: each row's highest judgement, which settles whether it has a relevant
    document.
    """

    run_path: str
    qrels_path: str
    run: int
    qrels: int
    both: int
    run_only: list
    qrels_only: list
    missing_queries: str
    judged_only: bool
    best: np.ndarray
    no_ranked: dict = field(default_factory=dict)
    judged_depth: int | None = None  # trec_eval -J -M N: the cut made before -J
    grade_warning: str | None = None  # grades a trec_eval convention read otherwise
    # -J -M: the queries whose tie block straddles the cut (tieeval.io.straddle.Straddle)
    straddles: list = field(default_factory=list)

    @property
    def rows(self) -> int:
        return int(self.best.size)

    def zero_division(self, relevance_level=None) -> dict:
        """Under ``judged_only`` (trec_eval ``-J``), the evaluated queries left without a
        ranked document, and the relevant documents R of each: trec_eval divides 0 by 0
        there (m_iprec_at_recall.c: precision of an empty ranking) and prints ``-nan``."""
        if not self.judged_only:
            return {}
        level = relevance_level
        return {qid: int(np.count_nonzero(labels >= level if level is not None
                                          else labels > 0))
                for qid, labels in self.no_ranked.items()}

    def message(self, summary: dict) -> str:
        """One line: how many queries are averaged, and why any are left out."""
        parts = [f"{summary['both']} in both the run and the qrels"]
        if self.qrels_only and self.missing_queries == "zero":
            parts.append(f"{_queries(self.qrels_only)} of the qrels without results counted "
                         "as 0 (--missing-queries zero, trec_eval -c)")
        if self.run_only:
            parts.append(f"{_queries(self.run_only)} of the run without judgements ignored, "
                         "as trec_eval ignores them")
        if self.qrels_only and self.missing_queries != "zero":
            parts.append(f"{_queries(self.qrels_only)} of the qrels without results not "
                         "evaluated (--missing-queries zero, trec_eval -c, counts them as 0)")
        if summary["no_relevant"]:
            n = summary["no_relevant"]
            what = f"{n} {'query' if n == 1 else 'queries'} without a relevant document"
            parts.append(f"{what} skipped (--no-relevant zero or --convention trec_eval "
                         "counts them as 0)" if summary["no_relevant_policy"] == "skip"
                         else f"{what} counted as 0")
        n = summary["averaged"]
        return (f"{self.run_path}: {n} {'query' if n == 1 else 'queries'} averaged: "
                + "; ".join(parts))

    def report(self, relevance_level=None, no_relevant: str = "skip"
               ) -> tuple[dict, dict | None]:
        """``(summary, data warning or None)``: the counts as the JSON's
        ``relevance.queries`` reports them, and a warning when a query is left out or
        counted as 0 without results."""
        level = relevance_level
        relevant = self.best >= level if level is not None else self.best > 0
        without = int(self.rows - np.count_nonzero(relevant))
        zeroed = self.missing_queries == "zero"
        summary = {"run": self.run, "qrels": self.qrels, "both": self.both,
                   "run_only_ignored": len(self.run_only),
                   "qrels_only": len(self.qrels_only),
                   "missing_queries": self.missing_queries,
                   "judged_only": self.judged_only,
                   "evaluated": self.rows,
                   "no_relevant": without, "no_relevant_policy": no_relevant,
                   "averaged": self.rows - (without if no_relevant == "skip" else 0)}
        summary["qrels_only_zero" if zeroed else "qrels_only_not_evaluated"] = len(
            self.qrels_only)
        if not (self.run_only or self.qrels_only or without):
            return summary, None
        return summary, {"kind": "trec_queries", **summary,
                         "message": self.message(summary)}


def _decode(raw: list, path: str, refuse) -> list[str]:
    """The query ids of a file as text; one that is not UTF-8 is refused by ``refuse``,
    the file's line-by-line reader, which names the line."""
    try:
        return [text.decode("utf-8") for text in raw]
    except UnicodeDecodeError as exc:
        refuse()
        raise InputError(f"query id {exc.object!r} is not valid UTF-8") from None


class _Qrels:
    """The judgements, sorted by (query, docno) for lookups by the run's lines."""

    def __init__(self, path: str, grades: str | None = None, run_ids=None):
        note = None if grades is None else GradeNote(path, grades)
        cols = _qrels_columns(path, grades=note)
        #: the warning when grades were read otherwise under a trec_eval convention
        self.grade_warning = None if note is None else note.warning()
        if cols.size == 0:
            raise InputError(f"{path}: no judgements (empty qrels file)")
        #: the run's query ids decoded by ``run_ids``: a run's id that is not UTF-8 is
        #: named before a qrels' one
        self.run_names: list[str] = [] if run_ids is None else run_ids()
        raw = cols.qid_dict.to_pylist()
        self.names = _decode(raw, path, lambda: list(_qrels_lines(path, _read_bytes(
            path, "qrels"))))
        self.index = {q: i for i, q in enumerate(raw)}
        self.nd = max(1, len(cols.docno_dict))
        codes = cols.docno_codes
        assert codes is not None  # a file's docnos are codes into its dictionary
        key = cols.qid_codes.astype(np.int64) * self.nd + codes
        order = np.argsort(key, kind="stable")
        self.keys = key[order]
        if self.keys.size > 1 and (self.keys[1:] == self.keys[:-1]).any():
            list(_qrels_lines(path, _read_bytes(path, "qrels")))  # raises, naming the line
            raise InputError(f"{path}: a document is judged twice")
        self.rel = cols.value[order]
        # each judgement's docno, in the order of the keys
        self.docno_sorted = cols.docno_dict.take(from_numpy(codes[order]))
        query = cols.qid_codes[order]
        nq = len(raw)
        # each query's judgements are keys[start[q]:start[q + 1]]
        self.start = np.searchsorted(query, np.arange(nq + 1)).astype(np.int64)
        # the dictionary holds the query ids of the judgements: each has one at least
        self.best = np.maximum.reduceat(self.rel, self.start[:-1])
        self.max_label = float(self.rel.max())


def _within_depth(q: np.ndarray, s: np.ndarray, depth: int) -> tuple[np.ndarray, list]:
    """Which lines in trec_eval's order (``q`` their rows, ``s`` their scores) are among
    the top ``depth`` of their query: trec_eval ``-J -M N`` cuts each ranking at N
    (form_res_rels.c) before it drops the unjudged documents. Also, for each query whose
    tie block straddles the cut, the block's places in the list and its places above the
    cut: which of them stay is the tie order's choice (:mod:`tieeval.io.straddle`)."""
    starts = np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1])))
    pos = np.arange(q.size) - np.repeat(starts, np.diff(np.append(starts, q.size)))
    past = np.flatnonzero(pos == depth)  # each query's first line below the cut
    tied = (s[past] == s[past - 1]) | (np.isnan(s[past]) & np.isnan(s[past - 1]))
    ends = np.append(starts[1:], q.size)
    blocks = []
    for p in past[tied].tolist():
        lo = p - depth  # the query's first line
        seg = s[lo:int(ends[np.searchsorted(starts, lo)])]
        same = np.flatnonzero((seg == s[p]) | (np.isnan(seg) & bool(np.isnan(s[p]))))
        blocks.append((lo + same, depth - int(same[0])))
    return pos < depth, blocks


def _label(path: str, q: _Qrels, qrow: np.ndarray, names: list, lines: _Columns,
           judged_only: bool, ranked: np.ndarray, depth: int | None = None):
    """The lines of the rows whose qrels queries are ``qrow``, judged and put in
    trec_eval's order, as :class:`TrecBatch` holds them: ``(scores, labels, judged,
    counts, straddles)``. ``lines``: their rows as ``qid_codes`` (the run's lines, or a
    group's, whose ``docno_dict`` is then each line's docno and ``docno_codes`` None),
    whose arrays are let go here. The judgements a kept line matched are
    marked in ``ranked``; ``depth``: -J -M N (:func:`_within_depth`). A document
    retrieved twice, or a row too long, is an :class:`InputError`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    query, codes, scores, docnos = (lines.qid_codes, lines.docno_codes, lines.value,
                                    lines.docno_dict)
    lines.qid_codes = lines.docno_codes = np.zeros(0, dtype=np.int32)
    lines.value = np.zeros(0)
    # one dictionary for the lines' docnos and the judgements of their rows: a line's
    # judgement is found by its (row, docno) key
    judged_at = q.start[qrow]
    jpos, jrow = expand(judged_at, q.start[qrow + 1] - judged_at)
    nl = len(docnos)
    enc = pc.dictionary_encode(pa.concat_arrays([docnos, q.docno_sorted.take(
        from_numpy(jpos))]))
    dictionary = enc.dictionary
    nd = max(1, len(dictionary))
    # line numbers and docno codes as int32 below 2**31: half the bytes while ordering
    small = np.int32 if max(nd, query.size) < (1 << 31) else np.int64
    rank = to_numpy(enc.indices).astype(small, copy=False)
    del enc
    docno = rank[:nl] if codes is None else rank[:nl][codes]
    found = query.astype(np.int64)
    found *= nd
    found += docno
    found.sort()
    dup = np.flatnonzero(found[1:] == found[:-1])
    if dup.size:
        at = int(found[dup[0]])
        text = _text(dictionary[at % nd].as_py())
        raise InputError(f"{path}: query {names[at // nd]}: document {text} is "
                         "retrieved twice (trec_eval refuses duplicate documents too)")
    del found, dup
    # every row is a query of the qrels: the judgements hold one at least
    js = jrow * nd + rank[nl:]
    del rank, jrow
    jorder = np.argsort(js)
    js = js[jorder]
    jpos = jpos[jorder]
    jrel = q.rel[jpos]
    del jorder
    if codes is None:  # a group's docnos, at hand
        order = _arrow_order(query, scores, docnos)
    else:  # the codes ranked byte-wise, as trec_eval's strcmp orders docnos
        ranks = np.empty(nd, dtype=small)
        ranks[to_numpy(pc.sort_indices(dictionary))] = np.arange(nd, dtype=small)
        order = _arrow_order(query, scores, from_numpy(ranks[docno]))
        del ranks
    del dictionary
    query, scores = query[order], scores[order]
    key = query.astype(np.int64)
    key *= nd
    key += docno[order]
    del order, docno
    # each line's place among the sorted judgement keys, and its relevance (0: none)
    at = np.searchsorted(js, key)
    np.minimum(at, js.size - 1, out=at)
    matched = js[at] == key
    labels = jrel[at]
    labels[~matched] = 0.0
    del key
    # judged: in the qrels with relevance >= 0 (a negative one is unjudged, in the pool)
    judged = matched & (labels >= 0)
    keep = None
    blocks: list = []
    if judged_only:  # trec_eval -J: unjudged (or judged < 0) documents leave the ranking
        keep = judged
        if depth is not None:  # -J -M: the ranking is cut first
            top, blocks = _within_depth(query, scores, depth)
            keep = judged & top
    counts = np.bincount(query if keep is None else query[keep], minlength=qrow.size)
    if counts.size and counts.max() > 0:
        longest = int(np.argmax(counts))
        check_row_length(path, int(counts[longest]), f"query {names[longest]}")
    ranked[jpos[at[matched if keep is None else keep]]] = True
    straddles = []
    for block, slots in blocks:  # -J -M: the tie blocks across the cut
        assert keep is not None
        ok = judged[block]
        r = int(query[block[0]])
        lo, hi = q.start[qrow[r]], q.start[qrow[r] + 1]
        other = ~ranked[lo:hi]  # the query's judgements neither above nor in the block
        other[jpos[at[block[ok]]] - lo] = False
        left = q.rel[lo:hi][other]
        straddles.append(Straddle(r, int(counts[r] - np.count_nonzero(keep[block])),
                                  float(scores[block[0]]), labels[block[ok]],
                                  int(ok.size - np.count_nonzero(ok)), slots, left,
                                  left >= 0))
    if keep is not None:
        scores, labels, judged = scores[keep], labels[keep], judged[keep]
    return scores, labels, judged, counts, straddles


def _arrow_order(query: np.ndarray, scores: np.ndarray, docnos) -> np.ndarray:
    """The order of the lines: by query rank, then :func:`trec_order` within a query
    (score descending, NaN last, docno descending: byte-wise as ``strcmp``, or by rank).
    One pyarrow sort, which compares docnos only inside a tie and puts NaN last in either
    direction. ``+ 0.0`` makes -0.0 the 0.0 it ties with, as trec_eval's doubles do."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table({"q": from_numpy(query), "s": from_numpy(scores + 0.0), "d": docnos})
    order = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"),
                                              ("d", "descending")])
    return to_numpy(order).view(np.int64)  # indices below 2**63


def _unranked(q: _Qrels, ranked: np.ndarray, qrow: np.ndarray, counts: np.ndarray,
              names: list, no_ranked: dict | None):
    """``(labels, offsets)`` of the judgements of the rows' queries (``qrow``) that no
    line of theirs matched (R and the ideal DCG count them); ``no_ranked`` (-J): the
    rows left without a ranked document, with those judgements, are added to it."""
    judged_at = q.start[qrow]
    idx, row = expand(judged_at, q.start[qrow + 1] - judged_at)
    missed = ~ranked[idx]
    labels = q.rel[idx[missed]]
    offsets = _offsets(np.bincount(row[missed], minlength=qrow.size))
    if no_ranked is not None:
        for r in np.flatnonzero(counts == 0).tolist():
            no_ranked[names[r]] = labels[offsets[r]:offsets[r + 1]]
    return labels, offsets


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def load(run_path: str, qrels_path: str, missing_queries: str = "skip",
         judged_only: bool = False, judged_depth: int | None = None,
         grades: str | None = None):
    """Queries as rows: ``(qids, scores, labels, offsets, unranked, query_set, tags,
    judged, unranked_judged, max_label)``; ``judged_depth``: under ``judged_only``, the
    top N lines of each query are kept first (:func:`_within_depth`); ``grades``: the
    trec_eval convention under which the grades are read as trec_eval reads them
    (:func:`atol`; the query set's ``grade_warning`` says how many changed)."""
    missing_queries = check_missing_queries(missing_queries)
    run = _run_columns(run_path)
    if run.size == 0:
        raise InputError(f"{run_path}: no results (empty run file)")
    release_freed()  # the parser's chunks, before the arrays of the ordering below
    raw = run.qid_dict.to_pylist()
    q = _Qrels(qrels_path, grades, lambda: _decode(raw, run_path, lambda: list(
        _run_lines(run_path, _read_bytes(run_path, "run")))))
    # each run query's query in the qrels (-1: none)
    qcode = np.array([q.index.get(x, -1) for x in raw], dtype=np.int64)
    in_run = np.zeros(len(q.names), dtype=bool)
    in_run[qcode[qcode >= 0]] = True
    if not in_run.any():
        raise InputError(f"{run_path}: no query of the run has judgements in {qrels_path} "
                         "(trec_eval: 'No queries with both results and relevance info')")
    # the rows: the qrels queries of the run (and under -c the others), by their text
    qrow = np.array(sorted(np.flatnonzero(in_run | (missing_queries == "zero")).tolist(),
                           key=q.names.__getitem__), dtype=np.int64)
    row_of = np.full(len(q.names), -1, dtype=np.int32)
    row_of[qrow] = np.arange(qrow.size)
    # the lines of the rows (those of queries without judgements are ignored)
    run.qid_codes = np.where(qcode >= 0, row_of[qcode], -1)[run.qid_codes]
    if (run.qid_codes < 0).any():
        idx = np.flatnonzero(run.qid_codes >= 0)
        for name in ("qid_codes", "docno_codes", "value"):
            setattr(run, name, getattr(run, name)[idx])
        del idx
    qids = np.array([q.names[i] for i in qrow.tolist()], dtype=object)
    ranked = np.zeros(q.keys.size, dtype=bool)
    scores, labels, judged, counts, straddles = _label(
        run_path, q, qrow, list(qids), run, judged_only, ranked,
        judged_depth if judged_only else None)
    query_set = QuerySet(run_path, qrels_path, len(raw), len(q.names), int(in_run.sum()),
                         sorted(n for n, c in zip(q.run_names, qcode.tolist()) if c < 0),
                         sorted(q.names[i] for i in np.flatnonzero(~in_run).tolist()),
                         missing_queries, bool(judged_only), q.best[qrow],
                         judged_depth=judged_depth if judged_only else None,
                         grade_warning=q.grade_warning, straddles=straddles)
    un_labels, un_offsets = _unranked(q, ranked, qrow, counts, list(qids),
                                      query_set.no_ranked if judged_only else None)
    release_freed()  # the ordering's temporaries, before the batches' arrays
    return (qids, scores, labels, _offsets(counts), (un_labels, un_offsets), query_set,
            run.tags, judged, un_labels >= 0, q.max_label)


def _queries(qids) -> str:
    shown = ", ".join(qids[:3]) + (", ..." if len(qids) > 3 else "")
    return f"{len(qids)} {'query' if len(qids) == 1 else 'queries'} ({shown})"


#: The bytes a line counts for when batches are sized: twice its 17 bytes of scores, labels
#: and judged mask, so that a batch's working arrays in the general kernel (a few hundred
#: bytes a line) on each batch thread stay below the arrays the reader holds (a 2M-line
#: run: 215 -> 201 MB peak, about 5 % more time; ``benchmarks/bench_trec.py``).
LINE_BYTES = 34


__all__ = ["read_run", "read_qrels", "atol", "trec_order", "TrecBatch", "QuerySet",
           "MISSING_QUERIES", "check_missing_queries"]
