"""TREC interoperability: a run file and its qrels -> labelled rows, one per query.

``tieeval compare --qrels QRELS RUN`` reads

* RUN, a TREC run: one line per retrieved document, ``qid Q0 docno rank score tag``
  (whitespace separated; ``Q0`` and ``rank`` are ignored, as trec_eval ignores them);
* QRELS, the judgements: ``qid iter docno relevance`` (``iter`` ignored). A relevance
  ``> 0`` is relevant with that gain, ``0`` judged non-relevant, ``< 0`` an explicit
  negative for the signed metrics (trec_eval reads negative values as "in the pool but
  unjudged": non-relevant either way for the unsigned metrics).

Rows follow trec_eval (usnistgov/trec_eval, ``form_res_rels.c``):

* The 'original' ranking of a query is trec_eval's: documents by score descending, ties
  by docno *descending* (``comp_sim_docno``: ``strcmp(p2->docno, p1->docno)``, byte-wise).
  The run's rank column plays no part. Ties among scores are judged on the scores parsed
  as float64 (trec_eval reads them as C doubles), so ``1.0`` and ``1.00`` tie.
* Queries of the run without any qrels are ignored (trec_eval: "queries for which there
  is no relevance information are ignored completely"); qrels queries the run does not
  answer are not evaluated either (trec_eval's ``-c`` would average them in as 0). Both
  are counted in a warning.
* R, the number of relevant documents of a query, counts every relevant document in the
  qrels, retrieved or not (trec_eval's ``num_rel``): Recall and MAP divide by it, and the
  ideal DCG of NDCG takes the best gains among all judged documents. A query whose only
  relevant documents were not retrieved scores 0.
* A query with no relevant document at all is skipped and counted, as every labelled row
  without one (trec_eval would average it in as 0).
* A document retrieved twice for one query, or judged twice, is an input error, as in
  trec_eval.
"""


from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import (
    Batch,
    LabelledDump,
    RelevanceInfo,
    check_row_length,
    require_regular_file,
)


@dataclass
class TrecBatch(Batch):
    """A batch of queries; ``unranked`` holds the judged documents each query missed.

    ``unranked`` is ``(labels, offsets)``: flat float64 relevance of the qrels documents
    a query did not retrieve, and ``rows + 1`` offsets. ``unranked_judged`` (bool, aligned
    with those labels) marks the judged ones (relevance >= 0; trec_eval reads a negative
    relevance as "in the pool but unjudged"), as ``judged`` does for the retrieved
    documents. ``max_label`` is the largest relevance of the whole qrels file (ERR's
    g_max by default), the same for every batch.
    """

    unranked: tuple | None = None
    unranked_judged: np.ndarray | None = None
    max_label: float | None = None


def _lines(path: str, what: str):
    if os.path.exists(path):
        require_regular_file(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open {what}: {exc.strerror or exc}") from None
    for number, line in enumerate(data.splitlines(), 1):
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


def _number(path, number, text: bytes, what: str) -> float:
    """A number of the file as float64 (relevance labels are float64 throughout); one
    beyond float64's range is an error."""
    try:
        value = float(int(text))
    except OverflowError:
        value = float("inf")
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"{path}: line {number}: {what} {_text(text)!r} is not a "
                             "number") from None
    return value


def read_qrels(path: str) -> dict[str, dict[bytes, float]]:
    """``{qid: {docno: relevance}}`` from a qrels file (``qid iter docno relevance``)."""
    qrels: dict[str, dict[bytes, float]] = {}
    for number, fields in _lines(path, "qrels"):
        if len(fields) != 4:
            raise InputError(f"{path}: line {number}: expected 4 fields 'qid iter docno "
                             f"relevance', got {len(fields)} (is this a qrels file?)")
        qid, _, doc, rel = fields
        value = _number(path, number, rel, "relevance")
        if not np.isfinite(value):
            raise InputError(f"{path}: line {number}: relevance must be finite")
        qid = _qid(path, number, qid).encode("utf-8")
        judged = qrels.setdefault(_text(qid), {})
        if doc in judged:
            raise InputError(f"{path}: line {number}: query {_text(qid)}: document "
                             f"{_text(doc)} is judged twice")
        judged[doc] = value
    if not qrels:
        raise InputError(f"{path}: no judgements (empty qrels file)")
    return qrels


def read_run(path: str) -> tuple[dict[str, tuple[list, list]], list[str]]:
    """``({qid: (docnos, scores)}, tags)`` from a run file, in file order."""
    run: dict[str, tuple[list, list]] = {}
    tags: dict[str, None] = {}
    for number, fields in _lines(path, "run"):
        if len(fields) != 6:
            raise InputError(f"{path}: line {number}: expected 6 fields 'qid Q0 docno rank "
                             f"score tag', got {len(fields)} (is this a TREC run?)")
        qid, _, doc, _, score, tag = fields
        try:
            value = float(score)
        except ValueError:
            raise InputError(f"{path}: line {number}: score {_text(score)!r} is not a "
                             "number") from None
        docs, scores = run.setdefault(_qid(path, number, qid), ([], []))
        docs.append(doc)
        scores.append(value)
        tags[_text(tag)] = None
    if not run:
        raise InputError(f"{path}: no results (empty run file)")
    return run, list(tags)


def trec_order(docnos: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """trec_eval's ranking: score descending, ties by docno descending (byte-wise); NaN
    scores (``--nan-policy worst``) last.

    >>> trec_order(np.array([b"d1", b"d3", b"d2"]), np.array([1.0, 1.0, 2.0])).tolist()
    [2, 1, 0]
    """
    # lexsort is ascending with the last key primary; reversing gives descending on both
    return np.lexsort((docnos, scores, ~np.isnan(scores)))[::-1]


def load(run_path: str, qrels_path: str):
    """Queries as rows: ``(qids, scores, labels, offsets, unranked, docnos, notes, tags,
    judged, unranked_judged, max_label)``."""
    run, tags = read_run(run_path)
    qrels = read_qrels(qrels_path)
    qids = sorted(q for q in run if q in qrels)
    ignored = [q for q in run if q not in qrels]
    unanswered = [q for q in qrels if q not in run]
    if not qids:
        raise InputError(f"{run_path}: no query of the run has judgements in {qrels_path} "
                         "(trec_eval: 'No queries with both results and relevance info')")
    scores, labels, docnos, lengths, un_labels, un_lengths = [], [], [], [], [], []
    judged_rows = []
    for q in qids:
        check_row_length(run_path, len(run[q][0]), f"query {q}")
        docs = np.array(run[q][0], dtype=bytes)
        s = np.array(run[q][1], dtype=np.float64)
        order = np.lexsort((docs,))
        dup = np.flatnonzero(docs[order][1:] == docs[order][:-1])
        if dup.size:
            raise InputError(f"{run_path}: query {q}: document "
                             f"{_text(docs[order][dup[0]])} is retrieved twice (trec_eval "
                             "refuses duplicate documents too)")
        order = trec_order(docs, s)
        docs, s = docs[order], s[order]
        judged = qrels[q]
        labels.append(np.array([judged.get(d, 0) for d in docs.tolist()], dtype=np.float64))
        # judged: in the qrels with relevance >= 0 (a negative one is unjudged, in the pool)
        judged_rows.append(np.array([judged.get(d, -1) >= 0 for d in docs.tolist()],
                                    dtype=bool))
        retrieved = set(docs.tolist())
        missed = [v for d, v in judged.items() if d not in retrieved]
        un_labels.append(np.array(missed, dtype=np.float64))
        un_lengths.append(len(missed))
        scores.append(s)
        docnos.append(docs)
        lengths.append(len(docs))
    notes = []
    if ignored:
        notes.append(f"{run_path}: {_queries(ignored)} of the run {_have(ignored)} no "
                     f"judgements in {qrels_path} and {_are(ignored)} ignored, as trec_eval "
                     "ignores them")
    if unanswered:
        notes.append(f"{run_path}: {_queries(unanswered)} of {qrels_path} {_have(unanswered)} "
                     "no results in the run and {} not evaluated (trec_eval -c would count "
                     "{} as 0)".format(_are(unanswered),
                                       "it" if len(unanswered) == 1 else "them"))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    un_offsets = np.concatenate(([0], np.cumsum(un_lengths))).astype(np.int64)
    un_all = np.concatenate(un_labels)
    max_label = max(v for judged in qrels.values() for v in judged.values())
    return (np.array(qids, dtype=object), np.concatenate(scores), np.concatenate(labels),
            offsets, (un_all, un_offsets), np.concatenate(docnos), notes, tags,
            np.concatenate(judged_rows), un_all >= 0, float(max_label))


def _queries(qids) -> str:
    shown = ", ".join(qids[:3]) + (", ..." if len(qids) > 3 else "")
    return f"{len(qids)} {'query' if len(qids) == 1 else 'queries'} ({shown})"


def _have(qids) -> str:
    return "has" if len(qids) == 1 else "have"


def _are(qids) -> str:
    return "is" if len(qids) == 1 else "are"


def open_trec_run(path: str, qrels: str, options=None) -> LabelledDump:
    """Open a TREC run with its qrels as a labelled dump (see the module docstring)."""
    path, qrels = os.fspath(path), os.fspath(qrels)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a TREC run file")
    (qids, scores, labels, offsets, unranked, docnos, notes, tags, judged, un_judged,
     max_label) = load(path, qrels)
    rows = qids.size
    un_labels, un_offsets = unranked

    def batches(batch_rows):
        for lo in range(0, rows, batch_rows):
            hi = min(lo + batch_rows, rows)
            a, b = offsets[lo], offsets[hi]
            ua, ub = un_offsets[lo], un_offsets[hi]
            yield TrecBatch(scores[a:b], np.zeros(hi - lo, dtype=np.int64), lo,
                            offsets[lo:hi + 1] - a, labels=labels[a:b], ids=qids[lo:hi],
                            nbytes=int((b - a) * 8), items=None, judged=judged[a:b],
                            unranked=(un_labels[ua:ub], un_offsets[lo:hi + 1] - ua),
                            unranked_judged=un_judged[ua:ub], max_label=max_label)
    metadata = {"method": tags[0]} if len(tags) == 1 else {}
    info = RelevanceInfo("trec", items=False, original="given", unranked=True,
                         fields=(os.path.basename(qrels),))
    dump = LabelledDump(path, "trec", np.dtype(np.float64), metadata, batches, rows=rows,
                        nbytes=os.path.getsize(path), row_bytes=max(1, int(8 * scores.size
                                                                          // rows)),
                        warnings=notes, relevance=info)
    return dump


__all__ = ["open_trec_run", "read_run", "read_qrels", "trec_order", "TrecBatch"]
