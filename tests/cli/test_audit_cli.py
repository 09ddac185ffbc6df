"""``tieeval audit``: published claims judged against labelled, seed-averaged dumps.

The dumps are built row by row so that every figure is known in closed form: a row whose
positive ties with one other candidate at the top has HR@1 first 1, last 0, expectation
1/2 and tie-break variance 1/4; a row whose positive sits untied at rank 3 has HR@1 0.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.analysis.audit import AuditItem, audit_groups, match_group, read_claims
from tieeval.analysis.groups import group_runs
from tieeval.cli import cli
from tieeval.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "method,dataset,task,metric,k,value\n"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def scores(tied_rows: int, n: int = 20) -> np.ndarray:
    s = np.tile(np.array([0.5, 0.2, 0.9, 0.8, 0.1], dtype=np.float32), (n, 1))  # rank 3
    s[:tied_rows, 0] = s[:tied_rows, 1] = 1.0  # positive tied with one other at the top
    return s


def original_hr1(s: np.ndarray) -> float:
    ranks = [int(np.flatnonzero(np.argsort(row * -1) == 0)[0]) + 1 for row in s]
    return float(np.mean([r <= 1 for r in ranks]))


# Seed 1: 10 of 20 rows tied; seed 2: 4 of 20. HR@1 seed means:
FIRST = (10 / 20 + 4 / 20) / 2                      # 0.35
TIE_AWARE = (0.5 * 10 / 20 + 0.5 * 4 / 20) / 2      # 0.175
STD = math.sqrt((10 * 0.25) / 20 ** 2 + (4 * 0.25) / 20 ** 2) / 2


@pytest.fixture
def runs(tmp_path):
    paths = []
    for seed, tied in ((1, 10), (2, 4)):
        path = tmp_path / f"M_seed{seed}.npz"
        tieeval.save_scores(path, scores(tied), positive=0, method="ConsRec", dataset="Mafengwo",
                            task="group", seed=seed)
        paths.append(str(path))
    other = tmp_path / "N.npz"
    tieeval.save_scores(other, scores(0), positive=0, method="AGREE", dataset="Mafengwo",
                        task="group")
    paths.append(str(other))
    return paths


def claims_file(tmp_path, body: str, name: str = "claims.csv") -> str:
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return str(path)


def test_each_verdict_and_exit_1(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.1750\n"   # tie-aware
                                   "ConsRec,Mafengwo,group,HR,1,0.3500\n"   # = first
                                   "ConsRec,Mafengwo,group,HR,1,0.4000\n"   # > first
                                   "consrec,MAFENGWO,,HR@1,,5.00%\n"        # below tie-aware
                                   "AGREE,Mafengwo,group,HR,1,0.0000\n")
    result = invoke("audit", *runs, "--claims", claims, "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["flagged"] == 2
    assert doc["counts"] == {"impossible": 1, "tie-break only": 1, "consistent": 3,
                             "unmatched": 0}
    verdicts = [(c["line"], c["verdict"], c["detail"]) for c in doc["claims"]]
    assert verdicts == [(2, "consistent", "matches tie-aware"),
                        (3, "tie-break only", "above tie-aware"),
                        (4, "impossible", "above first"),
                        (5, "consistent", "below tie-aware"),
                        (6, "consistent", "matches tie-aware")]
    c = doc["claims"][1]
    assert c["first"] == pytest.approx(FIRST, abs=1e-12)
    assert c["last"] == 0.0
    assert c["tie_aware"] == pytest.approx(TIE_AWARE, abs=1e-12)
    assert c["tie_aware_std"] == pytest.approx(STD, abs=1e-12)
    assert c["spread"] == pytest.approx(2 * STD, abs=1e-12)
    want_original = (original_hr1(scores(10)) + original_hr1(scores(4))) / 2
    assert c["original"] == pytest.approx(want_original, abs=1e-12)
    assert c["matches_original"] == (abs(0.35 - want_original) <= 5e-5)
    assert c["seeds"] == 2 and len(c["paths"]) == 2
    assert doc["claims"][4]["seeds"] == 1


def test_all_consistent_exit_0_and_table(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.175\n"
                                   "ConsRec,Mafengwo,group,NDCG,1,17.50%\n")
    result = invoke("audit", *runs, "--claims", claims)
    assert result.exit_code == 0, result.output
    assert "0 of 2 claims flagged (0 impossible, 0 tie-break only); 2 consistent" in \
        result.stdout
    assert "ConsRec / Mafengwo / group" in result.stdout


def test_unmatched_claims_are_an_input_error(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.175\n"
                                   "HyperGroup,Mafengwo,group,HR,1,0.2\n"
                                   "ConsRec,CAMRa2011,group,HR,1,0.2\n")
    result = invoke("audit", *runs, "--claims", claims)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: {claims}: line 3: no run is labelled method "
                               "'HyperGroup', dataset 'Mafengwo', task 'group' (runs: "
                               "ConsRec/Mafengwo/group, AGREE/Mafengwo/group); 2 claims "
                               "match no run")
    ignored = invoke("audit", *runs, "--claims", claims, "--ignore-unmatched",
                     "--format", "csv")
    assert ignored.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(ignored.stdout)))
    assert [r["verdict"] for r in rows] == ["consistent", "unmatched", "unmatched"]
    assert "2 claims match no run" in ignored.stderr


@pytest.mark.parametrize("body,fragment", [
    ("ConsRec,Mafengwo,group,HR,1,17.5\n", "line 2: value 17.5 is above 1"),
    ("ConsRec,Mafengwo,group,XYZ,1,0.1\n", "line 2: unknown metric 'XYZ'"),
    ("", "no claims (only a header)"),
])
def test_bad_claims_exit_2(tmp_path, runs, body, fragment):
    result = invoke("audit", *runs, "--claims", claims_file(tmp_path, body))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and fragment in result.stderr


def test_usage_errors_exit_2(tmp_path, runs):
    assert invoke("audit", *runs).exit_code == 2  # --claims is required
    missing = invoke("audit", *runs, "--claims", tmp_path / "nope.csv")
    assert missing.exit_code == 2 and "nope.csv: no such file" in missing.stderr
    bad_dump = invoke("audit", tmp_path / "nope.npz", "--claims",
                      claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.1\n"))
    assert bad_dump.exit_code == 2 and "no such file" in bad_dump.stderr


def test_empty_task_must_be_unambiguous(tmp_path, runs):
    user = tmp_path / "M_user.npz"
    tieeval.save_scores(user, scores(2), method="ConsRec", dataset="Mafengwo", task="user")
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,,HR,1,0.175\n")
    result = invoke("audit", *runs, user, "--claims", claims)
    assert result.exit_code == 2
    assert ("line 2: ConsRec/Mafengwo matches several run groups (ConsRec/Mafengwo/group, "
            "ConsRec/Mafengwo/user); fill in its task") in result.stderr
    without_user = invoke("audit", *runs, "--claims", claims)
    assert without_user.exit_code == 0


def test_labels_from_template_and_meta(tmp_path):
    folder = tmp_path / "runs" / "ConsRec"
    folder.mkdir(parents=True)
    paths = []
    for seed, tied in ((1, 10), (2, 4)):
        path = folder / f"Mafengwo_group_seed{seed}.npz"
        np.savez(path, scores=scores(tied))  # no metadata: labels come from the path
        paths.append(str(path))
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.3500\n")
    result = invoke("audit", *paths, "--claims", claims, "--template",
                    "{method}/{dataset}_{task}_seed{seed}.npz", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["claims"][0]["verdict"] == "tie-break only"
    meta = invoke("audit", paths[0], "--claims", claims, "--meta", "method=ConsRec",
                  "--meta", "dataset=Mafengwo", "--meta", "task=group", "--format", "json")
    c = json.loads(meta.stdout)["claims"][0]
    assert meta.exit_code == 0 and c["verdict"] == "consistent" and c["seeds"] == 1


def test_audit_groups_api(tmp_path, runs):
    results = [tieeval.evaluate_path(p, [tieeval.Metric("HR", 1)]) for p in runs]
    groups, _ = group_runs(results)
    claims = read_claims(claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.4000\n"
                                               "X,Mafengwo,group,HR,1,0.4\n"))
    items = audit_groups(claims, groups)
    assert [i.status for i in items] == ["impossible", "unmatched"]
    assert items[0].flagged and not items[1].flagged
    assert isinstance(items[0], AuditItem) and items[0].seeds == 2
    assert match_group(claims[1], groups) is None
    with pytest.raises(InputError):
        dup = [groups[0], groups[0]]
        match_group(claims[0], dup)


def test_markdown_output(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.3500\n")
    result = invoke("audit", *runs, "--claims", claims, "--format", "markdown")
    assert result.exit_code == 1
    assert "| 2 | ConsRec / Mafengwo / group | HR@1 | 0.3500 | 0.0000 |" in result.stdout
    assert "tie-break only" in result.stdout


def test_audit_subprocess_exit_code(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.4000\n")
    proc = subprocess.run([sys.executable, "-m", "tieeval", "audit", *runs, "--claims", claims,
                           "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["claims"][0]["verdict"] == "impossible" and doc["flagged"] == 1


# ---------------------------------------------------------------------------------------
# claims on signed metrics evaluated at several gammas

# Method A: 40 rows, labels [1, -1, 0]. In 20 the positive is alone on top (SHR@1 = 1); in
# the other 20 it ties at the top with the explicit negative, so SHR@1 is 1 (positive
# first) or -gamma (negative first), each with probability 1/2: (1 - gamma) / 2 in
# expectation, variance ((1 + gamma) / 2)^2, and 1 under np.argsort (the positive's lower
# column index comes first). Seed mean of one run:
#   tie-aware (3 - gamma) / 4, first 1, last (1 - gamma) / 2, original 1,
#   sd sqrt(20) (1 + gamma) / 2 / 40.
# Method B: an unjudged candidate (label 0) alone on top in every row: SHR@1 = 0.
SIGNED_HEADER = "method,dataset,task,metric,k,value,gamma\n"


def a_shr1(gamma):
    return {"tie_aware": (3 - gamma) / 4, "first": 1.0, "last": (1 - gamma) / 2,
            "original": 1.0, "tie_aware_std": math.sqrt(20) * (1 + gamma) / 2 / 40}


@pytest.fixture
def signed_runs(tmp_path):
    labels = np.tile([1, -1, 0], (40, 1))
    a = np.tile(np.array([1.0, 0.5, 0.0], dtype=np.float32), (40, 1))
    a[20:, 1] = 1.0
    b = np.tile(np.array([0.5, 0.1, 1.0], dtype=np.float32), (40, 1))
    paths = []
    for method, s in (("A", a), ("B", b)):
        path = tmp_path / f"{method}.npz"
        np.savez(path, scores=s, labels=labels, method=np.array(method),
                 dataset=np.array("D"))
        paths.append(str(path))
    return paths


def signed_claims(tmp_path, body: str) -> str:
    path = tmp_path / "signed_claims.csv"
    path.write_text(SIGNED_HEADER + body, encoding="utf-8")
    return str(path)


def test_single_row_oracle_for_the_signed_fixture():
    # The tied row on its own, through the library: the closed form used above.
    for gamma in (0.0, 5.0):
        row = tieeval.evaluate_labels(np.array([[1.0, 1.0, 0.0]]), np.array([[1, -1, 0]]),
                                      metrics=["SHR@1"], gamma=gamma).metrics[0]
        assert (row.first, row.last, row.tie_aware) == (1.0, -gamma, (1 - gamma) / 2)


def test_claims_name_their_gamma(tmp_path, signed_runs):
    claims = signed_claims(tmp_path, "A,D,,SHR,1,0.7500,0\n"      # = tie-aware at gamma 0
                                     "A,D,,SHR@1,,1.0000,5\n"     # = original, far above
                                     "B,D,,SHR,1,0.0000,5.0\n"
                                     "A,D,,MRR,,0.8750,\n")       # unsigned: no gamma
    result = invoke("audit", *signed_runs, "--claims", claims, "--gamma", "0", "5",
                    "-f", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    got = [(c["line"], c["metric"], c["gamma"], c["verdict"]) for c in doc["claims"]]
    assert got == [(2, "SHR", 0.0, "consistent"), (3, "SHR", 5.0, "tie-break only"),
                   (4, "SHR", 5.0, "consistent"), (5, "MRR", None, "consistent")]
    for claim, gamma in zip(doc["claims"][:2], (0.0, 5.0)):
        want = a_shr1(gamma)
        for key, value in want.items():
            assert claim[key] == pytest.approx(value, abs=1e-12), (gamma, key)
    assert doc["claims"][1]["matches_original"] is True
    # gamma follows k in the CSV; the tables name it beside the metric
    rows = list(csv.DictReader(io.StringIO(invoke("audit", *signed_runs, "--claims", claims,
                                                  "--gamma", "0", "5", "-f", "csv").stdout)))
    assert list(rows[0])[5:7] == ["k", "gamma"]
    assert [r["gamma"] for r in rows] == ["0.0", "5.0", "5.0", ""]
    md = invoke("audit", *signed_runs, "--claims", claims, "--gamma", "0", "5",
                "-f", "markdown").stdout
    assert "| 2 | A / D | SHR@1 γ=0 | 0.7500 |" in md
    assert "| 3 | A / D | SHR@1 γ=5 | 1.0000 |" in md
    assert "| 5 | A / D | MRR | 0.8750 |" in md


def test_a_claim_without_gamma_needs_a_single_gamma(tmp_path, signed_runs):
    claims = signed_claims(tmp_path, "A,D,,HR,1,0.7500,\n"
                                     "A,D,,SHR,1,1.0000,\n")
    several = invoke("audit", *signed_runs, "--claims", claims, "--gamma", "0", "5")
    assert several.exit_code == 2 and several.stdout == ""
    assert several.stderr.strip() == (
        f"Error: {claims}: line 3: SHR@1 has one row per gamma (gammas: 0.0, 5.0); say "
        "which in a 'gamma' column, or evaluate one --gamma")
    # one gamma evaluated: the claim is judged at it, and says so
    one = invoke("audit", *signed_runs, "--claims", claims, "--gamma", "5", "-f", "json")
    assert one.exit_code == 1, one.output
    c = json.loads(one.stdout)["claims"][1]
    assert (c["gamma"], c["verdict"], c["detail"]) == (5.0, "tie-break only",
                                                       "above tie-aware")
    assert c["tie_aware"] == pytest.approx(a_shr1(5.0)["tie_aware"], abs=1e-12)
    default = json.loads(invoke("audit", *signed_runs, "--claims", claims, "-f",
                                "json").stdout)["claims"][1]
    assert default["gamma"] == 1.0  # --gamma's default
    assert default["tie_aware"] == pytest.approx(a_shr1(1.0)["tie_aware"], abs=1e-12)


@pytest.mark.parametrize("body,args,fragment", [
    ("A,D,,SHR,1,0.5,2\n", ["--gamma", "0", "5"],
     "line 2: SHR@1 at gamma 2 was not evaluated (gammas: 0.0, 5.0); add it to --gamma"),
    ("A,D,,HR,1,0.5,1\n", [],
     "line 2: HR@1 has no gamma; the gamma column is for the signed metrics (SHR, SRecall, "
     "SDCG, SNDCG)"),
    ("A,D,,SHR,1,0.5,-1\n", [], "line 2: gamma must be a finite number >= 0, got '-1'"),
    ("A,D,,SHR,1,0.5,half\n", [], "line 2: gamma must be a finite number >= 0, got 'half'"),
])
def test_bad_gamma_claims_exit_2(tmp_path, signed_runs, body, args, fragment):
    claims = signed_claims(tmp_path, body)
    result = invoke("audit", *signed_runs, "--claims", claims, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {claims}: ") and fragment in result.stderr


def test_single_positive_claims_have_no_gamma_key(tmp_path, runs):
    claims = claims_file(tmp_path, "ConsRec,Mafengwo,group,HR,1,0.1750\n")
    result = invoke("audit", *runs, "--claims", claims, "--format", "json")
    assert result.exit_code == 0
    assert "gamma" not in json.loads(result.stdout)["claims"][0]
    header = invoke("audit", *runs, "--claims", claims, "--format", "csv").stdout
    assert "gamma" not in header.splitlines()[0]
    assert read_claims(claims)[0].gamma is None
