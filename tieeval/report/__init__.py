"""The rendering layer: result records -> tables, JSON, CSV, Markdown, LaTeX.

The only package that formats numbers. Each module renders one kind of result.
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
           TABLE_FORMATS,
           render_tables,
           to_csv,
           to_json,
           to_markdown,
)

__all__ = ["CSV_FIELDS", "TABLE_FORMATS", "render_tables", "to_csv", "to_json", "to_markdown",
           "fmt_change", "fmt_percent", "fmt_size", "fmt_value", "md_escape", "md_table"]
