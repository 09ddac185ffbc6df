"""Readers: every layout gives what evaluate() gives on the same matrix; every bad file
raises InputError with a message that names the file and says what is wrong."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import CountsAccumulator as Accumulator

from tieeval.engine.local import evaluate, evaluate_dump, evaluate_path
from tieeval.errors import InputError
from tieeval.io.base import ReadOptions
from tieeval.io.open import open_dump
from tieeval.io.readers import detect_format, readers
from tieeval.kernels.counts import dense_counts
from tieeval.metrics.metric import default_metrics

FLOAT_DTYPES = (np.float16, np.float32, np.float64)


def tied_matrix(rng, rows=57, cols=13, dtype=np.float32):
    s = rng.integers(0, 6, size=(rows, cols)).astype(dtype) / 5
    s[rng.random((rows, cols)) < 0.1] = np.inf
    s[:, 0][rng.random(rows) < 0.3] = 1  # the positive often shares the top score
    return s


def comparable(result):
    """to_dict() without the path (which differs between a file and an in-memory array)."""
    d = result.to_dict()
    d.pop("path")
    d.pop("labels", None)
    return d


def list_column(matrix, kind, value_type=None):
    flat = pa.array(matrix.ravel(), type=value_type)
    rows, cols = matrix.shape
    if kind == "fixed_size_list":
        return pa.FixedSizeListArray.from_arrays(flat, cols)
    offsets = pa.array(np.arange(rows + 1) * cols, type=pa.int64() if kind == "large_list"
                       else pa.int32())
    cls = pa.LargeListArray if kind == "large_list" else pa.ListArray
    return cls.from_arrays(offsets, flat)


def write_parquet(path, columns, metadata=None, row_group_size=None):
    table = pa.table(columns)
    if metadata:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


# ---------------------------------------------------------------------------------------
# every layout agrees with evaluate() on the same matrix

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + (np.int64,))
def test_npy_matches_evaluate(tmp_path, rng, dtype):
    s = tied_matrix(rng, dtype=np.float64)
    if dtype == np.int64:
        s = np.where(np.isinf(s), 9, s * 5)  # integer levels 0..5, and 9 for the infinities
    s = s.astype(dtype)
    np.save(tmp_path / "s.npy", s)
    dump = open_dump(tmp_path / "s.npy")
    assert (dump.format, dump.dtype, dump.metadata) == ("npy", np.dtype(dtype), {})
    for batch in dump.batches(10):
        assert batch.scores.dtype == dtype  # never cast on the way to the kernels
    result = evaluate_path(str(tmp_path / "s.npy"))
    assert result.dtype == np.dtype(dtype).name
    assert comparable(result) == comparable(evaluate(s))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_npz_with_and_without_positive(tmp_path, rng, dtype):
    s = tied_matrix(rng, dtype=dtype)
    positive = rng.integers(0, s.shape[1], size=s.shape[0])
    np.savez(tmp_path / "p.npz", scores=s, positive=positive, model=np.array("ConsRec"),
             dataset=np.array("Mafengwo"), extra=np.arange(3))
    np.savez(tmp_path / "n.npz", scores=s)
    with_pos = open_dump(tmp_path / "p.npz")
    assert with_pos.dtype == dtype
    # 0-d strings become run metadata; numeric extras are ignored
    assert with_pos.metadata == {"dataset": "Mafengwo", "model": "ConsRec"}
    r = evaluate_dump(with_pos)
    assert r.labels == {"dataset": "Mafengwo", "model": "ConsRec"}
    assert comparable(r) == comparable(evaluate(s, positive=positive))
    assert comparable(evaluate_path(str(tmp_path / "n.npz"))) == comparable(evaluate(s))
    r = evaluate_path(str(tmp_path / "n.npz"), options=ReadOptions(positive_index=3))
    assert comparable(r) == comparable(evaluate(s, positive=3))


def test_negative_stored_positive_is_an_error_not_the_last_column(tmp_path, rng):
    # A stored -1 is more likely a "no positive" sentinel than a request for the last
    # column; only --positive-index (and the Python API) count back from the end.
    s = tied_matrix(rng)
    positive = np.zeros(s.shape[0], dtype=np.int64)
    positive[3] = -1
    np.savez(tmp_path / "neg.npz", scores=s, positive=positive)
    with pytest.raises(InputError, match=r"neg\.npz: row 3: positive index -1 is out of range"):
        evaluate_path(str(tmp_path / "neg.npz"))
    r = evaluate_path(str(tmp_path / "neg.npz"), options=ReadOptions(positive="nothing",
                                                                     positive_index=-1))
    assert comparable(r) == comparable(evaluate(s, positive=s.shape[1] - 1))


def test_npz_custom_field_names(tmp_path, rng):
    s = tied_matrix(rng)
    np.savez(tmp_path / "c.npz", pred=s, target=np.full(s.shape[0], 2))
    r = evaluate_path(str(tmp_path / "c.npz"), options=ReadOptions(scores="pred",
                                                                   positive="target"))
    assert comparable(r) == comparable(evaluate(s, positive=2))


@pytest.mark.parametrize("kind", ["list", "large_list", "fixed_size_list"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_parquet_matches_evaluate(tmp_path, rng, kind, dtype):
    s = tied_matrix(rng, dtype=dtype)
    positive = rng.integers(0, s.shape[1], size=s.shape[0])
    path = write_parquet(tmp_path / "s.parquet",
                         {"scores": list_column(s, kind), "positive": pa.array(positive)},
                         metadata={"model": "AlignGroup", "seed": "7"}, row_group_size=10)
    dump = open_dump(path)
    assert (dump.format, dump.dtype) == ("parquet", np.dtype(dtype))
    assert dump.metadata == {"model": "AlignGroup", "seed": "7"}
    for batch in dump.batches(4):
        assert batch.scores.dtype == dtype and batch.offsets is None
    r = evaluate_dump(dump, batch_rows=4)
    assert r.labels == {"model": "AlignGroup", "seed": "7"}
    assert r.dtype == np.dtype(dtype).name
    assert comparable(r) == comparable(evaluate(s, positive=positive))
    # without a positive column the positive is column 0, or positive_index
    path = write_parquet(tmp_path / "n.pq", {"scores": list_column(s, kind)})
    assert comparable(evaluate_path(str(path))) == comparable(evaluate(s))
    r = evaluate_path(str(path), options=ReadOptions(positive_index=-1))
    assert comparable(r) == comparable(evaluate(s, positive=s.shape[1] - 1))


@pytest.mark.parametrize("kind", ["list", "large_list"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_parquet_ragged_rows(tmp_path, rng, kind, dtype):
    lengths = rng.integers(1, 30, size=80)
    rows = [(rng.integers(0, 4, size=n) / 3).astype(dtype) for n in lengths]
    positive = np.array([rng.integers(0, n) for n in lengths])
    arr = pa.array(rows,  # numpy rows: pyarrow < 19 takes float16 only as np.float16
                   type=(pa.large_list if kind == "large_list" else pa.list_)(
                       pa.from_numpy_dtype(np.dtype(dtype))))
    path = write_parquet(tmp_path / "r.parquet", {"scores": arr, "positive": positive},
                         row_group_size=9)
    # expected: each row evaluated on its own as a 1 x n matrix, then accumulated
    metrics = default_metrics((1, 5, 10))
    acc = Accumulator(metrics)
    for r, p in zip(rows, positive):
        acc.add(dense_counts(r[None, :], np.array([p])))
    expected = comparable(acc.result(str(path), dtype))
    dump = open_dump(path)
    assert dump.dtype == dtype
    for batch_rows in (1, 7, 1000):
        seen = []
        for batch in dump.batches(batch_rows):
            assert batch.scores.dtype == dtype
            seen.append(batch.lengths())
        np.testing.assert_array_equal(np.concatenate(seen), lengths)
        assert comparable(evaluate_dump(dump, batch_rows=batch_rows)) == expected
    r = evaluate_dump(dump)
    assert (r.candidates_min, r.candidates_max) == (lengths.min(), lengths.max())


def test_parquet_integer_scores(tmp_path):
    big = 2 ** 53
    s = np.array([[big, big + 1, big], [3, 3, 1]], dtype=np.int64)
    path = write_parquet(tmp_path / "i.parquet", {"scores": list_column(s, "list")})
    assert open_dump(path).dtype == np.int64
    assert comparable(evaluate_path(str(path))) == comparable(evaluate(s))


def test_format_detection(tmp_path, rng):
    s = tied_matrix(rng)
    np.save(tmp_path / "s.npy", s)
    (tmp_path / "s.npy").rename(tmp_path / "dump.bin")  # no suffix: found from the magic
    assert detect_format(str(tmp_path / "dump.bin")) == "npy"
    np.savez(tmp_path / "z.npz", scores=s)
    (tmp_path / "z.npz").rename(tmp_path / "z.data")
    assert open_dump(tmp_path / "z.data").format == "npz"
    write_parquet(tmp_path / "p.whatever", {"scores": list_column(s, "list")})
    assert open_dump(tmp_path / "p.whatever").format == "parquet"
    assert detect_format("x.PQ") == "parquet" and detect_format("x.Parquet") == "parquet"


# ---------------------------------------------------------------------------------------
# error cases: InputError, the file's name, and a pinned fragment

def expect_error(path, fragment, options=None, read=True):
    with pytest.raises(InputError) as info:
        dump = open_dump(path, options)
        if read:
            evaluate_dump(dump, batch_rows=4)
    message = str(info.value)
    assert str(path) in message, message
    assert fragment in message, message
    return message


def test_missing_file(tmp_path):
    expect_error(tmp_path / "nope.npy", "no such file")


def test_directory(tmp_path):
    expect_error(tmp_path, "is a directory")


def test_unknown_format(tmp_path):
    (tmp_path / "scores.csv").write_text("1,2,3\n")
    # the message lists every registered format, from the registry
    expected = ", ".join(r.shown for r in readers()[:-1]) + f" or {readers()[-1].shown}"
    expect_error(tmp_path / "scores.csv", f"unknown format (expected {expected})")
    for suffix in (".npy", ".npz", ".parquet", ".csv"):
        assert suffix in expected


@pytest.mark.parametrize("name", ["e.npy", "e.npz", "e.parquet"])
def test_empty_file(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    expect_error(tmp_path / name, "empty file")


def test_missing_scores(tmp_path, rng):
    np.savez(tmp_path / "m.npz", preds=tied_matrix(rng))
    expect_error(tmp_path / "m.npz", "no array 'scores' (found: preds)")
    write_parquet(tmp_path / "m.parquet", {"preds": list_column(tied_matrix(rng), "list")})
    expect_error(tmp_path / "m.parquet", "no column 'scores' (found: preds)")


def test_object_arrays_are_never_unpickled(tmp_path):
    obj = np.array([[0.5, "x"], [0.1, None]], dtype=object)
    np.savez(tmp_path / "o.npz", scores=obj)
    expect_error(tmp_path / "o.npz", "holds pickled Python objects")
    np.savez(tmp_path / "o2.npz", scores=np.zeros((2, 2)), meta=obj)
    expect_error(tmp_path / "o2.npz", "holds pickled Python objects")
    np.save(tmp_path / "o.npy", obj, allow_pickle=True)
    expect_error(tmp_path / "o.npy", "holds pickled Python objects")
    with open(tmp_path / "p.npy", "wb") as fh:  # a bare pickle with a .npy name
        pickle.dump([[0.5, 0.1]], fh)
    expect_error(tmp_path / "p.npy", "holds pickled Python objects")


def test_non_numeric_arrays(tmp_path):
    words = np.array([["a", "b"], ["c", "d"]])
    np.save(tmp_path / "s.npy", words)
    expect_error(tmp_path / "s.npy", "scores must be numbers (float16/32/64 or integers), got <U1")
    np.savez(tmp_path / "s.npz", scores=words)
    expect_error(tmp_path / "s.npz", "'scores' must be numbers")
    np.save(tmp_path / "b.npy", np.ones((2, 2), dtype=bool))
    expect_error(tmp_path / "b.npy", "must be numbers")
    np.save(tmp_path / "c.npy", np.ones((2, 2), dtype=complex))
    expect_error(tmp_path / "c.npy", "must be numbers")
    write_parquet(tmp_path / "s.parquet", {"scores": pa.array([["a", "b"], ["c"]])})
    expect_error(tmp_path / "s.parquet", "column 'scores' must hold numbers, got string")
    write_parquet(tmp_path / "f.parquet", {"scores": pa.array([0.5, 0.25])})
    expect_error(tmp_path / "f.parquet", "column 'scores' must be a list of numbers per row")


def test_one_dimensional(tmp_path):
    np.save(tmp_path / "v.npy", np.arange(5.0))
    expect_error(tmp_path / "v.npy", "must be a 2-D (instances, candidates) array, got shape (5,)")
    np.savez(tmp_path / "v.npz", scores=np.zeros((2, 3, 4)))
    expect_error(tmp_path / "v.npz", "must be a 2-D")


def test_zero_rows_and_zero_candidates(tmp_path):
    np.save(tmp_path / "r.npy", np.zeros((0, 5)))
    expect_error(tmp_path / "r.npy", "no instances (empty dump)")
    np.save(tmp_path / "c.npy", np.zeros((4, 0)))
    expect_error(tmp_path / "c.npy", "rows have no candidates (shape (4, 0))")
    empty = pa.table({"scores": pa.array([], type=pa.list_(pa.float32()))})
    pq.write_table(empty, tmp_path / "r.parquet")
    expect_error(tmp_path / "r.parquet", "no instances (empty dump)")
    write_parquet(tmp_path / "c.parquet", {"scores": pa.array([[0.5, 0.1], [], [0.2]])})
    expect_error(tmp_path / "c.parquet", "row 1: no candidates")


def test_parquet_nulls(tmp_path):
    write_parquet(tmp_path / "r.parquet", {"scores": pa.array([[0.5], [0.1], None, [0.2]])})
    expect_error(tmp_path / "r.parquet", "row 2: 'scores' is null")
    write_parquet(tmp_path / "e.parquet", {"scores": pa.array([[0.5, 0.1], [0.3, None]])})
    expect_error(tmp_path / "e.parquet", "row 1: 'scores' holds a null value")
    write_parquet(tmp_path / "p.parquet", {"scores": pa.array([[0.5, 0.1], [0.3, 0.2]]),
                                           "positive": pa.array([0, None])})
    expect_error(tmp_path / "p.parquet", "row 1: 'positive' is null")


def test_null_reported_at_its_dump_row(tmp_path):
    rows = [[0.5, 0.25]] * 11 + [None]
    write_parquet(tmp_path / "g.parquet", {"scores": pa.array(rows)}, row_group_size=5)
    expect_error(tmp_path / "g.parquet", "row 11: 'scores' is null")


def test_positive_out_of_range(tmp_path):
    s = np.zeros((4, 3))
    np.savez(tmp_path / "o.npz", scores=s, positive=np.array([0, 1, 3, 0]))
    expect_error(tmp_path / "o.npz", "row 2: positive index 3 is out of range for 3 candidate(s)")
    np.savez(tmp_path / "n.npz", scores=s, positive=np.array([0, -4, 1, 0]))
    expect_error(tmp_path / "n.npz", "row 1: positive index -4 is out of range")
    np.save(tmp_path / "i.npy", s)
    expect_error(tmp_path / "i.npy", "positive index 5 is out of range",
                 ReadOptions(positive_index=5))
    write_parquet(tmp_path / "o.parquet", {"scores": pa.array([[0.5, 0.1], [0.3]]),
                                           "positive": pa.array([1, 1])})
    expect_error(tmp_path / "o.parquet", "row 1: positive index 1 is out of range for 1")


def test_unsigned_positive_never_wraps_to_a_negative_index(tmp_path):
    # uint64 2**64 - 1 (a "-1" sentinel written unsigned) used to wrap to -1: the last column.
    s = np.array([[0.1, 0.5, 0.9]])
    np.savez(tmp_path / "u.npz", scores=s, positive=np.array([2 ** 64 - 1], dtype=np.uint64))
    expect_error(tmp_path / "u.npz",
                 "row 0: positive index 18446744073709551615 is out of range for 3")


def test_positive_not_integer(tmp_path):
    s = np.zeros((2, 3))
    np.savez(tmp_path / "f.npz", scores=s, positive=np.array([0.0, 1.0]))
    expect_error(tmp_path / "f.npz", "'positive' must hold integer column indices, got float64")
    np.savez(tmp_path / "w.npz", scores=s, positive=np.array([0, 1, 2]))
    expect_error(tmp_path / "w.npz", "'positive' must have one entry per instance (2)")
    write_parquet(tmp_path / "f.parquet", {"scores": pa.array([[0.5, 0.1], [0.3, 0.2]]),
                                           "positive": pa.array([0.0, 1.0])})
    expect_error(tmp_path / "f.parquet", "column 'positive' must hold integer column indices")


def test_positive_in_file_and_option(tmp_path):
    s = np.zeros((2, 3))
    np.savez(tmp_path / "b.npz", scores=s, positive=np.array([0, 1]))
    expect_error(tmp_path / "b.npz", "--positive-index would contradict it",
                 ReadOptions(positive_index=1))
    write_parquet(tmp_path / "b.parquet", {"scores": pa.array([[0.5, 0.1], [0.3, 0.2]]),
                                           "positive": pa.array([0, 1])})
    expect_error(tmp_path / "b.parquet", "--positive-index would contradict it",
                 ReadOptions(positive_index=0))


def truncations(path):
    data = path.read_bytes()
    return sorted({3, 20, len(data) // 2, len(data) - 1})


@pytest.mark.parametrize("fmt", ["npy", "npz", "parquet"])
def test_truncated_files(tmp_path, rng, fmt):
    s = tied_matrix(rng)
    good = tmp_path / f"good.{fmt}"
    if fmt == "npy":
        np.save(good, s)
    elif fmt == "npz":
        np.savez(good, scores=s, positive=np.zeros(len(s), dtype=np.int64))
    else:
        write_parquet(good, {"scores": list_column(s, "list")})
    evaluate_path(str(good))  # the intact file is fine
    data = good.read_bytes()
    for cut in truncations(good):
        bad = tmp_path / f"cut{cut}.{fmt}"
        bad.write_bytes(data[:cut])
        expect_error(bad, "corrupted or truncated")


@pytest.mark.parametrize("fmt", ["npy", "npz", "parquet"])
def test_nan_names_the_row(tmp_path, fmt):
    s = np.zeros((10, 4), dtype=np.float32)
    s[7, 2] = np.nan
    path = tmp_path / f"nan.{fmt}"
    if fmt == "npy":
        np.save(path, s)
    elif fmt == "npz":
        np.savez(path, scores=s)
    else:
        write_parquet(path, {"scores": pa.array([r.tolist() for r in s[:7]] + [[0.0, np.nan]]
                                                + [r.tolist() for r in s[8:]])},
                      row_group_size=3)
    # batch_rows=4 in expect_error: the NaN is in the second batch, reported by dump row
    expect_error(path, "row 7: NaN score (pass --nan-policy worst")
    r = evaluate_path(str(path), nan_policy="worst")
    assert r.instances == 10


def test_batches_cover_every_row_once(tmp_path, rng):
    s = tied_matrix(rng, rows=23)
    np.save(tmp_path / "s.npy", s)
    dump = open_dump(tmp_path / "s.npy")
    for batch_rows in (1, 5, 23, 100):
        batches = list(dump.batches(batch_rows))
        assert [b.start for b in batches] == list(range(0, 23, batch_rows))
        np.testing.assert_array_equal(np.concatenate([b.scores for b in batches]), s)
        assert all(b.positive.dtype == np.int64 for b in batches)


def test_memory_layout_and_byte_order(tmp_path, rng):
    # Fortran order and big-endian storage change nothing but the reported dtype spelling.
    s = tied_matrix(rng, rows=200, cols=40)
    np.save(tmp_path / "f.npy", np.asfortranarray(s))
    np.save(tmp_path / "b.npy", s.astype(">f4"))
    expected = comparable(evaluate(s))
    assert comparable(evaluate_path(str(tmp_path / "f.npy"))) == expected
    big = comparable(evaluate_path(str(tmp_path / "b.npy")))
    assert big.pop("dtype") == ">f4"
    expected.pop("dtype")
    assert big == expected
