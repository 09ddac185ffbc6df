"""``--cast`` and ``--tolerance``: precision what-ifs shared by ``compare``, ``diff`` and
``rank``, and writing their results labelled as what-if analyses in every format."""

from __future__ import annotations

import click

from tieeval.cli.run_labels import evaluate_labelled
from tieeval.errors import TieevalError
from tieeval.records.whatif import CASTS, WhatIf, check_tolerance


class ToleranceType(click.ParamType):
    name = "ATOL"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return check_tolerance(value.strip() if isinstance(value, str) else value)
        except TieevalError as exc:
            self.fail(str(exc), param, ctx)


def whatif_options(f):
    """``--cast`` and ``--tolerance``."""
    f = click.option("--tolerance", type=ToleranceType(), default=None,
                     help="What-if: count scores within ATOL of the positive (and of the row "
                          "maximum, for the tie statistics) as tied, e.g. --tolerance 1e-6. "
                          "Output is labelled as a what-if analysis.")(f)
    f = click.option("--cast", type=click.Choice(CASTS), default=None,
                     help="What-if: round the scores to this precision (nearest, ties to "
                          "even) before judging ties; bfloat16 is emulated in float32. "
                          "Output is labelled as a what-if analysis.")(f)
    return f


def make_what_if(cast, tolerance) -> WhatIf | None:
    what_if = WhatIf(cast, tolerance)
    return what_if if what_if.active else None


def evaluate_runs(files, metrics, **options):
    """Labelled runs as :func:`tieeval.cli.run_labels.evaluate_labelled` gives; under a
    ``what_if`` each run reports a ``what_if`` key (the request refuses one on Spark)."""
    return evaluate_labelled(files, metrics, **options)
