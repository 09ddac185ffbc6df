"""Every option of the local engine runs on Spark with the local engine's output, bit for
bit: TREC runs, ``diff``, the ``--original`` rules (a saved ranking too), ``--cast`` /
``--tolerance``, ``--per-instance`` and ``--per-query``, through ``compare``, ``diff``,
``check``, ``rank``, ``ties`` and ``audit``, on Parquet, CSV and TREC inputs.

The local engine is the oracle here (its figures are checked against enumeration, closed
forms, trec_eval and other libraries elsewhere in the suite); each test runs the same
command line on both engines, in Spark local mode with one shared session
(tests/conftest.py). Skipped without pyspark or Java, as tests/engine/test_spark.py.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark", reason="pyspark not installed: pip install 'tieeval[spark]' "
                    "to run the Spark engine tests")
if shutil.which("java") is None:
    pytest.skip("Java not found: the Spark engine tests need Java 17 or later",
                allow_module_level=True)

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support:FutureWarning")

from tieeval.cli import cli  # noqa: E402
from tieeval.io import long as long_reader  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "sample_scores")


def run(engine: str, *args) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [*map(str, args), "--engine", engine, "--quiet"])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, res.stdout


def same(*args) -> str:
    """``tieeval ARGS`` on both engines: the same exit code and stdout (JSON, trec_eval
    lines, tables), which is returned."""
    local = run("local", *args)
    assert run("spark", *args) == local
    return local[1]


def lists(rows, typ):
    return pa.array([r.tolist() for r in rows], type=pa.list_(typ))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Tiny tied dumps of the same 60 instances: A and B as wide Parquet with a stored
    ``instance`` id (B's rows shuffled, so diff aligns by id), A as a three-file dataset
    (row groups of 7), A with the codebase's saved ranking (a stable sort, the top 3
    listed for some rows), and A in the long layout (two shuffled files, and a CSV)."""
    tmp = tmp_path_factory.mktemp("spark-parity")
    rng = np.random.default_rng(20261201)
    n = 60
    lengths = rng.integers(2, 12, size=n)
    a = [(rng.integers(0, 4, size=m) / 3).astype(np.float32) for m in lengths]
    b = [np.where(rng.random(m) < 0.3, s + np.float32(1 / 3), s).astype(np.float32)
         for s, m in zip(a, lengths)]
    positive = np.array([rng.integers(0, m) for m in lengths])
    ids = rng.permutation(1000)[:n]

    def wide(scores, order):
        return pa.table({"scores": lists([scores[i] for i in order], pa.float32()),
                         "positive": positive[order], "instance": ids[order]})
    pq.write_table(wide(a, np.arange(n)), tmp / "A.parquet", row_group_size=16)
    pq.write_table(wide(b, rng.permutation(n)), tmp / "B.parquet", row_group_size=16)
    (tmp / "A").mkdir()
    table = wide(a, np.arange(n))
    for i, lo in enumerate((0, 25, 41)):  # unequal files: Spark packs them by size
        hi = (25, 41, n)[i]
        pq.write_table(table.slice(lo, hi - lo), tmp / "A" / f"part-{i}.parquet",
                       row_group_size=7)
    ranking = [np.argsort(-s, kind="stable")[:3 if i % 4 == 0 else None]
               for i, s in enumerate(a)]
    pq.write_table(table.append_column("ranking", lists(ranking, pa.int64())),
                   tmp / "ranked.parquet", row_group_size=16)
    inst = np.concatenate([np.full(m, ids[i]) for i, m in enumerate(lengths)])
    long = pa.table({"instance": inst,
                     "position": np.concatenate([np.arange(m) for m in lengths]),
                     "score": np.concatenate(a),
                     "label": np.concatenate([(np.arange(m) == p).astype(np.int8)
                                              for m, p in zip(lengths, positive)])})
    long = long.take(pa.array(rng.permutation(len(inst))))
    (tmp / "long").mkdir()
    half = len(long) // 2
    pq.write_table(long.slice(0, half), tmp / "long" / "part-0.parquet")
    pq.write_table(long.slice(half), tmp / "long" / "part-1.parquet")
    pcsv.write_csv(long, tmp / "long.csv")
    return tmp


@pytest.fixture(scope="module")
def trec(tmp_path_factory):
    """Two tied TREC runs of 12 queries (graded qrels, unjudged documents, a judged query
    without results) and their qrels."""
    tmp = tmp_path_factory.mktemp("spark-trec")
    rng = np.random.default_rng(7)
    qrels, runs = [], {"A": [], "B": []}
    for q in range(12):
        docs = [f"d{q}_{j}" for j in range(rng.integers(3, 15))]
        for d in docs:
            if rng.random() < 0.7:
                qrels.append(f"q{q} 0 {d} {rng.integers(0, 3)}")
        if q == 11:
            continue  # judged, never retrieved
        for name in runs:
            scores = rng.integers(0, 3, size=len(docs)) / 2
            runs[name] += [f"q{q} Q0 {d} {r + 1} {s:g} {name}"
                           for r, (d, s) in enumerate(zip(docs, scores))]
    (tmp / "qrels.txt").write_text("\n".join(qrels) + "\n")
    for name, lines in runs.items():
        (tmp / f"{name}.run").write_text("\n".join(lines) + "\n")
    return tmp


def test_api_runs_every_option_on_spark(spark, data):
    """``evaluate_path(engine='spark', ...)`` once refused these; now the local figures."""
    import tieeval
    for path, kwargs in ((data / "ranked.parquet", {"original": "given", "metrics": "HR@3"}),
                         (data / "A.parquet", {"original": "stable", "cast": "bfloat16"})):
        got = tieeval.evaluate_path(str(path), engine="spark", **kwargs)
        assert got.to_dict() == tieeval.evaluate_path(str(path), **kwargs).to_dict()


def test_original_rules_and_what_ifs_match_local(spark, data):
    for path, extra in ((data / "A.parquet", ("--original", "reverse-stable",
                                              "--tolerance", "0.34")),
                        (data / "A.parquet", ("--cast", "bfloat16", "--original", "stable",
                                              "-m", "MAP", "-m", "NDCG@5")),
                        (data / "long", ("--cast", "float16", "--original", "stable")),
                        (data / "long.csv", ("--score-dtype", "float32", "--tolerance",
                                             "0.5"))):
        (got,) = json.loads(same("compare", path, "-f", "json", *extra))["runs"]
        assert "what_if" in got
        assert got.get("original_rule") == (extra[1] if extra[0] == "--original" else None
                                            ) or extra[2] == "--original"


def test_saved_ranking_matches_local(spark, data):
    (got,) = json.loads(same("compare", data / "ranked.parquet", "-f", "json", "--original",
                             "given", "-m", "HR@3", "-m", "NDCG@2"))["runs"]
    assert got["original_rule"] == "given"
    # check judges a dump by the ranking it carries, with only the metrics it answers
    out = json.loads(same("check", data / "ranked.parquet", "-f", "json"))
    assert {c["metric"] for c in out["checks"] if c["metric"]} <= {"HR@1", "NDCG@1"}
    assert out["runs"][0]["original_rule"] == "given"


def test_per_query_lines_match_local(spark, data, trec):
    for args in ((data / "A",), (data / "long",),
                 (trec / "A.run", "--qrels", trec / "qrels.txt", "-m", "P.5,10",
                  "-m", "ndcg_cut_10", "-m", "map")):
        out = same("compare", *args, "-f", "trec_eval", "--per-query")
        assert len(out.splitlines()) > 40


def test_per_instance_rows_match_local(spark, data, trec, tmp_path):
    """The file is the local engine's, row for row: a dataset's rows in file order with
    their stored ids, a long dump's instances in the local reader's order."""
    for name, args in (("dataset", (data / "A", "--cast", "float16")),
                       ("long", (data / "long", "--original", "stable")),
                       ("trec", (trec / "B.run", "--qrels", trec / "qrels.txt"))):
        tables = []
        for engine in ("local", "spark"):
            out = tmp_path / f"{name}-{engine}.parquet"
            assert run(engine, "compare", *args, "--per-instance", out, "-f", "json")[0] == 0
            tables.append(pq.read_table(out))
        assert tables[0].equals(tables[1]), name
    ids = pq.read_table(data / "A.parquet", columns=["instance"]).column(0)
    assert pq.read_table(tmp_path / "dataset-spark.parquet").column("instance").equals(ids)


def test_diff_matches_local(spark, data, trec):
    for args in ((data / "A.parquet", data / "B.parquet"),  # aligned by instance id
                 (data / "A", data / "ranked.parquet", "--original", "stable"),  # row order
                 (data / "long", data / "B.parquet", "--cast", "float16"),
                 (data / "A.parquet", data / "B.parquet", "--fail-if-worse", "HR@1",
                  "--permutations", "500", "--seed", "3"),
                 (trec / "A.run", trec / "B.run", "--qrels", trec / "qrels.txt",
                  "-m", "ndcg_cut_10", "-m", "map")):
        same("diff", *args, "-f", "json")


def test_rank_ties_and_audit_match_local(spark, data, trec):
    same("rank", data / "A.parquet", data / "B.parquet", data / "long", "-f", "json",
         "--cast", "bfloat16")
    same("ties", data / "A", data / "long", "-f", "json", "--original", "reverse-stable")
    same("rank", trec / "A.run", trec / "B.run", "--qrels", trec / "qrels.txt",
         "--group-by-tag", "-f", "json")
    same("audit", os.path.join(SAMPLES, "sigmoid_saturated.parquet"),
         os.path.join(SAMPLES, "tie_free.parquet"), "--claims",
         os.path.join(SAMPLES, "claims.csv"), "-f", "json", "--meta", "dataset=synthetic",
         "--meta", "task=user", "--ignore-unmatched")


def test_trec_runs_match_local(spark, trec):
    qrels = trec / "qrels.txt"
    for extra in ((), ("--judged-only",),
                  ("--missing-queries", "zero", "-m", "P.5", "-m", "recip_rank"),
                  ("--cast", "bfloat16", "-m", "ndcg_cut_5")):
        same("compare", trec / "A.run", "--qrels", qrels, "-f", "json",
             *(("--convention", "trec_eval") if not extra else extra))
    same("check", trec / "A.run", "--qrels", qrels, "-f", "json")


@pytest.fixture
def small_spills(monkeypatch):
    """Spill partitions of 1 KB: the local reader regroups the long dump through several,
    and gives its instances by (partition, id)."""
    monkeypatch.setattr(long_reader, "SPILL_PART_BYTES", 1 << 10)


def test_long_dump_regrouped_through_spill_partitions_keeps_the_local_order(
        spark, data, tmp_path, small_spills):
    # shuffled rows: the local order is (spill partition, id), which Spark follows
    assert long_reader.spill_parts(_opened(data / "long")) > 1
    same("diff", data / "long", data / "B.parquet", "-f", "json")
    same("compare", data / "long", "-f", "trec_eval", "--per-query")
    # the same rows sorted by instance stream in id order, however many spill partitions
    table = pq.read_table(data / "long").sort_by([("instance", "ascending")])
    (tmp_path / "sorted").mkdir()
    pq.write_table(table.slice(0, 200), tmp_path / "sorted" / "part-0.parquet")
    pq.write_table(table.slice(200), tmp_path / "sorted" / "part-1.parquet")
    same("compare", tmp_path / "sorted", "-f", "trec_eval", "--per-query")


def _opened(path):
    from tieeval.io.open import open_dump
    return open_dump(str(path))


def test_corrupt_parquet_page_is_refused_on_spark_too(spark, tmp_path):
    """A page whose bytes changed after it was written (its CRC stored by the writer) is
    refused by both engines, never read into other figures."""
    from tieeval.engine import spark as tspark
    from tieeval.errors import InputError

    rng = np.random.default_rng(3)
    scores = rng.random((200, 50)).astype(np.float32)
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"scores": lists(scores, pa.float32())}), path,
                   write_page_checksum=True, compression="NONE", use_dictionary=False)
    raw = bytearray(path.read_bytes())
    needle = scores[100, 10].tobytes()
    at = raw.find(needle)
    assert at > 0
    raw[at:at + 4] = np.float32(0.0).tobytes()  # the same length: only the CRC tells
    path.write_bytes(bytes(raw))
    res = CliRunner().invoke(cli, ["compare", str(path), "-f", "json"])
    assert res.exit_code == 2 and "Error:" in res.output
    with pytest.raises(Exception) as info:  # noqa: B017 - any error, never figures
        tspark.evaluate_path(str(path), spark=spark)
    assert not isinstance(info.value, AssertionError)
    assert isinstance(info.value, InputError) or "checksum" in str(info.value).lower()
