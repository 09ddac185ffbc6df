"""Labels for what-if analyses (``--cast``, ``--tolerance``) in every output format."""

from __future__ import annotations

from tieeval.records.whatif import WhatIf
from tieeval.report.runs import natural_width


def note(what_if: WhatIf) -> str:
    """``WHAT-IF ANALYSIS: scores rounded to bfloat16 ...; not the stored scores.``"""
    return (f"WHAT-IF ANALYSIS: {what_if.describe()}. These are not the stored scores' "
            "metrics.")


def markdown_note(what_if: WhatIf) -> str:
    return f"> **{note(what_if)}**\n\n"


def latex_note(what_if: WhatIf) -> str:
    return f"% {note(what_if)}\n"


def print_unwrapped(console, renderable) -> None:
    """Print a table at its natural width when stdout is not a terminal (a file or a pipe
    has no width to wrap at); on a terminal rich fits it to the window."""
    if not console.is_terminal:
        console.width = max(console.width, natural_width(console, renderable))
    console.print(renderable)
