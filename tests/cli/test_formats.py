"""Output formats come from the report layer's registry: every (result kind, format) pair
renders, the command line compares no format names, and ``--format`` lists what is
registered."""

from __future__ import annotations

import csv
import io
import json
import os
import pkgutil
import re
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval import evaluate
from tieeval.analysis.audit import audit_groups
from tieeval.analysis.check import default_thresholds, run_checks
from tieeval.analysis.diff import diff_paths, rank_groups
from tieeval.analysis.groups import group_runs
from tieeval.analysis.paper import figure1, paper_table
from tieeval.analysis.trec_eval import runs_lines
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.records.audit import AuditResult, Claim
from tieeval.records.check import CheckResult
from tieeval.records.diff import RankResult
from tieeval.records.runs import RunTables
from tieeval.records.whatif import WhatIf
from tieeval.report import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "tieeval", "cli")


class BufferOutput:
    """An Output into a string, with a plain 120-column console (as stdout when piped)."""

    def __init__(self):
        self.buffer = io.StringIO()

    def write(self, text: str) -> None:
        self.buffer.write(text)

    def console(self):
        from rich.console import Console
        return Console(file=self.buffer, width=120, color_system=None)

    def stream(self):
        return self.buffer


def _runs():
    scores = np.array([[0.9, 0.9, 0.1], [0.5, 0.7, 0.7], [0.3, 0.2, 0.1], [0.8, 0.8, 0.8]])
    out = []
    for method, shift in (("A", 0.0), ("B", 0.05)):
        for seed in (1, 2):
            s = scores.copy()
            s[:, 0] += shift * seed
            out.append(evaluate(s, k=(1, 2), path=f"{method}_{seed}.npz",
                                run_labels={"method": method, "dataset": "toy",
                                            "task": "t", "seed": str(seed)}))
    return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """One result of every kind, evaluated from small score matrices."""
    runs = _runs()
    groups, _ = group_runs(runs)
    d = tmp_path_factory.mktemp("formats")
    np.savez(d / "A.npz", scores=np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.4, 0.1]]))
    np.savez(d / "B.npz", scores=np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.4, 0.1]]))
    claims = [Claim("A", "toy", "t", "HR", 1, 0.9, "0.9", 5e-2, 2),
              Claim("B", "toy", "t", "HR", 1, 0.5, "0.5", 5e-2, 3)]

    def tables(table, what_if=None):
        return RunTables(runs, groups, table, True, what_if,
                         None if table == "runs" else (lambda: paper_table(int(table), groups)),
                         lambda: runs_lines(runs, "original"),
                         lambda number: paper_table(number, groups), lambda: figure1(groups))

    return {
        "runs": [tables("runs"), tables("3"), tables("1", WhatIf(tolerance=0.0))],
        "ties": [tables("4")],
        "check": [CheckResult(run_checks(runs, default_thresholds()), runs)],
        "diff": [diff_paths(str(d / "A.npz"), str(d / "B.npz"), ["HR@1", "MRR"])],
        "rank": [RankResult(rank_groups(groups)), RankResult(rank_groups(groups),
                                                             WhatIf(cast="float32"))],
        "audit": [AuditResult(audit_groups(claims, groups), "claims.csv")],
    }


def test_every_kind_has_a_sample(samples):
    """A new result kind gets a sample here, so that its renderers are checked below."""
    assert set(registry.kinds()) == set(samples)


def test_the_modules_listed_per_kind_are_those_that_register_it():
    """registry.MODULE_KINDS (what a command imports to list its formats) names every
    module of tieeval.report (found by pkgutil) with exactly the kinds it registers
    renderers of, () for none."""
    import tieeval.report as package

    registry.kinds()  # every module imported
    registered: dict[str, set] = {}
    for kind in registry.kinds():
        for r in registry.renderers(kind):
            module = r.render.__module__
            if module.startswith("tieeval.report."):
                registered.setdefault(module.rsplit(".", 1)[1], set()).add(kind)
    for module in pkgutil.iter_modules(package.__path__):
        kinds = tuple(sorted(registered.get(module.name, ())))
        assert module.name in registry.MODULE_KINDS, (
            f"tieeval/report/registry.py: MODULE_KINDS lacks {module.name!r}: {kinds}")
        assert set(registry.MODULE_KINDS[module.name]) == set(kinds), (
            f"tieeval/report/registry.py: MODULE_KINDS[{module.name!r}] must be {kinds}")
    names = {module.name for module in pkgutil.iter_modules(package.__path__)}
    assert set(registry.MODULE_KINDS) <= names, "MODULE_KINDS names a module that is gone"


def test_a_renderer_module_missing_from_the_table_still_lists_its_formats():
    """A module of the package the table does not list is imported for every kind: its
    formats are never left out of --format."""
    code = ("from tieeval.report import registry; del registry.MODULE_KINDS['junit']; "
            "print(registry.formats('check'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip() == str(registry.formats("check"))
    assert "junit" in registry.formats("check")


def test_listing_one_kinds_formats_imports_only_its_modules():
    """A command's --format choices import its own renderers only, in the same order as
    when every module is loaded."""
    code = ("import sys; from tieeval.report import registry; "
            "print(registry.formats('runs')); "
            "print(' '.join(m for m in sys.modules if m.startswith('tieeval.report.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    listed, modules = proc.stdout.splitlines()
    assert listed == str(registry.formats("runs"))
    loaded = {m.rsplit(".", 1)[1] for m in modules.split()}
    assert {"tables", "trec_eval", "webpage"} <= loaded
    assert not loaded & {"diff", "check", "junit", "audit"}, loaded


def _pairs():
    return [(kind, fmt) for kind in registry.kinds() for fmt in registry.formats(kind)]


@pytest.mark.parametrize("kind,fmt", _pairs())
def test_every_kind_and_format_renders(samples, kind, fmt):
    r = registry.renderer(kind, fmt)
    for result in samples[kind]:
        out = BufferOutput()
        r.render(result, out)
        text = out.buffer.getvalue()
        assert text.strip(), (kind, fmt)
        assert text.endswith("\n")
        if fmt == "json":
            assert isinstance(json.loads(text), dict)
        if fmt == "csv":
            header, *rows = list(csv.reader(io.StringIO(text)))
            assert rows and all(len(row) == len(header) for row in rows)
        what_if = getattr(result, "what_if", None)
        if what_if is not None and what_if.active and fmt != "trec_eval":
            assert what_if.describe() in text  # every format labels a what-if


def test_the_formats_of_each_command():
    assert registry.formats("runs") == ("table", "json", "csv", "markdown", "latex",
                                        "trec_eval", "html")
    assert registry.formats("ties") == ("table", "json", "csv", "markdown", "latex")
    assert registry.formats("check") == ("text", "github", "json", "junit")
    for kind in ("diff", "rank", "audit"):
        assert registry.formats(kind) == ("table", "json", "csv", "markdown")


def test_an_unknown_format_or_kind_is_a_parameter_error():
    with pytest.raises(ParameterError, match="format must be one of table, json, csv, "
                                             "markdown, got 'html'"):
        registry.renderer("diff", "html")
    with pytest.raises(ParameterError, match="no renderer for results of kind 'nope'"):
        registry.formats("nope")


def test_a_pair_registers_once():
    registry.formats("diff")  # every module loaded
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("diff", "json")(lambda result, out: None)


def test_a_new_format_is_one_registration(samples, monkeypatch):
    """Registering a renderer adds the format to the kind's formats (after the package's
    own), its help, and renders it; no command changes."""
    monkeypatch.setitem(registry._RENDERERS, "diff", dict(registry._RENDERERS["diff"]))
    registry.register("diff", "plain", "one line per metric")(
        lambda result, out: out.write("".join(f"{r.label} {r.verdict}\n" for r in result.rows)))
    assert registry.formats("diff")[-1] == "plain"
    assert "plain: one line per metric" in registry.describe("diff")
    out = BufferOutput()
    registry.render("diff", "plain", samples["diff"][0], out)
    assert out.buffer.getvalue().splitlines()[0].startswith("HR@1 B ")


# Comparisons of a format name: fmt == ..., fmt in (...), == "json", in ("csv", ...)
_FORMAT_NAMES = r"(table|json|csv|markdown|latex|trec_eval|text|github|junit|html)"
_COMPARISON = re.compile(r"\bfmt\s*(==|!=|\bin\b|\bnot\s+in\b)|"
                         r"(==|!=)\s*[\"']" + _FORMAT_NAMES + r"[\"']|"
                         r"\bin\s*[\(\[\{][^)\]}]*[\"']" + _FORMAT_NAMES + r"[\"']")


def test_the_command_line_compares_no_format_names():
    """The command line asks the report layer for a renderer; it never decides by a
    format's name (the comparisons found here would each be a place to edit for a new
    format)."""
    found = []
    for name in sorted(os.listdir(CLI)):
        if name.endswith(".py"):
            with open(os.path.join(CLI, name), encoding="utf-8") as fh:
                for number, line in enumerate(fh, 1):
                    if _COMPARISON.search(line.split("#")[0]):
                        found.append(f"{name}:{number}: {line.strip()}")
    assert found == []


def test_the_grep_finds_a_format_comparison():
    """The pattern above finds the comparisons it forbids (else the test asserts nothing)."""
    for line in ('if fmt == "json":', "elif fmt in ('csv', 'json'):", 'x = a != "markdown"',
                 'return "runs" if n == 1 or f in ("csv", "json") else "3"'):
        assert _COMPARISON.search(line), line
    assert not _COMPARISON.search('render("runs", fmt, result)')


@pytest.mark.parametrize("command", ["compare", "ties", "check", "diff", "rank", "audit"])
def test_format_help_lists_the_registered_formats(command):
    kind = {"compare": "runs"}.get(command, command)
    out = CliRunner().invoke(cli, [command, "--help"], terminal_width=400).output
    assert "[" + "|".join(registry.formats(kind)) + "]" in " ".join(out.split())
    for r in registry.renderers(kind):
        if r.help:
            assert r.help.split()[0] in out


def test_what_if_csv_is_the_plain_csv_plus_a_column(tmp_path):
    """--tolerance 0 measures the stored scores' exact ties: its CSV is the plain CSV with
    a what_if column added to every row, for the per-run rows and for the paper's tables."""
    paths = []
    rng = np.random.default_rng(3)
    for method in ("A", "B"):
        path = tmp_path / f"{method}.npz"
        np.savez(path, scores=np.round(rng.random((6, 5)), 1), method=np.array(method),
                 dataset=np.array("toy"))
        paths.append(str(path))
    for table in ("runs", "3", "4"):
        plain = CliRunner().invoke(cli, ["compare", *paths, "--table", table, "-f", "csv"])
        what_if = CliRunner().invoke(cli, ["compare", *paths, "--table", table, "-f", "csv",
                                           "--tolerance", "0"])
        assert plain.exit_code == 0 and what_if.exit_code == 0, plain.output + what_if.output
        plain_rows = list(csv.reader(io.StringIO(plain.stdout)))
        rows = list(csv.reader(io.StringIO(what_if.stdout)))
        assert [r[:-1] for r in rows] == plain_rows
        assert rows[0][-1] == "what_if"
        assert {r[-1] for r in rows[1:]} == {WhatIf(tolerance=0.0).describe()}
