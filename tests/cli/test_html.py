"""``tieeval compare --format html``: one self-contained page (it parses, its tags nest,
it fetches nothing), whose figures are the JSON output's, with the paper's tables for
labelled runs and Figure 1 inline (or a note without matplotlib); and a real browser
(headless Chromium, where installed) renders it."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
from click.testing import CliRunner
from tiers import SLOW

from tieeval.cli import cli

VOID = {"meta", "br", "img", "hr", "input", "link", "col", "wbr", "source", "area", "base"}
# attributes through which a page would fetch something
FETCHING = {"src", "href", "xlink:href", "srcset", "poster", "data", "action", "background"}


class Page(HTMLParser):
    """The page as the parser sees it: every element, its attributes and text, the
    nesting checked as it goes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.elements: list[tuple[str, dict]] = []
        self.text: list[tuple[tuple[str, ...], str]] = []
        self.rows: list[list[tuple[str, dict]]] = []  # each <tr>: its cells (text, attrs)
        self.row_headings: list[str] = []  # the <h3> above each row
        self.heading = ""
        self._cell: tuple[list[str], dict] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        if tag == "tr":
            self.rows.append([])
            self.row_headings.append(self.heading)
        if tag == "h3":
            self.heading = ""
        if tag in ("td", "th"):
            self._cell = ([], attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(("".join(self._cell[0]), self._cell[1]))
            self._cell = None
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append((tuple(self.stack), data))
        if self.stack[-1:] == ["h3"]:
            self.heading += data
        if self._cell is not None:
            self._cell[0].append(data)

    def tables(self, cls: str):
        return [attrs for tag, attrs in self.elements if tag == "table"
                and attrs.get("class") == cls]


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert page.errors == [] and page.stack == [], (page.errors, page.stack)
    return page


def _dumps(tmp_path):
    """Two methods x two seeds on one dataset, scores on a coarse grid (ties), labelled
    in the files' metadata."""
    rng = np.random.default_rng(11)
    paths = []
    for method, bump in (("Alpha", 0.3), ("Beta", 0.0)):
        for seed in (1, 2):
            scores = np.round(rng.random((40, 12)) * 4) / 4
            scores[:, 0] += bump
            path = tmp_path / f"{method}_seed{seed}.npz"
            np.savez(path, scores=scores, method=np.array(method), dataset=np.array("toy"),
                     task=np.array("user"), seed=np.array(str(seed)))
            paths.append(str(path))
    return paths


def _compare(*args) -> str:
    result = CliRunner().invoke(cli, ["compare", *args, "-q"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_html_figures_are_the_json_figures(tmp_path):
    paths = _dumps(tmp_path)
    doc = json.loads(_compare(*paths, "--format", "json"))
    page = parse(_compare(*paths, "--format", "html"))
    rows = [row for row in page.rows if row and "data-metric" in row[0][1]]
    assert len(rows) == sum(len(run["metrics"]) for run in doc["runs"])
    columns = ("original", "first", "last", "tie_aware", "change_original_to_tie_aware",
               "change_first_to_last")
    expected = [(m["metric"] if m["k"] is None else f"{m['metric']}@{m['k']}",
                 [m[c] for c in columns], m["tie_aware_std"])
                for run in doc["runs"] for m in run["metrics"]]
    for row, (label, values, std) in zip(rows, expected):
        assert row[0][1]["data-metric"] == label
        assert [float(cell[1]["data-value"]) for cell in row[1:]] == values  # unrounded
        assert float(row[4][1]["data-sd"]) == std
        assert row[4][0] == f"{values[3]:.4f} ± {std:.4f}"
    # the tie statistics of each run, as the JSON holds them
    ties = [row for row in page.rows if len(row) == 2 and row[0][0].startswith("Top-score")]
    assert [row[1][0] for row in ties] == [f"{run['ties']['top_tie_frequency'] * 100:.2f}%"
                                           for run in doc["runs"]]


def test_html_holds_the_papers_tables_and_figure_for_labelled_runs(tmp_path):
    paths = _dumps(tmp_path)
    doc = json.loads(_compare(*paths, "--format", "json"))
    page = parse(_compare(*paths, "--format", "html"))
    headings = [text for stack, text in page.text if stack[-1:] == ("h3",)]
    for number in (1, 3, 4):
        assert any(h.startswith(f"Table {number}. ") for h in headings), headings
    # Table 3: each method's seed mean of the tie-aware HR@1, ± its across-seed sd
    groups = {g["labels"]["method"]: g for g in doc["groups"]}
    hr1 = next(row for row, heading in zip(page.rows, page.row_headings)
               if heading.startswith("Table 3. ") and [c[0] for c in row[:2]] == ["toy", "HR@1"])
    means = []
    for method in ("Alpha", "Beta"):
        m = next(m for m in groups[method]["metrics"] if m["metric"] == "HR" and m["k"] == 1)
        means.append(f"{m['tie_aware']:.4f} ± {m['tie_aware_seed_std']:.4f}")
    # Original | Tie-aware | % Change per method
    assert [c[0] for c in hr1][3::3] == means
    assert [tag for tag, _ in page.elements].count("svg") == 1


def test_html_fetches_nothing(tmp_path):
    paths = _dumps(tmp_path)
    text = _compare(*paths, "--format", "html")
    page = parse(text)
    fetching = [(tag, name, value) for tag, attrs in page.elements
                for name, value in attrs.items()
                if name in FETCHING and not (value or "").startswith("#")]  # in-page only
    assert fetching == []
    assert not {tag for tag, _ in page.elements} & {"script", "link", "img", "iframe",
                                                     "object", "embed"}
    styles = "".join(data for stack, data in page.text if "style" in stack)
    assert "url(" not in styles and "@import" not in styles and "@font-face" not in styles
    # the only URLs are the SVG namespace names, which identify and are never fetched
    urls = [value for _, attrs in page.elements for name, value in attrs.items()
            if value and "://" in value and not name.startswith("xmlns")]
    assert urls == []
    assert "://" not in "".join(data for _, data in page.text)


def test_html_escapes_what_it_shows(tmp_path):
    path = tmp_path / "<script>alert(1)<img src=x onerror=alert(2)>&.npz"
    np.savez(path, scores=np.array([[0.5, 0.5, 0.1], [0.9, 0.2, 0.1]]))
    page = parse(_compare(str(path), "--format", "html"))
    assert not {"script", "img"} & {tag for tag, _ in page.elements}
    assert any(str(path) in data for stack, data in page.text if stack[-1:] == ("h3",))


def test_html_without_matplotlib_says_so_in_place_of_the_figure(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    page = parse(_compare(*_dumps(tmp_path), "--format", "html"))
    assert "svg" not in {tag for tag, _ in page.elements}
    notes = [data for stack, data in page.text if stack[-1:] == ("p",)]
    assert any("it needs matplotlib" in n and "tieeval[plot]" in n for n in notes)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@SLOW  # a browser start: seconds of CPU
def test_html_renders_in_headless_chromium(tmp_path):
    """A real browser parses the page (its DOM holds the tables and the figure) and paints
    it; the screenshot is kept in the test's folder for a person to look at."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (.ci/run installs it)")
    page_path = tmp_path / "report.html"
    page_path.write_text(_compare(*_dumps(tmp_path), "--format", "html"), encoding="utf-8")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-extensions", "--user-data-dir=" + str(tmp_path / "p")]
    dom = subprocess.run([*flags, "--dump-dom", page_path.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('<table class="metrics">') == 4 and "<svg" in dom.stdout
    png = tmp_path / "report.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", "--window-size=1200,2400",
                           page_path.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0, shot.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1200, 2400)
    assert len(data) > 50_000  # tables and a figure, not a blank page (~10 kB)


# Measured in the page by the browser: its width and how wide it lays out, the right edge
# of each run table's Tie-aware heading, each paper table's box (its id, the width of its
# content, the width shown) and the figure's right edge; written into the host page.
PROBE = """<script>
(function () {
  var rect = function (e) { return e.getBoundingClientRect(); };
  var out = {inner: window.innerWidth, page: document.documentElement.scrollWidth,
    tie_aware: [].map.call(document.querySelectorAll("table.metrics"),
                           function (t) { return rect(t.rows[0].cells[4]).right; }),
    boxes: [].map.call(document.querySelectorAll(".paper-table"), function (s) {
      var box = s.querySelector(".scroll");
      return [s.id, box.scrollWidth, box.clientWidth, rect(box).right]; }),
    figure: [].map.call(document.querySelectorAll("figure svg"),
                        function (f) { return rect(f).right; })};
  var pre = parent.document.createElement("pre");
  pre.className = "layout";
  pre.textContent = JSON.stringify(out);
  parent.document.body.appendChild(pre);
})();
</script>"""


def _four_methods_two_datasets(tmp_path):
    """4 methods x 2 datasets x 2 seeds: two tie-free methods (Figure 1 draws them on one
    spot) and two tied ones, long enough names to fill Tables 1 and 3."""
    rng = np.random.default_rng(39)
    paths = []
    for method, bump, grid in (("ConsRec", 0.3, 4), ("GroupIM", 0.0, 4),
                               ("AGREE", 0.1, 10**6), ("HyperGroup", 0.2, 10**6)):
        for dataset in ("Mafengwo", "CAMRa2011"):
            for seed in (1, 2):
                scores = np.round(rng.random((60, 20)) * grid) / grid
                scores[:, 0] += bump
                path = tmp_path / f"{method}_{dataset}_seed{seed}.npz"
                np.savez(path, scores=scores, method=np.array(method),
                         dataset=np.array(dataset), task=np.array("group"),
                         seed=np.array(str(seed)))
                paths.append(str(path))
    return paths


@SLOW  # two browser runs: about 5 CPU-seconds
def test_html_fits_a_phone_and_a_laptop_in_headless_chromium(tmp_path):
    """At 390 px (a phone) and 1280 px (a laptop), with 4 methods x 2 datasets: the page
    never scrolls sideways; every run table shows its Tie-aware column without scrolling;
    at 1280 px Tables 1 and 3 fit whole, at 390 px they scroll inside their own box; the
    figure fits. The page is laid out in an iframe of each width (a browser window is
    never narrower than 500 px); the screenshot of both is kept for a person to look at."""
    import html

    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (.ci/run installs it)")
    page = _compare(*_four_methods_two_datasets(tmp_path), "--format", "html")
    probed = html.escape(page.replace("</body>", PROBE + "</body>"), quote=True)
    widths = (390, 1280)
    host = tmp_path / "host.html"
    host.write_text("<!DOCTYPE html><html><body style='margin:0;display:flex'>" + "".join(
        f'<iframe width="{w}" height="2400" style="border:0;flex:none" srcdoc="{probed}">'
        "</iframe>" for w in widths) + "</body></html>", encoding="utf-8")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-extensions", "--user-data-dir=" + str(tmp_path / "p"),
             "--window-size=1700,2400"]
    dom = subprocess.run([*flags, "--dump-dom", host.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = [json.loads(html.unescape(m))
             for m in re.findall(r'<pre class="layout">(.*?)</pre>', dom.stdout)]
    layouts = {m["inner"]: m for m in found}
    assert sorted(layouts) == list(widths), found
    for width, m in layouts.items():
        assert m["page"] <= width, (width, m["page"])  # no sideways scroll
        assert len(m["tie_aware"]) == 16 and max(m["tie_aware"]) <= width, (width, m)
        assert [b[0] for b in m["boxes"]] == ["table1", "table3", "table4"]
        assert all(right <= width for _, _, _, right in m["boxes"]), (width, m["boxes"])
        assert m["figure"] and max(m["figure"]) <= width
    for name, content, shown, _ in layouts[1280]["boxes"]:
        assert content <= shown, (name, content, shown)  # whole, no scrolling
    narrow = {name: (content, shown) for name, content, shown, _ in layouts[390]["boxes"]}
    assert narrow["table3"][0] > narrow["table3"][1]  # wider: it scrolls in its box
    png = tmp_path / "layout.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", host.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
