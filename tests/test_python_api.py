"""The Python API's manners: a Python warning for K beyond the candidate list (printed once
by the command line), a short repr, a notebook table, and InputError as a ValueError."""

from __future__ import annotations

import subprocess
import sys
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest

import tieeval
from tieeval import InputError, ParameterError, TieevalWarning

# every row: the positive (column 0) tied with one negative above a third candidate, so
# under random tie-breaking the positive is first with probability 1/2
TIED = np.array([[0.5, 0.5, 0.1]] * 4)


def test_k_beyond_candidates_emits_a_python_warning_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tieeval.evaluate(TIED, k=(1, 10))
    ours = [w for w in caught if issubclass(w.category, TieevalWarning)]
    assert len(ours) == 1
    assert str(ours[0].message) == result.warnings[0]
    assert "K=10 exceeds the candidate count in 4 instance(s)" in str(ours[0].message)
    assert ours[0].filename == __file__  # attributed to the caller, not to a kernel
    assert issubclass(TieevalWarning, UserWarning)


def test_k_beyond_candidates_warns_for_labelled_runs_too():
    labels = np.array([[1, 0, 0]] * 4)
    with pytest.warns(TieevalWarning, match="K=5 exceeds the candidate count"):
        tieeval.evaluate(TIED, labels=labels, k=(5,))


def test_no_warning_when_every_list_is_long_enough():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TieevalWarning)
        assert tieeval.evaluate(TIED, k=(1, 3)).warnings == []


def test_cli_prints_the_k_warning_once_and_keeps_stdout_data_only(tmp_path):
    path = tmp_path / "tied.npy"
    np.save(path, TIED)
    done = subprocess.run([sys.executable, "-W", "always", "-m", "tieeval", "compare",
                           str(path), "--k", "1,10", "--format", "json"],
                          capture_output=True, text=True, check=True)
    assert done.stderr.count("K=10 exceeds the candidate count") == 1
    assert "TieevalWarning" not in done.stderr
    assert done.stdout.lstrip().startswith("{")


def test_repr_is_short_and_names_the_run():
    result = tieeval.evaluate(TIED, k=(1, 3))
    text = repr(result)
    assert text == ("RunResult(path='<array>', instances=4, "
                    "metrics=[HR@1, HR@3, NDCG@1, NDCG@3, MRR])")
    assert str(result) == text
    many = tieeval.evaluate(np.random.default_rng(0).random((3, 40)), k=tuple(range(1, 31)))
    assert len(repr(many)) < 200 and repr(many).endswith(", ...])")


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])

    def handle_data(self, data):
        if self.rows and self.lasttag in ("td", "th"):
            self.rows[-1].append(data)


def test_notebook_html_is_a_plain_table_of_the_figures():
    result = tieeval.evaluate(TIED, k=(1,))
    parser = _Cells()
    parser.feed(result._repr_html_())
    assert not parser.tags & {"script", "style", "link", "img"}
    row = next(r for r in parser.rows if r[0] == "HR@1")
    # closed forms: original 1 (argsort puts the first of the tie on top), first 1,
    # last 0, tie-aware 1/2 with per-row variance 1/4 -> sd of the mean sqrt(4/4)/4
    assert row[1:5] == ["1.0000", "1.0000", "0.0000", "0.5000 ± 0.2500"]
    assert ["Avg. top-score tie size", "2.00"] in parser.rows


def test_group_repr_and_html():
    runs = [tieeval.evaluate(TIED, k=(1,), run_labels={"method": "m", "seed": str(s)})
            for s in (1, 2)]
    groups, _ = tieeval.group_runs(runs)
    assert repr(groups[0]).startswith("GroupResult(labels={'method': 'm'}, seeds=2, ")
    parser = _Cells()
    parser.feed(groups[0]._repr_html_())
    assert ["HR@1", "1.0000", "1.0000", "0.0000", "0.5000"] in parser.rows


def _text(html: str) -> str:
    class Text(HTMLParser):
        def __init__(self):
            super().__init__()
            self.parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)
    parser = Text()
    parser.feed(html)
    return " ".join(parser.parts)


def test_notebook_html_names_the_original_rule_and_numpy_as_the_terminal_does():
    result = tieeval.evaluate(TIED, k=(1,))
    text = _text(result._repr_html_())
    # the rule the Original column used (numpy's argsort by default) with numpy's own
    # version, the line the terminal table ends with
    assert f"Original = np.argsort(scores * -1) as the codebases rank: numpy " \
           f"{np.__version__} (" in text
    assert f"tieeval {tieeval.__version__}." in text
    stable = tieeval.evaluate(TIED, k=(1,), original="stable")
    assert "Original (--original stable) = " in _text(stable._repr_html_())
    runs = [tieeval.evaluate(TIED, k=(1,), run_labels={"method": "m", "seed": str(s)},
                             original="stable") for s in (1, 2)]
    groups, _ = tieeval.group_runs(runs)
    group_text = _text(groups[0]._repr_html_())
    assert group_text.count("Original (--original stable) = ") == 1  # once, after the seeds
    assert "mean over 2 seeds" in group_text


def test_input_error_is_a_value_error_as_parameter_error_is():
    assert issubclass(InputError, ValueError) and issubclass(ParameterError, ValueError)
    with pytest.raises(ValueError, match="no such file"):
        tieeval.evaluate_path("/nonexistent/dump.npy")


def test_diff_repr_and_html(tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, TIED)
    np.save(b, np.array([[0.9, 0.5, 0.1]] * 4))  # the positive alone on top: HR@1 = 1
    result = tieeval.diff_paths(str(a), str(b), metrics=["HR@1"])
    assert repr(result) == (f"DiffResult(a={str(a)!r}, b={str(b)!r}, instances=4, "
                            "metrics=[HR@1])")
    parser = _Cells()
    parser.feed(result._repr_html_())
    row = next(r for r in parser.rows if r[0] == "HR@1")
    # tie-aware: A = 1/2 with sd 1/4 (as above), B = 1 without ties: B − A = 1/2 ± 1/4
    assert row[1:4] == ["0.5000", "1.0000", "+0.5000 ± 0.2500"]
