"""``tieeval.save_scores`` and the Python API's contract; the README's examples for them."""

from __future__ import annotations

import json
import os
import shlex

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.io.open import open_dump

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
LABELS = {"method": "ConsRec", "dataset": "Mafengwo", "task": "group", "seed": "1"}


class OnlyArray:
    """Like a CPU torch tensor as numpy sees it: nothing but ``__array__``."""

    def __init__(self, array):
        self._array = array

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)


def read_back(path):
    dump = open_dump(str(path))
    batches = list(dump.batches())
    scores = np.concatenate([b.scores for b in batches])
    positive = np.concatenate([b.positive for b in batches])
    return dump, scores, positive


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_round_trip_keeps_dtype_values_and_labels(tmp_path, suffix, dtype):
    rng = np.random.default_rng(4)
    scores = (rng.integers(0, 5, size=(7, 6))).astype(dtype)  # small pool: many ties
    positive = rng.integers(0, 6, size=7)
    path = tmp_path / f"run{suffix}"
    written = tieeval.save_scores(path, OnlyArray(scores), OnlyArray(positive), **LABELS)
    assert written == str(path)
    dump, back, pos = read_back(path)
    assert dump.dtype == np.dtype(dtype) and back.dtype == np.dtype(dtype)
    assert np.array_equal(back, scores) and np.array_equal(pos, positive)
    assert dump.metadata == LABELS
    from_file = tieeval.evaluate_path(str(path), None)
    in_memory = tieeval.evaluate(scores, positive=positive)
    assert [m.to_dict() for m in from_file.metrics] == [m.to_dict() for m in in_memory.metrics]
    assert {k: from_file.labels[k] for k in LABELS} == LABELS
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left behind


def test_float32_ties_are_not_cast_away(tmp_path):
    # two float32 scores that differ, but would tie in float16
    scores = np.array([[1.0, 1.0 + 2 ** -20, 0.5]], dtype=np.float32)
    for suffix in (".npz", ".parquet"):
        path = tmp_path / f"s{suffix}"
        tieeval.save_scores(path, scores)
        r = tieeval.evaluate_path(str(path))
        assert r.ties.positive_tie_frequency == 0.0 and r.dtype == "float32"


def test_defaults_positive_column_zero_and_scalar_positive(tmp_path):
    scores = np.array([[0.1, 0.9, 0.5], [0.2, 0.3, 0.9]], dtype=np.float64)
    tieeval.save_scores(tmp_path / "a.npz", scores)
    _, _, pos = read_back(tmp_path / "a.npz")
    assert pos.tolist() == [0, 0]
    tieeval.save_scores(tmp_path / "b.parquet", scores, positive=-1)
    _, _, pos = read_back(tmp_path / "b.parquet")
    assert pos.tolist() == [2, 2]
    assert "positive" not in np.load(tmp_path / "a.npz").files


def test_labels_are_stored_as_strings_and_none_is_skipped(tmp_path):
    tieeval.save_scores(tmp_path / "a.parquet", np.ones((2, 2), np.float32), seed=np.int64(3),
                        method="M", task=None)
    assert open_dump(str(tmp_path / "a.parquet")).metadata == {"seed": "3", "method": "M"}


class NotOnCpu:
    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert cuda:0 device type tensor to numpy")


@pytest.mark.parametrize("args,kwargs,fragment", [
    (("x.txt", np.ones((2, 2))), {}, "must end in .npz or .parquet"),
    (("x.npy", np.ones((2, 2))), {}, "must end in .npz or .parquet"),
    (("x.npz", np.ones(3)), {}, "must be a 2-D (instances, candidates) array, got shape (3,)"),
    (("x.npz", np.ones((0, 3))), {}, "at least one instance"),
    (("x.npz", np.ones((2, 2), dtype=bool)), {}, "must be float16/32/64 or integers, got bool"),
    (("x.npz", [[1.0, 2.0], [3.0]]), {}, "cannot be turned into a numpy array"),
    (("x.npz", NotOnCpu()), {}, "pass a CPU array, e.g. tensor.detach().cpu()"),
    (("x.npz", np.ones((2, 3))), {"positive": [0, 3]}, "positive[1] = 3 is out of range"),
    (("x.npz", np.ones((2, 3))), {"positive": [0.0, 1.0]}, "integer column indices"),
    (("x.npz", np.ones((2, 3))), {"positive": [0, 1, 2]}, "one column index per instance (2)"),
    (("x.npz", np.ones((2, 3))), {"seed": [1, 2]}, "must be a single value"),
    (("missing_dir/x.npz", np.ones((2, 3))), {}, "does not exist"),
])
def test_save_errors_are_parameter_errors(tmp_path, monkeypatch, args, kwargs, fragment):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as info:
        tieeval.save_scores(*args, **kwargs)
    assert fragment in str(info.value)
    assert os.listdir(tmp_path) == []


def test_evaluate_result_fields_match_the_json_contract(tmp_path):
    scores = np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]], dtype=np.float32)
    result = tieeval.evaluate(scores, k=[1, 5])
    tieeval.save_scores(tmp_path / "s.npz", scores)
    doc = json.loads(CliRunner().invoke(cli, ["compare", str(tmp_path / "s.npz"), "--k", "1",
                                              "5", "--format", "json"]).stdout)
    cli_run = doc["runs"][0]
    api_run = result.to_dict()
    assert list(api_run) == list(cli_run)
    assert list(api_run["metrics"][0]) == list(cli_run["metrics"][0])
    assert list(api_run["ties"]) == list(cli_run["ties"])
    assert list(api_run["labels"]) == ["method", "dataset", "task", "seed"]
    # attribute names are the JSON keys
    assert result.candidates == cli_run["candidates"]
    for key in ("instances", "dtype"):
        assert getattr(result, key) == cli_run[key]
    row = result.metrics[0]
    for key, value in cli_run["metrics"][0].items():
        assert getattr(row, key) == value
    for key, value in cli_run["ties"].items():
        if key != "tie_decided":
            assert getattr(result.ties, key) == value


def _block(after: str, lang: str) -> str:
    return README.split(after, 1)[1].split(f"```{lang}", 1)[1].split("```", 1)[0]


def test_readme_save_scores_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_block("### Writing dumps: `save_scores`", "python"), "README.md", "exec"), {})
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "ConsRec 1 float32"
    assert os.listdir(tmp_path) == ["ConsRec_Mafengwo_group_seed1.npz"]


@pytest.mark.parametrize("section", ["### `tieeval check`: a CI gate",
                                     "### `tieeval ties`: the paper's Table 4"])
def test_readme_shown_outputs_are_real(section, monkeypatch):
    monkeypatch.chdir(ROOT)
    shown = _block(section, "text").strip("\n").splitlines()
    command, expected = shown[0], shown[1:]
    assert command.startswith("$ tieeval ")
    result = CliRunner().invoke(cli, shlex.split(command)[2:], catch_exceptions=False)
    assert result.stdout.splitlines() == expected
