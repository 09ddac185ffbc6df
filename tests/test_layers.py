"""The package's layers: imports point only downward, and there are no import cycles.

The contracts live in pyproject.toml ([tool.importlinter]); import-linter checks them on
the installed package, the way `lint-imports` does in CI.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import python_output
from tiers import tiered

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter")
    proc = subprocess.run([sys.executable, "-c",
                           "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_no_import_cycles():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("tieeval")
    modules = sorted(graph.modules)
    cycles = []
    for module in modules:
        for other in graph.find_modules_directly_imported_by(module):
            if other != module and graph.chain_exists(importer=other, imported=module):
                cycles.append((module, other))
    assert cycles == []


def test_importing_tieeval_loads_no_heavy_dependency():
    """``import tieeval`` and ``tieeval --version`` load neither pyarrow, rich nor scipy."""
    code = ("import sys, tieeval; from tieeval.cli import main; "
            "print(sorted(m for m in ('pyarrow', 'rich', 'scipy', 'numba') if m in sys.modules))")
    out = python_output(code)
    assert out.strip() == "[]"


RENDERERS = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "tieeval", "report"))
                   if name.endswith(".py") and name != "__init__.py")


# every run: three renderers; the slow tier every other one
@pytest.mark.parametrize("renderer", tiered(RENDERERS, quick=3))
def test_rendering_a_result_loads_no_engine_reader_or_kernel(renderer):
    """Importing a renderer (and the records it renders) in a fresh interpreter loads no
    module of the engine, the readers, the kernels or the analysis: a result is rendered
    from its record alone."""
    code = (f"import sys, tieeval.report.{renderer}, tieeval.records; "
            "from tieeval.report.registry import kinds; kinds(); "  # every renderer
            "import tieeval.records.audit, tieeval.records.check, tieeval.records.diff; "
            "import tieeval.records.paper, tieeval.records.trec_eval; "
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['tieeval', 'engine'], ['tieeval', 'io'], ['tieeval', 'kernels'], "
            "['tieeval', 'analysis'])))")
    out = python_output(code)
    assert out.strip() == "[]"


def test_kernels_load_no_reader():
    """The kernels take :class:`tieeval.records.batch.Batch` records: importing every kernel
    module loads no module of ``tieeval.io``."""
    code = ("import sys, pkgutil, importlib, tieeval.kernels as k; "
            "[importlib.import_module('tieeval.kernels.' + m.name) "
            "for m in pkgutil.iter_modules(k.__path__)]; "
            "print(sorted(m for m in sys.modules if m.startswith('tieeval.io')))")
    out = python_output(code)
    assert out.strip() == "[]"


def test_each_class_name_names_one_class():
    """Two classes of one name (there were two ``RelBatch``) make the docs and tracebacks
    ambiguous; every top-level class name in the package is defined once."""
    import ast
    seen: dict[str, list[str]] = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "tieeval")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
                for node in tree.body:
                    if isinstance(node, ast.ClassDef):
                        seen.setdefault(node.name, []).append(os.path.relpath(path, ROOT))
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}


def test_the_command_line_application_is_not_called_a_group():
    """"group" means a seed group of runs (tieeval.analysis.groups); the click application
    lives in tieeval/cli/app.py."""
    assert not os.path.exists(os.path.join(ROOT, "tieeval", "cli", "group.py"))
    from tieeval.cli.app import Group, expand_multi_value  # noqa: F401


_OTHER_COMMANDS = ("tieeval.records.diff", "tieeval.records.check", "tieeval.records.audit",
                   "tieeval.report.diff", "tieeval.report.check", "tieeval.report.junit",
                   "tieeval.report.audit", "tieeval.io.trec")


def test_compare_on_an_npy_dump_loads_only_what_it_uses(tmp_path):
    """``tieeval compare scores.npy -f json`` (its start-up): no pyarrow (Parquet and Arrow
    input only), scipy (statistics only), pyspark (``--engine spark`` only) or rich (terminal
    tables only), of the measures only the default metrics' modules, no other command's
    records or renderers (diff, check, audit), no TREC reader, and neither the spooling
    of standard input (tempfile) nor HTML escaping."""
    import numpy as np
    dump, out = tmp_path / "scores.npy", tmp_path / "out.json"
    np.save(dump, np.random.default_rng(0).normal(size=(50, 11)).astype(np.float32))
    code = ("import sys\n"
            "from tieeval.cli import cli\n"
            f"OTHERS = {_OTHER_COMMANDS!r}\n"
            f"cli.main(['compare', {str(dump)!r}, '-q', '-f', 'json', '-o', {str(out)!r}], "
            "prog_name='tieeval', standalone_mode=False)\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pyarrow', 'scipy', 'pyspark', 'rich', 'html', 'tempfile') or "
            "m in OTHERS or m.startswith('tieeval.metrics.measures.'))))")
    proc = python_output(code)
    assert out.read_text().startswith("{")  # the command ran
    loaded = set(proc.split())
    assert not {m for m in loaded if not m.startswith("tieeval.")}, loaded
    assert not loaded & set(_OTHER_COMMANDS), loaded
    measures = {m.rsplit(".", 1)[1] for m in loaded - set(_OTHER_COMMANDS)}
    assert {"hr", "dcg", "rr"} <= measures  # HR@K, NDCG@K and MRR
    assert not measures & {"ap", "bpref", "iprec", "sets", "rbp", "infap", "auc", "err"}


def test_trec_eval_drop_in_loads_only_the_official_measures(tmp_path):
    """``tieeval compare --qrels Q RUN -m official --convention trec_eval --format
    trec_eval`` (the trec_eval drop-in): of the measures only the modules of trec_eval's
    official set (a trec_eval list name is not looked up among every measure), and no
    scipy (statistics, depth-cut blocks only), pyspark or rich."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("1 Q0 d1 1 2.0 r\n1 Q0 d2 2 2.0 r\n1 Q0 d3 3 1.0 r\n"
                   "2 Q0 d1 1 1.0 r\n2 Q0 d4 2 0.5 r\n")
    qrels.write_text("1 0 d1 1\n1 0 d3 2\n1 0 d9 1\n2 0 d4 1\n2 0 d1 0\n")
    code = ("import sys\n"
            "from tieeval.cli import cli\n"
            f"cli.main(['compare', '--qrels', {str(qrels)!r}, {str(run)!r}, '-m', 'official', "
            "'--convention', 'trec_eval', '--format', 'trec_eval', '-q'], "
            "prog_name='tieeval', standalone_mode=False)\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('scipy', 'pyspark', 'rich') or m.startswith('tieeval.metrics.measures.'))), "
            "file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr
    assert "map" in proc.stdout and "iprec_at_recall_0.00" in proc.stdout  # the command ran
    loaded = set(proc.stderr.split())
    assert not {m for m in loaded if not m.startswith("tieeval.")}, loaded
    measures = {m.rsplit(".", 1)[1] for m in loaded}
    assert {"ap", "bpref", "counts", "iprec", "recall", "rprec", "rr"} <= measures
    assert not measures & {"dcg", "auc", "signed", "judged", "infap", "sets", "gain", "rdcg",
                           "relative", "rbp", "unjudged"}, measures


def test_the_command_list_of_help_is_each_commands_own_and_imports_none():
    """``tieeval --help`` lists the commands from ``SUMMARIES`` without importing them: the
    listing is click's own from the commands' help, at every width, and loads no numpy."""
    import click

    from tieeval.cli import cli
    for width in (40, 60, 80, 120):
        ctx = click.Context(cli, info_name="tieeval")
        ours, clicks = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
        cli.format_commands(ctx, ours)
        click.Group.format_commands(cli, ctx, clicks)  # imports every command
        assert ours.getvalue() == clicks.getvalue()
    code = ("import sys\nfrom tieeval.cli import cli\n"
            "try:\n    cli.main(['--help'], prog_name='tieeval', standalone_mode=False)\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'tieeval.cli.compare') if m in sys.modules))")
    proc = python_output(code)
    assert proc.strip().endswith("[]")


def test_at_most_six_modules_sit_at_the_top_of_the_package():
    """Counted: the .py files directly in tieeval/, but __init__.py and __main__.py (an
    old name kept as an alias, tieeval/results.py, counts)."""
    top = sorted(name for name in os.listdir(os.path.join(ROOT, "tieeval"))
                 if name.endswith(".py") and name not in ("__init__.py", "__main__.py"))
    assert len(top) <= 6, top


def test_the_old_name_of_the_run_records_still_imports():
    import tieeval.records.results as records
    from tieeval.results import MetricRow, RunResult, TieStats
    assert (RunResult, MetricRow, TieStats) == (records.RunResult, records.MetricRow,
                                                records.TieStats)
    assert sys.modules["tieeval.results"] is records


def test_a_record_loads_its_renderer_only_when_a_notebook_shows_it():
    code = ("import sys, numpy as np, tieeval\n"
            "run = tieeval.evaluate(np.array([[0.5, 0.5, 0.1]] * 4))\n"
            "print(sorted(m for m in sys.modules if m.startswith('tieeval.report')))\n"
            "html = run._repr_html_()\n"
            "print('tieeval.report.notebook' in sys.modules, html.startswith('<div><table>'))")
    before, after = python_output(code).splitlines()
    assert (before, after) == ("[]", "True True")
