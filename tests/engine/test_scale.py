"""Scale: streaming readers, the long layout, worker processes, progress, the fused kernel.

The central promise: every JSON figure is identical, bit for bit, whatever the layout (NPY,
NPZ stored or deflated, Parquet file or split dataset, long Parquet or CSV, sorted or not),
the batch size and the number of worker processes. Expected values come from
:func:`tieeval.evaluate` on the in-memory matrix, whose kernels the other test modules check
against enumeration oracles.
"""

from __future__ import annotations

import io as _io
import json
import tracemalloc
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers import CountsAccumulator as Accumulator
from tiers import tiered

import tieeval.io.npy as tnpy
import tieeval.io.parquet as tparquet
from tieeval.cli import cli
from tieeval.engine import parallel
from tieeval.engine.local import evaluate, evaluate_dump, evaluate_path
from tieeval.errors import InputError, ParameterError
from tieeval.io.base import ReadOptions
from tieeval.io.open import open_dump
from tieeval.kernels.counts import dense_counts
from tieeval.metrics.metric import default_metrics

ROWS, COLS = 400, 17


def tied(rng, rows=ROWS, cols=COLS, dtype=np.float32):
    s = (rng.integers(0, 6, size=(rows, cols)) / 5).astype(dtype)
    s[rng.random((rows, cols)) < 0.05] = -np.inf
    s[:, 0][rng.random(rows) < 0.4] = 1
    return s


def same(result) -> dict:
    d = result.to_dict()
    d.pop("path")
    return d


def long_table(s, positive, ids=None, order=None):
    rows, cols = s.shape
    inst = np.repeat(np.arange(rows), cols)
    position = np.tile(np.arange(cols), rows)
    label = (position == np.repeat(positive, cols)).astype(np.int8)
    table = pa.table({"instance": inst if ids is None else [ids[i] for i in inst],
                      "position": position, "score": s.ravel(), "label": label})
    return table if order is None else table.take(pa.array(order))


def write_all_layouts(tmp_path, s, positive, rng):
    """The same dump in every layout tieeval reads; returns {name: (path, ReadOptions)}."""
    rows, cols = s.shape
    out = {}
    np.savez(tmp_path / "stored.npz", scores=s, positive=positive)
    np.savez_compressed(tmp_path / "deflated.npz", scores=s, positive=positive)
    col = pa.FixedSizeListArray.from_arrays(pa.array(s.ravel()), cols)
    wide = pa.table({"scores": col.cast(pa.list_(pa.from_numpy_dtype(s.dtype))),
                     "positive": positive})
    pq.write_table(wide, tmp_path / "wide.parquet", row_group_size=37)
    split = tmp_path / "wide_dataset"
    split.mkdir()
    for i, (lo, hi) in enumerate([(0, 150), (150, 151), (151, rows)]):
        pq.write_table(wide.slice(lo, hi - lo), split / f"part-{i:05d}.snappy.parquet",
                       row_group_size=50)
    (split / "_SUCCESS").write_text("")
    (split / ".part-00000.snappy.parquet.crc").write_bytes(b"\x00")
    pq.write_table(long_table(s, positive), tmp_path / "long_sorted.parquet",
                   row_group_size=999)
    shuffled = rng.permutation(rows * cols)
    pq.write_table(long_table(s, positive, order=shuffled), tmp_path / "long_shuffled.parquet",
                   row_group_size=1000)
    ids = [f"user-{i:04d}" for i in rng.permutation(rows)]
    pcsv.write_csv(long_table(s, positive, ids=ids, order=shuffled), tmp_path / "long.csv")
    longset = tmp_path / "long_dataset"
    longset.mkdir()
    sorted_long = long_table(s, positive)
    for i, lo in enumerate(range(0, rows * cols, 2000)):
        pq.write_table(sorted_long.slice(lo, 2000), longset / f"part-{i}.parquet")
    for name in ("stored.npz", "deflated.npz", "wide.parquet", "wide_dataset",
                 "long_sorted.parquet", "long_shuffled.parquet", "long_dataset"):
        out[name] = (tmp_path / name, ReadOptions())
    out["long.csv"] = (tmp_path / "long.csv", ReadOptions(score_dtype=str(s.dtype)))
    return out


@pytest.mark.parametrize("dtype", tiered([np.float32, np.float64], quick=1))
def test_every_layout_and_batch_size_gives_identical_json(tmp_path, rng, dtype):
    s = tied(rng, dtype=dtype)
    positive = rng.integers(0, COLS, size=ROWS)
    expected = same(evaluate(s, k=(1, 5, 10), positive=positive))
    for name, (path, options) in write_all_layouts(tmp_path, s, positive, rng).items():
        dump = open_dump(path, options)
        assert dump.dtype == dtype, name
        for batch_rows in (1, 7, None):
            if batch_rows == 1 and "long" not in name:
                continue  # one-row batches of the wide readers are covered in test_io
            got = same(evaluate_dump(open_dump(path, options), batch_rows=batch_rows))
            assert got == expected, (name, batch_rows)
    # NPY has no positive field: the positive is column 0 everywhere
    np.save(tmp_path / "s.npy", s)
    zero = same(evaluate(s, k=(1, 5, 10)))
    assert same(evaluate_path(str(tmp_path / "s.npy"), batch_rows=13)) == zero
    pq.write_table(long_table(s, np.zeros(ROWS, dtype=np.int64)).drop_columns(["label"]),
                   tmp_path / "nolabel.parquet")
    assert same(evaluate_path(str(tmp_path / "nolabel.parquet"))) == zero


def test_long_instances_straddling_a_full_chunk_give_the_matrix_figures(tmp_path, rng,
                                                                       monkeypatch):
    """A long dump read in chunks of CHUNK_ROWS_MAX rows (the default batch size), 101
    candidates an instance: chunk boundaries fall inside instances, and the figures are
    the in-memory matrix's, bit for bit."""
    from tieeval.io import long as tlong
    assert tlong._chunk_rows(1) == 1 << 16
    assert tlong._chunk_rows(1 << 20) == tlong.CHUNK_ROWS_MAX
    cols = 101
    rows = 2 * tlong.CHUNK_ROWS_MAX // cols + 57
    assert tlong.CHUNK_ROWS_MAX % cols  # the first chunk ends inside an instance
    s = tied(rng, rows=rows, cols=cols)
    positive = rng.integers(0, cols, size=rows)
    pq.write_table(long_table(s, positive), tmp_path / "long.parquet", row_group_size=100_003)
    expected = same(evaluate(s, k=(1, 5, 10), positive=positive))
    sizes = []
    chunk_rows = tlong._chunk_rows
    monkeypatch.setattr(tlong, "_chunk_rows", lambda n: sizes.append(chunk_rows(n)) or
                        sizes[-1])
    assert same(evaluate_path(str(tmp_path / "long.parquet"), k=(1, 5, 10))) == expected
    assert sizes and set(sizes) == {tlong.CHUNK_ROWS_MAX}


def test_ragged_rows_wide_and_long_agree(tmp_path, rng):
    lengths = rng.integers(1, 25, size=120)
    rows = [(rng.integers(0, 4, size=n) / 3).astype(np.float32) for n in lengths]
    positive = np.array([rng.integers(0, n) for n in lengths])
    pq.write_table(pa.table({"scores": pa.array([r.tolist() for r in rows],
                                                type=pa.list_(pa.float32())),
                             "positive": positive}), tmp_path / "wide.parquet",
                   row_group_size=11)
    inst = np.concatenate([np.full(n, i) for i, n in enumerate(lengths)])
    position = np.concatenate([np.arange(n) * 3 + 5 for n in lengths])  # gaps are fine
    label = np.concatenate([(np.arange(n) == p) for n, p in zip(lengths, positive)])
    table = pa.table({"instance": inst, "position": position, "score": np.concatenate(rows),
                      "label": label})
    pq.write_table(table.take(pa.array(rng.permutation(len(inst)))), tmp_path / "long.parquet")
    metrics = default_metrics((1, 5, 10))
    acc = Accumulator(metrics)
    for r, p in zip(rows, positive):
        acc.add(dense_counts(r[None, :], np.array([p])))
    expected = same(acc.result("x", np.float32))
    assert same(evaluate_path(str(tmp_path / "wide.parquet"))) == expected
    for batch_rows in (1, 5, None):
        r = evaluate_dump(open_dump(tmp_path / "long.parquet"), batch_rows=batch_rows)
        assert same(r) == expected


def test_worker_processes_give_identical_results(tmp_path, rng, monkeypatch):
    monkeypatch.setattr(tnpy, "PART_BYTES", 4096)  # many parts, so several workers share them
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_JOBS_FOR_SHIPPING", 2)
    s = tied(rng, rows=600)
    positive = rng.integers(0, COLS, size=600)
    np.save(tmp_path / "s.npy", s)
    expected = same(evaluate(s, k=(1, 5, 10)))
    dump = open_dump(tmp_path / "s.npy")
    assert len(dump.parts) > 2
    seen = []
    r = evaluate_dump(dump, jobs=2, progress=lambda rows, nbytes: seen.append(rows))
    assert same(r) == expected and sum(seen) == 600
    # a front-to-back source (deflated NPZ) ships batches; a shuffled long dump regroups
    np.savez_compressed(tmp_path / "d.npz", scores=s, positive=positive)
    pq.write_table(long_table(s, positive, order=rng.permutation(s.size)),
                   tmp_path / "l.parquet")
    expected = same(evaluate(s, k=(1, 5, 10), positive=positive))
    for name in ("d.npz", "l.parquet"):
        got = evaluate_dump(open_dump(tmp_path / name), jobs=2, batch_rows=50)
        assert same(got) == expected, name
    # errors come in dump order, as one process would give them
    s[123, 4] = np.nan
    s[555, 1] = np.nan
    np.save(tmp_path / "nan.npy", s)
    with pytest.raises(InputError, match="row 123: NaN score"):
        evaluate_dump(open_dump(tmp_path / "nan.npy"), jobs=2, batch_rows=10)


def test_jobs_argument_is_checked(tmp_path, rng):
    np.save(tmp_path / "s.npy", tied(rng))
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ParameterError, match="jobs must be a whole number"):
            evaluate_dump(open_dump(tmp_path / "s.npy"), jobs=bad)


def test_accumulator_state_round_trips_through_json(rng):
    s = tied(rng)
    acc = Accumulator(default_metrics((1, 5, 10)))
    acc.add(dense_counts(s, np.zeros(ROWS, dtype=np.int64)))
    back = acc.from_state_like(json.loads(json.dumps(acc.to_state())))
    assert same(back.result("x", s.dtype)) == same(acc.result("x", s.dtype))


# ---------------------------------------------------------------------------------------
# NPZ streaming

def test_deflated_npz_is_streamed_not_loaded(tmp_path):
    s = np.zeros((4000, 500), dtype=np.float32)  # 8 MB, compresses to almost nothing
    s[:, 0] = 1
    np.savez_compressed(tmp_path / "z.npz", scores=s)
    from tieeval.kernels import threads

    def peak_of(count):
        dump = open_dump(tmp_path / "z.npz")
        assert dump.parts is None  # read front to back
        threads.set_threads(count)
        tracemalloc.start()
        try:
            r = evaluate_dump(dump, batch_rows=200)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            threads.set_threads(None)
        assert r.instances == 4000 and r.metric("HR@1").tie_aware == 1.0
        return peak
    # batches of 400 KB, never the 8 MB array: one batch at a time in one thread, and with
    # two threads two batches in evaluation and one being read
    assert peak_of(1) < s.nbytes / 4
    assert peak_of(2) < s.nbytes / 2


def test_stored_npz_is_memory_mapped_in_parts(tmp_path, rng, monkeypatch):
    monkeypatch.setattr(tnpy, "PART_BYTES", 1000)
    s = tied(rng)
    np.savez(tmp_path / "s.npz", scores=s, positive=np.full(ROWS, 2), model=np.array("M"))
    dump = open_dump(tmp_path / "s.npz")
    assert len(dump.parts) > 1 and dump.metadata == {"model": "M"}
    got = same(evaluate_dump(dump))
    assert got.pop("labels")["model"] == "M"
    expected = same(evaluate(s, positive=2))
    expected.pop("labels")
    assert got == expected


def npz_with_member(path, header_shape, data: bytes, method):
    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False,
                                               "shape": header_shape})
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("scores.npy", buf.getvalue() + data)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_npz_member_shorter_than_its_header(tmp_path, method):
    data = np.ones((50, 5), dtype=np.float32).tobytes()
    npz_with_member(tmp_path / "short.npz", (100, 5), data, method)
    with pytest.raises(InputError) as info:
        evaluate_path(str(tmp_path / "short.npz"), batch_rows=10)
    message = str(info.value)
    assert "short.npz: corrupted or truncated file" in message and "\n" not in message


def test_corrupted_deflated_member_is_one_line_error(tmp_path, rng):
    s = rng.random((300, 40)).astype(np.float32)
    np.savez_compressed(tmp_path / "z.npz", scores=s)
    data = bytearray((tmp_path / "z.npz").read_bytes())
    with zipfile.ZipFile(tmp_path / "z.npz") as zf:
        info = zf.getinfo("scores.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for at in (start + info.compress_size // 2, start + info.compress_size - 3):
        bad = bytearray(data)
        bad[at] ^= 0xFF
        (tmp_path / "bad.npz").write_bytes(bytes(bad))
        with pytest.raises(InputError) as err:
            evaluate_path(str(tmp_path / "bad.npz"), batch_rows=50)
        message = str(err.value)
        assert "bad.npz: corrupted or truncated file" in message and "\n" not in message


# ---------------------------------------------------------------------------------------
# Parquet datasets

def test_dataset_directory_errors_and_warnings(tmp_path, rng, monkeypatch):
    s = tied(rng)
    col = pa.FixedSizeListArray.from_arrays(pa.array(s.ravel()), COLS)
    d = tmp_path / "ds"
    d.mkdir()
    pq.write_table(pa.table({"scores": col}), d / "a.parquet", row_group_size=100)
    monkeypatch.setattr(tparquet, "LARGE_ROW_GROUP_BYTES", 1000)
    dump = open_dump(d)
    assert dump.rows == ROWS and len(dump.parts) == 4
    assert any("row_group_size" in w for w in dump.warnings)
    r = evaluate_dump(dump)
    assert any("Rewrite with smaller row groups" in w for w in r.warnings)
    pq.write_table(pa.table({"scores": pa.array([[1.0, 2.0]])}), d / "b.parquet")
    with pytest.raises(InputError, match="b.parquet: column 'scores' differs"):
        open_dump(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="is a directory with no Parquet files"):
        open_dump(empty)


# ---------------------------------------------------------------------------------------
# long layout: errors name the instance

def write_long(path, **columns):
    table = pa.table(columns)
    if str(path).endswith(".csv"):
        pcsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_long_layout_errors(tmp_path, suffix):
    def err(fragment, options=None, **cols):
        path = write_long(tmp_path / f"x{suffix}", **cols)
        with pytest.raises(InputError) as info:
            evaluate_dump(open_dump(path, options))
        assert fragment in str(info.value) and str(path) in str(info.value)

    base = dict(instance=[1, 1, 2, 2], position=[0, 1, 0, 1], score=[0.5, 0.2, 0.1, 0.3])
    # labels other than one 1 per instance are relevance labels (test_long_labels.py);
    # those must be finite, as in a wide 'labels' field
    err("instance 2: 'label' holds nan (labels must be finite)",
        label=[1, 0, float("nan"), 0], **base)
    err("instance 1: position 0 appears twice",
        **{**base, "position": [0, 0, 0, 1]}, label=[1, 0, 1, 0])
    err("no column 'position'", instance=[1, 1], score=[0.5, 0.2], label=[1, 0],
        options=ReadOptions(layout="long"))
    err("'label' column; --positive-index would contradict it", label=[1, 0, 1, 0],
        options=ReadOptions(positive_index=1), **base)
    err("instance 1: positive index 5 is out of range", options=ReadOptions(positive_index=5),
        **base)
    err("column 'score' holds null values", label=[1, 0, 1, 0],
        **{**base, "score": [0.5, None, 0.1, 0.3]})
    err("instance 2: NaN score", label=[1, 0, 1, 0],
        **{**base, "score": [0.5, 0.2, float("nan"), 0.3]})


def test_long_layout_options_rename_columns(tmp_path, rng):
    s = tied(rng, rows=30, cols=5)
    t = long_table(s, np.full(30, 3))
    t = t.rename_columns(["uid", "rank_in_list", "pred", "is_pos"])
    pq.write_table(t, tmp_path / "r.parquet")
    options = ReadOptions(layout="long", instance="uid", position="rank_in_list", score="pred",
                          label="is_pos")
    assert same(evaluate_dump(open_dump(tmp_path / "r.parquet", options))) == \
        same(evaluate(s, positive=3))
    with pytest.raises(ParameterError, match="--score-column only apply to long-layout"):
        open_dump(tmp_path / "r.parquet", ReadOptions(layout="wide", score="pred"))
    np.save(tmp_path / "s.npy", s)
    with pytest.raises(InputError, match="long layout is read from Parquet or CSV"):
        open_dump(tmp_path / "s.npy", ReadOptions(layout="long"))


# ---------------------------------------------------------------------------------------
# command line and progress

def run_cli(*args):
    return CliRunner().invoke(cli, list(map(str, args)), catch_exceptions=False)


def test_cli_layouts_jobs_and_engine_local_agree(tmp_path, rng):
    s = tied(rng)
    positive = rng.integers(0, COLS, size=ROWS)
    write_all_layouts(tmp_path, s, positive, rng)
    outputs = []
    for args in (["stored.npz"], ["deflated.npz", "--jobs", "2"],
                 ["wide_dataset", "--engine", "local", "--batch-rows", "9"],
                 ["long_shuffled.parquet", "--layout", "long", "-j", "1"],
                 ["long.csv", "--score-dtype", "float32", "--instance-column", "instance"]):
        res = run_cli("compare", tmp_path / args[0], *args[1:], "--format", "json", "--quiet")
        assert res.exit_code == 0, res.output
        run = json.loads(res.stdout)["runs"][0]
        run.pop("path")
        run.pop("labels")  # the CLI names each run after its file
        outputs.append(run)
    assert all(o == outputs[0] for o in outputs[1:])
    res = run_cli("compare", tmp_path / "long.csv", "--layout", "wide")
    assert res.exit_code == 2 and "CSV dumps are read in the long layout only" in res.output


def test_cli_spark_missing_is_one_line_error(tmp_path, rng, monkeypatch):
    import tieeval.engine.spark as spark
    from tieeval.engine.spark import SparkUnavailable

    def missing():
        raise SparkUnavailable("the Spark engine needs pyspark: pip install 'tieeval[spark]'")
    monkeypatch.setattr(spark, "_require", missing)
    monkeypatch.setattr(spark, "session", lambda *args, **kwargs: missing())
    pq.write_table(pa.table({"scores": pa.array([[0.5, 0.1]])}), tmp_path / "s.parquet")
    res = run_cli("compare", tmp_path / "s.parquet", "--engine", "spark")
    assert res.exit_code == 2
    assert res.output.strip() == ("Error: the Spark engine needs pyspark: pip install "
                                  "'tieeval[spark]'")


def test_progress_bar_only_on_a_terminal(tmp_path, rng):
    from rich.console import Console

    from tieeval.cli.progress import ProgressBar, wanted
    np.save(tmp_path / "s.npy", tied(rng))
    buf = _io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with ProgressBar(True, console=console) as bar:
        dump = open_dump(tmp_path / "s.npy")
        evaluate_dump(dump, batch_rows=50, progress=bar.task(dump))
    assert "rows" in buf.getvalue()
    assert not wanted(False, _io.StringIO()) and not wanted(True)
    with ProgressBar(False) as bar:
        assert bar.task(dump) is None
    res = run_cli("compare", tmp_path / "s.npy", "--format", "json")
    assert "ETA" not in res.stderr and json.loads(res.stdout)


# ---------------------------------------------------------------------------------------
# the optional fused kernel

def test_fused_kernel_matches_numpy(rng, monkeypatch):
    from tieeval.kernels import fused
    if not fused.available():
        pytest.skip("numba not installed (pip install 'tieeval[fast]'): numpy path only")
    monkeypatch.setattr(fused, "MIN_SCORES", 0)
    fused.use(True)
    for dtype in (np.float32, np.float64, np.int64):
        s = tied(rng, rows=300, dtype=np.float64)
        s = (np.where(np.isinf(s), -9, s * 5).astype(dtype) if dtype == np.int64
             else s.astype(dtype))
        positive = rng.integers(0, COLS, size=300)
        fast = dense_counts(s, positive)
        monkeypatch.setattr(fused, "MIN_SCORES", 1 << 62)
        slow = dense_counts(s, positive)
        monkeypatch.setattr(fused, "MIN_SCORES", 0)
        for f in ("a", "b", "n", "top", "original"):
            np.testing.assert_array_equal(getattr(fast, f), getattr(slow, f))
    s = tied(rng)
    s[5, 3] = np.nan  # NaN rows go to the numpy path and its policies
    with pytest.raises(Exception, match="NaN"):
        dense_counts(s, np.zeros(ROWS, dtype=np.int64))
    fused.use(False)
    # opt-in only: chosen by size it would make a big dump's peak memory depend on its size
    monkeypatch.delenv("TIEEVAL_KERNEL", raising=False)
    assert not fused.wanted(1 << 40)
    monkeypatch.setenv("TIEEVAL_KERNEL", "numba")
    assert fused.wanted(0)
    monkeypatch.setenv("TIEEVAL_KERNEL", "numpy")
    assert not fused.wanted(1 << 40)


def test_core_never_imports_spark_rich_click_or_numba():
    import subprocess
    import sys
    code = ("import sys, tieeval.engine.local, tieeval.io.parquet, tieeval.io.long, "
            "tieeval.engine.parallel, tieeval.kernels.fused, tieeval.engine.spark; "
            "print(sorted(m for m in ('pyspark', 'rich', 'click', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
