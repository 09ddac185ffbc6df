"""The paper's Tables 1, 3 and 4 and Figure 1: assembly against hand averages, and every
writer's output parsed back (column counts, escaping)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import pearsonr
from tiers import tiered

import tieeval
from tieeval.analysis.groups import group_runs
from tieeval.analysis.paper import (
    figure1,
    inflation,
    paper_table,
    pearson,
    table1,
    table3,
    table4,
)
from tieeval.cli import cli
from tieeval.report import paper as render

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = "{method}/{dataset}_{task}_seed{seed}.npz"
# names that need escaping in LaTeX and Markdown
METHODS = ("Cons_Rec", "Align%Group", "DH#MAE")


def saturated(rng, scale, rows=60, cols=21):
    """A float32 sigmoid model: a larger scale saturates more scores to exactly 1.0f."""
    logits = rng.normal(size=(rows, cols)) * scale
    logits[:, 0] += scale
    with np.errstate(over="ignore"):  # exp overflows to inf: the sigmoid is then exactly 0
        return (1.0 / (1.0 + np.exp(-logits.astype(np.float32)))).astype(np.float32)


@pytest.fixture(scope="module")
def study():
    """methods x datasets x tasks x 2 seeds of score matrices; one setting lacks a method."""
    rng = np.random.default_rng(20260501)
    mats = {}
    for task in ("group", "user"):
        for dataset in ("CAMRa", "Mafengwo"):
            for i, method in enumerate(METHODS):
                if task == "user" and dataset == "Mafengwo" and method == "DH#MAE":
                    continue
                for seed in (1, 2):
                    mats[(method, dataset, task, seed)] = saturated(rng, 4.0 * 4 ** i)
    return mats


@pytest.fixture(scope="module")
def groups(study):
    runs = []
    for (method, dataset, task, seed), m in study.items():
        run = tieeval.evaluate(m, k=[1, 5])
        run.labels = {"method": method, "dataset": dataset, "task": task, "seed": str(seed)}
        runs.append(run)
    found, warnings = group_runs(runs)
    assert warnings == []
    return found


def hand_mean(study, method, dataset, task, metric, column):
    return np.mean([getattr(tieeval.evaluate(study[(method, dataset, task, s)], k=[1, 5])
                            .metric(metric), column) for s in (1, 2)])


def test_table3_cells_are_seed_means_and_changes_follow_the_definition(study, groups):
    t = table3(groups)
    assert t.methods == list(METHODS)
    assert [s.task for s in t.sections] == ["group", "user"]
    assert [b.dataset for b in t.sections[0].blocks] == ["CAMRa", "Mafengwo"]
    assert [r.title for r in t.sections[0].blocks[0].rows] == [
        "HR@1", "HR@5", "NDCG@1", "NDCG@5", "MRR"]
    for method in METHODS:
        for metric in ("HR@1", "NDCG@5", "MRR"):
            orig = hand_mean(study, method, "CAMRa", "group", metric, "original")
            tie = hand_mean(study, method, "CAMRa", "group", metric, "tie_aware")
            assert t.cell("group", "CAMRa", metric, method, "original").value == pytest.approx(
                orig, abs=1e-12)
            assert t.cell("group", "CAMRa", metric, method, "tie_aware").value == pytest.approx(
                tie, abs=1e-12)
            change = t.cell("group", "CAMRa", metric, method, "change_original_to_tie_aware")
            assert change.value == pytest.approx((tie - orig) / orig, abs=1e-12)
            assert change.seed_std is None and change.seeds == 2
    # the most saturated method is the most inflated
    drop = [t.cell("group", "CAMRa", "HR@1", m, "change_original_to_tie_aware").value
            for m in METHODS]
    assert drop[2] < drop[0]
    # DH#MAE has no user/Mafengwo run: empty cells, not zeros
    missing = t.cell("user", "Mafengwo", "HR@1", "DH#MAE", "original")
    assert missing.value is None and missing.seeds == 0


def test_table1_first_last_and_change(study, groups):
    t = table1(groups)
    for method in METHODS:
        first = hand_mean(study, method, "Mafengwo", "user" if method != "DH#MAE" else "group",
                          "HR@5", "first")
        last = hand_mean(study, method, "Mafengwo", "user" if method != "DH#MAE" else "group",
                         "HR@5", "last")
        task = "user" if method != "DH#MAE" else "group"
        assert t.cell(task, "Mafengwo", "HR@5", method, "first").value == pytest.approx(first)
        assert t.cell(task, "Mafengwo", "HR@5", method, "last").value == pytest.approx(last)
        assert t.cell(task, "Mafengwo", "HR@5", method, "change_first_to_last").value == \
            pytest.approx((last - first) / first)


def test_table4_statistics_are_seed_means(study, groups):
    t = table4(groups)
    for method in METHODS:
        mats = [study[(method, "CAMRa", "group", s)] for s in (1, 2)]
        top = [(m == m.max(1, keepdims=True)).sum(1) for m in mats]
        pos_b = [(m == m[:, :1]).sum(1) for m in mats]
        expected = {"Avg. top-score tie size": [x.mean() for x in top],
                    "Avg. top-score tie ratio": [(x / 21).mean() for x in top],
                    "Top-score tie frequency": [(x > 1).mean() for x in top],
                    "Avg. positive tie size": [b.mean() for b in pos_b],
                    "Positive tie frequency": [(b > 1).mean() for b in pos_b]}
        for title, values in expected.items():
            cell = t.cell("group", "CAMRa", title, method, "value")
            assert cell.value == pytest.approx(np.mean(values), abs=1e-12)
            assert cell.seed_std == pytest.approx(np.std(values, ddof=1), abs=1e-12)


def test_paper_table_rejects_other_numbers(groups):
    with pytest.raises(tieeval.ParameterError, match="table must be one of 1, 3, 4"):
        paper_table(2, groups)


# ---------------------------------------------------------------------------------------
# writers

def latex_cells(line: str) -> int:
    """Columns a LaTeX row spans: unescaped '&' separators, with \\multicolumn spans."""
    body = line.rsplit("\\\\", 1)[0]
    parts = re.split(r"(?<!\\)&", body)
    total = 0
    for part in parts:
        m = re.search(r"\\multicolumn\{(\d+)\}", part)
        total += int(m.group(1)) if m else 1
    return total


@pytest.mark.parametrize("number", [1, 3, 4])
def test_latex_is_booktabs_with_equal_column_counts_and_escapes(groups, number):
    tex = render.to_latex(paper_table(number, groups))
    assert tex.count("\\begin{tabular}") == 1 and "\\toprule" in tex and "\\bottomrule" in tex
    spec = re.search(r"\\begin\{tabular\}\{([^}]*)\}", tex).group(1).replace(" ", "")
    ncols = len(spec)
    rows = [line for line in tex.splitlines() if line.rstrip().endswith("\\\\")]
    assert rows and all(latex_cells(r) == ncols for r in rows), rows
    assert "Cons\\_Rec" in tex and "Align\\%Group" in tex and "DH\\#MAE" in tex
    body = tex.split("\\begin{tabular}", 1)[1]
    # no raw special characters left in the tabular (comments are outside it)
    for raw in ("Cons_Rec", "Align%Group", "DH#MAE"):
        assert raw not in body
    assert not re.search(r"(?<!\\)%", body)
    # braces balance
    unescaped = re.sub(r"\\[{}]", "", tex)
    assert unescaped.count("{") == unescaped.count("}")
    if number in (1, 3):
        assert "\\% Change" in tex and "\\cmidrule(lr){3-5}" in tex


def md_cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line.strip())) - 2


@pytest.mark.parametrize("number", [1, 3, 4])
def test_markdown_tables_have_equal_column_counts_and_escapes(groups, number):
    md = render.to_markdown(paper_table(number, groups))
    lines = [line for line in md.splitlines() if line.startswith("|")]
    widths = {md_cells(line) for line in lines}
    per = 1 if number == 4 else 3
    assert widths == {2 + per * len(METHODS)}
    assert "Cons\\_Rec" in md and "Align%Group" in md
    assert "Cons_Rec" not in md.replace("Cons\\_Rec", "")
    assert md.count("**Task: group**") == 1 and md.count("**Task: user**") == 1
    assert "| – |" in md or "| –" in md  # the missing method's cells


def test_csv_is_tidy_and_matches_the_group_means(groups):
    t = table3(groups)
    rows = list(csv.DictReader(io.StringIO(render.to_csv(t))))
    assert list(rows[0]) == ["task", "dataset", "metric", "k", "method", "seeds", "original",
                             "original_seed_std", "tie_aware", "tie_aware_seed_std",
                             "change_original_to_tie_aware", "original_rule"]
    assert {r["original_rule"] for r in rows} == {"argsort"}  # the rule behind Original
    # 2 tasks x 2 datasets x 3 methods, minus the missing one, x 5 metrics
    assert len(rows) == (2 * 2 * 3 - 1) * 5
    g = next(g for g in groups if g.key == ("Align%Group", "Mafengwo", "user"))
    row = next(r for r in rows if r["method"] == "Align%Group" and r["dataset"] == "Mafengwo"
               and r["task"] == "user" and r["metric"] == "NDCG" and r["k"] == "5")
    assert float(row["tie_aware"]) == g.metric("NDCG@5").tie_aware
    assert float(row["original_seed_std"]) == g.metric("NDCG@5").original_seed_std
    t4 = list(csv.DictReader(io.StringIO(render.to_csv(table4(groups)))))
    assert list(t4[0])[:5] == ["task", "dataset", "statistic", "method", "seeds"]
    assert {r["statistic"] for r in t4} == {"top_tie_size", "top_tie_ratio",
                                            "top_tie_frequency", "positive_tie_size",
                                            "positive_tie_frequency"}


def test_rich_table_renders_every_method_and_the_seed_note(groups):
    from rich.console import Console
    buf = io.StringIO()
    Console(file=buf, width=250, color_system=None).print(render.rich_table(table3(groups)))
    out = buf.getvalue()
    for method in METHODS:
        assert method in out
    assert "Task: group" in out and "Tie-aware" in out and "% Change" in out
    assert render.seed_note(table3(groups)) == (
        "Each figure is the mean over 2 seeds; ± is the across-seed sample standard "
        "deviation.")


def test_seed_std_is_shown_only_for_several_seeds(groups):
    cell = table3(groups).cell("group", "CAMRa", "HR@1", "Cons_Rec", "original")
    assert render.cell_text(cell, "value") == (
        f"{cell.value:.4f} ± {cell.seed_std:.4f}")
    assert render.cell_text(cell, "value", show_std=False) == f"{cell.value:.4f}"


# ---------------------------------------------------------------------------------------
# Figure 1

def test_inflation_and_pearson_follow_their_definitions(groups):
    panels = figure1(groups)
    assert [(p.task, p.dataset) for p in panels] == [
        ("group", "CAMRa"), ("group", "Mafengwo"), ("user", "CAMRa"), ("user", "Mafengwo")]
    for g in groups:
        drops = [(m.original - m.tie_aware) / m.original for m in g.metrics if m.original]
        assert inflation(g) == pytest.approx(sum(drops) / len(drops))
    panel = panels[0]
    x = [math.log(p.top_tie_size) for p in panel.points]
    y = [p.inflation for p in panel.points]
    assert panel.r == pytest.approx(pearsonr(x, y)[0], abs=1e-12)
    assert panels[3].r is None  # two points: no correlation reported
    assert pearson([1, 2, 3], [5, 5, 5]) is None


def test_plot_writes_a_png(tmp_path, study):
    pytest.importorskip("matplotlib", reason="matplotlib not installed: the plot extra "
                                              "(pip install 'tieeval[plot]') is untested here")
    files = _write_study(tmp_path, study)
    out = tmp_path / "fig1.png"
    r = CliRunner().invoke(cli, ["compare", *files, "--template", TEMPLATE, "--plot",
                                 str(out), "--format", "csv"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _figure_texts_fit(fig):
    """Every visible text of ``fig`` inside the figure, and no two x tick labels of one
    axes overlapping, measured by matplotlib's own renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    box = fig.bbox
    def shown(labels, lim):  # tick labels matplotlib draws: those within the view
        lo, hi = sorted(lim)
        return [t for t in labels if t.get_visible() and t.get_text()
                and lo <= t.get_position()[0 if lim is xlim else 1] <= hi]

    texts = list(fig.texts)
    xlabels = {}
    for ax in (a for a in fig.axes if a.get_visible()):
        xlim, ylim = ax.get_xlim(), ax.get_ylim()
        xlabels[ax] = shown(ax.get_xticklabels(which="both"), xlim)
        texts += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label, *xlabels[ax],
                  *shown(ax.get_yticklabels(which="both"), ylim)]
    texts = [t for t in texts if t.get_visible() and t.get_text()]
    assert fig._suptitle in texts
    for t in texts:
        ext = t.get_window_extent(renderer)
        assert (ext.x0 >= box.x0 - 0.5 and ext.x1 <= box.x1 + 0.5
                and ext.y0 >= box.y0 - 0.5 and ext.y1 <= box.y1 + 0.5), t.get_text()
    for labels in xlabels.values():
        assert len(labels) >= 2, "a tie-size axis needs at least two labelled ticks"
        exts = sorted((t.get_window_extent(renderer) for t in labels), key=lambda e: e.x0)
        for a, b in zip(exts, exts[1:]):
            assert a.x1 <= b.x0, (a, b)


PLOT_SIZES = [(1.0, 15.0), (1.0, 1.02, 1.31), (3.0, 3.0), (2.0, 40.0), (1.0, 900.0)]


# every run draws each range of tie sizes on one panel, and the first on five; the slow
# tier the others on five
@pytest.mark.parametrize("sizes, n_panels", [(s, 1) for s in PLOT_SIZES] + tiered(
    [(s, 5) for s in PLOT_SIZES], quick=1))
def test_plot_text_stays_inside_the_figure_and_tick_labels_apart(sizes, n_panels):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from tieeval.records.paper import FigurePanel, FigurePoint
    from tieeval.report.plot import figure1_figure

    points = [FigurePoint(f"method-with-a-long-name-{i}", s, 0.9 * i / len(sizes), 1)
              for i, s in enumerate(sizes)]
    panels = [FigurePanel("user", f"Dataset{j}", points, 0.5) for j in range(n_panels)]
    fig = figure1_figure(panels)
    _figure_texts_fit(fig)
    for ax in fig.axes[:n_panels]:  # the data drawn are the points given, unchanged
        drawn = ax.collections[0].get_offsets()
        assert [tuple(row) for row in drawn] == [
            (p.top_tie_size, 100.0 * p.inflation) for p in points]


@pytest.mark.parametrize("points", [
    # tie-free methods all at tie size 1 without inflation, and one tied method
    [("AGREE", 1.0, 0.0), ("HyperGroup", 1.0, 0.0), ("ConsRec", 1.93, 0.0),
     ("GroupIM", 2.97, 0.32)],
    # near but not on one spot, and three on one
    [("A-tie-free", 1.0, 0.0), ("B-tie-free", 1.0, 0.0), ("C-tie-free", 1.0, 0.0),
     ("near-one", 1.05, 0.004), ("tied", 4.0, 0.2), ("tied-too", 4.2, 0.21)],
])
def test_plot_labels_never_overprint(points):
    """Every method is named once, and no two labels of a panel overlap, measured by
    matplotlib's own renderer on the drawn figure."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from tieeval.records.paper import FigurePanel, FigurePoint
    from tieeval.report.plot import figure1_figure

    panel = FigurePanel("group", "Mafengwo", [FigurePoint(m, size, inflation, 2)
                                              for m, size, inflation in points], 0.8)
    fig = figure1_figure([panel, panel])
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    _figure_texts_fit(fig)
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_visible() and t.get_text()]
        named = [name.strip() for t in labels for name in t.get_text().replace("\n", " ")
                 .split(",")]
        assert sorted(named) == sorted(m for m, _, _ in points)
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0, (a, b)


def test_plot_without_matplotlib_is_a_clear_error(tmp_path, study, monkeypatch):
    files = _write_study(tmp_path, study)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now fails
    r = CliRunner().invoke(cli, ["compare", *files, "--plot", str(tmp_path / "f.png")])
    assert r.exit_code == 2
    assert r.output.strip() == ("Error: --plot needs matplotlib, which is not installed: "
                                "pip install 'tieeval[plot]'")


def test_plot_path_is_checked_before_reading(tmp_path):
    r = CliRunner().invoke(cli, ["compare", "missing.npz", "--plot", str(tmp_path / "f.txt")])
    assert r.exit_code == 2 and "must end in .png, .pdf, .svg" in r.output


# ---------------------------------------------------------------------------------------
# the command line

def _write_study(tmp_path, study):
    files = []
    for (method, dataset, task, seed), m in study.items():
        path = tmp_path / method / f"{dataset}_{task}_seed{seed}.npz"
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            tieeval.save_scores(path, m)
        files.append(str(path))
    return files


def _invoke(*args):
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_default_table_is_runs_for_one_file_and_table3_for_several(tmp_path, study):
    files = _write_study(tmp_path, study)
    one = _invoke("compare", files[0], "--format", "csv")
    assert one.startswith("path,metric,k,")
    # Several files: people read Table 3; pipelines reading csv keep one line per run.
    several_md = _invoke("compare", *files, "--template", TEMPLATE, "--format", "markdown")
    assert several_md == _invoke("compare", *files, "--template", TEMPLATE, "--table", "3",
                                 "--format", "markdown")
    several = _invoke("compare", *files, "--template", TEMPLATE, "--format", "csv")
    assert several.startswith("path,metric,k,")
    table3 = _invoke("compare", *files, "--template", TEMPLATE, "--table", "3", "--format",
                     "csv")
    assert table3.startswith("task,dataset,metric,k,method,seeds,original,")
    runs = _invoke("compare", *files[:2], "--table", "runs", "--format", "csv")
    assert runs.startswith("path,metric,k,")


def test_ties_command_is_table_4(tmp_path, study):
    files = _write_study(tmp_path, study)
    for fmt in ("markdown", "latex", "csv"):
        assert _invoke("ties", *files, "--template", TEMPLATE, "--format", fmt) == _invoke(
            "compare", *files, "--template", TEMPLATE, "--table", "4", "--format", fmt)
    table = _invoke("ties", *files, "--template", TEMPLATE)
    assert "Top-score tie frequency" in table and "Avg. positive tie size" in table


def test_json_ignores_table_and_holds_runs_and_groups(tmp_path, study):
    files = _write_study(tmp_path, study)
    doc = json.loads(_invoke("compare", *files, "--template", TEMPLATE, "--table", "1",
                             "--format", "json"))
    assert len(doc["runs"]) == len(study) and len(doc["groups"]) == len(study) // 2
    assert all(g["seeds"] == 2 for g in doc["groups"])


def test_latex_for_single_runs(tmp_path, study):
    files = _write_study(tmp_path, study)
    tex = _invoke("compare", files[0], "--format", "latex")
    rows = [line for line in tex.splitlines() if line.rstrip().endswith("\\\\")]
    assert rows and {latex_cells(r) for r in rows} == {7}
    assert "Tie-aware $\\pm$ sd" in tex and "\\% Chg orig$\\rightarrow$tie" in tex


def test_no_seed_std_flag(tmp_path, study):
    files = _write_study(tmp_path, study)
    md = _invoke("compare", *files, "--template", TEMPLATE, "--format", "markdown",
                 "--no-seed-std")
    assert "±" not in md


# ---------------------------------------------------------------------------------------
# several gammas: one row per (metric, K, gamma)

def signed_runs(tmp_path):
    """Method A: one row, its positive tied at the top with an explicit negative, so under
    a random tie-break SHR@1 is 1 or -gamma with probability 1/2 each: (1 - gamma) / 2.
    Method B: the positive alone on top, SHR@1 = 1 for every gamma."""
    labels = np.array([[1, -1, 0]])
    np.savez(tmp_path / "A.npz", scores=np.array([[1.0, 1.0, 0.0]]), labels=labels)
    np.savez(tmp_path / "B.npz", scores=np.array([[1.0, 0.5, 0.0]]), labels=labels)
    return [str(tmp_path / "A.npz"), str(tmp_path / "B.npz")]


def test_tables_have_one_row_per_gamma(tmp_path):
    runs = []
    for path in signed_runs(tmp_path):
        run = tieeval.evaluate_labels(np.load(path)["scores"], np.load(path)["labels"],
                                      metrics=["SHR@1", "NDCG@3"], gamma=[0, 0.5, 2])
        run.labels = {"method": os.path.basename(path)[0]}
        runs.append(run)
    groups, _ = group_runs(runs)
    t3, t1 = table3(groups), table1(groups)
    rows = [r for _, _, r in t3.rows()]
    assert [(r.metric, r.k, r.gamma) for r in rows] == [
        ("SHR", 1, 0.0), ("SHR", 1, 0.5), ("SHR", 1, 2.0), ("NDCG", 3, None)]
    for gamma in (0.0, 0.5, 2.0):
        assert t3.cell(None, None, "SHR@1", "A", "tie_aware", gamma=gamma).value == \
            (1 - gamma) / 2
        assert t3.cell(None, None, "SHR@1", "B", "tie_aware", gamma=gamma).value == 1.0
        assert t1.cell(None, None, "SHR@1", "A", "last", gamma=gamma).value == -gamma
    # the titles carry gamma in every writer; LaTeX typesets it in math mode
    md = render.to_markdown(t3)
    assert "| SHR@1 γ=0 |" in md and "| SHR@1 γ=0.5 |" in md and "| SHR@1 γ=2 |" in md
    assert "| NDCG@3 |" in md
    latex = render.to_latex(t3)
    assert r"SHR@1 $\gamma$=0.5 &" in latex and "γ" not in latex
    table = list(csv.DictReader(io.StringIO(render.to_csv(t3))))
    assert [(r["method"], r["metric"], r["gamma"]) for r in table[:3]] == [
        ("A", "SHR", "0.0"), ("B", "SHR", "0.0"), ("A", "SHR", "0.5")]
    assert float(table[2]["tie_aware"]) == 0.25 and table[-1]["gamma"] == ""


def test_cli_table3_with_several_gammas(tmp_path):
    paths = signed_runs(tmp_path)
    result = CliRunner().invoke(cli, ["compare", *paths, "-m", "SHR@1", "--gamma", "0", "1",
                                      "--template", "{method}.npz", "--table", "3",
                                      "--format", "markdown"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("| SHR@1")]
    # Original | Tie-aware | % Change per method: A's tie-aware is (1 - gamma) / 2
    assert [line.split(" | ")[0] for line in lines] == ["| SHR@1 γ=0", "| SHR@1 γ=1"]
    assert lines[0].split(" | ")[2] == "0.5000" and lines[1].split(" | ")[2] == "0.0000"
    # single-positive tables keep their CSV columns
    np.save(tmp_path / "s.npy", np.array([[1.0, 0.5]]))
    out = CliRunner().invoke(cli, ["compare", str(tmp_path / "s.npy"), "--table", "3",
                                   "--format", "csv", "-k", "1"]).stdout
    assert out.splitlines()[0].startswith("task,dataset,metric,k,method,seeds,")
