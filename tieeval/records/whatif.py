"""The record of a precision what-if: which transforms a result was computed under.

A :class:`WhatIf` names the transforms (a cast to a lower precision, a tolerance within
which scores count as tied) and how every output describes them; applying them to a
batch is the kernels' job (:mod:`tieeval.kernels.whatif`, whose module doc gives the math).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tieeval.errors import ParameterError

CASTS = ("float16", "bfloat16", "float32")


def check_cast(target: object) -> str:
    if not isinstance(target, str) or target not in CASTS:
        raise ParameterError(f"cast must be one of {', '.join(CASTS)}, got {target!r}")
    return target


def check_tolerance(atol: Any) -> float:
    if isinstance(atol, (bool, np.bool_)):
        raise ParameterError(f"tolerance must be a number >= 0, got {atol!r}")
    try:
        value = float(atol)
    except (TypeError, ValueError):
        raise ParameterError(f"tolerance must be a number >= 0, got {atol!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise ParameterError(f"tolerance must be a finite number >= 0, got {atol!r}")
    return value


@dataclass(frozen=True)
class WhatIf:
    """Which what-if transforms to apply: ``cast`` (a :data:`CASTS` name or None), then
    ``tolerance`` (an absolute ATOL >= 0 or None). Both None: no what-if. ``chained``:
    the tolerance was applied to labelled rows, as chains of neighbours (module doc)."""

    cast: str | None = None
    tolerance: float | None = None
    chained: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.cast is not None:
            check_cast(self.cast)
        if self.tolerance is not None:
            object.__setattr__(self, "tolerance", check_tolerance(self.tolerance))

    @property
    def active(self) -> bool:
        return self.cast is not None or self.tolerance is not None

    def describe(self) -> str:
        """One sentence for titles and notes, e.g. ``scores rounded to bfloat16``."""
        parts = []
        if self.cast is not None:
            parts.append(f"scores rounded to {self.cast} (nearest, ties to even)")
        if self.tolerance is not None and self.chained:
            parts.append(f"neighbouring scores within {self.tolerance:g} of each other "
                         "chained into tie blocks")
        elif self.tolerance is not None:
            parts.append(f"scores within {self.tolerance:g} of the positive (and of the row "
                         "maximum) counted as tied")
        return "; then ".join(parts) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {"cast": self.cast, "tolerance": self.tolerance,
                "description": self.describe()}


NO_WHAT_IF = WhatIf()
