"""CONTRIBUTING.md's worked example of adding a measure runs as written: its module is
registered for the duration of the test, and its test against every tie order passes."""

from __future__ import annotations

import re
import types
from pathlib import Path

from tieeval.metrics.registry import REGISTRY, key

ROOT = Path(__file__).resolve().parents[2]


def example_blocks() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Adding a measure", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_worked_example_measure_passes_its_own_test():
    module_code, test_code = example_blocks()
    module = types.ModuleType("tieeval_example_hits")
    exec(compile(module_code, "CONTRIBUTING.md (module)", "exec"), module.__dict__)
    measure = module.HITS
    assert measure.names_in("ranx") == ("hits",) and key(measure.name) not in REGISTRY
    dict.__setitem__(REGISTRY, key(measure.name), measure)  # the line MEASURES adds
    try:
        tests: dict = {}
        exec(compile(test_code, "CONTRIBUTING.md (test)", "exec"), tests)
        tests["test_hits_against_every_tie_order"]()
    finally:
        dict.__delitem__(REGISTRY, key(measure.name))
    assert key(measure.name) not in REGISTRY
