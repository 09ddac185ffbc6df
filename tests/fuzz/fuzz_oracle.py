"""Independent readers and a closed-form oracle for the fuzzing harness.

Nothing here imports tieeval. The readers follow docs/input-formats.md with the reference
libraries (``numpy.load(allow_pickle=False)``, ``pyarrow.parquet.read_table``, the ``csv``
module) and a plain TREC parser written from trec_eval's formats; the figures follow
METRICS.md (sections 2, 4, 5 and 7) with per-row tie blocks cut by ``==`` on the stored
dtype:

* first / last: every tie block ordered by relevance descending / ascending;
* tie-aware HR@K: 1 - P(no relevant item in the top K), hypergeometric over the first tie
  block that holds a relevant item;
* tie-aware NDCG@K: each block's mean gain times the sum of its discounts inside the top K,
  over the ideal DCG of the row's best gains (a TREC query's: every judged document's);
* tie-aware MRR: E[1 / rank of the first relevant item], the minimum position of the
  relevant items of the first relevant block having the distribution
  P(J >= j) = C(n-j+1, p) / C(n, p).

A reader raises :class:`Invalid` when the file is not a valid dump under the documented
format (a NaN score, a positive index out of range, an ambiguous archive member ...):
tieeval must refuse such a file. Rows without a relevant item are skipped and counted.
"""

from __future__ import annotations

import csv
import math
import re
import zipfile
from dataclasses import dataclass, field

import numpy as np


class Invalid(Exception):
    """The file is not a valid dump (the independent reader refuses it)."""


@dataclass
class Row:
    scores: np.ndarray          # the stored dtype, never cast
    rel: np.ndarray             # float64 gains, max(label, 0)
    ideal: np.ndarray | None = None  # gains the ideal DCG ranks (TREC: every judged doc)


@dataclass
class Rows:
    rows: list = field(default_factory=list)
    labelled: bool = False


# ---------------------------------------------------------------------------------------
# scores and labels, as the format documentation defines them

def _check_scores(values: np.ndarray, where: str) -> None:
    kind, size = values.dtype.kind, values.dtype.itemsize
    if not ((kind == "f" and size <= 8) or kind in "iu"):
        raise Invalid(f"{where}: scores of dtype {values.dtype}")
    if kind == "f" and np.isnan(values).any():
        raise Invalid(f"{where}: NaN score")


def _check_labels(values: np.ndarray, where: str) -> np.ndarray:
    if values.dtype.kind not in "fiub":
        raise Invalid(f"{where}: labels of dtype {values.dtype}")
    out = values.astype(np.float64)
    if not np.isfinite(out).all():
        raise Invalid(f"{where}: non-finite label")
    return out


def _single(scores: np.ndarray, positive: int, where: str) -> Row:
    if not 0 <= positive < scores.size:
        raise Invalid(f"{where}: positive {positive} outside 0..{scores.size - 1}")
    rel = np.zeros(scores.size)
    rel[positive] = 1.0
    return Row(scores, rel)


def _labelled(scores: np.ndarray, labels: np.ndarray, where: str) -> Row:
    if labels.shape != scores.shape:
        raise Invalid(f"{where}: labels of shape {labels.shape} for scores {scores.shape}")
    return Row(scores, np.maximum(_check_labels(labels, where), 0.0))


def _from_index_lists(scores, pos, neg, where) -> Row:
    labels = np.zeros(scores.size)
    for value, idx in ((1.0, pos), (-1.0, neg)):
        if idx is None:
            continue
        idx = np.asarray(idx).reshape(-1)
        if idx.dtype.kind not in "iu":
            raise Invalid(f"{where}: index list of dtype {idx.dtype}")
        idx = idx.astype(np.int64) if idx.dtype.kind == "i" else idx
        idx = idx[idx != -1] if idx.dtype.kind == "i" else idx
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= scores.size):
            raise Invalid(f"{where}: index out of range")
        if value < 0 and (labels[idx] > 0).any():
            raise Invalid(f"{where}: an index is both positive and negative")
        labels[idx] = value
    return Row(scores, np.maximum(labels, 0.0))


# ---------------------------------------------------------------------------------------
# NPY and NPZ

def read_npy(path: str) -> Rows:
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any refusal of the reference reader
        raise Invalid(f"numpy.load: {type(exc).__name__}: {exc}") from None
    if not isinstance(arr, np.ndarray):
        raise Invalid("not a single array")
    return _wide_matrix(arr, None, None)


def _wide_matrix(scores, positive, relevance) -> Rows:
    if scores.ndim != 2 or scores.shape[0] == 0 or scores.shape[1] == 0:
        raise Invalid(f"scores of shape {scores.shape}")
    _check_scores(scores, "scores")
    out = Rows(labelled=relevance is not None)
    if positive is not None:
        if positive.ndim != 1 or positive.shape[0] != scores.shape[0]:
            raise Invalid(f"positive of shape {positive.shape}")
        if positive.dtype.kind not in "iu":
            raise Invalid(f"positive of dtype {positive.dtype}")
    for i in range(scores.shape[0]):
        where = f"row {i}"
        if relevance is None:
            out.rows.append(_single(scores[i], 0 if positive is None else int(positive[i]),
                                    where))
        elif "labels" in relevance:
            out.rows.append(_labelled(scores[i], relevance["labels"][i], where))
        else:
            out.rows.append(_from_index_lists(
                scores[i], *(None if relevance.get(k) is None else relevance[k][i]
                             for k in ("positives", "negatives")), where))
    return out


def read_npz(path: str) -> Rows:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n[:-4] if n.endswith(".npy") else n for n in archive.namelist()]
    except Exception as exc:  # noqa: BLE001
        raise Invalid(f"zipfile: {type(exc).__name__}: {exc}") from None
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:  # np.load would silently take one of them
        raise Invalid(f"ambiguous members {dup}")
    arrays = {}
    try:
        with np.load(path, allow_pickle=False) as npz:
            for name in npz.files:
                try:
                    arrays[name] = npz[name]
                except Exception as exc:
                    # a member the format does not use (not scores, positive or relevance)
                    # cannot change a figure: only the used ones must read. A directory
                    # entry that disagrees with its member's own header is no such case:
                    # the archive's index is damaged, and may have renamed a used member.
                    if name in ("scores", "positive", "labels", "positives", "negatives") \
                            or "differ" in str(exc):
                        raise
    except Exception as exc:  # noqa: BLE001
        raise Invalid(f"numpy.load: {type(exc).__name__}: {exc}") from None
    if "scores" not in arrays:
        raise Invalid("no scores member")
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray):
            raise Invalid(f"member {name} is not an array")
    scores = arrays["scores"]
    rel_names = [k for k in ("labels", "positives", "negatives") if k in arrays]
    if not rel_names:
        return _wide_matrix(scores, arrays.get("positive"), None)
    if "positive" in arrays or ("labels" in rel_names and len(rel_names) > 1):
        raise Invalid("relevance given two ways")
    relevance = {}
    for k in rel_names:
        v = arrays[k]
        if k != "labels" and v.ndim == 1:
            v = v[:, None]
        if v.shape[0] != scores.shape[0] if v.ndim else True:
            raise Invalid(f"{k} of shape {v.shape}")
        relevance[k] = v
    return _wide_matrix(scores, None, relevance)


# ---------------------------------------------------------------------------------------
# Parquet: wide (a list column per row) and long (a row per candidate)

def _column(table, name):
    col = table.column(name)
    if col.null_count:
        raise Invalid(f"null in column {name}")
    return col


def _is_list(pa, type_) -> bool:
    return (pa.types.is_list(type_) or pa.types.is_large_list(type_)
            or pa.types.is_fixed_size_list(type_))


def _list_values(col, i, where):
    import pyarrow as pa
    if not _is_list(pa, col.type):
        raise Invalid(f"{where}: a column of type {col.type}, not a list")
    values = col[i].values  # list scalars: the flat child array of this row
    if values is None or values.null_count:
        raise Invalid(f"{where}: null in a list")
    return np.asarray(values.to_numpy(zero_copy_only=False))


def read_parquet(path: str) -> Rows:
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        declared = pq.ParquetFile(path).metadata.num_rows
        names = pq.read_schema(path).names
        # the columns the format uses: a damaged column no reader needs changes no figure
        used = [n for n in names if n in ("scores", "positive", "labels", "positives",
                                          "negatives", "instance", "position", "score",
                                          "label")]
        table = pq.read_table(path, columns=used)
    except Exception as exc:  # noqa: BLE001
        raise Invalid(f"pyarrow.parquet.read_table: {type(exc).__name__}: {exc}") from None
    if table.num_rows != declared:
        raise Invalid(f"{table.num_rows} rows read, {declared} declared")
    names = table.column_names
    if "scores" not in names and "instance" in names and "score" in names:
        return _long(path, {n: table.column(n).to_pylist() for n in names
                            if n in ("instance", "position", "score", "label")},
                     {n: table.schema.field(n).type for n in names})
    if "scores" not in names:
        raise Invalid("no scores column")
    scores = _column(table, "scores")
    if not _is_list(pa, scores.type):
        raise Invalid(f"scores of type {scores.type}")
    rel_names = [k for k in ("labels", "positives", "negatives") if k in names]
    if rel_names and ("positive" in names or ("labels" in rel_names and len(rel_names) > 1)):
        raise Invalid("relevance given two ways")
    positive = None
    if "positive" in names:
        positive = np.asarray(_column(table, "positive").to_numpy())
        if positive.dtype.kind not in "iu":
            raise Invalid(f"positive of dtype {positive.dtype}")
    rel_cols = {k: _column(table, k) for k in rel_names}
    if table.num_rows == 0:
        raise Invalid("no instances")
    out = Rows(labelled=bool(rel_names))
    for i in range(table.num_rows):
        where = f"row {i}"
        s = _list_values(scores, i, where)
        _check_scores(s, where)
        if not rel_names:
            out.rows.append(_single(s, 0 if positive is None else int(positive[i]), where))
        elif "labels" in rel_cols:
            out.rows.append(_labelled(s, _list_values(rel_cols["labels"], i, where), where))
        else:
            lists = [None if k not in rel_cols else _list_values(rel_cols[k], i, where)
                     for k in ("positives", "negatives")]
            out.rows.append(_from_index_lists(s, *lists, where))
    return out


_INT = re.compile(r"[+-]?\d+\Z")
_HEX_INT = re.compile(r"0x[0-9a-fA-F]+\Z")
_CANONICAL = re.compile(r"-?(0|[1-9][0-9]{0,18})\Z")
# C99 strtod's decimal forms (hexadecimal ones aside): NAN(n-char-sequence) included
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity"
                    r"|nan(\([0-9A-Za-z_]*\))?)\Z", re.IGNORECASE)


def _number(text: str, where: str) -> float:
    """A decimal number as C's strtod reads a whole field (no '_', no blanks)."""
    if not _FLOAT.match(text):
        raise Invalid(f"{where}: {text!r} is not a number")
    return float("nan") if "(" in text else float(text)


def read_csv(path: str) -> Rows:
    try:
        # utf-8-sig: a byte-order mark is no part of the header, for pandas and pyarrow alike
        with open(path, newline="", encoding="utf-8-sig") as fh:
            records = list(csv.reader(fh))
    except Exception as exc:  # noqa: BLE001
        raise Invalid(f"csv: {type(exc).__name__}: {exc}") from None
    records = [r for r in records if r]
    if not records:
        raise Invalid("empty CSV")
    header, body = records[0], records[1:]
    if len(set(header)) != len(header):
        raise Invalid("repeated column name")
    if any(len(r) != len(header) for r in body):
        raise Invalid("a row with another number of fields")
    columns = {name: [r[j] for r in body] for j, name in enumerate(header)}
    if "instance" not in columns or "score" not in columns:
        raise Invalid("no instance / score column")
    data, types = {}, {}
    for name in ("instance", "position", "score", "label"):
        if name not in columns:
            continue
        values = columns[name]
        if any(v == "" for v in values):
            raise Invalid(f"empty field in {name}")
        # numbers may carry blanks around them, as pandas and pyarrow read CSV; instance ids
        # are text unless every one is an integer written canonically ("1 " and "01" are
        # other instances than "1")
        if name == "instance":
            data[name] = [int(v) for v in values] if all(
                _CANONICAL.match(v) and -2 ** 63 <= int(v) < 2 ** 63 for v in values) else values
        elif name == "position":
            # pyarrow's CSV reader also takes C's hexadecimal integers ('0x10' is 16)
            if not all(_INT.match(v.strip(" ")) or _HEX_INT.match(v) for v in values):
                raise Invalid("a position that is not an integer")
            data[name] = [int(v, 16) if _HEX_INT.match(v) else int(v) for v in values]
        else:
            data[name] = [_number(v.strip(" "), name) for v in values]
        types[name] = None
    return _long(path, data, types)


def _long(path: str, data: dict, types: dict) -> Rows:
    import pyarrow as pa
    for name in ("instance", "score"):
        if name not in data:
            raise Invalid(f"long layout without {name}")
    n = len(data["score"])
    if n == 0:
        raise Invalid("no rows")
    for name, values in data.items():
        if any(v is None for v in values):
            raise Invalid(f"null in {name}")
    stype = types.get("score")
    if stype is not None:
        if not (pa.types.is_floating(stype) or pa.types.is_integer(stype)):
            raise Invalid(f"score of type {stype}")
        score = np.asarray(pa.array(data["score"], type=stype).to_numpy(zero_copy_only=False))
    else:
        score = np.asarray(data["score"], dtype=np.float64)
    _check_scores(score, "score")
    itype = types.get("instance")
    if itype is not None and not (pa.types.is_integer(itype) or pa.types.is_string(itype)
                                  or pa.types.is_large_string(itype)
                                  or pa.types.is_dictionary(itype)):
        raise Invalid(f"instance of type {itype}")
    if "position" in data:
        ptype = types.get("position")
        if ptype is not None and not pa.types.is_integer(ptype):
            raise Invalid(f"position of type {ptype}")
        position = [int(p) for p in data["position"]]
    else:
        position = list(range(n))
    label = None
    if "label" in data:
        ltype = types.get("label")
        if ltype is not None and not (pa.types.is_floating(ltype) or pa.types.is_integer(ltype)
                                      or pa.types.is_boolean(ltype)):
            raise Invalid(f"label of type {ltype}")
        label = np.asarray([float(v) for v in data["label"]], dtype=np.float64)
        if not np.isfinite(label).all():
            raise Invalid("non-finite label")
    groups: dict = {}
    for j, inst in enumerate(data["instance"]):
        groups.setdefault(inst, []).append(j)
    out = Rows()
    rows = []
    for inst, idx in groups.items():
        pos = [position[j] for j in idx]
        if len(set(pos)) != len(pos):
            raise Invalid(f"instance {inst!r}: a position twice")
        idx = [j for _, j in sorted(zip(pos, idx))]
        rows.append((inst, score[idx], None if label is None else label[idx]))
    single = label is None or all(np.count_nonzero(lab == 1) == 1
                                  and np.count_nonzero(lab) == 1 for _, _, lab in rows)
    out.labelled = not single
    for inst, s, lab in rows:
        if label is None:
            out.rows.append(_single(s, 0, f"instance {inst!r}"))
        else:
            out.rows.append(Row(s, np.maximum(lab, 0.0)))
    return out


# ---------------------------------------------------------------------------------------
# TREC run and qrels, from trec_eval's formats (get_trec_results.c, get_qrels.c)

def _trec_lines(data: bytes, comment_col0: bool):
    for number, line in enumerate(data.split(b"\n"), 1):
        if comment_col0 and line[:1] == b"#":
            continue
        if not comment_col0 and line.lstrip(b" \t\r\x0b\x0c")[:1] == b"#":
            continue
        fields = line.split()  # ASCII blanks, as C's isspace
        if fields:
            yield number, fields


_HEX_PREFIX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                         r"([pP][+-]?\d+)?")
_DEC_PREFIX = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|infinity|inf"
                         r"|nan(\([0-9A-Za-z_]*\))?)", re.IGNORECASE)


def _trec_number(text: bytes, where: str) -> float:
    """A field as trec_eval reads it: C's strtod on its longest numeric prefix ('1_000' is
    1.0, '0x10' is 16). A field with no numeric prefix is not a number (trec_eval's atof
    would read 0; the format documentation makes it an error)."""
    s = text.decode("latin-1")
    hexa = _HEX_PREFIX.match(s)
    if hexa:
        return float.fromhex(hexa.group(0))
    dec = _DEC_PREFIX.match(s)
    if not dec:
        raise Invalid(f"{where}: {s!r} is not a number")
    return float("nan") if "(" in dec.group(0) else float(dec.group(0))


def _without_bom(data: bytes) -> bytes:
    """A UTF-8 byte-order mark opening a TREC file is no part of its first query id."""
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def read_trec(run_path: str, qrels_path: str) -> Rows:
    with open(qrels_path, "rb") as fh:
        qrels: dict = {}
        for number, fields in _trec_lines(_without_bom(fh.read()), True):
            if len(fields) != 4:
                raise Invalid(f"qrels line {number}: {len(fields)} fields")
            qid, _, doc, rel = fields
            value = _trec_number(rel, f"qrels line {number}")
            if not math.isfinite(value):
                raise Invalid(f"qrels line {number}: relevance {value}")
            judged = qrels.setdefault(qid.decode("utf-8"), {})
            if doc in judged:
                raise Invalid(f"qrels line {number}: judged twice")
            judged[doc] = value
    if not qrels:
        raise Invalid("empty qrels")
    with open(run_path, "rb") as fh:
        run: dict = {}
        for number, fields in _trec_lines(_without_bom(fh.read()), False):
            if len(fields) < 6:
                raise Invalid(f"run line {number}: {len(fields)} fields")
            qid, _, doc, _, score = fields[:5]
            try:
                q = qid.decode("utf-8")
            except UnicodeDecodeError:
                raise Invalid(f"run line {number}: query id not UTF-8") from None
            value = _trec_number(score, f"run line {number}")
            run.setdefault(q, []).append((doc, value))
    if not run:
        raise Invalid("empty run")
    out = Rows(labelled=True)
    for q in sorted(set(run) & set(qrels)):  # trec_eval evaluates only these queries
        docs, judged = dict(run[q]), qrels[q]
        if len(docs) != len(run[q]):
            raise Invalid(f"query {q}: a document retrieved twice")
        scores = np.array(list(docs.values()), dtype=np.float64)
        if np.isnan(scores).any():
            raise Invalid(f"query {q}: NaN score")
        rel = np.array([max(judged.get(d, 0.0), 0.0) for d in docs], dtype=np.float64)
        ideal = np.array([max(v, 0.0) for v in judged.values()], dtype=np.float64)
        out.rows.append(Row(scores, rel, ideal))
    return out


def read(kind: str, path: str, qrels: str | None = None) -> Rows:
    if kind == "trec":
        return read_trec(path, qrels)
    if path.endswith(".npy"):
        return read_npy(path)
    if path.endswith(".npz"):
        return read_npz(path)
    if path.endswith(".parquet"):
        return read_parquet(path)
    if path.endswith(".csv"):
        return read_csv(path)
    raise ValueError(path)


# ---------------------------------------------------------------------------------------
# the closed forms

def _discount(r: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(np.asarray(r, dtype=np.float64) + 1.0)


def _blocks(scores: np.ndarray) -> list:
    """Tie blocks in decreasing score order: index arrays, ties by ``==`` on the stored
    dtype (np.unique also treats -0.0 and 0.0 as one value)."""
    return [np.flatnonzero(scores == v) for v in np.unique(scores)[::-1]]


def _realised(gains_in_order: np.ndarray, rel_in_order: np.ndarray, k: int, idcg: float):
    top = rel_in_order[:k] > 0
    hits = np.flatnonzero(rel_in_order > 0)
    hr = float(top.any())
    ndcg = float(np.sum(gains_in_order[:k] * _discount(np.arange(1, min(k, gains_in_order.size)
                                                                 + 1)))) / idcg
    rr = 1.0 / (hits[0] + 1) if hits.size else 0.0
    return hr, ndcg, rr


def row_figures(row: Row, k: int) -> dict:
    """``{"HR": (first, last, tie_aware), "NDCG": ..., "MRR": ...}`` for one row with at
    least one relevant item."""
    s, rel = row.scores, row.rel
    blocks = _blocks(s)
    ideal = np.sort(rel if row.ideal is None else row.ideal)[::-1]
    depth = min(k, ideal.size if row.ideal is not None else s.size)
    idcg = float(np.sum(ideal[:depth] * _discount(np.arange(1, depth + 1))))
    first_order = np.concatenate([b[np.argsort(-rel[b], kind="stable")] for b in blocks])
    last_order = np.concatenate([b[np.argsort(rel[b], kind="stable")] for b in blocks])
    first = _realised(rel[first_order], rel[first_order], k, idcg)
    last = _realised(rel[last_order], rel[last_order], k, idcg)
    # tie-aware: blocks in order, a = items strictly above
    a = 0
    e_dcg = 0.0
    hr = rr = None  # stay 0 when no relevant item was retrieved (a TREC query)
    for b in blocks:
        n = b.size
        lo, hi = min(a, k), min(a + n, k)
        if hi > lo:
            e_dcg += float(rel[b].mean()) * float(np.sum(_discount(np.arange(lo + 1, hi + 1))))
        p = int(np.count_nonzero(rel[b] > 0))
        if p and hr is None:
            m = min(max(k - a, 0), n)
            miss = 1.0
            for j in range(p):  # C(n-p, m) / C(n, m) as a product of p factors in [0, 1]
                miss *= max(n - m - j, 0) / (n - j)
            hr = 1.0 - miss
            # P(J >= j) = C(n-j+1, p) / C(n, p); E[1/(a+J)] = sum_j P(J=j)/(a+j)
            tail = [math.prod((n - j + 1 - i) / (n - i) for i in range(p))
                    for j in range(1, n + 2)]
            rr = math.fsum((tail[j - 1] - tail[j]) / (a + j) for j in range(1, n + 1))
        a += n
    return {"HR": (first[0], last[0], hr or 0.0), "NDCG": (first[1], last[1], e_dcg / idcg),
            "MRR": (first[2], last[2], rr or 0.0)}


def figures(rows: Rows, ks: list[int]) -> dict:
    """``{label: (first, last, tie_aware, instances, skipped)}``: dataset means over the
    rows with a relevant item (MRR: untruncated)."""
    useful = [r for r in rows.rows if ((r.rel if r.ideal is None else r.ideal) > 0).any()]
    skipped = len(rows.rows) - len(useful)
    out = {}
    per = {kk: [row_figures(r, kk) for r in useful] for kk in ks}
    for kk in ks:
        for metric in ("HR", "NDCG"):
            cols = [math.fsum(f[metric][c] for f in per[kk]) / len(useful) if useful else None
                    for c in range(3)]
            out[f"{metric}@{kk}"] = (*cols, len(useful), skipped)
    mrr = [f["MRR"] for f in per[ks[0]]]  # untruncated: the same at every k
    out["MRR"] = (*[math.fsum(f[c] for f in mrr) / len(useful) if useful else None
                    for c in range(3)], len(useful), skipped)
    return out


def close(x: float | None, y: float | None, rel: float = 1e-12) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return abs(x - y) <= rel * max(abs(x), abs(y)) + 1e-15


__all__ = ["Invalid", "Row", "Rows", "read", "figures", "row_figures", "close"]
