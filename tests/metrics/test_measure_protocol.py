"""The measure interface is the two protocols of tieeval.metrics.measures.protocol: a
measure reads nothing private of what the kernels hand it, and the kernels' classes have
every member the protocols list (the type checker also verifies it where the kernels hand
themselves to a measure)."""

from __future__ import annotations

import ast
import inspect
import pathlib

import numpy as np
import pytest

from tieeval.kernels.tie_blocks import Evaluation, RelBatch, TableOptions
from tieeval.metrics import measures
from tieeval.metrics.measures.protocol import BlockTable, MetricOptions, TableEvaluation
from tieeval.metrics.options import parse_rel_metric

MEASURES_DIR = pathlib.Path(measures.__file__).parent


def _private_reaches(path: pathlib.Path) -> list[str]:
    """``x._attr`` reaches in a module whose ``x`` is not self / cls or an imported
    module (dunders such as ``__name__`` are not private), as ``file:line: text``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.update(a.asname or a.name for a in node.names)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") and node.attr.endswith("__"):  # type(x).__name__
            continue
        base = node.value
        if isinstance(base, ast.Name) and (base.id in ("self", "cls") or base.id in modules):
            continue
        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_measure_reaches_a_private_attribute():
    """No measure module reads or writes a ``_`` attribute of anything but itself or a
    module: the batch and the evaluation are seen through their protocols only."""
    found = [hit for path in sorted(MEASURES_DIR.glob("*.py")) for hit in
             _private_reaches(path)]
    assert found == []


def test_the_check_finds_a_private_reach(tmp_path):
    """The walk above does flag ``b._block_sum`` on a parameter (and lets ``self._x`` and
    ``np._x`` through)."""
    module = tmp_path / "m.py"
    module.write_text("import numpy as np\n\ndef f(self, b):\n"
                      "    return self._k, np._NoValue, b._block_sum(1)\n")
    assert _private_reaches(module) == ["m.py:4: b._block_sum"]


def _members(protocol: type) -> dict[str, object]:
    """A protocol's members: its annotated attributes and its methods and properties."""
    names = set(protocol.__annotations__)
    names |= {n for n in vars(protocol) if not n.startswith("_")}
    return {n: vars(protocol).get(n) for n in sorted(names)}


def _batch(sparse: bool) -> RelBatch:
    scores = np.array([0.9, 0.9, 0.5, 0.1, 0.7, 0.7, 0.7, 0.2])
    labels = np.array([1, 0, 2, 0, 0, 1, -1, 0])
    offsets = np.array([0, 4, 8])
    return RelBatch(scores, labels, offsets, options=TableOptions(sparse=sparse))


#: members a table of the other kind does not hold
ONLY_COMPACT, ONLY_FULL = {"marked"}, {"lab_input"}


@pytest.mark.parametrize("sparse", [False, True], ids=["full", "compact"])
def test_relbatch_has_every_member_of_block_table(sparse):
    """Every attribute and method :class:`BlockTable` lists is on a RelBatch (full and
    compact tables), each method with the protocol's parameters."""
    b = _batch(sparse)
    assert b.compact is sparse
    for name, member in _members(BlockTable).items():
        if name in (ONLY_FULL if sparse else ONLY_COMPACT):
            continue
        assert hasattr(b, name), f"RelBatch lacks {name}"
        if inspect.isfunction(member):
            want = list(inspect.signature(member).parameters)[1:]
            assert list(inspect.signature(getattr(b, name)).parameters) == want, name


@pytest.mark.parametrize("metric", ["NDCG@2", "MAP", "Judged@2"])
def test_evaluation_has_every_member_of_table_evaluation(metric):
    """Every member :class:`TableEvaluation` lists is on an Evaluation, each method with
    the protocol's parameters, and its batch is a RelBatch."""
    ev = Evaluation(_batch(False), parse_rel_metric(metric), True)
    for name, member in _members(TableEvaluation).items():
        assert hasattr(ev, name), f"Evaluation lacks {name}"
        if inspect.isfunction(member):
            want = list(inspect.signature(member).parameters)[1:]
            assert list(inspect.signature(getattr(ev, name)).parameters) == want, name
    assert isinstance(ev.b, RelBatch)


@pytest.mark.parametrize("metric", ["NDCG(gain=exponential)@3", "IPrec@0.2", "ERR@5"])
def test_rel_metric_has_every_member_of_metric_options(metric):
    """Every option :class:`MetricOptions` lists is on a RelMetric, as the evaluation
    hands it to a measure."""
    m = parse_rel_metric(metric)
    for name in _members(MetricOptions):
        assert hasattr(m, name), f"RelMetric lacks {name}"


def test_protocols_are_documented():
    """Every member of both protocols is documented: a method or property by its
    docstring, an attribute in its class's Attributes section."""
    for protocol in (BlockTable, TableEvaluation, MetricOptions):
        doc = inspect.getdoc(protocol) or ""
        for name, member in _members(protocol).items():
            if member is None:  # an attribute
                assert f"\n{name}" in doc or f", {name}" in doc or f"{name}, " in doc, name
            else:
                assert inspect.getdoc(member), name

