"""``tieeval compare`` on labelled dumps: --metric, --gamma, --both, the JSON contract, and
graded NDCG end to end against scikit-learn.

References: scikit-learn's tie-averaged ``ndcg_score`` (McSherry & Najork), a double loop
over (positive, negative) pairs for V-AUC, the sort-free single-positive path, and the
identities of the signed metrics at gamma = 0. No expected number comes from tieeval's own
output.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.engine.local import evaluate_labels

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def doc(*args):
    return json.loads(run(*args, "--format", "json").stdout)


def rows_of(document, run_index=0):
    return document["runs"][run_index]["metrics"]


@pytest.fixture
def graded(tmp_path, rng):
    """200 rows x 12 candidates: float32 scores on 4 levels (heavy ties), labels 0..4."""
    scores = rng.integers(0, 4, (200, 12)).astype(np.float32)
    labels = rng.choice([0, 0, 0, 1, 2, 3, 4], size=(200, 12))
    labels[:5] = 0  # five rows without a relevant item: skipped, counted
    path = tmp_path / "graded.npz"
    np.savez(path, scores=scores, labels=labels)
    return str(path), scores, labels


@pytest.fixture
def signed(tmp_path, rng):
    """Labels in {-1, 0, 1}: explicit negatives, unobserved, positives."""
    scores = rng.integers(0, 3, (150, 8)).astype(np.float64)
    labels = rng.choice([-1, 0, 0, 1], size=(150, 8))
    labels[:10] = np.where(labels[:10] < 0, 0, labels[:10])  # rows without a negative
    labels[10:15] = np.where(labels[10:15] > 0, 0, labels[10:15])  # rows without a positive
    path = tmp_path / "signed.npz"
    np.savez(path, scores=scores, labels=labels)
    return str(path), scores, labels


def sklearn_mean_ndcg(scores, gains, k):
    values = [sklearn_metrics.ndcg_score(g[None, :], s[None, :].astype(np.float64), k=k,
                                         ignore_ties=False)
              for s, g in zip(scores, gains) if g.sum() > 0]
    return math.fsum(values) / len(values), len(values)


@pytest.mark.parametrize("k", [1, 3, 5, 12])
def test_graded_ndcg_tie_aware_equals_sklearn(graded, k):
    path, scores, labels = graded
    row = rows_of(doc("compare", path, "-m", f"NDCG@{k}"))[0]
    want, evaluated = sklearn_mean_ndcg(scores, labels.astype(np.float64), k)
    assert row["tie_aware"] == pytest.approx(want, rel=1e-12)
    assert (row["instances"], row["skipped"]) == (evaluated, 200 - evaluated) == (195, 5)
    assert row["last"] <= row["tie_aware"] <= row["first"]
    assert row["last"] <= row["original"] <= row["first"]


def test_log_base_discount(graded):
    path, scores, labels = graded
    d = doc("compare", path, "-m", "DCG@3", "--discount", "logb", "--log-base", "3")
    assert d["runs"][0]["relevance"]["log_base"] == 3.0
    # Jarvelin & Kekalainen with base 3: ranks 1-3 are undiscounted, so First's DCG@3 is the
    # sum of the top three labels when each tie block is ordered by label, highest first
    want = []
    for s, lab in zip(scores, labels):
        if lab.sum() > 0:
            order = np.lexsort((-lab, -s.astype(np.float64)))  # score desc, then label desc
            want.append(float(lab[order][:3].sum()))
    row = d["runs"][0]["metrics"][0]
    assert row["first"] == pytest.approx(math.fsum(want) / len(want), rel=1e-13)


def test_exponential_gain_equals_sklearn_on_transformed_labels(graded):
    path, scores, labels = graded
    row = rows_of(doc("compare", path, "-m", "NDCG@5", "--gain", "exponential"))[0]
    want, _ = sklearn_mean_ndcg(scores, 2.0 ** labels - 1.0, 5)
    assert row["tie_aware"] == pytest.approx(want, rel=1e-12)


def test_default_metrics_of_a_labelled_dump(graded):
    path, *_ = graded
    d = doc("compare", path, "--k", "1", "5")
    r = d["runs"][0]
    assert [(m["metric"], m["k"]) for m in r["metrics"]] == [
        ("HR", 1), ("HR", 5), ("Recall", 1), ("Recall", 5), ("NDCG", 1), ("NDCG", 5),
        ("MRR", None), ("MAP", None)]
    assert all(m["gamma"] is None for m in r["metrics"])
    # MAP's exact tie-break variance (checked against every tie order in
    # tests/kernels/test_tie_blocks.py): a number, as every other row's
    assert all(isinstance(m["tie_aware_std"], float) for m in r["metrics"])
    assert r["relevance"] == {
        "source": "labels", "gain": "linear", "discount": "log2", "alpha": None,
        "log_base": None, "short_list": "pad", "ap_norm": "R", "gammas": [1.0], "subset": "all",
        "instances_in_subset": 200, "instances_without_relevant": 5,
        "instances_without_negative": 200}
    assert r["instances"] == 200 and "data_warnings" not in r
    # the keys of a single-positive row, plus gamma, instances and skipped
    assert list(r["metrics"][0]) == [
        "metric", "k", "gamma", "original", "first", "last", "tie_aware", "tie_aware_std",
        "change_original_to_tie_aware", "change_first_to_last", "instances", "skipped"]
    (group,) = d["groups"]
    assert group["metrics"][0]["gamma"] is None
    assert isinstance(group["metrics"][-1]["tie_aware_std"], float)


def test_metric_names_print_back_canonically(signed):
    path, *_ = signed
    text = run("compare", path, "-m", "ndcg@10", "-m", "sndcg@20", "-m", "ap@100", "-m",
               "rr", "-m", "vauc", "-m", "p@3", "-q").stdout
    for name in ("NDCG@10", "SNDCG@20 γ=1", "MAP@100", "MRR", "V-AUC", "Precision@3"):
        assert name in text
    d = doc("compare", path, "-m", "v_auc", "-m", "AP@100", "-m", "SNDCG@20", "-q")
    assert [(m["metric"], m["k"], m["gamma"]) for m in rows_of(d)] == [
        ("V-AUC", None, None), ("MAP", 100, None), ("SNDCG", 20, 1.0)]


def test_gamma_spellings_and_sensitivity_rows(signed):
    path, *_ = signed
    docs = [doc("compare", path, "-m", "SNDCG@5", "-m", "HR@5", *g) for g in
            (["--gamma", "0", "0.5", "2"], ["--gamma", "0,0.5,2"],
             ["--gamma", "0", "--gamma", "0.5", "--gamma", "2"])]
    assert all(rows_of(x) == rows_of(docs[0]) for x in docs)
    rows = rows_of(docs[0])
    assert [(m["metric"], m["gamma"]) for m in rows] == [
        ("SNDCG", 0.0), ("SNDCG", 0.5), ("SNDCG", 2.0), ("HR", None)]
    # a larger penalty never raises a column (labels fixed, scores fixed)
    for col in ("original", "first", "last", "tie_aware"):
        assert rows[0][col] >= rows[1][col] >= rows[2][col]
    assert docs[0]["runs"][0]["relevance"]["gammas"] == [0.0, 0.5, 2.0]


def test_signed_metrics_at_gamma_zero_equal_unsigned(signed):
    path, *_ = signed
    rows = rows_of(doc("compare", path, "--gamma", "0", "-m", "SHR@3", "-m", "HR@3", "-m",
                       "SRecall@3", "-m", "Recall@3", "-m", "SNDCG@3", "-m", "NDCG@3",
                       "-m", "SDCG@3", "-m", "DCG@3"))
    for signed_row, plain in zip(rows[::2], rows[1::2]):
        for col in ("original", "first", "last", "tie_aware", "tie_aware_std"):
            assert signed_row[col] == pytest.approx(plain[col], rel=1e-13, abs=1e-15), (
                signed_row["metric"], col)
        assert signed_row["instances"] == plain["instances"]


def test_vauc_tie_aware_is_half_for_ties_and_strict_is_last(signed):
    path, scores, labels = signed
    (row,) = rows_of(doc("compare", path, "-m", "V-AUC"))
    tie_aware, strict, optimistic = [], [], []
    for s, lab in zip(scores, labels):
        pos, neg = s[lab > 0], s[lab < 0]
        if pos.size == 0 or neg.size == 0:
            continue
        gt = sum(1 for p in pos for q in neg if p > q)
        eq = sum(1 for p in pos for q in neg if p == q)
        pairs = pos.size * neg.size
        tie_aware.append((gt + 0.5 * eq) / pairs)
        strict.append(gt / pairs)
        optimistic.append((gt + eq) / pairs)
    assert row["instances"] == len(tie_aware) and row["skipped"] == 150 - len(tie_aware)
    assert row["tie_aware"] == pytest.approx(math.fsum(tie_aware) / len(tie_aware), rel=1e-13)
    assert row["last"] == pytest.approx(math.fsum(strict) / len(strict), rel=1e-13)
    assert row["first"] == pytest.approx(math.fsum(optimistic) / len(optimistic), rel=1e-13)


def test_both_keeps_rows_with_positives_and_negatives(signed):
    path, scores, labels = signed
    both = (labels > 0).any(axis=1) & (labels < 0).any(axis=1)
    d = doc("compare", path, "-m", "HR@3", "-m", "V-AUC", "--both")
    r = d["runs"][0]
    assert r["relevance"]["subset"] == "both"
    assert r["relevance"]["instances_in_subset"] == int(both.sum())
    for m in r["metrics"]:
        assert (m["instances"], m["skipped"]) == (int(both.sum()), 150 - int(both.sum()))
    # HR@3 over the subset equals HR@3 of a dump holding only those rows
    sub = evaluate_labels(scores[both], labels[both], metrics=["HR@3"])
    assert r["metrics"][0]["tie_aware"] == pytest.approx(sub.metric("HR@3").tie_aware,
                                                         rel=1e-15)


def test_skipped_counts_and_all_skipped_is_an_error(tmp_path, graded):
    path, *_ = graded
    rows = rows_of(doc("compare", path, "-m", "HR@1", "-m", "MAP"))
    assert [(m["instances"], m["skipped"]) for m in rows] == [(195, 5), (195, 5)]
    result = CliRunner().invoke(cli, ["compare", path, "-m", "V-AUC"])
    assert result.exit_code == 2
    assert "V-AUC is undefined for every instance" in result.output
    result = CliRunner().invoke(cli, ["compare", path, "--both"])
    assert result.exit_code == 2 and "--both leaves nothing to evaluate" in result.output
    # every row left out by --short-list skip: the message names that, not missing labels
    result = CliRunner().invoke(cli, ["compare", path, "-m", "P@100000", "--short-list", "skip"])
    assert result.exit_code == 2
    assert "--short-list skip leaves out every instance with fewer than 100000" in result.output
    assert "no instance has a relevant item" not in result.output


def test_unknown_metric_lists_the_registry(graded):
    result = CliRunner().invoke(cli, ["compare", graded[0], "-m", "Novelty"])
    assert result.exit_code == 2
    assert "unknown metric 'Novelty'" in result.output
    for name in ("HR", "Recall", "MAP", "SNDCG", "V-AUC"):
        assert name in result.output
    help_text = CliRunner().invoke(cli, ["compare", "--help"]).output
    for fragment in ("V-AUC", "--gamma", "--both", "--labels-column", "--qrels", "--gain",
                     "--discount", "--short-list", "Recall@K"):
        assert fragment in help_text


def test_csv_carries_gamma_instances_skipped(signed):
    path, *_ = signed
    out = run("compare", path, "-m", "SHR@2", "--gamma", "0", "1", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["metric"], r["k"], r["gamma"]) for r in rows] == [("SHR", "2", "0.0"),
                                                                 ("SHR", "2", "1.0")]
    assert {"instances", "skipped"} <= set(rows[0])


def test_single_positive_dump_through_the_general_metrics(tmp_path, rng):
    scores = rng.integers(0, 5, (120, 9)).astype(np.float32)
    path = tmp_path / "sp.npz"
    np.savez(path, scores=scores)
    fast = rows_of(doc("compare", path, "-m", "HR@3", "-m", "NDCG@3", "-m", "MRR"))
    assert "gamma" not in fast[0]  # the sort-free path, unchanged JSON
    general = rows_of(doc("compare", path, "-m", "Recall@3", "-m", "NDCG", "-m", "MAP@3",
                          "-m", "MRR@3"))
    # one positive: Recall@K is HR@K; AP@K is RR@K
    for col in ("original", "first", "last", "tie_aware"):
        assert general[0][col] == pytest.approx(fast[0][col], rel=1e-14)
        assert general[2][col] == pytest.approx(general[3][col], rel=1e-14)
    assert general[0]["instances"] == 120 and general[0]["gamma"] is None
    api = tieeval.evaluate(scores, metrics=["AP@3", "MRR@3"])
    assert api.metric("MAP@3").tie_aware == pytest.approx(api.metric("MRR@3").tie_aware,
                                                          rel=1e-14)


def test_python_api_matches_the_cli(graded):
    path, scores, labels = graded
    r = tieeval.evaluate_labels(scores, labels, k=[5], gamma=[0.5])
    cli_rows = rows_of(doc("compare", path, "--k", "5"))
    assert [m.to_dict() for m in r.metrics] == cli_rows


def test_seed_groups_keep_gamma_rows(tmp_path, signed):
    path, scores, labels = signed
    other = tmp_path / "seed2.npz"
    np.savez(other, scores=scores[::-1], labels=labels[::-1])
    d = doc("compare", path, other, "-m", "SHR@2", "-m", "MAP", "--gamma", "0", "1",
            "--meta", "method=m", "--table", "runs")
    (group,) = d["groups"]
    assert group["seeds"] == 2
    assert [(m["metric"], m["gamma"]) for m in group["metrics"]] == [
        ("SHR", 0.0), ("SHR", 1.0), ("MAP", None)]
    assert all(isinstance(m["tie_aware_std"], float) for m in group["metrics"])


def test_guide_labelled_python_example(capsys):
    from guide import read
    page = read("docs/python.md")
    block = page.split("Relevance labels in memory", 1)[1].split("```python", 1)[1]
    block = block.split("```", 1)[0]
    exec(compile(block, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    shown = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    assert printed == shown


def test_spark_engine_leaves_npz_dumps_to_the_local_engine(graded, tmp_path):
    """Labelled Parquet and CSV dumps and TREC runs run on Spark
    (tests/engine/test_spark*.py); NPZ dumps are refused in one line, before Spark
    starts."""
    path, *_ = graded
    for extra in ([], ["-m", "Recall@5"]):
        result = CliRunner().invoke(cli, ["compare", path, "--engine", "spark", *extra])
        assert result.exit_code == 2 and "run with --engine local" in result.output


def test_spark_pre_check_leaves_remote_uris_to_spark(monkeypatch):
    """The check before Spark starts looks at the options only: an hdfs:// or s3a:// dump's
    relevance fields come from the DataFrame's schema (tests/engine/test_spark.py)."""
    import tieeval.engine.spark as tspark
    import tieeval.io.open as tio
    from tieeval.engine.request import EvalOptions
    from tieeval.io.base import RelevanceReadOptions, local_path, remote_uri

    assert [remote_uri(p) for p in ("hdfs://nn:8020/d", "s3a://b/k.parquet", "gs://b/x",
                                    "file:///tmp/x.parquet", "/tmp/x.parquet", "x.parquet",
                                    "C:\\runs\\x.parquet")] == [True] * 3 + [False] * 4
    assert local_path("file:///tmp/a%20b.parquet") == "/tmp/a b.parquet"

    def local(*args, **kwargs):
        raise AssertionError("a remote URI was opened on the local disk")
    monkeypatch.setattr(tio, "open_dump", local)
    monkeypatch.setattr(tspark, "open_dump", local)
    for read in (RelevanceReadOptions(),
                 RelevanceReadOptions(labels="rel"),  # renamed fields: the schema decides
                 RelevanceReadOptions(qrels="qrels.txt")):  # TREC runs: read on the driver
        EvalOptions(read=read, engine="spark")


def test_other_commands_read_labelled_dumps(signed):
    path, *_ = signed
    result = CliRunner().invoke(cli, ["check", path, "-m", "SNDCG@3", "--gamma", "0",
                                      "--min", "SNDCG@3=0.0", "--format", "json"])
    assert result.exit_code == 0
    (check,) = json.loads(result.stdout)["checks"]
    assert check["metric"] == "SNDCG@3" and check["passed"]
    ties = doc("ties", path, "--both")
    assert ties["runs"][0]["relevance"]["subset"] == "both"


def test_nan_scores_in_labelled_rows(tmp_path):
    scores = np.array([[0.5, 0.2, 0.1], [0.3, 0.2, 0.1], [0.4, np.nan, 0.9]], dtype=np.float32)
    labels = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0]])
    path = tmp_path / "nan.npz"
    np.savez(path, scores=scores, labels=labels)
    result = CliRunner().invoke(cli, ["compare", str(path), "-m", "HR@2"])
    assert result.exit_code == 2 and f"{path}: row 2: NaN score" in result.output
    (row,) = rows_of(doc("compare", path, "-m", "HR@2", "--nan-policy", "worst"))
    # NaN ranks below every score: row 2's relevant item is third, outside the top 2
    assert (row["first"], row["last"], row["tie_aware"]) == (2 / 3, 2 / 3, 2 / 3)


def test_table_shows_summed_counts_and_why_a_tie_aware_figure_is_missing(tmp_path):
    """trec_eval's counts are sums over the queries (trec_eval prints num_ret 1500 for its
    test run: 3 queries of 500 documents), shown as whole numbers; GMAP's tie-aware figure
    is exact there, and n/a where a query's ties are beyond the work limit, the table
    saying why, on stdout beside the table."""
    import os

    from click.testing import CliRunner

    from tieeval.cli import cli

    data = os.path.join(os.path.dirname(__file__), "..", "conformance", "trec_eval_data")
    result = CliRunner().invoke(cli, ["compare", "--qrels", os.path.join(data, "qrels.test"),
                                      os.path.join(data, "results.test"), "-m", "num_ret",
                                      "-m", "gm_map"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "NumRet" in line)
    assert row.split()[:6] == ["NumRet", "(sum)", "1500", "1500", "1500", "1500"]
    assert "tie-aware n/a" not in result.stdout
    (tmp_path / "run").write_text("".join(f"a Q0 d{i} 1 1.0 t\n" for i in range(40)))
    (tmp_path / "qrels").write_text("".join(f"a 0 d{i} {i % 2}\n" for i in range(40)))
    big = CliRunner().invoke(cli, ["compare", "--qrels", str(tmp_path / "qrels"),
                                   str(tmp_path / "run"), "-m", "gm_map"])
    assert big.exit_code == 0, big.output
    assert "GMAP: tie-aware n/a, the exact distribution over tie orders" in big.stdout
