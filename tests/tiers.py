"""The two tiers of the suite: every run (``python -m pytest -q``) and the slow tier.

A test marked ``slow`` (``pytest.mark.slow``, or a parameter given by :func:`tiered`) is
left out of a plain run and run by CI as its own step (``python -m pytest -q -m slow``;
``--slow`` runs both tiers, and a slow test named by its node id runs). The slow tier holds
what repeats a check already made in every run on more data: the long fuzzing run, the
larger exhaustive enumerations, the further random seeds, and the comparisons whose
independent library takes long to start (tests/conftest.py deselects it).
"""

from __future__ import annotations

import pytest

SLOW = pytest.mark.slow


def tiered(values, quick: int = 2) -> list:
    """``values`` as parameters: the first ``quick`` in every run, the rest in the slow
    tier (a tuple stands for several arguments, as in ``parametrize("a, b", ...)``)."""
    out = []
    for i, value in enumerate(values):
        if i < quick:
            out.append(value)
        else:
            out.append(pytest.param(*value, marks=SLOW) if isinstance(value, tuple)
                       else pytest.param(value, marks=SLOW))
    return out


def examples(quick: int, slow: int) -> list:
    """A property test's example budget as a parameter: ``quick`` examples in every run,
    ``slow`` in the slow tier (given to ``hypothesis.settings(max_examples=...)``)."""
    return [quick, pytest.param(slow, marks=SLOW)]


def seeds(count: int, quick: int = 1) -> list:
    """Seeds ``0 .. count - 1``: the first ``quick`` in every run, the rest in the slow
    tier."""
    return tiered(range(count), quick)
