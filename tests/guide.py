"""The README and the user guide's pages (``docs/*.md``), for the tests that check them."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")

# README.md first, then every page of the guide, by file name.
PAGES = ["README.md", *sorted(f"docs/{name}" for name in os.listdir(DOCS) if name.endswith(".md"))]


def read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def all_text() -> str:
    """The README and every guide page, in :data:`PAGES` order, as one text: for tests that
    look a passage up wherever it lives."""
    return "\n".join(read(page) for page in PAGES)
