"""``tieeval.save_scores`` and the Python API's contract; the README's examples for them."""

from __future__ import annotations

import glob
import json
import os
import shlex

import guide
import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.analysis.diff import INSTANCE_FIELD, diff_paths, read_instance_ids
from tieeval.cli import cli
from tieeval.engine.local import evaluate_labels
from tieeval.errors import ParameterError
from tieeval.io.open import open_dump
from tieeval.records.results import environment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = guide.all_text()  # the README, then every page of the user guide
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
    (("x.npz", [[1.0, 2.0], [3.0]]), {}, ("NPZ holds (instances, candidates) arrays only: "
                                         "save ragged rows to .parquet")),
    (("x.npz", {"a": 1}), {}, "must be a numeric array, got an object array"),
    (("x.npz", NotOnCpu()), {}, "pass a CPU array, e.g. tensor.detach().cpu()"),
    (("x.npz", np.ones((2, 3))), {"positive": [0, 3]}, "positive[1] = 3 is out of range"),
    (("x.npz", np.ones((2, 3))), {"positive": [0.0, 1.0]}, "integer column indices"),
    (("x.npz", np.ones((2, 3))), {"positive": [0, 1, 2]}, "one column index per instance (2)"),
    (("x.npz", np.ones((2, 3))), {"seed": [1, 2]}, "must be a single value"),
])
def test_save_errors_are_parameter_errors(tmp_path, monkeypatch, args, kwargs, fragment):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as info:
        tieeval.save_scores(*args, **kwargs)
    assert fragment in str(info.value)
    assert os.listdir(tmp_path) == []


def test_save_into_a_missing_folder_is_an_output_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(tieeval.OutputError, match="missing_dir/x.npz: folder .* does not exist"):
        tieeval.save_scores("missing_dir/x.npz", np.ones((2, 3)))
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
    exec(compile(_block("## Writing dumps: `save_scores`", "python"), "docs/python.md", "exec"), {})
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "ConsRec 1 float32"
    assert os.listdir(tmp_path) == ["ConsRec_Mafengwo_group_seed1.npz"]


@pytest.mark.parametrize("section", ["## `tieeval check`",
                                     "## `tieeval ties`"])
def test_readme_shown_outputs_are_real(section, monkeypatch):
    monkeypatch.chdir(ROOT)
    shown = _block(section, "text").strip("\n").splitlines()
    command, expected = shown[0], shown[1:]
    assert command.startswith("$ tieeval ")
    args = [match for arg in shlex.split(command)[2:]
            for match in (sorted(glob.glob(arg)) if "*" in arg else [arg])]  # as a shell would
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    real = result.stdout.replace(environment()["numpy_simd"], "SIMD").splitlines()
    assert real == [line.replace("AVX512_ICL", "SIMD") for line in expected]


# ---------------------------------------------------------------------------------------
# Labelled dumps: labels, positives / negatives, items, instances, ranking


def read_fields(path):
    """Scores, labels and items of every batch, joined; offsets when rows are ragged."""
    dump = open_dump(str(path))
    batches = list(dump.batches())
    ragged = batches[0].offsets is not None
    join = (lambda xs: np.concatenate(xs)) if not ragged else \
        (lambda xs: np.concatenate([x.reshape(-1) for x in xs]))
    out = {"scores": join([b.scores for b in batches])}
    if batches[0].labels is not None:
        out["labels"] = join([b.labels for b in batches])
    if batches[0].items is not None:
        out["items"] = join([b.items for b in batches])
    if ragged:
        out["lengths"] = np.concatenate([b.lengths() for b in batches])
    return dump, out


def stored(path, name):
    """A field as the file holds it (NPZ array / Parquet column as Python lists)."""
    if str(path).endswith(".npz"):
        with np.load(path, allow_pickle=False) as archive:
            return archive[name]
    import pyarrow.parquet as pq
    return pq.read_table(path).column(name).to_pylist()


def cli_run(path, *args):
    result = CliRunner().invoke(cli, ["compare", str(path), *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"][0]


def same_evaluation(cli_doc, api_doc, path, source="labels"):
    """The CLI's run on the file equals the in-memory evaluation, path and labels aside
    (and the label source: index lists are read into labels)."""
    api_doc = json.loads(json.dumps(api_doc).replace("<array>", str(path)))
    assert cli_doc["relevance"]["source"] == source
    api_doc["relevance"]["source"] = source
    for doc in (cli_doc, api_doc):
        doc.pop("path"), doc.pop("labels")
    assert cli_doc == api_doc


def graded_case(dtype):
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 4, size=(9, 7)).astype(dtype)  # few values: many ties
    labels = rng.integers(-1, 3, size=(9, 7))  # graded, unobserved and disliked
    items = rng.integers(0, 6, size=(9, 7))  # duplicates likely
    return scores, labels, items


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_labels_items_instances_ranking_round_trip(tmp_path, suffix, dtype):
    scores, labels, items = graded_case(dtype)
    instances = np.array([f"user{i}" for i in range(9)])[::-1]
    ranking = np.argsort(-scores.astype(np.float64), axis=1, kind="stable")[:, :3]
    path = tmp_path / f"run{suffix}"
    tieeval.save_scores(path, OnlyArray(scores), labels=OnlyArray(labels), items=items,
                        instances=instances, ranking=ranking, method="M", meta={"seed": 2})
    dump, back = read_fields(path)
    assert dump.dtype == np.dtype(dtype) and back["scores"].dtype == np.dtype(dtype)
    assert np.array_equal(back["scores"], scores)
    assert np.array_equal(back["labels"], labels)
    assert np.array_equal(back["items"], items)
    assert dump.metadata == {"seed": "2", "method": "M"}
    assert read_instance_ids(str(path)).tolist() == instances.tolist()
    assert np.asarray(stored(path, "ranking")).tolist() == ranking.tolist()
    cli_doc = cli_run(path, "--k", "1", "3")
    api_doc = evaluate_labels(scores, labels, k=[1, 3], items=items).to_dict()
    same_evaluation(cli_doc, api_doc, path)
    assert cli_doc["data_warnings"]  # the duplicate items reached the check


def test_labels_tie_aware_value_from_the_definition(tmp_path):
    # Row: the relevant candidate (gain 1) tied at the top with an unobserved one, a gain-2
    # candidate last. HR@1 is 1 if the relevant-at-top wins the tie-break: 1/2 tie-aware;
    # first (relevant placed first) 1, last 0.
    for suffix in (".npz", ".parquet"):
        path = tmp_path / f"g{suffix}"
        tieeval.save_scores(path, np.array([[0.9, 0.9, 0.1]], np.float32),
                            labels=np.array([[1, 0, 2]]))
        row = tieeval.evaluate_path(str(path), None).metric("HR@1")
        assert (row.first, row.last, row.tie_aware) == (1.0, 0.0, 0.5)


def hand_labels(shape, positives, negatives):
    """+1 at each listed positive, -1 at each negative, 0 elsewhere (padding -1 skipped)."""
    labels = np.zeros(shape, dtype=np.int64)
    for value, lists in ((1, positives), (-1, negatives)):
        for row, idx in enumerate(lists):
            for j in np.atleast_1d(idx):
                if j != -1:
                    labels[row, j] = value
    return labels


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
@pytest.mark.parametrize("form", ["lists", "padded"])
def test_positives_negatives_round_trip(tmp_path, suffix, form):
    scores = np.array([[0.5, 0.5, 0.2, 0.9], [0.1, 0.1, 0.1, 0.1], [0.3, 0.7, 0.7, 0.0]],
                      dtype=np.float32)
    positives = [[0, 3], [], [2]]
    negatives = [[1], [0, 1, 2], []]
    if form == "padded":
        positives = np.array([[0, 3], [-1, -1], [2, -1]])
        negatives = np.array([[1, -1, -1], [0, 1, 2], [-1, -1, -1]], dtype=np.int32)
    path = tmp_path / f"pn{suffix}"
    tieeval.save_scores(path, scores, positives=positives, negatives=negatives)
    expected = hand_labels(scores.shape, positives, negatives)
    assert expected.tolist() == [[1, -1, 0, 1], [-1, -1, -1, 0], [0, 0, 1, 0]]
    dump, back = read_fields(path)
    assert dump.relevance.source == "positives"
    assert np.array_equal(back["scores"], scores) and np.array_equal(back["labels"], expected)
    if suffix == ".parquet":  # list<int64> columns, padding dropped
        assert stored(path, "positives") == [[0, 3], [], [2]]
    else:  # (instances, m) padded with -1
        assert stored(path, "negatives").tolist() == [[1, -1, -1], [0, 1, 2], [-1, -1, -1]]
    same_evaluation(cli_run(path, "--k", "1", "2"),
                    evaluate_labels(scores, expected, k=[1, 2]).to_dict(), path, "positives")


def test_one_positive_index_per_row_as_positives(tmp_path):
    scores = np.array([[0.2, 0.8], [0.6, 0.6]], dtype=np.float64)
    tieeval.save_scores(tmp_path / "p.npz", scores, positives=np.array([1, 0]))
    _, back = read_fields(tmp_path / "p.npz")
    assert back["labels"].tolist() == [[0, 1], [1, 0]]


def test_ragged_parquet_round_trip(tmp_path):
    rows = [np.array([0.9, 0.9, 0.1], np.float32), np.array([0.4], np.float32),
            np.array([0.3, 0.6, 0.6, 0.6, 0.2], np.float32)]
    labels = [[1, 0, 2], [1], np.array([0, 1, 0, -1, 0])]
    items = [["a", "b", "c"], ["d"], ["e", "f", "g", "h", "e"]]
    ranking = [[0, 1, 2], [0], [1, 2]]
    path = tmp_path / "ragged.parquet"
    tieeval.save_scores(path, rows, labels=labels, items=items, ranking=ranking,
                        instances=[10, 20, 30])
    dump, back = read_fields(path)
    assert dump.dtype == np.float32
    assert back["lengths"].tolist() == [3, 1, 5]
    assert np.array_equal(back["scores"], np.concatenate(rows))
    assert back["labels"].tolist() == [1, 0, 2, 1, 0, 1, 0, -1, 0]
    assert back["items"].tolist() == ["a", "b", "c", "d", "e", "f", "g", "h", "e"]
    assert stored(path, "ranking") == ranking
    assert read_instance_ids(str(path)).tolist() == [10, 20, 30]
    flat = np.concatenate(rows)
    flat_labels = np.concatenate([np.asarray(x) for x in labels])
    api = evaluate_labels(flat, flat_labels, offsets=[0, 3, 4, 9], k=[1],
                          items=np.concatenate([np.asarray(x) for x in items]))
    same_evaluation(cli_run(path, "--k", "1"), api.to_dict(), path)
    # HR@1 by hand: row 0 ties relevant 0.9 with an unobserved 0.9 (1/2); row 1 has one
    # relevant candidate (1); row 2's relevant 0.6 ties with two others at the top (1/3).
    assert api.metric("HR@1").tie_aware == pytest.approx((1 / 2 + 1 + 1 / 3) / 3)


def test_ragged_single_positive_parquet(tmp_path):
    rows = [np.array([1.0, 1.0, 0.5]), np.array([0.2, 0.7])]
    path = tmp_path / "r.parquet"
    tieeval.save_scores(path, rows, positive=[0, -1])
    _, _, positive = read_back(path)
    assert positive.tolist() == [0, 1]
    row = tieeval.evaluate_path(str(path), None).metric("HR@1")
    # row 0: positive tied with one other at the top (1/2); row 1: positive 0.7 on top (1)
    assert row.tie_aware == pytest.approx(0.75)


def test_instances_are_the_field_diff_aligns_by(tmp_path):
    assert INSTANCE_FIELD == "instance"
    a, b = tmp_path / "a.npz", tmp_path / "b.parquet"
    tieeval.save_scores(a, np.array([[1.0, 1.0], [1.0, 0.0]]), instances=["u1", "u2"])
    tieeval.save_scores(b, np.array([[1.0, 0.0], [1.0, 0.0]]), instances=["u2", "u1"])
    result = diff_paths(str(a), str(b), ["HR@1"])
    assert result.alignment == "instance"
    # A: u1 tied (1/2), u2 on top (1); B: both on top
    assert result.row("HR@1").tie_aware.difference == pytest.approx(0.25)


def test_run_labels_in_meta_equal_keywords_and_old_calls_work(tmp_path):
    scores = np.array([[0.3, 0.1], [0.2, 0.5]], dtype=np.float32)
    tieeval.save_scores(tmp_path / "kw.npz", scores, [0, 1], method="M", seed=3)
    tieeval.save_scores(tmp_path / "meta.npz", scores, positive=[0, 1],
                        meta={"method": "M", "seed": 3})
    for name in ("kw.npz", "meta.npz"):
        dump, _, positive = read_back(tmp_path / name)
        assert dump.metadata == {"method": "M", "seed": "3"} and positive.tolist() == [0, 1]
    # np.savez's own parameter names are ordinary run labels here
    tieeval.save_scores(tmp_path / "f.npz", scores, file="x", allow_pickle="y")
    assert open_dump(str(tmp_path / "f.npz")).metadata == {"file": "x", "allow_pickle": "y"}


S = np.ones((2, 3), dtype=np.float32)


@pytest.mark.parametrize("suffix,kwargs,message", [
    (".npz", {"labels": "graded"},
     ("labels='graded' is a single value, but labels= takes relevance labels now: one label "
     "per candidate in the scores' layout (> 0 relevant with that gain, 0 unobserved, < 0 an "
     "explicit negative); run labels go in as keywords (method=..., dataset=..., task=..., "
     "seed=...) or in meta={...}")),
    (".npz", {"labels": [[1, 0, 0], [0, 1, 0]], "positives": [[0], [1]]},
     ("labels= and positives= both give relevance; a dump gives it one way: pass labels=, "
     "or positives=/negatives=")),
    (".parquet", {"labels": [[1, 0, 0], [0, 1, 0]], "negatives": [[2], []]},
     "labels= and negatives= both give relevance"),
    (".npz", {"positive": [0, 1], "labels": [[1, 0, 0], [0, 1, 0]]},
     ("positive=[0, 1] describes a single-positive dump, and labels= gives relevance another "
     "way; a dump gives relevance one way: leave positive out")),
    (".parquet", {"positive": 0, "positives": [[0], [1]]},
     "positive=0 describes a single-positive dump, and positives= gives relevance"),
    (".npz", {"labels": np.ones((2, 2))}, "labels has shape (2, 2) but scores has shape (2, 3)"),
    (".parquet", {"labels": [[1, 0, 0], [1, 0]]},
     "labels[1] has 2 entries but scores[1] has 3 candidates"),
    (".npz", {"labels": np.ones((3, 3))}, "labels has 3 rows but scores has 2"),
    (".npz", {"labels": np.array([[1.0, np.nan, 0], [0, 0, 0]])},
     "labels[0][1] = nan: labels must be finite"),
    (".npz", {"labels": np.array([["a", "b", "c"]] * 2)}, ("labels must hold numbers or "
     "booleans, got <U1")),
    (".npz", {"positives": [[0, -2], [1]]},
     ("positives[0] holds -2, out of range for 3 candidates (indices are 0..n-1; -1 is "
     "padding)")),
    (".parquet", {"negatives": np.array([[0], [3]])},
     "negatives[1] holds 3, out of range for 3 candidates"),
    (".npz", {"positives": [[0.0], [1.0]]}, ("positives must hold integer column indices, "
     "got float64")),
    (".npz", {"positives": [[0], [1], [2]]}, "positives has 3 rows but scores has 2"),
    (".parquet", {"positives": [[0, 2], [1]], "negatives": [[], [0, 1]]},
     "candidate 1 of row 1 is in both positives and negatives"),
    (".npz", {"items": np.ones((2, 3))}, ("items must hold integer or string item ids, got "
     "float64")),
    (".parquet", {"items": [[1, 2, 3], [4, 5]]},
     "items[1] has 2 entries but scores[1] has 3 candidates"),
    (".npz", {"instances": [1, 2, 3]}, ("instances must be one id per instance (2), got shape "
     "(3,)")),
    (".npz", {"instances": [1.5, 2.5]}, "instances must be integers or strings, got float64"),
    (".parquet", {"instances": ["u", "u"]},
     "instances[1] = 'u' repeats instances[0]: instance ids must be unique"),
    (".npz", {"ranking": [[0, 1, 3], [0, 1, 2]]},
     "ranking[0] holds 3, out of range for 3 candidates (indices are 0..n-1)"),
    (".parquet", {"ranking": [[0, -1], [2]]}, "ranking[0] holds -1, out of range"),
    (".npz", {"ranking": np.array([[0, 1], [2, 2]])},
     "ranking[1] lists candidate 2 twice (a ranking holds each candidate at most once)"),
    (".npz", {"ranking": [[0, 1], [2]]},
     "ranking rows differ in length; NPZ holds an (instances, K) array only"),
    (".npz", {"ranking": [[0], [1], [2]]}, "ranking has 3 rows but scores has 2"),
    (".npz", {"meta": {"instance": "u1"}}, ("label 'instance' would clash with the "
     "'instance' field")),
    (".parquet", {"ranking": None, "meta": {"seed": 1}, "seed": 2},
     "run label 'seed' is given both in meta= and as a keyword"),
    (".npz", {"meta": ["method", "M"]}, "meta must be a dict of run labels, got list"),
    (".npz", {"positive": [0, 3]}, "positive[1] = 3 is out of range for 3 candidates"),
    (".npz", {"positive": np.uint64(2**64 - 1)},
     "positive[0] = 18446744073709551615 is out of range for 3 candidates"),
])
def test_labelled_refusals_name_the_argument(tmp_path, suffix, kwargs, message):
    with pytest.raises(ParameterError) as info:
        tieeval.save_scores(tmp_path / f"x{suffix}", S, **kwargs)
    assert message in str(info.value)
    assert os.listdir(tmp_path) == []


def test_ragged_refusals(tmp_path):
    rows = [np.ones(3, np.float32), np.ones(2, np.float32)]
    with pytest.raises(ParameterError, match=r"scores has rows of different lengths \(row 0: "
                       r"3, row 1: 2 candidates\); NPZ holds \(instances, candidates\) "
                       r"arrays only: save ragged rows to \.parquet"):
        tieeval.save_scores(tmp_path / "x.npz", rows)
    with pytest.raises(ParameterError, match=r"rows differ in dtype \(float32 in row 0, "
                       r"float64 in row 1\); convert them to one dtype \(nothing is cast\)"):
        tieeval.save_scores(tmp_path / "x.parquet", [rows[0], np.ones(2)])
    with pytest.raises(ParameterError, match=r"scores\[1\] has no candidates"):
        tieeval.save_scores(tmp_path / "x.parquet", [rows[0], np.ones(0, np.float32)])
    with pytest.raises(ParameterError, match=r"scores\[0\] must be a 1-D row, got shape "
                       r"\(2, 3\); concatenate batches"):
        tieeval.save_scores(tmp_path / "x.parquet", [np.ones((2, 3)), np.ones((1, 3))])
    assert os.listdir(tmp_path) == []


def test_ranking_keeps_int32_and_items_keep_strings(tmp_path):
    import pyarrow.parquet as pq
    scores = np.array([[0.1, 0.7, 0.7], [0.5, 0.4, 0.3]], dtype=np.float32)
    ranking = np.array([[1, 2, 0], [0, 1, 2]], dtype=np.int32)
    items = np.array([["x", "yy", "z"], ["x", "w", "v"]])
    tieeval.save_scores(tmp_path / "r.parquet", scores, ranking=ranking, items=items)
    schema = pq.read_schema(tmp_path / "r.parquet")
    assert str(schema.field("ranking").type) == "list<element: int32>"
    assert str(schema.field("items").type.value_type) == "string"
    tieeval.save_scores(tmp_path / "r.npz", scores, ranking=ranking, items=items)
    assert stored(tmp_path / "r.npz", "ranking").dtype == np.int32
    assert stored(tmp_path / "r.npz", "items").tolist() == items.tolist()


def test_readme_labelled_save_scores_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_block("saved dump always reads back", "python"), "README.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["0.25"]
    assert os.listdir(tmp_path) == ["graded.parquet"]
