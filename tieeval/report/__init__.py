"""The rendering layer: result records -> tables, JSON, CSV, Markdown, LaTeX.

The only package that formats numbers. Each module renders one kind of result and
registers its renderers per (result kind, format) in :mod:`tieeval.report.registry`.
"""

from tieeval.report.format import (
           fmt_change,
           fmt_percent,
           fmt_size,
           fmt_value,
           md_escape,
           md_table,
)
from tieeval.report.runs import (
           CSV_FIELDS,
           render_tables,
           to_csv,
           to_json,
           to_markdown,
)

__all__ = ["CSV_FIELDS", "render_tables", "to_csv", "to_json", "to_markdown",
           "fmt_change", "fmt_percent", "fmt_size", "fmt_value", "md_escape", "md_table"]
