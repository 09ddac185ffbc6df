"""``tieeval compare --convention trec_eval --format trec_eval`` against a trec_eval 10 binary,
byte for byte, on seeded collections drawn afresh: the comparison a user makes by hand.

Runs where a trec_eval binary is found (``TIEEVAL_TREC_EVAL``, ``TREC_EVAL`` or ``trec_eval``
on PATH; built from usnistgov/trec_eval with ``make``), in the slow tier; skipped elsewhere.
The oracle is the binary's stdout for the same command line (only ``-q`` written
``--per-query``). The collections hold what trips a reimplementation: whole queries tied,
20-200-document ties at rank 1, a 1,500-document query, docnos that differ only in case or
are not UTF-8 (trec_eval breaks ties by docno bytes, descending) or are very long, scores
spelled ``1e+00``, ``.5``, ``+3``, ``003``, ``-.0``, ``1e-400``, grades spelled ``0.5``, ``2.9``,
``1e0``, ``-1`` (trec_eval reads them with atol), run-only and qrels-only queries and qids
sorted as text (``10`` before ``2``). trec_eval 10 stops (exit 4) on a judged query the run
misses unless ``-c`` is given, so the option sets without ``-c`` use the qrels without those
queries. Without ``-m`` trec_eval prints its ``official`` set, which is given to both here.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiers import SLOW

from tieeval.cli import cli

TREC_EVAL = (os.environ.get("TIEEVAL_TREC_EVAL") or os.environ.get("TREC_EVAL")
             or shutil.which("trec_eval"))

pytestmark = [SLOW, pytest.mark.skipif(not TREC_EVAL or not os.access(TREC_EVAL, os.X_OK),
                                       reason="no trec_eval binary (TIEEVAL_TREC_EVAL)")]

OPTION_SETS = ["-m official", "-q -m official", "-c -m official", "-J -m official",
               "-M 10 -m official", "-l 2 -m official", "-m all_trec", "-q -m all_trec",
               "-q -c -m all_trec", "-q -l 2 -m all_trec", "-q -M 10 -m all_trec",
               "-q -J -m all_trec", "-m ndcg_cut.5,10 -m P.5", "-q -c -l2 -M 50 -m official",
               "-q -J -M 10 -m all_trec", "-c -J -M 10 -m official"]

SCORES = ["1e+00", ".5", "+3", "003", "-.0", "1e-400", "0.0", "-0", "1E0", "2.", "+.5",
          "5e-1", "0003.000", "3.0000000000000004"]
GRADES = ["0", "0", "1", "2", "3", "-1", "0.5", "2.9", "1e0", "+1", "01", "-0.5"]
DOCNOS = [b"CAFE", b"cafe", b"Cafe", b"caf\xc3\xa9", b"\xff\xfe", b"\x80raw",
          "\u65e5\u672c".encode(), b"doc" * 150, b"doc" * 149 + b"dod", b"z", b"Z"]


def collection(seed: int, folder: Path) -> tuple[Path, Path, Path]:
    """``(run, qrels, qrels of the run's queries only)``, drawn from ``seed``."""
    rng = random.Random(seed)
    run: list[bytes] = []
    qrels: list[bytes] = []
    qids = ["1", "2", "10", "100", "9", "03", "a7", "B2", "b2", "11", "20", "5"]
    for i, qid in enumerate(qids):
        n = 1500 if i == 4 else rng.choice([15, 60, 150, 250])
        docs = [f"D{qid}-{j:04d}".encode() for j in range(n)] + DOCNOS
        kind = i % 4
        if kind == 0:  # the whole query tied
            scores = ["7"] * len(docs)
        elif kind == 1:  # a tie of 20-200 documents at rank 1
            top = rng.randint(20, min(200, len(docs)))
            scores = ["10"] * top + [f"{rng.uniform(0, 9):.2f}" for _ in docs[top:]]
        elif kind == 2:  # spelled scores
            scores = [rng.choice(SCORES) for _ in docs]
        else:  # one decimal: ties everywhere
            scores = [f"{rng.uniform(0, 3):.1f}" for _ in docs]
        order = list(range(len(docs)))
        rng.shuffle(order)
        for rank, j in enumerate(order):
            run.append(b"%s Q0 %s %d %s tag\n" % (qid.encode(), docs[j], rank + 1,
                                                   scores[j].encode()))
        if qid == "5":  # in the run only
            continue
        for doc in docs:
            if rng.random() < 0.5:
                qrels.append(b"%s 0 %s %s\n" % (qid.encode(), doc, rng.choice(GRADES).encode()))
        for j in range(rng.randint(0, 8)):  # judged, not retrieved
            qrels.append(b"%s 0 X%d %s\n" % (qid.encode(), j, rng.choice(GRADES).encode()))
    judged_only = list(qrels)
    qrels += [b"77 0 zz1 1\n", b"77 0 zz2 0\n", b"4 0 qq 2\n"]  # in the qrels only
    rng.shuffle(run)
    paths = folder / f"run{seed}", folder / f"qrels{seed}", folder / f"qrels{seed}.run"
    for path, lines in zip(paths, (run, qrels, judged_only)):
        path.write_bytes(b"".join(lines))
    return paths


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live")
    return [collection(seed, folder) for seed in (38, 39)]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_the_lines_are_the_binarys(collections, options):
    for run, qrels, run_qrels in collections:
        args = shlex.split(options)
        judged = qrels if "-c" in args else run_qrels
        expected = subprocess.run([str(TREC_EVAL), *args, str(judged), str(run)],
                                  capture_output=True, check=True).stdout
        ours = ["--per-query" if a == "-q" else a for a in args]
        result = runner().invoke(cli, ["compare", "--qrels", str(judged), str(run),
                                       "--convention", "trec_eval", "--format", "trec_eval",
                                       "--quiet", *ours], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        got = result.stdout_bytes.splitlines()
        want = expected.splitlines()
        assert len(got) == len(want) and len(want) >= 3
        assert [g for g, w in zip(got, want) if g != w] == []
