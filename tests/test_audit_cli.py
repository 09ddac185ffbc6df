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
from tieeval.audit import AuditItem, audit_groups, match_group, read_claims
from tieeval.cli import cli
from tieeval.errors import InputError
from tieeval.groups import group_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
        tieeval.save_scores(path, scores(tied), method="ConsRec", dataset="Mafengwo",
                            task="group", seed=seed)
        paths.append(str(path))
    other = tmp_path / "N.npz"
    tieeval.save_scores(other, scores(0), method="AGREE", dataset="Mafengwo", task="group")
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
                               "ConsRec/Mafengwo/group, AGREE/Mafengwo/group); 2 claim(s) "
                               "match no run")
    ignored = invoke("audit", *runs, "--claims", claims, "--ignore-unmatched",
                     "--format", "csv")
    assert ignored.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(ignored.stdout)))
    assert [r["verdict"] for r in rows] == ["consistent", "unmatched", "unmatched"]
    assert "2 claim(s) match no run" in ignored.stderr


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
