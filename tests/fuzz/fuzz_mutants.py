"""Seeded mutants of valid dumps, one format at a time.

``make(fmt, case, seed, folder)`` writes mutant number ``case`` of format ``fmt`` and
returns ``(path, qrels, mutation class, description)``; the same arguments always give the
same bytes. Each case draws a fresh valid dump (random shape, dtype, ties, relevance
fields, writer options) and applies one mutation class of its format:

* ``valid``: no mutation (a control: it must be accepted with the oracle's figures);
* ``bytes`` / ``truncate``: flipped, set, inserted or deleted bytes; a cut file;
* ``header``: .npy header edits (shape, dtype, order), in .npy files and in NPZ members
  (before zipping, so the member's CRC-32 is right);
* ``values``: NaN, +-inf, huge, -0.0, subnormal and integer-extreme scores, new ties;
* ``dtype``: the scores stored in another dtype (float16/64, big-endian, integers, bool,
  complex, text, void);
* ``positive`` / ``labels``: out-of-range, negative, float and mis-shaped positive fields,
  relevance labels and index lists;
* ``members``: NPZ archives with duplicated, missing, extra or misnamed members;
* ``ragged`` / ``nulls`` / ``pages`` / ``footer``: Parquet rows of different lengths, null
  rows and elements, data pages damaged in files without page checksums, a damaged footer
  (schema, row counts, offsets) with its length kept consistent;
* ``long``: long-layout positions repeated or missing, labels with no or several
  positives, string ids, shuffled rows;
* ``lines``: text lines duplicated, dropped, with fields replaced or added (CSV, TREC);
* ``numbers``: TREC scores and relevance written in other number syntaxes (``1_000``,
  ``0x10``, ``1e400``, ``nan`` ...); ``qrels``: the qrels file mutated instead of the run.
"""

from __future__ import annotations

import io
import os
import re
import zipfile

import numpy as np

SEED = int(os.environ.get("TIEEVAL_FUZZ_SEED", "20240611"))
FORMATS = ("npy", "npz_stored", "npz_deflated", "parquet_list", "parquet_fixed",
           "long_parquet", "long_csv", "trec")

CLASSES = {
    "npy": ("valid", "bytes", "truncate", "header", "values", "dtype"),
    "npz_stored": ("valid", "bytes", "truncate", "header", "values", "dtype", "positive",
                   "labels", "members"),
    "npz_deflated": ("valid", "bytes", "truncate", "header", "values", "dtype", "positive",
                     "labels", "members"),
    "parquet_list": ("valid", "bytes", "truncate", "values", "dtype", "positive", "labels",
                     "ragged", "nulls", "pages", "footer"),
    "parquet_fixed": ("valid", "bytes", "truncate", "values", "dtype", "positive", "labels",
                      "nulls", "pages", "footer"),
    "long_parquet": ("valid", "bytes", "truncate", "values", "dtype", "long", "nulls",
                     "pages", "footer"),
    "long_csv": ("valid", "bytes", "truncate", "values", "lines", "long"),
    "trec": ("valid", "bytes", "truncate", "values", "lines", "numbers", "qrels"),
}

SPECIAL = [np.nan, np.inf, -np.inf, 1e308, -1e308, 3.4e38, 65504.0, -0.0, 0.0, 5e-324,
           1e-45, 2.0 ** 53, 2.0 ** 53 + 2, -1.0, 1.0]
DTYPES = ["<f2", "<f4", "<f8", ">f4", ">f8", "<i8", ">i4", "|i1", "|u1", "<u8", "|b1",
          "<c8", "<U3", "|V8", "<f16" if hasattr(np, "float128") else "<f8"]
NUMBERS = [b"1_000", b"0x10", b"1e400", b"-1e400", b"nan", b"NaN", b"inf", b"-Infinity",
           b"+1.5", b".5", b"5.", b"1e-320", b"-0", b"1.0.0", b"1e", b"abc", b"\xc2\xb9",
           b"1,5", b"0.1f", b"9" * 400, b"1E+2", b"++1", b"infx", b"nan(1)", b"\xef\xbc\x91"]


# ---------------------------------------------------------------------------------------
# valid dumps

def _matrix(rng, rows=None, cols=None):
    rows = int(rng.integers(1, 14)) if rows is None else rows
    cols = int(rng.integers(1, 8)) if cols is None else cols
    levels = int(rng.choice([2, 4, 10, 1000]))
    values = rng.integers(0, levels, (rows, cols)) / levels
    dtype = rng.choice(["<f4", "<f8", "<f2", "<i8"])
    if dtype == "<i8":
        return (values * levels).astype(np.int64)
    return values.astype(dtype)


def _labels(rng, shape, how):
    if how == "binary":
        return (rng.random(shape) < 0.3).astype(np.int8)
    if how == "graded":
        return rng.integers(-1, 4, shape).astype(np.int64)
    return np.round(rng.random(shape) * 3, 2)  # continuous gains


def _relevance(rng, scores):
    """None (single positive, column 0), a positive field, labels or index lists."""
    choice = int(rng.integers(5))
    rows, cols = scores.shape
    if choice == 0:
        return {}
    if choice == 1:
        return {"positive": rng.integers(0, cols, rows)}
    if choice == 2:
        return {"labels": _labels(rng, scores.shape, rng.choice(["binary", "graded", "cont"]))}
    m = int(rng.integers(1, cols + 1))
    pos = np.full((rows, m), -1, dtype=np.int64)
    for i in range(rows):
        take = rng.permutation(cols)[:int(rng.integers(0, m + 1))]
        pos[i, :take.size] = take
    out = {"positives": pos if m > 1 else pos[:, 0]}
    if choice == 4:
        neg = np.full(rows, -1, dtype=np.int64)
        for i in range(rows):
            free = [c for c in range(cols) if c not in pos[i]]
            if free:
                neg[i] = int(rng.choice(free))
        out["negatives"] = neg
    return out


def _npy_bytes(array) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asanyarray(array), allow_pickle=False)
    return buf.getvalue()


def _npz_bytes(members, deflated: bool) -> bytes:
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, value in members:
            zf.writestr(name, value if isinstance(value, bytes) else _npy_bytes(value))
    return buf.getvalue()


def _list_column(pa, values, fixed: bool, rng):
    rows = [np.asarray(r) for r in values]
    dtype = rows[0].dtype if rows else np.dtype("f4")
    item = pa.from_numpy_dtype(dtype) if dtype.kind != "b" else pa.bool_()
    if fixed and len({r.size for r in rows}) == 1:
        width = rows[0].size
        flat = pa.array(np.concatenate(rows) if rows else np.zeros(0, dtype), type=item)
        return pa.FixedSizeListArray.from_arrays(flat, width)
    kind = pa.large_list(item) if rng.random() < 0.3 else pa.list_(item)
    return pa.array([r.tolist() for r in rows], type=kind)


def _parquet_bytes(table, rng, checksum=None) -> bytes:
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=int(rng.choice([2, 5, 1000])),
                   compression=str(rng.choice(["none", "snappy", "zstd", "gzip"])),
                   use_dictionary=bool(rng.random() < 0.5),
                   write_page_checksum=bool(rng.random() < 0.5) if checksum is None
                   else checksum, data_page_size=int(rng.choice([64, 1 << 20])))
    return buf.getvalue()


def _wide_table(pa, scores_rows, relevance, fixed, rng):
    cols = {"scores": _list_column(pa, scores_rows, fixed, rng)}
    for name, value in relevance.items():
        if name == "positive":
            cols[name] = pa.array(np.asarray(value))
        else:
            value = np.asarray(value)
            rows = [r if value.ndim > 1 else r.reshape(1) for r in value]
            if name != "labels":
                rows = [r[r != -1] if r.dtype.kind == "i" else r for r in rows]
            cols[name] = _list_column(pa, rows, fixed and name == "labels", rng)
    return pa.table(cols)


def _long_rows(rng, scores, labels):
    """``(instance, position, score, label)`` lists of a wide matrix, rows shuffled or not."""
    inst, pos, sc, lab = [], [], [], []
    gaps = rng.random() < 0.3
    for i in range(scores.shape[0]):
        for j in range(scores.shape[1]):
            inst.append(i)
            pos.append(j * 3 + 1 if gaps else j)
            sc.append(scores[i, j])
            lab.append(None if labels is None else labels[i, j])
    order = rng.permutation(len(sc)) if rng.random() < 0.3 else np.arange(len(sc))
    pick = [int(o) for o in order]
    return ([inst[o] for o in pick], [pos[o] for o in pick], [sc[o] for o in pick],
            None if labels is None else [lab[o] for o in pick])


# ---------------------------------------------------------------------------------------
# byte-level mutations

def _bytes_edit(rng, data: bytearray) -> str:
    what = []
    for _ in range(int(rng.integers(1, 4))):
        if not data:
            break
        op = int(rng.integers(4))
        i = int(rng.integers(len(data)))
        if op == 0:
            data[i] ^= 1 << int(rng.integers(8))
            what.append(f"flip {i}")
        elif op == 1:
            data[i] = int(rng.choice([0, 0x7F, 0x80, 0xFF, ord("9"), ord(","), 10, 32]))
            what.append(f"set {i}")
        elif op == 2:
            data[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
            what.append(f"insert {i}")
        else:
            n = int(rng.integers(1, 16))
            del data[i:i + n]
            what.append(f"delete {i}+{n}")
    return "; ".join(what)


def _truncate(rng, data: bytearray) -> str:
    n = int(rng.integers(0, max(1, len(data))))
    del data[n:]
    return f"truncate {n}"


_SHAPE = re.compile(rb"'shape': \(([^)]*)\)")
_DIMS = [b"0", b"1", b"-1", b"2", b"7", b"255", b"65536", b"2147483648",
         b"4611686018427387904", b"9223372036854775807", b"18446744073709551616",
         b"99999999999999999999999", b"", b"1e3", b"'a'", b"None", b"True", b"3.0"]


def _header_edit(rng, data: bytearray) -> str:
    text = bytes(data)
    hits = list(_SHAPE.finditer(text))
    choice = int(rng.integers(5))
    if not hits:
        return _bytes_edit(rng, data)
    hit = hits[int(rng.integers(len(hits)))]
    if choice == 0:
        dims = [_DIMS[int(rng.integers(len(_DIMS)))] for _ in range(int(rng.integers(0, 4)))]
        new = b"'shape': (" + b", ".join(dims) + (b",)" if len(dims) == 1 else b")")
    elif choice == 1:
        new = hit.group(0).replace(b"(", b"(" + _DIMS[int(rng.integers(len(_DIMS)))] + b", ", 1)
    elif choice == 2:
        start = text.rfind(b"'descr': '", 0, hit.start())
        if start < 0:
            return _bytes_edit(rng, data)
        descr = rng.choice(DTYPES).encode()
        end = data.index(b"'", start + 10)
        data[start + 10:end] = descr
        return f"descr {descr.decode()}"
    elif choice == 3:
        if b"'fortran_order': False" in text:
            data[:] = text.replace(b"'fortran_order': False", b"'fortran_order': True ", 1)
            return "fortran"
        return _bytes_edit(rng, data)
    else:  # a row more or fewer than the data holds
        dims = hit.group(1).split(b",")
        try:
            first = int(dims[0]) + int(rng.choice([-1, 1, 2]))
        except ValueError:
            return _bytes_edit(rng, data)
        dims[0] = str(max(first, 0)).encode()
        new = b"'shape': (" + b",".join(dims) + b")"
    data[hit.start():hit.end()] = new
    return f"shape {new.decode(errors='replace')}"


def _line_edit(rng, data: bytearray) -> str:
    lines = bytes(data).split(b"\n")
    i = int(rng.integers(len(lines)))
    choice = int(rng.integers(8))
    sep = b"," if b"," in lines[i] else b" "
    if choice == 0:
        lines.insert(i, lines[i])
    elif choice == 1:
        del lines[i]
    elif choice in (2, 3):
        fields = lines[i].split(sep)
        fields[int(rng.integers(len(fields)))] = (NUMBERS + _DIMS)[
            int(rng.integers(len(NUMBERS) + len(_DIMS)))]
        lines[i] = sep.join(fields)
    elif choice == 4:
        lines[i] = lines[i] + sep + b"x"
    elif choice == 5:
        lines[i] = (b"\xef\xbb\xbf" if i == 0 else b"#") + lines[i]
    elif choice == 6:
        lines[i] = lines[i].replace(sep, rng.choice([b"\t", b"  ", b"\r", b" , "]), 1)
    else:
        fields = lines[i].split(sep)
        if len(fields) > 1:
            del fields[int(rng.integers(len(fields)))]
        lines[i] = sep.join(fields)
    data[:] = b"\n".join(lines)
    return f"line {i} edit {choice}"


# ---------------------------------------------------------------------------------------
# value-level mutations (the file stays well formed)

def _poke(rng, scores):
    scores = np.array(scores)
    if scores.size == 0:
        return scores, "empty"
    what = []
    for _ in range(int(rng.integers(1, 4))):
        i = tuple(int(rng.integers(n)) for n in scores.shape)
        v = SPECIAL[int(rng.integers(len(SPECIAL)))]
        if scores.dtype.kind in "iu":
            info = np.iinfo(scores.dtype)
            v = int(rng.choice([info.min, info.max, 0, -1 if info.min < 0 else 1]))
        elif scores.dtype.kind == "f" and np.isfinite(v):
            v = float(np.clip(v, -np.finfo(scores.dtype).max, np.finfo(scores.dtype).max))
        if rng.random() < 0.3 and scores.size > 1:  # a tie with another cell
            j = tuple(int(rng.integers(n)) for n in scores.shape)
            scores[i] = scores[j]
            what.append(f"{i}={j}")
        else:
            with np.errstate(all="ignore"):
                scores[i] = v
            what.append(f"{i}={v!r}")
    return scores, ", ".join(what)


def _recast(rng, scores):
    dtype = np.dtype(str(rng.choice(DTYPES)))
    with np.errstate(all="ignore"):
        if dtype.kind == "V":
            out = np.zeros(scores.shape, dtype)
        elif dtype.kind == "U":
            out = scores.astype(np.float64).astype(dtype)
        else:
            out = scores.astype(dtype)
    return out, f"dtype {dtype.str}"


def _bad_positive(rng, rows, cols):
    choice = int(rng.integers(6))
    if choice == 0:
        p = rng.integers(0, cols, rows)
        p[int(rng.integers(rows))] = int(rng.choice([cols, -1, 2 ** 31, -cols]))
        return p, "out of range"
    if choice == 1:
        return rng.integers(0, cols, rows).astype(np.float64), "float"
    if choice == 2:
        return rng.integers(0, cols, rows + int(rng.choice([-1, 1]))), "length"
    if choice == 3:
        return rng.integers(0, cols, rows).astype(np.uint64) + np.uint64(2 ** 64 - cols), \
            "uint wrap"
    if choice == 4:
        return rng.integers(0, cols, (rows, 1)), "2-D"
    return rng.integers(0, cols, rows).astype(np.int8), "int8"


def _bad_labels(rng, scores):
    rows, cols = scores.shape
    choice = int(rng.integers(7))
    if choice == 0:
        lab = _labels(rng, scores.shape, "graded").astype(np.float64)
        lab[tuple(int(rng.integers(n)) for n in lab.shape)] = rng.choice(
            [np.nan, np.inf, -np.inf, 1e300])
        return {"labels": lab}, "non-finite label"
    if choice == 1:
        return {"labels": _labels(rng, (rows, cols + 1), "binary")}, "labels wider"
    if choice == 2:
        return {"labels": np.zeros((rows, cols), np.int8)}, "no relevant at all"
    if choice == 3:
        pos = rng.integers(0, cols, rows)
        pos[int(rng.integers(rows))] = int(rng.choice([cols, -2, 2 ** 40]))
        return {"positives": pos}, "index out of range"
    if choice == 4:
        pos = rng.integers(0, cols, rows)
        return {"positives": pos, "negatives": pos.copy()}, "index in both lists"
    if choice == 5:
        return {"labels": _labels(rng, scores.shape, "binary"),
                "positive": rng.integers(0, cols, rows)}, "labels and positive"
    return {"labels": _labels(rng, scores.shape, "graded").astype(np.float16)}, "float16 labels"


# ---------------------------------------------------------------------------------------
# the formats

def _npy(rng, cls):
    scores = _matrix(rng)
    what = ""
    if cls == "values":
        scores, what = _poke(rng, scores)
    elif cls == "dtype":
        scores, what = _recast(rng, scores)
    if rng.random() < 0.2:
        scores = np.asfortranarray(scores)
    data = bytearray(_npy_bytes(scores))
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    elif cls == "header":
        what = _header_edit(rng, data)
    return {"": bytes(data)}, what


def _npz(rng, cls, deflated):
    scores = _matrix(rng)
    relevance = _relevance(rng, scores)
    what = ""
    if cls == "values":
        scores, what = _poke(rng, scores)
    elif cls == "dtype":
        scores, what = _recast(rng, scores)
    elif cls == "positive":
        relevance = {}
        relevance["positive"], what = _bad_positive(rng, *scores.shape)
    elif cls == "labels":
        relevance, what = _bad_labels(rng, scores)
    if rng.random() < 0.15 and scores.ndim == 2:
        scores = np.asfortranarray(scores)
    members = [("scores.npy", scores)] + [(f"{k}.npy", v) for k, v in relevance.items()]
    if rng.random() < 0.3:
        members.append(("method.npy", np.array("m")))
    if cls == "members":
        choice = int(rng.integers(6))
        other = _matrix(rng, *scores.shape)
        if choice == 0:
            members.insert(int(rng.integers(2)) * len(members), ("scores.npy", other))
            what = "scores.npy twice"
        elif choice == 1:
            members.append(("scores", _npy_bytes(other)))
            what = "scores and scores.npy"
        elif choice == 2:
            members = [m for m in members if m[0] != "scores.npy"]
            what = "no scores"
        elif choice == 3:
            members.append(("extra.npy", rng.random(3)))
            what = "extra member"
        elif choice == 4:
            members.append(("positive.npy", rng.integers(0, scores.shape[1], scores.shape[0])))
            what = "positive twice or added"
        else:
            members = [("scores.npy", b"not an array")] + members[1:]
            what = "scores member not an array"
    if cls == "header":  # inside a member, before zipping: its CRC-32 stays right
        j = 0 if rng.random() < 0.7 else int(rng.integers(len(members)))
        name, value = members[j]
        member = bytearray(value if isinstance(value, bytes) else _npy_bytes(value))
        what = f"{name}: " + _header_edit(rng, member)
        members[j] = (name, bytes(member))
    data = bytearray(_npz_bytes(members, deflated))
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    return {"": bytes(data)}, what


def _parquet(rng, cls, fixed):
    import pyarrow as pa
    scores = _matrix(rng)
    relevance = _relevance(rng, scores)
    rows = list(scores)
    what = ""
    checksum = None
    if cls == "values":
        scores, what = _poke(rng, scores)
        rows = list(scores)
    elif cls == "dtype":
        dtype = np.dtype(str(rng.choice(["<f2", "<f8", "<i4", "|u1", "|b1", "<i8"])))
        rows = [r.astype(dtype) for r in rows]
        what = f"dtype {dtype.str}"
    elif cls == "positive":
        relevance = {}
        relevance["positive"], what = _bad_positive(rng, *scores.shape)
        relevance["positive"] = np.asarray(relevance["positive"]).reshape(-1)[:len(rows)]
        if relevance["positive"].size < len(rows):
            relevance["positive"] = np.resize(relevance["positive"], len(rows))
    elif cls == "labels":
        relevance, what = _bad_labels(rng, scores)
    elif cls == "ragged":
        rows = [r[:int(rng.integers(0, r.size + 1))] for r in rows]
        relevance = {k: v for k, v in relevance.items() if k == "positive"}
        if "positive" in relevance:
            relevance["positive"] = np.array([int(rng.integers(0, max(r.size, 1) + 1))
                                              for r in rows])
        what = "ragged rows"
    try:
        table = _wide_table(pa, rows, relevance, fixed, rng)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
        table = _wide_table(pa, list(scores), {}, fixed, rng)
        what += f" (unwritable: {type(exc).__name__})"
    if cls == "nulls":
        table, what = _with_nulls(pa, rng, table)
    if cls == "pages":
        checksum = False
    data = bytearray(_parquet_bytes(table, rng, checksum))
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    elif cls == "pages":
        what = _page_edit(rng, data)
    elif cls == "footer":
        what = _footer_edit(rng, data)
    return {"": bytes(data)}, what


def _footer_edit(rng, data: bytearray) -> str:
    """Damage the Thrift footer (schema, row counts, offsets) between the column chunks
    and the trailing length and magic."""
    footer = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer
    if footer <= 0 or start < 4:
        return _bytes_edit(rng, data)
    what = []
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(start, len(data) - 8))
        choice = int(rng.integers(3))
        if choice == 0:
            data[i] ^= 1 << int(rng.integers(8))
        elif choice == 1:
            data[i] = int(rng.choice([0, 1, 0x15, 0x7F, 0x80, 0xFF]))
        else:  # a varint grown to its longest
            data[i:i + 1] = b"\xff" * int(rng.integers(2, 10)) + b"\x7f"
        what.append(f"footer byte {i - start} edit {choice}")
    footer_now = len(data) - 8 - start
    data[-8:-4] = footer_now.to_bytes(4, "little")  # the length stays consistent
    return "; ".join(what)


def _with_nulls(pa, rng, table):
    name = str(rng.choice(table.column_names))
    col = table.column(name).combine_chunks()
    values = col.to_pylist()
    i = int(rng.integers(len(values)))
    if isinstance(values[i], list) and values[i] and rng.random() < 0.5:
        values[i][int(rng.integers(len(values[i])))] = None
        what = f"null element in {name} row {i}"
    else:
        values[i] = None
        what = f"null {name} row {i}"
    try:
        new = pa.array(values, type=col.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return table, "nulls (unwritable)"
    return table.set_column(table.column_names.index(name), name, new), what


def _page_edit(rng, data: bytearray) -> str:
    """Damage bytes inside the column chunks (between the magic and the footer), where a
    file without page checksums may decode to other values or fewer rows."""
    footer = int.from_bytes(data[-8:-4], "little")
    end = len(data) - 8 - footer
    if end <= 8:
        return _bytes_edit(rng, data)
    what = []
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(4, end))
        data[i] ^= 1 << int(rng.integers(8))
        what.append(f"page byte {i}")
    return "; ".join(what)


def _long_parquet(rng, cls):
    import pyarrow as pa
    scores = _matrix(rng)
    labels = None
    choice = int(rng.integers(3))
    if choice == 1:
        labels = np.zeros(scores.shape, np.int64)
        labels[np.arange(scores.shape[0]), rng.integers(0, scores.shape[1], scores.shape[0])] = 1
    elif choice == 2:
        labels = _labels(rng, scores.shape, rng.choice(["binary", "graded", "cont"]))
    what = ""
    if cls == "values":
        scores, what = _poke(rng, scores)
    inst, pos, sc, lab = _long_rows(rng, scores, labels)
    if cls == "long":
        inst, pos, sc, lab, what = _long_edit(rng, inst, pos, sc, lab)
    stype = pa.from_numpy_dtype(scores.dtype)
    if cls == "dtype":
        stype = rng.choice([pa.float16(), pa.float64(), pa.int8(), pa.string(), pa.bool_(),
                            pa.decimal128(10, 3)])
        what = f"score type {stype}"
    cols = {}
    try:
        cols["instance"] = pa.array(inst)
        cols["position"] = pa.array(pos, type=pa.int64()) if all(
            isinstance(p, (int, np.integer)) for p in pos) else pa.array(pos)
        if stype == pa.string():
            cols["score"] = pa.array([str(float(v)) for v in sc])
        elif pa.types.is_decimal(stype):
            cols["score"] = pa.array([None if not np.isfinite(v) else round(float(v), 3)
                                      for v in sc]).cast(stype)
        elif stype == pa.bool_():
            cols["score"] = pa.array([bool(v) for v in sc])
        else:
            cols["score"] = pa.array(np.asarray(sc, dtype=scores.dtype)).cast(
                stype, safe=False)
        if lab is not None:
            cols["label"] = pa.array(lab)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
            TypeError, ValueError, OverflowError) as exc:
        return _long_parquet(np.random.default_rng(rng.integers(1 << 32)), "valid")[0], \
            f"unwritable ({type(exc).__name__})"
    table = pa.table(cols)
    if cls == "nulls":
        table, what = _with_nulls(pa, rng, table)
    data = bytearray(_parquet_bytes(table, rng, False if cls == "pages" else None))
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    elif cls == "pages":
        what = _page_edit(rng, data)
    elif cls == "footer":
        what = _footer_edit(rng, data)
    return {"": bytes(data)}, what


def _long_edit(rng, inst, pos, sc, lab):
    n = len(sc)
    i = int(rng.integers(n))
    choice = int(rng.integers(7))
    inst, pos, sc = list(inst), list(pos), list(sc)
    lab = None if lab is None else list(lab)
    if choice == 0:
        j = int(rng.integers(n))
        inst.append(inst[j]), pos.append(pos[j]), sc.append(sc[i])
        if lab is not None:
            lab.append(lab[i])
        what = "a position twice"
    elif choice == 1:
        for lst in (inst, pos, sc) + (() if lab is None else (lab,)):
            del lst[i]
        what = f"row {i} dropped"
    elif choice == 2 and lab is not None:
        lab[i] = 1 - int(lab[i] > 0)
        what = f"label {i} flipped"
    elif choice == 3:
        inst = [f"u{v}" for v in inst]
        if rng.random() < 0.5:
            inst[i] = f"u{inst[i]}x"
        what = "string ids"
    elif choice == 4:
        pos[i] = int(rng.choice([-1, 2 ** 62, -(2 ** 63)]))
        what = f"position {pos[i]}"
    elif choice == 5:
        inst[i] = inst[(i + 1) % n]
        what = f"row {i} moved to another instance"
    else:
        pos = [float(p) + (0.5 if k == i else 0.0) for k, p in enumerate(pos)]
        what = "float positions"
    return inst, pos, sc, lab, what


def _csv_text(inst, pos, sc, lab, digits):
    head = "instance,position,score" + (",label" if lab is not None else "")
    lines = [head]
    for k in range(len(sc)):
        v = float(sc[k])
        text = repr(v) if digits is None else f"{v:.{digits}g}"
        line = f"{inst[k]},{pos[k]},{text}"
        if lab is not None:
            line += f",{lab[k]}"
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def _long_csv(rng, cls):
    scores = _matrix(rng).astype(np.float64)
    labels = None
    if rng.random() < 0.5:
        labels = _labels(rng, scores.shape, rng.choice(["binary", "graded"]))
    what = ""
    if cls == "values":
        scores, what = _poke(rng, scores)
    inst, pos, sc, lab = _long_rows(rng, scores, labels)
    if cls == "long":
        inst, pos, sc, lab, what = _long_edit(rng, inst, pos, sc, lab)
    data = bytearray(_csv_text(inst, pos, sc, lab, None if rng.random() < 0.5 else 3))
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    elif cls == "lines":
        what = "; ".join(_line_edit(rng, data) for _ in range(int(rng.integers(1, 3))))
    return {"": bytes(data)}, what


def _trec(rng, cls):
    queries = int(rng.integers(1, 6))
    run, qrels = [], []
    for q in range(queries):
        docs = int(rng.integers(1, 8))
        levels = int(rng.choice([2, 5, 100]))
        for d in range(docs):
            score = rng.integers(0, levels) / levels
            text = f"{score:.2f}" if rng.random() < 0.8 else repr(float(score))
            run.append(f"q{q} Q0 d{d} {d + 1} {text} sys")
        for d in rng.permutation(docs + 2)[:int(rng.integers(0, docs + 2))]:
            qrels.append(f"q{q} 0 d{d} {int(rng.integers(-1, 3))}")
    if not qrels:
        qrels.append("q0 0 d0 1")
    files = {"": ("\n".join(run) + "\n").encode(), "qrels": ("\n".join(qrels) + "\n").encode()}
    target = "qrels" if cls == "qrels" else ""
    data = bytearray(files[target])
    if cls == "bytes":
        what = _bytes_edit(rng, data)
    elif cls == "truncate":
        what = _truncate(rng, data)
    elif cls in ("lines", "qrels"):
        what = "; ".join(_line_edit(rng, data) for _ in range(int(rng.integers(1, 3))))
    elif cls in ("values", "numbers"):
        lines = bytes(data).split(b"\n")
        i = int(rng.integers(len(run)))
        fields = lines[i].split(b" ")
        if cls == "values":
            v = SPECIAL[int(rng.integers(len(SPECIAL)))]
            fields[4] = repr(float(v)).encode()
            if rng.random() < 0.3:  # a duplicate docno
                fields[2] = lines[int(rng.integers(len(run)))].split(b" ")[2]
        else:
            fields[4] = NUMBERS[int(rng.integers(len(NUMBERS)))]
        lines[i] = b" ".join(fields)
        data[:] = b"\n".join(lines)
        what = f"line {i + 1}: {bytes(lines[i])!r}"
    else:
        what = ""
    files[target] = bytes(data)
    return files, what


def make(fmt: str, case: int, seed: int, folder: str):
    """Write mutant ``case`` of ``fmt``: ``(path, qrels or None, class, description)``."""
    rng = np.random.default_rng([seed, FORMATS.index(fmt), case])
    classes = CLASSES[fmt]
    cls = classes[case % len(classes)]
    if fmt == "npy":
        files, what = _npy(rng, cls)
    elif fmt.startswith("npz"):
        files, what = _npz(rng, cls, fmt == "npz_deflated")
    elif fmt.startswith("parquet"):
        files, what = _parquet(rng, cls, fmt == "parquet_fixed")
    elif fmt == "long_parquet":
        files, what = _long_parquet(rng, cls)
    elif fmt == "long_csv":
        files, what = _long_csv(rng, cls)
    else:
        files, what = _trec(rng, cls)
    suffix = {"npy": ".npy", "npz_stored": ".npz", "npz_deflated": ".npz", "long_csv": ".csv",
              "trec": ".run"}.get(fmt, ".parquet")
    path = os.path.join(folder, f"{fmt}-{case}{suffix}")
    with open(path, "wb") as fh:
        fh.write(files[""])
    qrels = None
    if "qrels" in files:
        qrels = os.path.join(folder, f"{fmt}-{case}.qrels")
        with open(qrels, "wb") as fh:
            fh.write(files["qrels"])
    return path, qrels, cls, what
