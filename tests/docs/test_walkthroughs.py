"""CONTRIBUTING.md's four walkthroughs (a measure, a reader, a renderer, a convention), done
as they are written.

Each test copies the package into a temporary folder, puts every block its section marks
``<!-- walkthrough NAME: new file PATH -->`` there as that file, and every block marked
``<!-- walkthrough NAME: add to TABLE in PATH -->`` at the end of that table (found with
``ast``: the doc names the table, not a line). A fresh interpreter, importing the copy,
then runs the section's ``test`` blocks (their ``test_*`` functions), its ``check`` blocks
(Python as written; each ``tieeval`` line of a bash block through the command line, which
must succeed) and the commands this test adds, whose output is checked here against
figures derived independently: every tie order enumerated, the same scores read from NPY,
the CSV's rows, a library's formulas written out from its source.
"""

from __future__ import annotations

import ast
import csv
import io
import itertools
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import tie_orderings

ROOT = Path(__file__).resolve().parents[2]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
MARKED = re.compile(r"<!-- walkthrough (\w+): ([^\n]+?) -->\n```(\w+)\n(.*?)^```$", re.M | re.S)
WALKTHROUGHS = {"measure": "Adding a measure", "reader": "Adding a reader",
                "renderer": "Adding a renderer", "convention": "Adding a convention"}


@dataclass(frozen=True)
class Block:
    walkthrough: str
    action: str  # "new file PATH", "add to TABLE in PATH", "test" or "check"
    language: str
    code: str


def section(title: str) -> str:
    """The text of CONTRIBUTING.md's ``## title`` section."""
    return CONTRIBUTING.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(name: str) -> list[Block]:
    """The marked blocks of walkthrough ``name``, in the order the section shows them."""
    found = [Block(*m.groups()) for m in MARKED.finditer(section(WALKTHROUGHS[name]))]
    assert found and all(b.walkthrough == name for b in found), (
        f"CONTRIBUTING.md, '{WALKTHROUGHS[name]}': every block is marked "
        f"<!-- walkthrough {name}: ... -->")
    return found


def test_every_marked_block_belongs_to_its_section():
    marked = [Block(*m.groups()) for m in MARKED.finditer(CONTRIBUTING)]
    assert sorted({b.walkthrough for b in marked}) == sorted(WALKTHROUGHS)
    assert len(marked) == sum(len(blocks(name)) for name in WALKTHROUGHS)
    for b in marked:
        assert re.fullmatch(r"new file \S+\.py|add to \w+ in \S+\.py|test|check", b.action), b


# ---------------------------------------------------------------------------------------
# doing it: a copy of the package with the blocks in place, and a fresh interpreter


def add_to_table(source: str, table: str, entry: str) -> str:
    """``source`` with ``entry`` (one element of a tuple, or ``key: value`` of a dict) after
    the last element of the module-level table ``table``."""
    node = next((n for n in ast.parse(source).body
                 if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and table in [t.id for t in (n.targets if isinstance(n, ast.Assign)
                                              else [n.target]) if isinstance(t, ast.Name)]),
                None)
    assert node is not None, f"no table {table} to add to"
    value = node.value
    if isinstance(value, (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        value = value.generators[0].iter  # CONVENTIONS = {c.name: c for c in (...)}
    last = value.values[-1] if isinstance(value, ast.Dict) else value.elts[-1]
    first = value.keys[0] if isinstance(value, ast.Dict) else value.elts[0]
    lines = source.splitlines(keepends=True)
    at = sum(len(line) for line in lines[:last.end_lineno - 1]) + last.end_col_offset
    indent = " " * first.col_offset
    entry = textwrap.indent(textwrap.dedent(entry).strip().rstrip(","), indent)
    return source[:at] + ",\n" + entry + source[at:]


def package_with(tmp_path: Path, name: str) -> Path:
    """A copy of the package with walkthrough ``name``'s files and table entries in place."""
    root = tmp_path / "package"
    shutil.copytree(ROOT / "tieeval", root / "tieeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for b in blocks(name):
        if b.action.startswith("new file "):
            target = root / b.action.removeprefix("new file ")
            assert not target.exists(), f"{target} exists already"
            target.write_text(b.code, encoding="utf-8")
        elif b.action.startswith("add to "):
            table, path = b.action.removeprefix("add to ").split(" in ")
            target = root / path
            target.write_text(add_to_table(target.read_text(encoding="utf-8"), table, b.code),
                              encoding="utf-8")
    return root


DRIVER = r'''
import json, sys
import tieeval
assert tieeval.__file__.startswith(sys.argv[1]), tieeval.__file__  # the copy
from click.testing import CliRunner
from tieeval.cli import cli
request = json.load(sys.stdin)
for code in request["python"]:
    namespace = {"__name__": "walkthrough"}
    exec(compile(code, "CONTRIBUTING.md", "exec"), namespace)
    for name, function in list(namespace.items()):
        if name.startswith("test_") and callable(function):
            function()
outputs = []
for args in request["commands"]:
    done = CliRunner().invoke(cli, args)
    outputs.append({"args": args, "exit_code": done.exit_code, "stdout": done.stdout,
                    "stderr": done.stderr, "exception": repr(done.exception)})
print(json.dumps(outputs))
'''


def doc_commands(name: str) -> list[list[str]]:
    """The ``tieeval`` lines of walkthrough ``name``'s bash check blocks, as arguments."""
    out = []
    for b in blocks(name):
        if b.action == "check" and b.language == "bash":
            for line in b.code.splitlines():
                args = shlex.split(line, comments=True)
                assert args[0] == "tieeval", line  # a check block runs tieeval only
                out.append(args[1:])
    return out


def do_walkthrough(tmp_path: Path, name: str, commands=()) -> list[dict]:
    """Walkthrough ``name`` done in ``tmp_path``: its test and check blocks run against a
    copy of the package holding its blocks, then its bash check lines and ``commands``
    through the command line, in a fresh interpreter whose working folder is ``tmp_path``
    (with ``sample_scores`` linked in). Returns each command's exit code and output; the
    doc's own commands must succeed."""
    package = package_with(tmp_path, name)
    work = tmp_path / "work"
    work.mkdir()
    (work / "sample_scores").symlink_to(ROOT / "sample_scores")
    python = [b.code for b in blocks(name)
              if b.action in ("test", "check") and b.language == "python"]
    from_doc = doc_commands(name)
    request = {"python": python, "commands": [*from_doc, *map(list, commands)]}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(package)], input=json.dumps(request),
                          capture_output=True, text=True, cwd=work, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    outputs = json.loads(done.stdout)
    for out in outputs[:len(from_doc)]:
        assert out["exit_code"] == 0, out
    return outputs


def json_runs(output: dict) -> list[dict]:
    assert output["exit_code"] == 0, output
    return json.loads(output["stdout"])["runs"]


def lint(tmp_path: Path, name: str) -> None:
    """The new files of walkthrough ``name`` pass the project's ruff rules."""
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if ruff is None:
        return
    files = [tmp_path / "package" / b.action.removeprefix("new file ") for b in blocks(name)
             if b.action.startswith("new file ")]
    done = subprocess.run([ruff, "check", "--config", str(ROOT / "pyproject.toml"), "--quiet",
                           *map(str, files)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------------------------------
# the columns of a metric, by enumeration


def columns(values_per_row: list[tuple[list[float], float]]) -> dict:
    """The dataset figures from each defined row's values over its tie orders (each
    distinct label order once: they are equally likely) and its value in the Original
    order: the means of the rows' best, worst, expected and Original values, and the
    sd of the mean."""
    n = len(values_per_row)
    first = math.fsum(max(v) for v, _ in values_per_row) / n
    last = math.fsum(min(v) for v, _ in values_per_row) / n
    means = [math.fsum(v) / len(v) for v, _ in values_per_row]
    var = math.fsum(math.fsum((x - m) ** 2 for x in v) / len(v)
                    for (v, _), m in zip(values_per_row, means))
    return {"original": math.fsum(o for _, o in values_per_row) / n, "first": first,
            "last": last, "tie_aware": math.fsum(means) / n, "tie_aware_std": math.sqrt(var) / n,
            "instances": n}


def expected(scores, labels, value, defined=lambda lab: (lab > 0).any()) -> dict:
    """The columns of the metric whose value on the labels of one ordering is ``value``,
    over the rows where ``defined``; the Original order is the default rule,
    ``np.argsort(scores * -1)``."""
    rows = []
    for s, lab in zip(scores, labels):
        if defined(lab):
            original = lab[np.argsort(s * -1)]
            rows.append(([value(np.array(o)) for o in tie_orderings(s, lab)], value(original)))
    return columns(rows)


def assert_row(row: dict, want: dict) -> None:
    for key, value in want.items():
        assert row[key] == pytest.approx(value, rel=1e-12, abs=1e-12), (row["metric"], key)


def tied_labelled(tmp_path: Path, seed: int, rows: int, n: int, grades: int) -> tuple:
    """A labelled NPZ of scores with many ties, one row without a relevant item."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, (rows, n)).astype(np.float64)
    labels = rng.integers(0, grades + 1, (rows, n)) * (rng.random((rows, n)) < 0.4)
    labels[0] = 0
    labels[1, :3] = grades  # a row relevant at the top
    path = tmp_path / f"labelled{seed}.npz"
    np.savez(path, scores=scores, labels=labels)
    return str(path), scores, labels


# ---------------------------------------------------------------------------------------
# the four walkthroughs


def test_adding_a_measure(tmp_path):
    """The measure's module and its two table entries make ``Hits@K`` (and ranx's
    ``hits@K``) a metric of the command line; its own test (the section's) passes, its
    four columns and sd equal those enumerated over every tie order, and on the TREC sample
    every column of Hits@10 is 10 x P@10's, as the section says."""
    module = next(b.code for b in blocks("measure") if b.action.startswith("new file"))
    assert "def read_depth" in module  # the example states how deep it reads
    path, scores, labels = tied_labelled(tmp_path, 3, 14, 7, 3)
    trec = [args for args in doc_commands("measure") if "--qrels" in args]
    assert trec, "the section runs Hits@10 and P@10 on the TREC sample"
    out = do_walkthrough(tmp_path, "measure", [
        ["compare", path, "-m", "Hits@3", "-m", "hits@5", "-f", "json"],
        [*trec[0], "-f", "json"]])
    got = {(m["metric"], m["k"]): m for m in json_runs(out[-2])[0]["metrics"]}
    assert set(got) == {("Hits", 3), ("Hits", 5)}  # ranx's name is the same measure
    for k in (3, 5):
        assert_row(got[("Hits", k)], expected(scores, labels, lambda lab, k=k: (lab[:k] > 0).sum()))
    trec_rows = {(m["metric"], m["k"]): m for m in json_runs(out[-1])[0]["metrics"]}
    for column in ("original", "first", "last", "tie_aware", "tie_aware_std"):
        assert trec_rows[("Hits", 10)][column] == pytest.approx(
            10 * trec_rows[("Precision", 10)][column], rel=1e-12, abs=1e-12), column
    lint(tmp_path, "measure")


def test_adding_a_reader(tmp_path):
    """The reader's module alone makes ``.tsv`` a dump format: the section's check passes,
    a TSV written here (each score as Python writes it) gives the JSON of the NPY of the
    same scores, with --positive-index too, and the "unknown format" message names it."""
    rng = np.random.default_rng(11)
    scores = np.round(rng.random((40, 9)), 1)
    (tmp_path / "own.tsv").write_text(
        "".join("\t".join(map(repr, row.tolist())) + "\n" for row in scores))
    np.save(tmp_path / "own.npy", scores)
    (tmp_path / "scores.unknown").write_text("0.5 0.5\n")
    own = [str(tmp_path / "own.tsv"), str(tmp_path / "own.npy")]
    out = do_walkthrough(tmp_path, "reader", [
        ["compare", *own, "-f", "json", "-m", "HR@3", "-m", "NDCG@5", "-m", "MRR"],
        ["compare", *own, "-f", "json", "--positive-index", "4", "--batch-rows", "7"],
        ["compare", str(tmp_path / "scores.unknown")]])
    for output in out[-3:-1]:
        tsv, npy = json_runs(output)
        assert tsv["metrics"] == npy["metrics"] and tsv["ties"] == npy["ties"]
        assert tsv["instances"] == 40
    unknown = out[-1]
    assert unknown["exit_code"] == 2 and ".tsv" in unknown["stderr"], unknown
    assert unknown["stderr"].startswith("Error: ") and unknown["stderr"].count("\n") == 1
    lint(tmp_path, "reader")


def test_adding_a_renderer(tmp_path):
    """The renderer's module and its MODULE_KINDS entry add ``tsv`` to compare's
    ``--format`` (table stays the default): its lines are the CSV's rows, cell for cell,
    for the runs table, a paper's table and a what-if."""
    dumps = ["sample_scores/tie_free.npz", "sample_scores/sigmoid_saturated.npz"]
    variants = [[], ["--table", "3"], ["--tolerance", "0"]]
    commands = [["compare", *dumps, *v, "-f", fmt] for v in variants for fmt in ("tsv", "csv")]
    out = do_walkthrough(tmp_path, "renderer", [["compare", "--help"], *commands])
    help_text = " ".join(out[-7]["stdout"].split())
    assert "[table|json|csv|markdown|latex|trec_eval|tsv|html]" in help_text
    assert "tsv: the csv lines with tabs between cells" in help_text
    assert "[default: table]" in help_text
    for tsv, csv_out in zip(out[-6::2], out[-5::2]):
        assert tsv["exit_code"] == 0 and csv_out["exit_code"] == 0, (tsv, csv_out)
        rows = list(csv.reader(io.StringIO(csv_out["stdout"])))
        assert len(rows) > 2
        assert [line.split("\t") for line in tsv["stdout"].splitlines()] == rows
    assert out[-2]["stdout"].splitlines()[0].endswith("\twhat_if")
    lint(tmp_path, "renderer")


def implicit_values(lab: np.ndarray, k: int) -> tuple[float, float]:
    """implicit 0.7.3's AP and NDCG of one user (implicit/evaluation.pyx,
    ranking_metrics_at_k), written out from its loop: ``lab`` the labels of the ranking,
    every labelled item a test item."""
    likes = int((lab > 0).sum())
    cg = [1.0 / math.log2(i + 2) for i in range(k)]
    idcg = sum(cg[:min(k, likes)])
    ap = hit = ndcg = 0.0
    for i in range(k):
        if i < len(lab) and lab[i] > 0:
            hit += 1
            ap += hit / (i + 1)
            ndcg += cg[i] / idcg
    return ap / min(k, likes), ndcg


def test_adding_a_convention(tmp_path):
    """The convention's row makes ``--convention implicit`` a choice of the command line;
    the section's check passes, and on tied 0/1 labels its default metrics are MAP@K and
    NDCG@K with implicit's formulas in every column (users without a test item skipped)."""
    path, scores, labels = tied_labelled(tmp_path, 5, 16, 6, 1)
    out = do_walkthrough(tmp_path, "convention", [
        ["compare", path, "--convention", "implicit", "--k", "2", "--k", "4", "-f", "json"],
        ["compare", "--help"]])
    metrics = json_runs(out[-2])[0]["metrics"]
    without = int((~(labels > 0).any(axis=1)).sum())
    assert without >= 1
    assert [(m["metric"], m["k"]) for m in metrics] == [("MAP", 2), ("MAP", 4), ("NDCG", 2),
                                                       ("NDCG", 4)]
    for m in metrics:
        which = 0 if m["metric"] == "MAP" else 1
        assert_row(m, expected(scores, labels,
                               lambda lab, k=m["k"], i=which: implicit_values(lab, k)[i]))
        assert m["skipped"] == without
    assert "implicit" in " ".join(out[-1]["stdout"].split())


def test_the_enumeration_here_is_right():
    """The enumeration that checks the walkthroughs, on a row worked by hand: scores
    (2, 1, 1, 0), labels (0, 1, 0, 1), K = 2. The top place is not relevant; place 2 holds
    one of the two tied items, one relevant: Hits@2 is 1 or 0, each in one of the two
    orders."""
    scores, labels = np.array([[2.0, 1.0, 1.0, 0.0]]), np.array([[0, 1, 0, 1]])
    got = expected(scores, labels, lambda lab: (lab[:2] > 0).sum())
    assert got.pop("original") in (0.0, 1.0)
    assert got == {"first": 1.0, "last": 0.0, "tie_aware": 0.5, "tie_aware_std": 0.5,
                   "instances": 1}
    ap, _ = implicit_values(np.array([1, 0, 1, 1]), 2)  # R = 3, hits at 1: AP@2 = 1 / 2
    assert ap == 0.5 and list(itertools.islice(tie_orderings(scores[0], labels[0]), 3)) == [
        (0, 0, 1, 1), (0, 1, 0, 1)]
