"""The kernels and the engine never branch on a metric's name: they ask the metric's measure
(:mod:`tieeval.metrics.measures`). No string in their code may spell a metric in any
vocabulary the measures know (tieeval's names and aliases, trec_eval's, ir_measures',
RecBole's, LensKit's, Cornac's, ranx's); docstrings are prose and are not scanned."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tieeval
from tieeval.metrics.measures import MEASURES, VOCABULARIES
from tieeval.metrics.registry import REGISTRY, key

PACKAGE = Path(tieeval.__file__).parent
SCANNED = ("kernels", "engine")


def metric_name_keys() -> set[str]:
    keys = set(REGISTRY.keys())
    for measure in MEASURES:
        for vocabulary in VOCABULARIES:
            keys.update(key(name) for name in measure.names_in(vocabulary))
    return keys


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the constant nodes that are docstrings (of modules, classes, functions)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.add(id(body[0].value))
    return out


def name_literals(path: Path, keys: set[str]) -> list[str]:
    """``"line: 'literal'"`` for every string in the code of ``path`` that spells a metric."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and key(node.value) in keys]


@pytest.mark.parametrize("package", SCANNED)
def test_no_metric_name_literals_in_kernels_or_engine(package):
    keys = metric_name_keys()
    found = [f"{path.relative_to(PACKAGE.parent)}:{hit}"
             for path in sorted((PACKAGE / package).rglob("*.py"))
             for hit in name_literals(path, keys)]
    assert not found, "metric names in code that must ask the measure:\n" + "\n".join(found)


def test_the_scan_finds_names_in_code_not_in_docstrings(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""NDCG in a docstring."""\n\n\ndef f(name):\n    """HR too."""\n'
                     '    return name == "ndcg_cut" or name in ("HR", "V-AUC", "recip_rank")\n')
    assert name_literals(probe, metric_name_keys()) == [
        "6: 'ndcg_cut'", "6: 'HR'", "6: 'V-AUC'", "6: 'recip_rank'"]
