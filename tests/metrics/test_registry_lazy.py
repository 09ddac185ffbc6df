"""The registry imports a measure's module when one of its names is looked up: the index of
names by module (``tieeval.metrics.measures.KEYS``) must be exactly what the modules
register, and a registry filled piece by piece must answer, list and iterate as one filled
at once."""

from __future__ import annotations

import importlib
import json
import pkgutil

from helpers import python_output

import tieeval.metrics.measures as measures
from tieeval.metrics.measures import KEYS, MEASURES, MODULE_OF_KEY, ORDER, Measure
from tieeval.metrics.registry import REGISTRY


def test_order_lists_every_measure_the_modules_define():
    """Every measure of every module of the package (found by pkgutil) is in ORDER, which
    registers it: a module's measure missing there is named, with the line to add."""
    listed = {id(m) for m in MEASURES}
    for info in pkgutil.iter_modules(measures.__path__):
        module = importlib.import_module(f"{measures.__name__}.{info.name}")
        for attr, value in vars(module).items():
            if isinstance(value, Measure):
                assert id(value) in listed, (
                    f"ORDER in tieeval/metrics/measures/__init__.py lacks "
                    f"({info.name!r}, {attr!r}): {value.name} is never registered")
    assert len(listed) == len(ORDER), "ORDER lists a measure twice"


def test_keys_index_is_exactly_what_each_module_registers():
    """KEYS names, per module, exactly the registry keys its measures register (a key
    missing there makes a lookup of it import every module); a difference is named."""
    module_of = {id(getattr(importlib.import_module(f"{measures.__name__}.{module}"), name)):
                 module for module, name in ORDER}
    registered: dict[str, set] = {}
    for k, spec in REGISTRY.items():
        if id(spec) in module_of:
            registered.setdefault(module_of[id(spec)], set()).add(k)
    for module, keys in registered.items():
        want = " ".join(sorted(keys))
        assert module in KEYS, (f"KEYS in tieeval/metrics/measures/__init__.py lacks "
                                f"{module!r}: {want!r}")
        assert set(KEYS[module].split()) == keys, (
            f"KEYS[{module!r}] in tieeval/metrics/measures/__init__.py must hold {want!r}")
    assert set(KEYS) == set(registered), "KEYS names a module that registers nothing"
    assert {k: m for k, m in MODULE_OF_KEY.items()} == {
        k: m for m, keys in registered.items() for k in keys}


LOOKUPS = """
import json, sys
from tieeval.metrics import registry
for name in sys.argv[1:]:
    registry.REGISTRY.get(name)
print(json.dumps({"names": registry.metric_names(),
                  "keys": list(registry.REGISTRY), "aliases": registry.aliases(),
                  "library": registry.library_names()}))
"""


def lookups(*names: str) -> dict:
    return json.loads(python_output(LOOKUPS, *names))


def test_a_registry_filled_by_lookups_lists_as_one_filled_at_once():
    at_once = lookups("no such metric")  # an unknown name registers every measure
    piecemeal = lookups("NDCG", "RecipRank", "P", "gm_map")
    assert piecemeal == at_once
    assert at_once["names"] == [m.name for m in MEASURES]


def test_looking_up_a_name_imports_only_its_module():
    code = ("import sys; from tieeval.metrics.metric import Metric; "
            "[Metric.parse(n) for n in ('HR@10', 'NDCG@10', 'MRR')]; "
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
            "if m.startswith('tieeval.metrics.measures.')))")
    loaded = set(json.loads(python_output(code).replace("'", '"')))
    assert {"hr", "dcg", "rr"} <= loaded
    assert not {"bpref", "iprec", "sets", "rbp", "infap"} & loaded
