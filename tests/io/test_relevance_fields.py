"""Readers of relevance fields: labels, positives / negatives, items, and their errors.

Every expected label array here is written down from the input the test itself built (the
labels a test saved, or +1/-1 placed at the listed indices), never read back from tieeval.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tieeval.errors import InputError
from tieeval.io.base import LabelledDump, ReadOptions, RelevanceReadOptions
from tieeval.io.open import open_dump
from tieeval.kernels.duplicates import DuplicateCheck


def collect(dump, batch_rows=None):
    """(scores rows, labels rows, items rows) as lists of 1-D arrays, in dump order."""
    scores, labels, items = [], [], []
    for b in dump.batches(batch_rows):
        n = b.lengths()
        cut = np.cumsum(n)[:-1]
        flat = (lambda x: x.reshape(-1)) if b.offsets is None else (lambda x: x)
        scores += np.split(flat(b.scores), cut)
        labels += np.split(flat(b.labels), cut) if b.labels is not None else [None] * b.rows
        items += np.split(flat(b.items), cut) if b.items is not None else [None] * b.rows
    return scores, labels, items


def list_table(**columns):
    return pa.table({name: pa.array([list(r) for r in rows], typ)
                     for name, (rows, typ) in columns.items()})


@pytest.fixture
def graded(rng):
    rows = [rng.integers(1, 9) for _ in range(23)]  # ragged
    scores = [rng.integers(0, 3, n).astype(np.float32) for n in rows]
    labels = [rng.integers(-1, 4, n).astype(np.int8) for n in rows]
    return scores, labels


@pytest.mark.parametrize("batch_rows", [None, 1, 4])
def test_parquet_labels_column_aligned_with_ragged_scores(tmp_path, graded, batch_rows):
    scores, labels = graded
    path = tmp_path / "g.parquet"
    pq.write_table(list_table(scores=(scores, pa.list_(pa.float32())),
                              labels=(labels, pa.list_(pa.int8()))), path, row_group_size=5)
    dump = open_dump(str(path))
    assert isinstance(dump, LabelledDump) and dump.relevance.source == "labels"
    got_s, got_l, got_i = collect(dump, batch_rows)
    assert len(got_l) == len(labels) and got_i == [None] * len(labels)
    for s, ls, g, gl in zip(scores, labels, got_s, got_l):
        np.testing.assert_array_equal(g, s)
        np.testing.assert_array_equal(gl, ls)
        assert g.dtype == np.float32  # never cast


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_labels_and_items_arrays(tmp_path, rng, save):
    scores = rng.random((9, 5)).astype(np.float32)
    labels = rng.integers(0, 5, (9, 5)).astype(np.float64)
    items = rng.integers(0, 100, (9, 5))
    path = tmp_path / "g.npz"
    save(path, scores=scores, labels=labels, items=items)
    dump = open_dump(str(path))
    assert dump.relevance.source == "labels" and dump.relevance.items
    got_s, got_l, got_i = collect(dump, 4)
    np.testing.assert_array_equal(np.array(got_s), scores)
    np.testing.assert_array_equal(np.array(got_l), labels)
    np.testing.assert_array_equal(np.array(got_i), items)


def test_positives_negatives_become_plus_minus_one(tmp_path):
    scores = [np.array([0.5, 0.4, 0.3, 0.2]), np.array([1.0, 1.0]), np.array([0.1, 0.2, 0.3])]
    positives = [[0, 2], [], [2]]
    negatives = [[3], [1], []]
    want = [np.array([1, 0, 1, -1]), np.array([0, -1]), np.array([0, 0, 1])]
    path = tmp_path / "pn.parquet"
    pq.write_table(list_table(scores=(scores, pa.list_(pa.float64())),
                              positives=(positives, pa.list_(pa.int32())),
                              negatives=(negatives, pa.list_(pa.int64()))), path)
    dump = open_dump(str(path))
    assert dump.relevance.source == "positives"
    _, got, _ = collect(dump)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # the same relevance as an NPZ: a padded (instances, m) array and a 1-D array
    npz = tmp_path / "pn.npz"
    dense = np.array([[0.5, 0.4, 0.3], [1.0, 1.0, 0.0], [0.1, 0.2, 0.3]])
    np.savez(npz, scores=dense, positives=np.array([[0, 2], [-1, -1], [2, -1]]),
             negatives=np.array([1, -1, 0]))
    _, got, _ = collect(open_dump(str(npz)))
    np.testing.assert_array_equal(np.array(got), [[1, -1, 1], [0, 0, 0], [-1, 0, 1]])


def test_field_names_are_options(tmp_path, rng):
    path = tmp_path / "r.npz"
    scores = rng.random((3, 4))
    rel = np.array([[0, 1, 0, 0], [2, 0, 0, 0], [0, 0, 0, 3]])
    np.savez(path, s=scores, rel=rel, ids=np.arange(12).reshape(3, 4))
    options = RelevanceReadOptions(scores="s", labels="rel", items="ids")
    dump = open_dump(str(path), options)
    assert dump.relevance.fields == ("rel", "ids")
    _, got, items = collect(dump)
    np.testing.assert_array_equal(np.array(got), rel)
    # with the default names the fields are not found: a plain single-positive dump
    plain = open_dump(str(path), ReadOptions(scores="s"))
    assert getattr(plain, "relevance", None) is None
    # a field named explicitly must be there
    with pytest.raises(InputError, match=r"no field 'grades' \(--labels-column\); found: "
                                         "ids, rel, s"):
        open_dump(str(path), RelevanceReadOptions(scores="s", labels="grades"))
    npy = tmp_path / "s.npy"
    np.save(npy, scores)
    with pytest.raises(InputError, match="no field 'rel'"):
        open_dump(str(npy), RelevanceReadOptions(labels="rel"))


def test_string_item_ids_in_parquet(tmp_path):
    path = tmp_path / "i.parquet"
    pq.write_table(list_table(scores=([[0.3, 0.2, 0.1]], pa.list_(pa.float32())),
                              items=([["a", "b", "a"]], pa.list_(pa.string()))), path)
    dump = open_dump(str(path))
    assert dump.relevance.source is None and dump.relevance.items  # single-positive + ids
    _, labels, items = collect(dump)
    assert labels == [None] and items[0].tolist() == ["a", "b", "a"]


def test_single_positive_dump_is_untouched(tmp_path, rng):
    path = tmp_path / "sp.npz"
    np.savez(path, scores=rng.random((4, 3)))
    dump = open_dump(str(path))
    assert not isinstance(dump, LabelledDump)
    assert all(b.labels is None and b.items is None for b in dump.batches())


def write_parquet(tmp_path, **columns):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(columns), path)
    return str(path)


F32 = pa.list_(pa.float32())


@pytest.mark.parametrize("columns,options,message", [
    ({"labels": pa.array([[1, 0], [0]], pa.list_(pa.int8()))}, {},
     "row 1: 'labels' has 1 entries but the row has 2 candidates"),
    ({"labels": pa.array([[1, 0], None], pa.list_(pa.int8()))}, {}, "row 1: 'labels' is null"),
    ({"labels": pa.array([[1.0, np.nan], [0.0, 1.0]], pa.list_(pa.float64()))}, {},
     "row 0: 'labels' holds nan (labels must be finite)"),
    ({"labels": pa.array([["a", "b"], ["c", "d"]], pa.list_(pa.string()))}, {},
     "column 'labels' must be a list of numbers per row"),
    ({"labels": pa.array([[1, 0], [0, 1]], pa.list_(pa.int8())),
      "positives": pa.array([[0], [1]], pa.list_(pa.int64()))}, {},
     "has both 'labels' and 'positives'"),
    ({"labels": pa.array([[1, 0], [0, 1]], pa.list_(pa.int8())),
      "positive": pa.array([0, 1], pa.int64())}, {},
     "has both 'labels' and the single-positive field 'positive'"),
    ({"labels": pa.array([[1, 0], [0, 1]], pa.list_(pa.int8()))}, {"positive_index": 1},
     "--positive-index does not apply to a dump with relevance labels ('labels')"),
    ({"positives": pa.array([[0], [2]], pa.list_(pa.int64()))}, {},
     "row 1: 'positives' index 2 is out of range for 2 candidate(s) (-1 is padding)"),
    ({"positives": pa.array([[0], [-3]], pa.list_(pa.int64()))}, {},
     "row 1: 'positives' index -3 is out of range"),
    ({"positives": pa.array([[0], [1]], pa.list_(pa.int64())),
      "negatives": pa.array([[1], [1]], pa.list_(pa.int64()))}, {},
     "row 1: candidate 1 is in both 'positives' and 'negatives'"),
    ({"positives": pa.array([[0.0], [1.0]], pa.list_(pa.float64()))}, {},
     "column 'positives' must be a list of integer column indices per row"),
    ({"items": pa.array([[1], [2, 3]], pa.list_(pa.int64()))}, {},
     "row 0: 'items' has 1 entries but the row has 2 candidates"),
])
def test_parquet_field_errors(tmp_path, columns, options, message):
    path = write_parquet(tmp_path, scores=pa.array([[0.5, 0.1], [0.2, 0.3]], F32), **columns)
    with pytest.raises(InputError) as info:
        dump = open_dump(path, ReadOptions(**options))
        collect(dump)
    assert message in str(info.value) and path in str(info.value)


@pytest.mark.parametrize("arrays,message", [
    ({"labels": np.zeros((2, 3))}, "'labels' must have the scores' shape (2, 2), got (2, 3)"),
    ({"labels": np.array([["a", "b"], ["c", "d"]])}, "'labels' must hold numbers or booleans"),
    ({"positives": np.zeros((3, 1), dtype=int)}, "'positives' must be (2,) or (2, m)"),
    ({"negatives": np.zeros((2, 1))}, "'negatives' must hold integer column indices"),
    ({"items": np.zeros((2, 2))}, "'items' must hold integer or string item ids"),
])
def test_npz_field_errors(tmp_path, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, scores=np.array([[0.5, 0.1], [0.2, 0.3]]), **arrays)
    with pytest.raises(InputError, match=None) as info:
        collect(open_dump(str(path)))
    assert message in str(info.value)


def test_duplicate_check_counts_by_hand():
    # row 0: item 7 twice (a sampled negative repeated), scored 0.5 and 0.1
    # row 1: no duplicate
    # row 2: the positive's item 3 drawn again as a negative, same score (a manufactured tie)
    # row 3: item 9 three times (two extra copies), the first one relevant
    scores = np.array([[0.5, 0.5, 0.1], [0.3, 0.2, 0.1], [0.9, 0.4, 0.9], [0.1, 0.1, 0.1]])
    items = np.array([[1, 7, 7], [4, 5, 6], [3, 8, 3], [9, 9, 9]])
    relevant = np.zeros((4, 3), dtype=bool)
    relevant[:, 0] = True
    check = DuplicateCheck()
    check.add(scores, items, None, relevant)
    entries, lines = check.report("d.npz")
    (entry,) = entries
    assert (entry["instances"], entry["copies"], entry["relevant_instances"]) == (3, 4, 2)
    assert entry["frequency"] == 3 / 4
    assert entry["score_mismatch_instances"] == 1  # row 0 only
    assert lines == [entry["message"]] and "3 of 4 instance(s) (75.00%)" in lines[0]


def test_duplicate_check_strings_and_ragged():
    check = DuplicateCheck()
    items = np.array(["a", "b", "a", "x", "y"], dtype=object)
    check.add(np.array([1.0, 2.0, 1.0, 0.0, 0.0]), items, np.array([0, 3, 5]),
              np.array([True, False, False, True, False]))
    entries, _ = check.report("r.parquet")
    assert entries[0]["instances"] == 1 and entries[0]["relevant_instances"] == 1
    assert entries[0]["score_mismatch_instances"] == 0
    clean = DuplicateCheck()
    clean.add(np.zeros((2, 2)), np.array([[1, 2], [1, 2]]), None, np.zeros((2, 2), bool))
    assert clean.report("c.npz") == ([], [])


def test_items_on_a_single_positive_dump_keep_its_numbers(tmp_path, rng):
    from click.testing import CliRunner

    from tieeval.cli import cli
    scores = rng.integers(0, 4, (30, 6)).astype(np.float32)
    items = np.tile(np.arange(6), (30, 1))
    items[:10, 3] = items[:10, 0]  # the positive (column 0) drawn again in 10 rows
    plain, with_items = tmp_path / "p.npz", tmp_path / "i.npz"
    np.savez(plain, scores=scores)
    np.savez(with_items, scores=scores, items=items)
    docs = [json.loads(CliRunner().invoke(cli, ["compare", str(p), "--k", "1", "5", "--format",
                                                "json"], catch_exceptions=False).stdout)["runs"][0]
            for p in (plain, with_items)]
    assert docs[0]["metrics"] == docs[1]["metrics"] and docs[0]["ties"] == docs[1]["ties"]
    assert "data_warnings" not in docs[0] and "relevance" not in docs[0]
    (warning,) = docs[1]["data_warnings"]
    assert warning["kind"] == "duplicate_items"
    assert (warning["instances"], warning["frequency"], warning["relevant_instances"]) == (
        10, 10 / 30, 10)


def test_parquet_dataset_directory_with_labels(tmp_path, graded):
    scores, labels = graded
    whole = tmp_path / "whole.parquet"
    pq.write_table(list_table(scores=(scores, pa.list_(pa.float32())),
                              labels=(labels, pa.list_(pa.int8()))), whole)
    folder = tmp_path / "dataset"
    folder.mkdir()
    for i, (lo, hi) in enumerate(((0, 10), (10, len(scores)))):
        pq.write_table(list_table(scores=(scores[lo:hi], pa.list_(pa.float32())),
                                  labels=(labels[lo:hi], pa.list_(pa.int8()))),
                       folder / f"part-{i}.parquet")
    from tieeval.engine.local import evaluate_dump
    a = evaluate_dump(open_dump(str(whole)), None).to_dict()
    b = evaluate_dump(open_dump(str(folder)), None).to_dict()
    assert a["metrics"] == b["metrics"] and a["ties"] == b["ties"]
