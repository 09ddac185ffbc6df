"""Arrow arrays to numpy without pyarrow's ``to_numpy`` (which imports pandas)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from tieeval.io.arrow import to_numpy

TYPES = [pa.float16(), pa.float32(), pa.float64(), pa.int8(), pa.int16(), pa.int32(),
         pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.bool_()]


@pytest.mark.parametrize("typ", TYPES, ids=str)
def test_equals_pyarrow_on_whole_sliced_chunked_and_empty_arrays(typ):
    rng = np.random.default_rng(0)
    if pa.types.is_boolean(typ):
        values = rng.random(77) < 0.4
    else:
        values = (rng.integers(0, 100, size=77)).astype(typ.to_pandas_dtype())
    arr = pa.array(values, type=typ)
    cases = [arr, arr.slice(0, 0), arr.slice(3), arr.slice(5, 9), arr.slice(13, 50),
             pa.chunked_array([arr.slice(0, 10), arr.slice(40, 17)])]
    for case in cases:
        want = case.to_numpy() if isinstance(case, pa.ChunkedArray) else case.to_numpy(
            zero_copy_only=False)
        got = to_numpy(case)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_other_arrays_go_through_pyarrow():
    with_null = pa.array([1.5, None, 2.0], type=pa.float32())
    assert np.array_equal(to_numpy(with_null), with_null.to_numpy(zero_copy_only=False),
                          equal_nan=True)
    strings = pa.array(["a", "b"])
    assert list(to_numpy(strings)) == ["a", "b"]


def test_reading_parquet_and_trec_never_imports_pandas(tmp_path):
    pytest.importorskip("pandas")  # only meaningful where pandas could be imported
    import pyarrow.parquet as pq
    rng = np.random.default_rng(1)
    scores = rng.random((40, 12)).astype(np.float32)
    pq.write_table(pa.table({"scores": pa.array(list(scores), type=pa.list_(pa.float32())),
                             "positive": pa.array(rng.integers(0, 12, 40))}),
                   tmp_path / "wide.parquet")
    pq.write_table(pa.table({"instance": np.repeat(np.arange(40), 12),
                             "position": np.tile(np.arange(12), 40),
                             "score": scores.ravel(),
                             "label": (scores.ravel() > 0.8).astype(np.int8)}),
                   tmp_path / "long.parquet")
    (tmp_path / "run.txt").write_text("".join(
        f"q{q} Q0 d{d} {d} {s:.2f} tag\n" for q in range(3) for d, s in
        enumerate(rng.random(8))))
    (tmp_path / "qrels.txt").write_text("".join(
        f"q{q} 0 d{d} {d % 2}\n" for q in range(3) for d in range(8)))
    code = textwrap.dedent(f"""
        import sys
        import tieeval
        tieeval.evaluate_path({str(tmp_path / "wide.parquet")!r})
        tieeval.evaluate_path({str(tmp_path / "long.parquet")!r})
        tieeval.evaluate_path({str(tmp_path / "run.txt")!r},
                              qrels={str(tmp_path / "qrels.txt")!r})
        assert "pandas" not in sys.modules, "pandas was imported"
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
