"""The command line: options, output formats, exit codes and error messages."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli, expand_multi_value

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "sample_scores", "sigmoid_saturated.parquet")


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def tied_npz(tmp_path):
    rng = np.random.default_rng(3)
    scores = rng.random((50, 11)).astype(np.float32)
    scores[:20, :4] = 1.0  # positive (column 0) tied with three negatives at the top
    path = tmp_path / "tied.npz"
    np.savez(path, scores=scores)
    return str(path), scores


def test_k_spellings_are_equivalent(tied_npz):
    path, _ = tied_npz
    outs = [json.loads(run("compare", path, *ks, "--format", "json").output)
            for ks in (["--k", "1", "5", "10"], ["--k", "1,5,10"],
                       ["--k", "1", "--k", "5", "--k", "10"], [])]
    assert all(o["runs"] == outs[0]["runs"] for o in outs)
    assert [(m["metric"], m["k"]) for m in outs[0]["runs"][0]["metrics"]] == [
        ("HR", 1), ("HR", 5), ("HR", 10), ("NDCG", 1), ("NDCG", 5), ("NDCG", 10), ("MRR", None)]


def test_k_values_then_more_files():
    assert expand_multi_value(["a.npz", "--k", "1", "5", "b.npz"]) == [
        "a.npz", "--k", "1", "--k", "5", "b.npz"]
    assert expand_multi_value(["--k", "x", "1"]) == ["--k", "x", "--k", "1"]


def test_json_contract_keys_and_values(tied_npz):
    path, scores = tied_npz
    doc = json.loads(run("compare", path, "--k", "1", "--format", "json").output)
    assert {"tieeval_version", "numpy_version", "runs"} <= set(doc)
    assert doc["numpy_version"] == np.__version__
    r = doc["runs"][0]
    assert {"path", "instances", "candidates", "dtype", "metrics", "ties"} <= set(r)
    assert r["instances"] == 50 and r["candidates"] == {"min": 11, "max": 11}
    assert r["dtype"] == "float32"
    for m in r["metrics"]:
        assert {"metric", "k", "original", "first", "last", "tie_aware",
                "tie_aware_std"} <= set(m)
        assert m["last"] <= m["original"] <= m["first"]
        assert m["last"] <= m["tie_aware"] <= m["first"]
    assert set(r["ties"]) >= {"top_tie_size", "top_tie_ratio", "top_tie_frequency",
                              "positive_tie_size", "positive_tie_frequency", "tie_decided"}
    # 20 rows have the positive tied four-way at the top; HR@1 is decided there.
    assert r["ties"]["tie_decided"] == {"1": 20 / 50}
    hr1 = r["metrics"][0]
    # tied rows contribute 1/4 each, the other 30 rows contribute [a == 0]
    a = (scores[20:] > scores[20:, :1]).sum(1)
    assert hr1["tie_aware"] == pytest.approx((20 * 0.25 + np.sum(a == 0)) / 50, abs=1e-15)


def test_csv_one_line_per_metric_with_path(tied_npz):
    path, _ = tied_npz
    out = run("compare", path, "--k", "1", "5", "--format", "csv").output
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["metric"] + (r["k"] and "@" + r["k"]) for r in rows] == [
        "HR@1", "HR@5", "NDCG@1", "NDCG@5", "MRR"]
    assert all(r["path"] == path for r in rows)
    doc = json.loads(run("compare", path, "--k", "1", "5", "--format", "json").output)
    assert float(rows[0]["tie_aware"]) == doc["runs"][0]["metrics"][0]["tie_aware"]


def test_markdown_and_table_render(tied_npz):
    path, _ = tied_npz
    md = run("compare", path, "--format", "markdown").output
    table_lines = [line for line in md.splitlines()
                   if line.startswith("| HR@") and line.count("|") == 8]
    assert len(table_lines) == 3
    out = run("compare", path).output
    assert "Tie-aware" in out and "Top-score tie frequency" in out
    assert f"numpy {np.__version__}" in out


def test_metric_option_selects_rows(tied_npz):
    path, _ = tied_npz
    doc = json.loads(run("compare", path, "-m", "ndcg@3", "-m", "MRR", "--format",
                         "json").output)
    assert [(m["metric"], m["k"]) for m in doc["runs"][0]["metrics"]] == [("NDCG", 3),
                                                                        ("MRR", None)]


def test_several_files_are_several_runs(tied_npz):
    path, _ = tied_npz
    doc = json.loads(run("compare", path, SAMPLE, "--format", "json").output)
    assert [r["path"] for r in doc["runs"]] == [path, SAMPLE]


def test_positive_index_option(tmp_path):
    scores = np.array([[0.1, 0.5, 0.9], [0.3, 0.2, 0.9]], dtype=np.float64)
    path = tmp_path / "s.npy"
    np.save(path, scores)
    doc = json.loads(run("compare", str(path), "--k", "1", "--positive-index", "-1",
                         "--format", "json").output)
    assert doc["runs"][0]["metrics"][0]["first"] == 1.0  # 0.9 is the top score in both rows


def error_of(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("k,fragment", [("0", "K must be >= 1, got 0"),
                                        ("-3", "K must be >= 1, got -3"),
                                        ("x", "K must be a whole number >= 1, got 'x'"),
                                        ("1.5", "K must be a whole number >= 1, got '1.5'")])
def test_bad_k_is_usage_error(tied_npz, k, fragment):
    code, out = error_of("compare", tied_npz[0], "--k", k)
    assert code == 2 and fragment in out


def test_huge_k_saturates_without_a_k_sized_table(tied_npz):
    # K far beyond every row's length acts as that length: no int64 overflow (exit 3) and no
    # discount table of K entries (K = 2**31 used to allocate ~15 GB and get killed).
    path, _ = tied_npz

    def rows(*k):
        return json.loads(run("compare", path, "--k", *k, "--format", "json",
                              "--quiet").output)["runs"][0]["metrics"]
    assert [m | {"k": None} for m in rows("2147483648", str(2 ** 62))] == \
        [m | {"k": None} for m in rows("11", "12")]
    for spelling in (str(2 ** 62 + 1), "99999999999999999999"):
        code, out = error_of("compare", path, "--k", spelling)
        assert code == 2 and "K must be at most 2**62" in out and "internal error" not in out
    code, out = error_of("compare", path, "-m", "P@99999999999999999999")
    assert code == 2 and "K must be at most 2**62" in out


def test_input_errors_are_one_line_exit_2(tmp_path):
    missing = str(tmp_path / "missing.npz")
    code, out = error_of("compare", missing)
    assert code == 2 and out.strip() == f"Error: {missing}: no such file"

    bad = tmp_path / "scores.txt"
    bad.write_text("1,2,3\n")
    code, out = error_of("compare", str(bad))
    assert code == 2 and "unknown format" in out and str(bad) in out

    nan = tmp_path / "nan.npy"
    arr = np.ones((3, 4), dtype=np.float32)
    arr[2, 1] = np.nan
    np.save(nan, arr)
    code, out = error_of("compare", str(nan))
    assert code == 2 and f"{nan}: row 2: NaN score" in out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out

    code, out = error_of("compare", str(nan), "--nan-policy", "worst", "--format", "json")
    assert code == 0


def test_pickled_npz_is_refused(tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, scores=np.array([[1.0, 2.0], [3.0]], dtype=object))
    code, out = error_of("compare", str(path))
    assert code == 2 and "pickled" in out and "Traceback" not in out


def test_parquet_null_row(tmp_path):
    path = tmp_path / "null.parquet"
    pq.write_table(pa.table({"scores": pa.array([[1.0, 0.5], None], pa.list_(pa.float32()))}),
                   path)
    code, out = error_of("compare", str(path))
    assert code == 2 and f"{path}: row 1: 'scores' is null" in out


def test_version_and_help():
    assert run("--version").output.strip() == f"tieeval, version {tieeval.__version__}"
    assert "compare" in run("--help").output
    help_text = run("compare", "--help").output
    assert "tieeval compare scores.parquet --k 1 5 10" in help_text


def test_internal_errors_are_not_exit_1(tied_npz, monkeypatch):

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    import tieeval.engine.local
    monkeypatch.setattr(tieeval.engine.local, "drive", boom)
    result = CliRunner().invoke(cli, ["compare", tied_npz[0]])
    assert result.exit_code == 3 and "internal error" in result.output


def subprocess_run(args, **kw):
    return subprocess.run([sys.executable, "-m", "tieeval", *args], capture_output=True,
                          text=True, cwd=ROOT, **kw)


def test_python_m_subprocess_stdout_is_data_only():
    proc = subprocess_run(["compare", "sample_scores/tie_free.npz", "--format", "json"])
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)  # stdout parses as JSON: nothing else was printed there
    assert doc["runs"][0]["labels"]["method"] == "control"


def test_subprocess_error_has_no_traceback(tmp_path):
    proc = subprocess_run(["compare", str(tmp_path / "nope.parquet")])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("Error: ") and "Traceback" not in proc.stderr


def test_pipe_into_head_exits_quietly():
    proc = subprocess.run(f"{sys.executable} -m tieeval compare {SAMPLE} --format csv | head -1",
                          shell=True, capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.startswith("path,metric,k,")
    assert proc.stderr == ""
