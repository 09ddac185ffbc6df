"""``--per-instance FILE.parquet`` and ``tieeval.write_per_instance``: one row per instance.

The run's figures are means over instances, so each ``_tie_aware`` (and ``_original`` ...)
column, averaged over its non-null rows, must give the run's number; the ranks and counts
are checked against numpy directly.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tieeval import save_scores, write_per_instance
from tieeval.cli import cli
from tieeval.engine.local import evaluate_path

COLUMNS = ("original", "first", "last", "tie_aware")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def check_means(table: pa.Table, run: dict) -> None:
    assert table.num_rows == run["instances"]
    for row in run["metrics"]:
        label = row["metric"] + (f"@{row['k']}" if row["k"] is not None else "")
        if row.get("gamma") is not None:
            label += f"_g{row['gamma']:g}"
        for column in COLUMNS:
            values = table.column(f"{label}_{column}").to_numpy(zero_copy_only=False)
            values = values[~np.isnan(values)]
            assert values.mean() == pytest.approx(row[column], abs=1e-12), (label, column)


def test_single_positive_rows(tmp_path):
    rng = np.random.default_rng(0)
    s = rng.integers(0, 4, (500, 30)).astype(np.float32)
    pos = rng.integers(0, 30, 500)
    save_scores(tmp_path / "run.npz", s, pos, instances=np.arange(500) * 10 + 3)
    out = tmp_path / "rows.parquet"
    res = invoke("compare", tmp_path / "run.npz", "-k", "1", "-k", "10", "-f", "json",
                 "--per-instance", out, "-q", "--original", "stable")
    assert res.exit_code == 0, res.output
    run = json.loads(res.output)["runs"][0]
    table = pq.read_table(out)
    check_means(table, run)
    assert table.column("instance").to_pylist() == list(np.arange(500) * 10 + 3)
    p = s[np.arange(500), pos][:, None]
    assert (table.column("a").to_numpy() == (s > p).sum(1)).all()
    assert (table.column("b").to_numpy() == (s == p).sum(1)).all()
    stable = [int(np.flatnonzero(np.argsort(-r, kind="stable") == q)[0]) + 1
              for r, q in zip(s, pos)]
    assert table.column("original_rank").to_pylist() == stable
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_rows_do_not_depend_on_jobs_or_batches(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.integers(0, 3, (4000, 16)).astype(np.float32)
    save_scores(tmp_path / "run.npz", s)
    tables = []
    for jobs, batch in (("1", "4000"), ("3", "333")):
        out = tmp_path / f"rows{jobs}.parquet"
        res = invoke("compare", tmp_path / "run.npz", "-f", "json", "-q", "-j", jobs,
                     "--batch-rows", batch, "--per-instance", out)
        assert res.exit_code == 0, res.output
        tables.append(pq.read_table(out))
    assert tables[0].equals(tables[1])
    assert tables[0].column("instance").to_pylist() == list(range(4000))


def test_labelled_rows_with_gammas_and_undefined_rows(tmp_path):
    rng = np.random.default_rng(2)
    s = rng.integers(0, 3, (300, 12)).astype(np.float64)
    lab = rng.choice([-1, 0, 0, 1, 2], size=s.shape).astype(np.int8)
    lab[:20] = 0  # no relevant item: every metric is undefined there
    save_scores(tmp_path / "l.parquet", s, labels=lab)
    out = tmp_path / "rows.parquet"
    res = invoke("compare", tmp_path / "l.parquet", "-f", "json", "-q", "-m", "NDCG@5",
                 "-m", "SNDCG@5", "-m", "MAP", "--gamma", "0", "0.5", "--per-instance", out)
    assert res.exit_code == 0, res.output
    run = json.loads(res.output)["runs"][0]
    table = pq.read_table(out)
    check_means(table, run)
    assert "SNDCG@5_g0.5_tie_aware" in table.column_names
    assert "a" not in table.column_names
    assert table.column("NDCG@5_tie_aware").null_count == int((lab.max(axis=1) <= 0).sum())


def test_api_and_long_layout_ids(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for inst in ("u1", "u7", "u3"):
        for position in range(5):
            rows.append((inst, position, float(rng.integers(0, 2)), int(position == 0)))
    table = pa.table({"instance": [r[0] for r in rows], "position": [r[1] for r in rows],
                      "score": [r[2] for r in rows], "label": [r[3] for r in rows]})
    pq.write_table(table, tmp_path / "long.parquet")
    out = tmp_path / "rows.parquet"
    n = write_per_instance(str(tmp_path / "long.parquet"), str(out), ["HR@1", "MRR"])
    got = pq.read_table(out)
    assert n == 3 and sorted(got.column("instance").to_pylist()) == ["u1", "u3", "u7"]
    run = evaluate_path(str(tmp_path / "long.parquet"), ["HR@1", "MRR"])
    check_means(got, run.to_dict())


def test_bad_uses_are_one_line_errors(tmp_path):
    save_scores(tmp_path / "a.npz", np.zeros((2, 3), dtype=np.float32))
    res = invoke("compare", tmp_path / "a.npz", tmp_path / "a.npz", "--per-instance",
                 tmp_path / "rows.parquet")
    assert res.exit_code == 2 and "one FILE" in res.output
    res = invoke("compare", tmp_path / "a.npz", "--per-instance",
                 tmp_path / "missing" / "rows.parquet")
    assert res.exit_code == 2 and res.output.startswith("Error: ")
    assert res.output.count("\n") == 1


def test_dataset_rows_are_numbered_over_all_files(tmp_path):
    """A dataset's per-instance rows once restarted their numbers, and their stored ids,
    at every file (a batch's start counts within its file): rows are numbered over the
    whole dataset, in file order, and stored ids are each row's own."""
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 3, (30, 6)).astype(np.float32)
    positive = rng.integers(0, 6, 30)
    ids = rng.permutation(100)[:30]
    for with_ids in (False, True):
        folder = tmp_path / f"ids-{with_ids}"
        folder.mkdir()
        for i, (lo, hi) in enumerate(((0, 11), (11, 20), (20, 30))):
            columns = {"scores": pa.array(scores[lo:hi].tolist(), pa.list_(pa.float32())),
                       "positive": positive[lo:hi]}
            if with_ids:
                columns["instance"] = ids[lo:hi]
            pq.write_table(pa.table(columns), folder / f"part-{i}.parquet", row_group_size=4)
        out = tmp_path / f"rows-{with_ids}.parquet"
        res = invoke("compare", folder, "--per-instance", out, "-m", "HR@1", "-q")
        assert res.exit_code == 0, res.output
        table = pq.read_table(out)
        expected = ids if with_ids else np.arange(30)
        assert table.column("instance").to_pylist() == expected.tolist()
        # each row's values are its own: the positive's place among its row's scores
        p = scores[np.arange(30), positive]
        assert table.column("a").to_pylist() == (scores > p[:, None]).sum(axis=1).tolist()
