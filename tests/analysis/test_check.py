"""``tieeval check``: threshold parsing, pass/fail logic from the definitions, output
formats, and exit codes 0 / 1 / 2 (and 3, never 1, for a crash)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.analysis.check import (
    Threshold,
    metrics_needed,
    parse_bound,
    parse_threshold,
    run_checks,
)
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.records.results import MetricRow, RunResult, TieStats
from tieeval.report.check import github_line, to_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SATURATED = os.path.join(ROOT, "sample_scores", "sigmoid_saturated.parquet")
TIE_FREE = os.path.join(ROOT, "sample_scores", "tie_free.parquet")
ALL_GATES = ["--max-inflation", "NDCG@10=5%", "--max-gap", "HR@1=0.01", "--max-tie-frequency",
             "10%", "--max-positive-tie-frequency", "5%", "--min", "NDCG@10=0.30"]


@pytest.mark.parametrize("text,value", [("5%", 0.05), ("0.05", 0.05), ("1", 1.0),
                                        ("150%", 1.5), (".5", 0.5), ("0", 0.0)])
def test_parse_bound(text, value):
    assert parse_bound(text) == pytest.approx(value)


@pytest.mark.parametrize("text,fragment", [("5", "'5' is ambiguous"), ("-1%", "must be >= 0"),
                                           ("five", "expected a number or a percentage"),
                                           ("", "expected a number")])
def test_parse_bound_errors(text, fragment):
    with pytest.raises(ParameterError, match=fragment):
        parse_bound(text)


def test_parse_threshold():
    assert parse_threshold("max_inflation", "NDCG@10=5%") == Threshold(
        "max_inflation", 0.05, Metric("NDCG", 10))
    assert parse_threshold("min", "ndcg@10=0.30") == Threshold("min", 0.30, Metric("NDCG", 10))
    assert parse_threshold("max_gap", "0.01") == Threshold("max_gap", 0.01, None)
    for kind, text, fragment in [
            ("max_tie_frequency", "HR@1=10%", "takes a bound only"),
            ("min", "NDCG@10=30", "ambiguous"),
            ("min", "NDCG@10=150%", "metrics lie in [0, 1]"),
            ("max_tie_frequency", "120%", "a frequency lies in [0, 100%]"),
            ("max_inflation", "XYZ@10=5%", "unknown metric 'XYZ'"),
            ("nope", "5%", "unknown check 'nope'")]:
        with pytest.raises(ParameterError, match=fragment.replace("[", r"\[").replace(
                "]", r"\]")):
            parse_threshold(kind, text)


def fake_run(original, tie_aware, top_freq=0.0, pos_freq=0.0, metric=("NDCG", 10)):
    row = MetricRow(metric[0], metric[1], original, original, tie_aware, tie_aware, 0.0, 10)
    ties = TieStats(1.0, 0.01, top_freq, 1.0, pos_freq, {})
    return RunResult("run.npz", 10, 5, 5, "float32", [row], ties)


def test_pass_fail_follows_the_definitions_and_bounds_are_inclusive():
    run = fake_run(original=0.80, tie_aware=0.60, top_freq=0.10, pos_freq=0.2)
    ts = [parse_threshold("max_inflation", "NDCG@10=25%"),   # |0.6-0.8|/0.8 = 0.25: passes
          parse_threshold("max_inflation", "NDCG@10=24%"),   # fails
          parse_threshold("max_gap", "NDCG@10=0.25"),        # gap 0.2: passes
          parse_threshold("max_gap", "NDCG@10=0.1"),         # fails
          parse_threshold("min", "NDCG@10=0.6"),             # tie-aware 0.6: passes
          parse_threshold("min", "NDCG@10=0.61"),            # fails
          parse_threshold("max_tie_frequency", "10%"),       # 0.10: passes
          parse_threshold("max_positive_tie_frequency", "5%")]  # 0.2: fails
    outcomes = run_checks([run], ts)
    assert [o.passed for o in outcomes] == [True, False, True, False, True, False, True, False]
    assert outcomes[0].measured == pytest.approx(abs(0.6 - 0.8) / 0.8)
    assert outcomes[2].measured == pytest.approx(0.2)
    assert outcomes[7].measured == 0.2


def test_inflation_is_a_magnitude_and_undefined_at_zero_fails():
    deflated = fake_run(original=0.5, tie_aware=0.6)
    (o,) = run_checks([deflated], [parse_threshold("max_inflation", "NDCG@10=10%")])
    assert o.measured == pytest.approx(0.2) and not o.passed
    zero = fake_run(original=0.0, tie_aware=0.1)
    (o,) = run_checks([zero], [parse_threshold("max_inflation", "NDCG@10=10%")])
    assert o.measured is None and not o.passed
    assert "undefined as the original is 0" in to_text([o])
    both_zero = fake_run(original=0.0, tie_aware=0.0)
    (o,) = run_checks([both_zero], [parse_threshold("max_inflation", "NDCG@10=10%")])
    assert o.measured == 0.0 and o.passed


def test_metric_less_thresholds_expand_to_the_chosen_metrics():
    scores = np.random.default_rng(0).random((20, 8))
    run = tieeval.evaluate(scores, k=[1, 5])
    default = [Metric("HR", 1), Metric("HR", 5)]
    ts = [parse_threshold("max_inflation", "5%")]
    assert metrics_needed(ts, default) == default
    outcomes = run_checks([run], ts, default)
    assert [str(o.metric) for o in outcomes] == ["HR@1", "HR@5"]
    named = [parse_threshold("min", "NDCG@3=0.1")]
    assert metrics_needed(named, default) == [Metric("NDCG", 3)]


def test_unequal_values_never_read_equal():
    run = fake_run(original=1.0, tie_aware=0.94996)
    (o,) = run_checks([run], [parse_threshold("max_inflation", "NDCG@10=5%")])
    assert not o.passed
    assert "5.004% > max 5.000%" in to_text([o])


# ---------------------------------------------------------------------------------------
# the command line

def invoke(*args):
    return CliRunner().invoke(cli, ["check", *args])


def test_exit_0_when_every_check_passes():
    r = invoke(TIE_FREE, *ALL_GATES)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # the last line names the rule behind the Original figures the change checks read
    assert len(lines) == 7 and lines[-2] == "all 5 checks passed"
    assert lines[-1].startswith("Original = np.argsort(scores * -1) as the codebases rank")
    assert lines[0] == (f"PASS {TIE_FREE}: NDCG@10 change +0.00%: |change| 0.00% <= max "
                        "5.00% (original 0.6425, tie-aware 0.6425)")
    assert lines[3] == f"PASS {TIE_FREE}: top-score tie frequency 0.00% <= max 10.00%"


def test_exit_1_when_any_check_fails_one_line_per_check():
    r = invoke(SATURATED, TIE_FREE, *ALL_GATES)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 17 and lines[10] == "5 of 10 checks failed"
    assert lines[-1].startswith("Original = np.argsort(scores * -1) as the codebases rank")
    run = tieeval.evaluate_path(SATURATED)
    ndcg = run.metric("NDCG@10")
    change = (ndcg.tie_aware - ndcg.original) / ndcg.original  # a drop: negative
    assert change < 0
    assert lines[0] == (f"FAIL {SATURATED}: NDCG@10 change {change * 100:+.2f}%: |change| "
                        f"{-change * 100:.2f}% > max 5.00% "
                        f"(original {ndcg.original:.4f}, tie-aware {ndcg.tie_aware:.4f})")
    assert lines[11].startswith("Failed: --max-inflation NDCG@10=5.00% (1 check); to "
                                "relax it pass e.g. --max-inflation NDCG@10=")
    assert lines[2] == f"FAIL {SATURATED}: NDCG@10 tie-aware {ndcg.tie_aware:.4f} < min 0.3000"
    assert all(line.startswith("PASS " + TIE_FREE) for line in lines[5:10])


def test_default_gate_is_announced_on_stderr():
    r = invoke(TIE_FREE)
    assert r.exit_code == 0
    assert ("using the default gate --max-tie-decided 5% --max-spread 10% "
            "--max-change-sigma 3") in r.stderr
    # 3 cutoffs decided by the tie-break, 7 spreads and 7 sigma changes, then the summary
    # and the rule behind the Original figures the sigma changes read
    assert len(r.stdout.splitlines()) == 19


@pytest.mark.parametrize("args,fragment", [
    (["missing.npz"], "Error: missing.npz: no such file"),
    ([TIE_FREE, "--max-inflation", "5"], "'5' is ambiguous"),
    ([TIE_FREE, "--max-tie-frequency", "HR@1=5%"], "takes a bound only"),
    ([TIE_FREE, "--min", "FOO@1=0.3"], "unknown metric 'FOO'"),
    ([TIE_FREE, "--template", "{nope}.parquet"], "unknown field {nope}"),
    ([TIE_FREE, "--format", "xml"], "Invalid value for '--format'"),
])
def test_exit_2_for_usage_and_input_errors(args, fragment):
    r = invoke(*args)
    assert r.exit_code == 2
    assert fragment in r.output and "Traceback" not in r.output


def test_a_crash_is_exit_3_never_1(monkeypatch):
    import tieeval.cli.check as check_cli

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(check_cli, "run_checks", boom)
    r = invoke(SATURATED, "--max-gap", "HR@1=0.01")
    assert r.exit_code == 3 and "internal error" in r.output


def test_github_annotations_escape_percent_signs():
    r = invoke(SATURATED, TIE_FREE, "--max-tie-frequency", "10%", "--format", "github")
    assert r.exit_code == 1
    fail, summary, advice = r.stdout.splitlines()  # the passed check is not annotated
    assert advice.startswith("Failed: --max-tie-frequency 10.00% (1 check); to relax it "
                             "pass e.g. --max-tie-frequency 99.7%")
    assert fail.startswith(f"::error file={SATURATED},title=tieeval check::FAIL top-score")
    assert fail.endswith("99.70%25 > max 10.00%25")
    assert summary == "::notice title=tieeval check::1 passed / 1 failed (2 checks on 2 dumps)"
    # file properties escape ':' and ','
    (o,) = run_checks([fake_run(0.5, 0.5)], [parse_threshold("max_gap", "NDCG@10=0.1")])
    o.run.path = "a,b:c.npz"
    assert github_line(o).startswith("::notice file=a%2Cb%3Ac.npz,title=")


def test_json_format():
    r = invoke(SATURATED, TIE_FREE, *ALL_GATES, "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["passed"] is False and doc["failed"] == 5
    assert len(doc["checks"]) == 10 and len(doc["runs"]) == 2
    first = doc["checks"][0]
    assert set(first) == {"path", "check", "metric", "measured", "bound", "passed", "change",
                          "original_rule"}
    assert first["original_rule"] == "argsort"
    assert first["check"] == "max_inflation" and first["metric"] == "NDCG@10"
    assert first["change"] == pytest.approx(-first["measured"])  # a drop, signed
    assert first["bound"] == 0.05 and first["passed"] is False
    assert doc["runs"][0]["labels"]["method"] == "sigmoid-bpr"


def test_real_subprocess_exit_codes():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "tieeval", "check", *args],
                              capture_output=True, text=True, cwd=ROOT)
    ok = run(TIE_FREE, "--max-inflation", "NDCG@10=5%")
    assert ok.returncode == 0 and "\n1 check passed\nOriginal = " in ok.stdout
    bad = run(SATURATED, "--max-inflation", "NDCG@10=5%")
    assert bad.returncode == 1 and bad.stdout.startswith("FAIL ") and bad.stderr == ""
    missing = run("nope.npz", "--max-gap", "HR@1=0.01")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == "Error: nope.npz: no such file"


def test_rounding_at_the_bound_passes_and_reads_plainly():
    run = fake_run(original=0.80, tie_aware=0.60)
    (o,) = run_checks([run], [parse_threshold("max_inflation", "NDCG@10=25%")])
    assert o.passed and "change -25.00%: |change| 25.00% <= max 25.00%" in to_text([o])


# ---------------------------------------------------------------------------------------
# several gammas: a check per (metric, K, gamma) row

def test_parse_gamma_thresholds():
    assert parse_threshold("max_inflation", "SNDCG@10[gamma=0.5]=5%") == Threshold(
        "max_inflation", 0.05, Metric("SNDCG", 10), 0.5)
    assert parse_threshold("min", "shr@5[ γ = 0 ]=0.1") == Threshold(
        "min", 0.1, Metric("SHR", 5), 0.0)
    assert parse_threshold("min", "SNDCG@10=0.1").gamma is None
    for text, fragment in [("NDCG@10[gamma=0.5]=5%", "NDCG@10 has no gamma"),
                           ("SNDCG@10[gamma=-1]=5%", "gamma must be a finite number >= 0"),
                           ("SNDCG@10[gamma=x]=5%", "gamma must be a finite number >= 0"),
                           ("SNDCG@10[gamma=nan]=5%", "gamma must be a finite number >= 0")]:
        with pytest.raises(ParameterError, match=fragment):
            parse_threshold("max_inflation", text)


@pytest.fixture
def tied_signed(tmp_path):
    """One row, its positive tied at the top with an explicit negative: under a random
    tie-break SHR@1 is 1 or -gamma with probability 1/2 each, so (1 - gamma) / 2."""
    path = tmp_path / "signed.npz"
    np.savez(path, scores=np.array([[1.0, 1.0, 0.0]]), labels=np.array([[1, -1, 0]]))
    return str(path)


def test_a_threshold_checks_every_gamma_row_unless_it_names_one():
    run = tieeval.evaluate_labels(np.array([[1.0, 1.0, 0.0]]), np.array([[1, -1, 0]]),
                                  metrics=["SHR@1", "HR@1"], gamma=[0, 1, 2])
    every = run_checks([run], [parse_threshold("min", "SHR@1=0.25")])
    assert [(o.gamma, o.measured, o.passed) for o in every] == [
        (0.0, 0.5, True), (1.0, 0.0, False), (2.0, -0.5, False)]
    (one,) = run_checks([run], [parse_threshold("min", "SHR@1[gamma=1]=0")])
    assert (one.gamma, one.measured, one.passed) == (1.0, 0.0, True)
    # a metric-less threshold reaches every row of every metric, gamma rows included
    rows = run_checks([run], [parse_threshold("min", "0")])
    assert [(str(o.metric), o.gamma) for o in rows] == [
        ("SHR@1", 0.0), ("SHR@1", 1.0), ("SHR@1", 2.0), ("HR@1", None)]
    assert "SHR@1 γ=2 tie-aware -0.5000 < min 0.0000" in to_text(rows)
    assert rows[1].to_dict() == {"path": "<array>", "check": "min", "metric": "SHR@1",
                                 "gamma": 1.0, "measured": 0.0, "bound": 0.0, "passed": True}
    with pytest.raises(ParameterError, match=r"SHR@1\[gamma=0.5\] was not evaluated "
                                             r"\(gammas: 0.0, 1.0, 2.0\)"):
        run_checks([run], [parse_threshold("min", "SHR@1[gamma=0.5]=0")])


def test_cli_gamma_thresholds(tied_signed):
    r = invoke(tied_signed, "-m", "SHR@1", "--gamma", "0", "1", "--min", "SHR@1=0.25",
               "--format", "json")
    assert r.exit_code == 1
    checks = json.loads(r.stdout)["checks"]
    assert [(c["metric"], c["gamma"], c["measured"], c["passed"]) for c in checks] == [
        ("SHR@1", 0.0, 0.5, True), ("SHR@1", 1.0, 0.0, False)]
    r = invoke(tied_signed, "-m", "SHR@1", "--gamma", "0", "1", "--min",
               "SHR@1[gamma=0]=0.25")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0].endswith("SHR@1 γ=0 tie-aware 0.5000 >= min 0.2500")
    r = invoke(tied_signed, "-m", "SHR@1", "--min", "SHR@1[gamma=0.5]=0.25")
    assert r.exit_code == 2 and "add it to --gamma" in r.output
    r = invoke(tied_signed, "--min", "HR@1[gamma=0.5]=0.25")
    assert r.exit_code == 2 and "HR@1 has no gamma" in r.output


# --- a damaged dump among several -------------------------------------------------------

def _damaged_dumps(tmp_path) -> dict:
    """Dumps that cannot be checked, each with the words of its error: cut short (the
    first half of a good NPZ's bytes), holding a NaN, with no instance, and empty."""
    good = tmp_path / "whole.npz"
    np.savez(good, scores=np.array([[0.9, 0.1, 0.2], [0.5, 0.5, 0.1]]))
    data = good.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:len(data) // 2])
    np.savez(tmp_path / "nan.npz", scores=np.array([[0.9, np.nan, 0.2], [0.5, 0.1, 0.1]]))
    np.savez(tmp_path / "none.npz", scores=np.zeros((0, 3)))
    (tmp_path / "zero.npz").write_bytes(b"")
    return {str(tmp_path / "cut.npz"): "corrupted or truncated",
            str(tmp_path / "nan.npz"): "NaN score",
            str(tmp_path / "none.npz"): "no instances",
            str(tmp_path / "zero.npz"): "empty file"}


GATE = ["--max-tie-frequency", "10%", "--min", "NDCG@10=0.30", "-q"]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_a_damaged_dump_is_an_error_of_its_own_and_the_others_are_checked(tmp_path, order):
    damaged = _damaged_dumps(tmp_path)
    good = [SATURATED, TIE_FREE]
    alone = {p: json.loads(invoke(p, *GATE, "--format", "json").stdout) for p in good}
    for bad, words in damaged.items():
        files = [good[order[0]], bad, good[order[1]]]
        r = invoke(*files, *GATE, "--format", "json")
        assert r.exit_code == 2, r.output  # an error wins over the saturated dump's failure
        doc = json.loads(r.stdout)
        assert doc["passed"] is False
        assert doc["errors"] == [{"path": bad, "error": r.stderr.strip()[len("Error: "):]}]
        assert doc["errors"][0]["error"].startswith(f"{bad}: ") and words in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        for path in good:  # each good dump's checks and figures as when checked alone
            assert [c for c in doc["checks"] if c["path"] == path] == alone[path]["checks"]
            assert [run for run in doc["runs"] if run["path"] == path] == alone[path]["runs"]
        assert doc["failed"] == sum(alone[p]["failed"] for p in good)


def test_the_json_of_good_dumps_has_no_errors_key():
    r = invoke(TIE_FREE, *GATE, "--format", "json")
    assert r.exit_code == 0 and "errors" not in json.loads(r.stdout)


def test_text_puts_each_damaged_dump_in_its_place_and_names_every_one(tmp_path):
    damaged = list(_damaged_dumps(tmp_path))
    files = [damaged[0], TIE_FREE, *damaged[1:]]
    r = invoke(*files, *GATE)
    alone = invoke(TIE_FREE, *GATE)
    assert r.exit_code == 2 and alone.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"ERROR {damaged[0]}: ")
    good = alone.stdout.splitlines()[:2]  # the two PASS lines, as when checked alone
    assert lines[1:3] == good and all(line.startswith("PASS ") for line in good)
    assert [line.split(":")[0] for line in lines[3:6]] == [f"ERROR {p}" for p in damaged[1:]]
    assert lines[6] == "all 2 checks passed; 4 dumps could not be checked"
    (error,) = r.stderr.splitlines()
    assert error.startswith("Error: 4 dumps could not be checked (the others are in the "
                            "report): ")
    assert all(f"{p}: " in error for p in damaged)


def test_only_damaged_dumps_make_no_report_and_one_line_naming_each(tmp_path):
    damaged = list(_damaged_dumps(tmp_path))
    for fmt in ("text", "json", "junit", "github"):
        r = invoke(*damaged[:2], *GATE, "--format", fmt)
        assert r.exit_code == 2 and r.stdout == ""
        (error,) = r.stderr.splitlines()
        assert error.startswith("Error: 2 dumps could not be checked: ")
        assert all(f"{p}: " in error for p in damaged[:2])


def test_an_error_of_no_one_dump_still_ends_check_at_once(tmp_path):
    """A damaged or missing --qrels, a usage error: no report, one line (as before)."""
    run = os.path.join(ROOT, "sample_scores", "trec", "run.txt")
    (tmp_path / "qrels").write_text("301 0 D301-038\n")
    r = invoke(run, run, "--max-tie-frequency", "10%", "--qrels", str(tmp_path / "qrels"))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (f"Error: {tmp_path / 'qrels'}: line 1: expected 4 fields 'qid iter "
                        "docno relevance', got 3 (is this a qrels file?)\n")
    r = invoke(TIE_FREE, "--max-tie-frequency", "10%", "--qrels", str(tmp_path / "no.txt"))
    assert r.exit_code == 2 and r.stdout == ""
    r = invoke(TIE_FREE, "--max-tie-frequency", "10%", "-m", "NDCG@0")
    assert r.exit_code == 2 and r.stdout == ""


def test_compare_and_diff_stop_at_a_damaged_dump(tmp_path):
    """A table without one of the dumps would read as complete: no output, one line."""
    cut = next(iter(_damaged_dumps(tmp_path)))
    for args in (["compare", TIE_FREE, cut, SATURATED], ["diff", TIE_FREE, cut]):
        r = CliRunner().invoke(cli, [*args, "-q"])
        assert r.exit_code == 2 and r.stdout == ""
        assert r.stderr.startswith(f"Error: {cut}: ") and len(r.stderr.splitlines()) == 1


def test_a_damaged_file_of_a_dataset_folder_is_the_folder_s_error(tmp_path):
    folder = tmp_path / "ds"
    folder.mkdir()
    pq_path = os.path.join(ROOT, "sample_scores", "tie_free.parquet")
    with open(pq_path, "rb") as fh:
        (folder / "part-0.parquet").write_bytes(fh.read()[:300])
    r = invoke(TIE_FREE, str(folder), *GATE, "--format", "json")
    assert r.exit_code == 2
    (error,) = json.loads(r.stdout)["errors"]
    assert error["path"] == str(folder)
    assert error["error"].startswith(f"{folder / 'part-0.parquet'}: corrupted or truncated")


def test_a_damaged_dump_named_twice_is_one_error(tmp_path):
    cut = next(iter(_damaged_dumps(tmp_path)))
    r = invoke(cut, TIE_FREE, cut, *GATE, "--format", "json")
    assert r.exit_code == 2
    assert [e["path"] for e in json.loads(r.stdout)["errors"]] == [cut]
    assert r.stderr.count("Error: ") == 1 and r.stderr.count(cut) == 1
