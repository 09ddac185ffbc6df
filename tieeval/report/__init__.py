"""The rendering layer: result records -> tables, JSON, CSV, Markdown, LaTeX.

The only package that formats numbers. Each module renders one kind of result and
registers its renderers per (result kind, format) in :mod:`tieeval.report.registry`.
"""
