"""The built guide reads offline: no page or style sheet of ``mkdocs build`` fetches anything
from the web (web fonts, a CDN's script or style sheet, a remote image). Links the reader
may follow are not fetches and may point anywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from guide import ROOT

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings")

# what a browser loads by itself: <link href>, <script src>, <img src>, <iframe src> ...
FETCHED = re.compile(r"<(link|script|img|iframe|source|video|audio|embed|object)\b[^>]*"
                     r"\b(href|src|data)\s*=\s*[\"']?(https?:)?//", re.IGNORECASE)
CSS_FETCH = re.compile(r"(@import\s+(url\()?|url\()\s*[\"']?(https?:)?//", re.IGNORECASE)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    # warnings shown (no --quiet): the strict build fails on them and says which
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", os.path.join(ROOT, "mkdocs.yml"), "-d", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def _files(site, suffix):
    return [os.path.join(folder, name) for folder, _, names in os.walk(site)
            for name in names if name.endswith(suffix)]


def test_no_page_fetches_from_the_web(site):
    pages = _files(site, ".html")
    assert len(pages) >= 10  # the guide's pages were built
    for page in pages:
        text = open(page, encoding="utf-8").read()
        assert not FETCHED.search(text), (page, FETCHED.search(text).group(0))
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, page


def test_no_style_sheet_fetches_from_the_web(site):
    sheets = _files(site, ".css")
    assert sheets
    for sheet in sheets:
        text = open(sheet, encoding="utf-8").read()
        assert not CSS_FETCH.search(text), (sheet, CSS_FETCH.search(text).group(0))
