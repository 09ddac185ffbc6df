"""Labels for what-if analyses (``--cast``, ``--tolerance``) in every output format."""

from __future__ import annotations

import csv
import io

from tieeval.records.whatif import WhatIf

WHAT_IF_COLUMN = "what_if"


def note(what_if: WhatIf) -> str:
    """``WHAT-IF ANALYSIS: scores rounded to bfloat16 ...; not the stored scores.``"""
    return (f"WHAT-IF ANALYSIS: {what_if.describe()}. These are not the stored scores' "
            "metrics.")


def markdown_note(what_if: WhatIf) -> str:
    return f"> **{note(what_if)}**\n\n"


def latex_note(what_if: WhatIf) -> str:
    return f"% {note(what_if)}\n"


def add_csv_column(text: str, what_if: WhatIf) -> str:
    """Append a ``what_if`` column (the description on every line) to CSV text."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return text
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(rows[0] + [WHAT_IF_COLUMN])
    for row in rows[1:]:
        writer.writerow(row + [what_if.describe()])
    return buf.getvalue()


def print_unwrapped(console, renderable) -> None:
    """Print a table at its natural width when stdout is not a terminal (a file or a pipe
    has no width to wrap at); on a terminal rich fits it to the window."""
    if not console.is_terminal:
        natural = console.measure(renderable, options=console.options.update_width(100_000))
        console.width = max(console.width, natural.maximum)
    console.print(renderable)
