"""``--cast`` and ``--tolerance``: precision what-ifs shared by ``compare``, ``diff`` and
``rank``, and writing their results labelled as what-if analyses in every format."""

from __future__ import annotations

import click

from tieeval.cli.common import Parsed
from tieeval.records.whatif import CASTS, check_tolerance

# --tolerance ATOL: checked as WhatIf checks it
TOLERANCE = Parsed("ATOL", lambda text: check_tolerance(text.strip()))


def whatif_options(f):
    """``--cast`` and ``--tolerance``."""
    f = click.option("--tolerance", type=TOLERANCE, default=None,
                     help="What-if: count scores within ATOL of the positive (and of the row "
                          "maximum, for the tie statistics) as tied, e.g. --tolerance 1e-6. "
                          "Output is labelled as a what-if analysis.")(f)
    f = click.option("--cast", type=click.Choice(CASTS), default=None,
                     help="What-if: round the scores to this precision (nearest, ties to "
                          "even) before judging ties; bfloat16 is emulated in float32. "
                          "Output is labelled as a what-if analysis.")(f)
    return f
