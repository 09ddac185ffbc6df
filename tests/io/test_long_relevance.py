"""Relevance labels in the long (tidy) layout.

A long dump's ``label`` column holding one 1 per instance (0 elsewhere) is the
single-positive protocol and keeps its sort-free path; anything else (graded or continuous
gains, explicit negatives, several positives or none in an instance) is a relevance label
column, read exactly as a wide dump's ``labels`` field. The reference for every figure is
the equivalent wide Parquet dump (a ``labels`` list column beside ``scores``), which
test_relevance*.py check against scikit-learn and enumeration: the JSON must be identical,
bit for bit.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tiers import tiered

from tieeval.cli import cli
from tieeval.engine import parallel
from tieeval.engine.local import evaluate, evaluate_dump, iter_instance_values
from tieeval.errors import InputError
from tieeval.io import long as longformat
from tieeval.io.base import ReadOptions
from tieeval.io.open import open_dump
from tieeval.kernels.general import GeneralKernel
from tieeval.metrics.metric import Metric


def make_rows(rng, n=90, values=(-1, 0, 0, 0, 1, 2, 3)):
    """Ragged float32 rows on four score levels (heavy ties) and labels drawn from
    ``values``."""
    lengths = rng.integers(1, 14, size=n)
    scores = [(rng.integers(0, 4, size=m) / 3).astype(np.float32) for m in lengths]
    labels = [rng.choice(values, size=m).astype(np.int64) for m in lengths]
    return scores, labels


def write_wide(path, scores, labels):
    pq.write_table(pa.table({"scores": pa.array([s.tolist() for s in scores],
                                                type=pa.list_(pa.float32())),
                             "labels": pa.array([lab.tolist() for lab in labels],
                                                type=pa.list_(pa.int64()))}),
                   path, row_group_size=17)
    return path


def long_table(scores, labels, rng=None):
    """One row per (instance, candidate); positions with gaps; shuffled when ``rng``."""
    inst = np.concatenate([np.full(len(s), i) for i, s in enumerate(scores)])
    position = np.concatenate([np.arange(len(s)) * 2 + 7 for s in scores])
    table = pa.table({"instance": [f"u{i:03d}" for i in inst], "position": position,
                      "score": np.concatenate(scores), "label": np.concatenate(labels)})
    if rng is not None:
        table = table.take(pa.array(rng.permutation(len(inst))))
    return table


def cli_json(*args):
    result = CliRunner().invoke(cli, [*map(str, args), "--format", "json", "--meta",
                                      "method=m", "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    for run in runs:
        run.pop("path")
    return json.dumps(runs)


def same(result) -> str:
    d = result.to_dict()
    d.pop("path")
    return json.dumps(d)


@pytest.fixture
def graded(tmp_path, rng):
    """The same graded and signed dump as wide Parquet, sorted long Parquet, shuffled long
    Parquet and shuffled long CSV."""
    scores, labels = make_rows(rng)
    labels[3][:] = 0  # an instance without a relevant item: skipped and counted
    wide = write_wide(tmp_path / "wide.parquet", scores, labels)
    pq.write_table(long_table(scores, labels), tmp_path / "sorted.parquet",
                   row_group_size=50)
    shuffled = long_table(scores, labels, rng)
    pq.write_table(shuffled, tmp_path / "shuffled.parquet", row_group_size=70)
    pcsv.write_csv(shuffled, tmp_path / "long.csv")
    return wide, [tmp_path / "sorted.parquet", tmp_path / "shuffled.parquet",
                  tmp_path / "long.csv"]


@pytest.mark.parametrize("extra", [
    [],  # the labelled dump's default metrics: HR, Recall, NDCG @K, MRR, MAP
    ["-m", "NDCG@5", "-m", "SNDCG@5", "-m", "V-AUC", "-m", "P@3", "--gamma", "0", "0.5", "2"],
    ["-m", "NDCG@3", "--gain", "exponential", "--both"],
])
def test_graded_long_dump_gives_the_wide_dumps_json(graded, extra):
    wide, longs = graded
    expected = cli_json("compare", wide, "--k", "1", "5", *extra)
    assert '"source": "labels"' in expected and '"gamma"' in expected
    for path in longs:
        dtype = ["--score-dtype", "float32"] if str(path).endswith(".csv") else []
        assert cli_json("compare", path, "--k", "1", "5", *dtype, *extra) == expected, path


# every run: batches of 7 rows on one process and 5 on two; the slow tier one-row and
# automatic batches
@pytest.mark.parametrize("batch_rows, jobs", tiered([(7, 1), (5, 2), (1, 1), (None, 1)]))
def test_every_batch_size_and_worker_count_agree(graded, monkeypatch, batch_rows, jobs):
    wide, longs = graded
    expected = same(evaluate_dump(open_dump(wide)))
    # shuffled rows regroup into many spill parts, which worker processes read: there the
    # relevance labels are found in a worker, and the run starts over in this process
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(longformat, "SPILL_PART_BYTES", 256)
    for path in longs[:2]:
        seen = []
        dump = open_dump(path)
        got = evaluate_dump(dump, batch_rows=batch_rows, jobs=jobs,
                            progress=lambda rows, nbytes, seen=seen: seen.append(rows))
        assert same(got) == expected, path
        # a run that started on the single-positive path takes back what it counted
        assert sum(seen) == 90
        assert (dump.parts is None) == (path == longs[0])
        assert dump.parts is None or len(dump.parts) > 2


def test_several_binary_positives_and_missing_positives(tmp_path, rng):
    """0/1 labels are relevance labels as soon as one instance has two positives or none,
    wherever that instance is: here only the last one does."""
    scores, labels = make_rows(rng, n=40, values=(0,))
    for lab in labels:
        lab[rng.integers(0, len(lab))] = 1
    labels[-1][:] = 1
    scores[-1] = np.ones(len(labels[-1]), dtype=np.float32)
    wide = write_wide(tmp_path / "wide.parquet", scores, labels)
    pq.write_table(long_table(scores, labels), tmp_path / "long.parquet", row_group_size=9)
    expected = same(evaluate_dump(open_dump(wide)))
    dump = open_dump(tmp_path / "long.parquet")
    assert dump.relevance is None  # not known before the rows are read
    assert same(evaluate_dump(dump, batch_rows=1)) == expected
    assert dump.relevance.source == "labels" and dump.relevance.fields == ("label",)
    labels[-1][:] = 0  # now the last instance has no positive at all
    wide = write_wide(tmp_path / "wide0.parquet", scores, labels)
    pq.write_table(long_table(scores, labels), tmp_path / "long0.parquet")
    r = evaluate_dump(open_dump(tmp_path / "long0.parquet"))
    assert same(r) == same(evaluate_dump(open_dump(wide)))
    assert r.relevance["instances_without_relevant"] == 1
    assert any("1 of 40 instance(s) have no relevant item" in w for w in r.warnings)


def test_single_positive_long_dump_keeps_the_sort_free_path(tmp_path, rng, monkeypatch):
    scores = (rng.integers(0, 3, size=(50, 6)) / 2).astype(np.float32)
    positive = rng.integers(0, 6, size=50)
    labels = [(np.arange(6) == p).astype(np.float64) for p in positive]  # 1.0 is a 1
    pq.write_table(long_table(list(scores), labels, rng), tmp_path / "one.parquet")

    def refuse(*args, **kwargs):
        raise AssertionError("a single-positive long dump reached the general kernel")
    monkeypatch.setattr(GeneralKernel, "add", refuse)
    r = evaluate_dump(open_dump(tmp_path / "one.parquet"), batch_rows=7)
    assert same(r) == same(evaluate(scores, positive=positive))
    assert "relevance" not in r.to_dict()


def test_what_ifs_and_diff_take_relevance_labels(graded):
    """What-ifs, diff and per-instance values run on relevance labels too, through the
    same kernel: a cast what-if equals evaluating the cast scores themselves, a run
    diffed with itself differs by exactly 0, and the per-instance values average to the
    run's figures."""
    from tieeval.engine.local import evaluate_labels
    from tieeval.kernels.whatif import cast_scores
    wide, longs = graded
    table = pq.read_table(wide)
    scores = [np.asarray(s, dtype=np.float32) for s in table.column("scores").to_pylist()]
    labels = [np.asarray(lab) for lab in table.column("labels").to_pylist()]
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in scores])))
    flat = np.concatenate(scores)
    want = evaluate_labels(cast_scores(flat, "float16"), np.concatenate(labels), offsets)
    for path in [wide, *longs[:2]]:
        result = CliRunner().invoke(cli, ["compare", str(path), "--cast", "float16",
                                          "--format", "json", "--quiet"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["what_if"]["cast"] == "float16"
        for got, expected in zip(doc["runs"][0]["metrics"], want.to_dict()["metrics"]):
            assert got == expected
        result = CliRunner().invoke(cli, ["diff", str(path), str(path), "--format", "json"])
        assert result.exit_code == 0, result.output
        plain = evaluate_dump(open_dump(path))
        rows = json.loads(result.stdout)["metrics"]
        assert [(r["metric"], r["k"]) for r in rows] == [(m.metric, m.k) for m in plain.metrics]
        for row, m in zip(rows, plain.metrics):
            assert row["difference"] == 0 and row["winner"] == "tie"
            assert row["original"]["difference"] == 0
            assert row["instances"] == m.instances  # rows without a relevant item left out
    run = evaluate_dump(open_dump(wide))
    values = list(iter_instance_values(open_dump(wide)))
    for row in run.metrics:
        v = [b[Metric(row.metric, row.k)] for _, b in values]
        defined = np.concatenate([x.defined for x in v])
        tie_aware = np.concatenate([x.tie_aware for x in v])[defined]
        assert tie_aware.size == row.instances
        assert tie_aware.mean() == pytest.approx(row.tie_aware, abs=1e-12)


def test_general_metrics_on_a_long_dump_switch_without_settling(graded, tmp_path, rng):
    """Asked for a general metric from the start, a long dump goes to the general path
    before its labels are known; it starts over once they prove to be relevance labels."""
    wide, longs = graded
    expected = same(evaluate_dump(open_dump(wide), [Metric("Recall", 5)]))
    for path in longs[:2]:
        assert same(evaluate_dump(open_dump(path), [Metric("Recall", 5)], batch_rows=3)) \
            == expected
    # and single-positive labels stay one-hot there
    scores = (rng.integers(0, 3, size=(30, 5)) / 2).astype(np.float32)
    positive = rng.integers(0, 5, size=30)
    labels = [(np.arange(5) == p).astype(np.int8) for p in positive]
    pq.write_table(long_table(list(scores), labels, rng), tmp_path / "one.parquet")
    r = evaluate_dump(open_dump(tmp_path / "one.parquet"), [Metric("Recall", 5)])
    assert same(r) == same(evaluate(scores, positive=positive, metrics=["Recall@5"]))
    assert r.relevance["source"] == "positive"


def test_labels_of_the_long_layout_name_the_instance(tmp_path):
    table = pa.table({"instance": ["a", "a", "b", "b"], "position": [0, 1, 0, 1],
                      "score": [0.5, 0.2, 0.1, 0.3], "label": [2.0, 0.0, float("inf"), 1.0]})
    pq.write_table(table, tmp_path / "inf.parquet")
    with pytest.raises(InputError, match=r"inf.parquet: instance 'b': 'label' holds inf "
                                         r"\(labels must be finite\)"):
        evaluate_dump(open_dump(tmp_path / "inf.parquet"))
    with pytest.raises(InputError, match="--positive-index would contradict it"):
        evaluate_dump(open_dump(tmp_path / "inf.parquet", ReadOptions(positive_index=1)))


def test_an_instance_cut_by_unsorted_rows_is_not_mistaken_for_relevance_labels(tmp_path, rng):
    """Rows sorted by instance except instance 0's positive, written last: streaming sees
    instance 0 without a positive before it sees the rows are out of order. The labels are
    still one 1 per instance, so the run must stay single-positive."""
    scores = (rng.integers(0, 3, size=(20, 4)) / 2).astype(np.float32)
    positive = np.full(20, 2)
    table = long_table(list(scores), [(np.arange(4) == 2).astype(np.int8)] * 20)
    moved = 2  # instance 0's positive row
    order = [i for i in range(table.num_rows) if i != moved] + [moved]
    pq.write_table(table.take(pa.array(order)), tmp_path / "cut.parquet", row_group_size=8)
    dump = open_dump(tmp_path / "cut.parquet")
    r = evaluate_dump(dump)
    assert same(r) == same(evaluate(scores, positive=positive))
    assert dump.relevance is None and "relevance" not in r.to_dict()
    assert any("not sorted by instance" in w for w in r.warnings)
