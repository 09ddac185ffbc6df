"""The Python API: ``tieeval.evaluate`` on in-memory arrays of every relevance kind and
``tieeval.evaluate_path`` on files, against the command line.

References: every accepted form is compared with ``tieeval compare --format json`` on the
same data written to a file here with numpy or pyarrow (the readers' path), a tiny labelled
case with every tie-break order enumerated by ``itertools.permutations``, and the command
line's own messages for every refusal. No expected number comes from the API's output.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tiers import examples

import tieeval
from tieeval.cli import cli
from tieeval.errors import InputError, ParameterError, TieevalError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

META = {"method": "api"}


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def cli_run(path, *args) -> dict:
    """The one run ``tieeval compare PATH ARGS --format json`` reports."""
    result = runner().invoke(cli, ["compare", str(path), *map(str, args), "--meta",
                                   "method=api", "-q", "--format", "json"],
                             catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert len(runs) == 1
    return runs[0]


def cli_error(*args) -> str:
    """The ``Error: ...`` line of a refused command (exit code 2)."""
    result = runner().invoke(cli, [*map(str, args), "-q"], catch_exceptions=False)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: "), result.stderr
    return line[len("Error: "):]


def as_json(result) -> dict:
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


def same_as_cli(result, path, *args) -> None:
    assert as_json(result) == cli_run(path, *args)


def list_table(**columns) -> pa.Table:
    return pa.table({name: pa.array([None if row is None else list(row) for row in rows], typ)
                     for name, (rows, typ) in columns.items()})


@pytest.fixture
def tied(rng):
    """Scores on a coarse grid (many ties), float32, 12 rows of 7 candidates."""
    return (rng.integers(0, 4, size=(12, 7)) / 4).astype(np.float32)


# ---------------------------------------------------------------------------------------
# every accepted form equals the command line on the same data in a file


def test_single_positive_matrix_list_and_positive(tied, rng, tmp_path):
    positive = rng.integers(0, 7, size=12)
    np.savez(tmp_path / "s.npz", scores=tied, positive=positive)
    path = str(tmp_path / "s.npz")
    for scores in (tied, tied.tolist()):
        got = tieeval.evaluate(scores if isinstance(scores, np.ndarray) else
                               np.asarray(scores, dtype=np.float32), positive=positive,
                               path=path, run_labels=META)
        same_as_cli(got, path)
    same_as_cli(tieeval.evaluate(tied, [1, 3], positive, path=path, run_labels=META),
                path, "--k", "1", "3")
    same_as_cli(tieeval.evaluate(tied, positive=positive, metrics=["MRR", "NDCG@3"],
                                 path=path, run_labels=META), path, "-m", "MRR", "-m", "NDCG@3")
    # one int for all rows; a negative one counts from the end, as --positive-index does
    np.savez(tmp_path / "p.npz", scores=tied)
    path = str(tmp_path / "p.npz")
    same_as_cli(tieeval.evaluate(tied, positive=-2, path=path, run_labels=META), path,
                "--positive-index", "-2")


def test_ragged_rows_as_arrays_and_as_offsets(rng, tmp_path):
    lengths = [3, 5, 1, 4, 5, 2]
    rows = [(rng.integers(0, 3, size=n) / 2).astype(np.float64) for n in lengths]
    positive = [int(rng.integers(0, n)) for n in lengths]
    path = str(tmp_path / "r.parquet")
    pq.write_table(list_table(scores=(rows, pa.list_(pa.float64())))
                   .append_column("positive", pa.array(positive, pa.int64())), path)
    flat, offsets = np.concatenate(rows), np.concatenate(([0], np.cumsum(lengths)))
    for got in (tieeval.evaluate(rows, positive=positive, path=path, run_labels=META),
                tieeval.evaluate(flat, positive=positive, offsets=offsets, path=path,
                                 run_labels=META)):
        same_as_cli(got, path)


def test_labels_matrix_ragged_and_items(tied, rng, tmp_path):
    labels = rng.integers(-1, 4, size=tied.shape)
    items = rng.integers(0, 5, size=tied.shape)  # duplicates within rows
    np.savez(tmp_path / "l.npz", scores=tied, labels=labels, items=items)
    path = str(tmp_path / "l.npz")
    same_as_cli(tieeval.evaluate(tied, labels=labels, items=items, path=path,
                                 run_labels=META), path)
    metrics = ["NDCG@3", "SNDCG@3", "V-AUC", "MAP@5", "P@2"]
    args = [a for m in metrics for a in ("-m", m)]
    for options, flags in (({"gamma": [0, 0.5, 2]}, ["--gamma", "0", "0.5", "2"]),
                           ({"gain": "exponential", "discount": "power", "alpha": 0.5},
                            ["--gain", "exponential", "--discount", "power", "--alpha", "0.5"]),
                           ({"discount": "logb", "log_base": 3.0},
                            ["--discount", "logb", "--log-base", "3"]),
                           ({"short_list": "truncate", "ap_norm": "min", "both": True},
                            ["--short-list", "truncate", "--ap-norm", "min", "--both"])):
        got = tieeval.evaluate(tied, labels=labels, items=items, metrics=metrics, path=path,
                               run_labels=META, **options)
        same_as_cli(got, path, *args, *flags)
    # ragged: a list of 1-D arrays, or flat with offsets, beside a Parquet list column
    lengths = [7, 3, 5, 7, 2, 6, 7, 4, 1, 7, 5, 3]
    rows = [tied[i, :n] for i, n in enumerate(lengths)]
    lab = [labels[i, :n] for i, n in enumerate(lengths)]
    path = str(tmp_path / "l.parquet")
    pq.write_table(list_table(scores=(rows, pa.list_(pa.float32())),
                              labels=(lab, pa.list_(pa.int64()))), path)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    for got in (tieeval.evaluate(rows, labels=lab, path=path, run_labels=META),
                tieeval.evaluate(rows, labels=[list(r) for r in lab], path=path,
                                 run_labels=META),
                tieeval.evaluate(np.concatenate(rows), labels=np.concatenate(lab),
                                 offsets=offsets, path=path, run_labels=META)):
        same_as_cli(got, path)


def test_positives_and_negatives_index_lists(tied, rng, tmp_path):
    pos = [sorted(rng.choice(7, size=int(rng.integers(0, 3)), replace=False).tolist())
           for _ in range(12)]
    neg = [[c for c in rng.choice(7, size=2, replace=False).tolist() if c not in p]
           for p in pos]
    path = str(tmp_path / "pn.parquet")
    pq.write_table(list_table(scores=(tied, pa.list_(pa.float32())),
                              positives=(pos, pa.list_(pa.int64())),
                              negatives=(neg, pa.list_(pa.int64()))), path)
    metrics = ["HR@2", "SNDCG@3", "V-AUC"]
    args = [a for m in metrics for a in ("-m", m)]
    same_as_cli(tieeval.evaluate(tied, positives=pos, negatives=neg, metrics=metrics,
                                 path=path, run_labels=META), path, *args)
    # the same lists -1-padded into (instances, m) arrays, as an NPZ dump holds them
    width = max(map(len, pos + neg))
    pad = lambda lists: np.array([r + [-1] * (width - len(r)) for r in lists])  # noqa: E731
    np.savez(tmp_path / "pn.npz", scores=tied, positives=pad(pos), negatives=pad(neg))
    path = str(tmp_path / "pn.npz")
    same_as_cli(tieeval.evaluate(tied, positives=pad(pos), negatives=pad(neg),
                                 metrics=metrics, path=path, run_labels=META), path, *args)
    # one index per row, positives only
    one = rng.integers(0, 7, size=12)
    np.savez(tmp_path / "one.npz", scores=tied, positives=one)
    path = str(tmp_path / "one.npz")
    same_as_cli(tieeval.evaluate(tied, positives=one, path=path, run_labels=META), path)
    same_as_cli(tieeval.evaluate(tied, positives=one.tolist(), path=path, run_labels=META),
                path)


def test_what_ifs(rng, tmp_path):
    scores = rng.random((10, 6))
    np.savez(tmp_path / "w.npz", scores=scores)
    path = str(tmp_path / "w.npz")
    same_as_cli(tieeval.evaluate(scores, cast="float16", path=path, run_labels=META), path,
                "--cast", "float16")
    same_as_cli(tieeval.evaluate(scores, tolerance=0.05, path=path, run_labels=META), path,
                "--tolerance", "0.05")
    same_as_cli(tieeval.evaluate(scores, what_if=tieeval.WhatIf("bfloat16", 1e-3), path=path,
                                 run_labels=META), path, "--cast", "bfloat16",
                "--tolerance", "1e-3")


def test_evaluate_path_takes_the_command_line_options(tied, rng, tmp_path):
    labels = rng.integers(0, 3, size=tied.shape)
    np.savez(tmp_path / "l.npz", scores=tied, labels=labels)
    path = tmp_path / "l.npz"
    same_as_cli(tieeval.evaluate_path(path, "NDCG@3", run_labels=META), path, "-m", "NDCG@3")
    same_as_cli(tieeval.evaluate_path(str(path), ["MRR", "SNDCG@2"], gamma=[0, 1], jobs=2,
                                      batch_rows=5, run_labels=META),
                path, "-m", "MRR", "-m", "SNDCG@2", "--gamma", "0", "1", "-j", "2")
    same_as_cli(tieeval.evaluate_path(path, k=[1, 5, 10], run_labels=META), path,
                "--k", "1", "5", "10")
    same_as_cli(tieeval.evaluate_path(path, k=2, cast="float16", run_labels=META), path,
                "--k", "2", "--cast", "float16")
    renamed = tmp_path / "renamed.npz"
    np.savez(renamed, scores=tied, rel=labels)
    options = tieeval.RelevanceReadOptions(labels="rel")
    same_as_cli(tieeval.evaluate_path(renamed, options=options, run_labels=META), renamed,
                "--labels-column", "rel")


def test_run_labels_and_their_older_keyword(tied, tmp_path):
    path = str(tmp_path / "s.npz")
    tieeval.save_scores(path, tied, method="stored", seed=3)
    plain = tieeval.evaluate_path(path)
    assert plain.labels == {"method": "stored", "seed": "3"}
    new = tieeval.evaluate_path(path, run_labels={"method": "m", "task": "t", "seed": None})
    old = tieeval.evaluate_path(path, labels={"method": "m", "task": "t"})
    assert new.labels == old.labels == {"method": "m", "seed": "3", "task": "t"}
    assert new.to_dict() == old.to_dict()
    assert tieeval.evaluate(tied, run_labels={"seed": 2}).labels == {"seed": "2"}


def test_labelled_api_equals_evaluate_labels(tied, rng):
    labels = rng.integers(-1, 3, size=tied.shape)
    kwargs = {"metrics": ["NDCG@3", "SNDCG@3", "MAP"], "gamma": [0, 1], "gain": "exponential"}
    assert (tieeval.evaluate(tied, labels=labels, **kwargs).to_dict()
            == tieeval.evaluate_labels(tied, labels, **kwargs).to_dict())
    flat, offsets = tied[:, :5].ravel(), np.arange(0, 61, 5)
    lab = labels[:, :5].ravel()
    assert (tieeval.evaluate(flat, labels=lab, offsets=offsets, k=[2]).to_dict()
            == tieeval.evaluate_labels(flat, lab, offsets, k=[2]).to_dict()
            == tieeval.evaluate_labels(tied[:, :5], labels[:, :5], k=[2]).to_dict())


# ---------------------------------------------------------------------------------------
# an independent oracle: every tie-break order of a tiny labelled case


def ndcg_at(order, gains, k):
    """NDCG@k of the candidates ``order`` (best first), linear gain, 1/log2(r+1)."""
    dcg = sum(max(gains[c], 0) / math.log2(r + 2) for r, c in enumerate(order[:k]))
    ideal = sorted((g for g in gains if g > 0), reverse=True)[:k]
    return dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal))


def rr_of(order, gains):
    return next(1 / (r + 1) for r, c in enumerate(order) if gains[c] > 0)


def tie_break_orders(scores):
    """Every permutation of the candidates whose scores never increase."""
    return [p for p in itertools.permutations(range(len(scores)))
            if all(scores[a] >= scores[b] for a, b in zip(p, p[1:]))]


@pytest.mark.parametrize("name,value", [("NDCG@2", lambda o, g: ndcg_at(o, g, 2)),
                                        ("NDCG@4", lambda o, g: ndcg_at(o, g, 4)),
                                        ("MRR", rr_of)])
def test_enumerated_tie_breaks(name, value):
    scores = np.array([[0.5, 0.5, 0.5, 0.2, 0.5], [0.7, 0.1, 0.7, 0.7, 0.1]])
    labels = [[2, 0, 1, 3, -1], [0, 1, 1, 0, 2]]
    means, highs, lows = [], [], []
    for row, gains in zip(scores, labels):
        values = [value(order, gains) for order in tie_break_orders(list(row))]
        means.append(sum(values) / len(values))
        highs.append(max(values))
        lows.append(min(values))
    for got in (tieeval.evaluate(scores, labels=np.array(labels), metrics=name),
                tieeval.evaluate(scores, positives=[[0, 2, 3], [1, 2, 4]],
                                 negatives=[[4], []], metrics=name) if name == "MRR" else None):
        if got is None:
            continue
        row = got.metric(name)
        assert row.tie_aware == pytest.approx(sum(means) / 2, rel=1e-12)
        assert row.first == pytest.approx(sum(highs) / 2, rel=1e-12)
        assert row.last == pytest.approx(sum(lows) / 2, rel=1e-12)


# ---------------------------------------------------------------------------------------
# refusals: TieevalError subclasses with the command line's messages

S = np.array([[0.9, 0.9, 0.1, 0.5], [0.2, 0.2, 0.2, 0.3]], dtype=np.float32)


@pytest.fixture
def npz(tmp_path):
    path = tmp_path / "s.npz"
    np.savez(path, scores=S)
    return str(path)


@pytest.mark.parametrize("kwargs,flags", [
    ({"k": 0}, ["--k", "0"]),
    ({"k": -1}, ["--k", "-1"]),
    ({"metrics": "AUC@10"}, ["-m", "AUC@10"]),
    ({"metrics": ["HR"]}, ["-m", "HR"]),
    ({"metrics": ["HR@x"]}, ["-m", "HR@x"]),
    ({"gamma": math.inf}, ["--gamma", "inf"]),
    ({"gamma": -1}, ["--gamma", "-1"]),
    ({"tolerance": -1.0}, ["--tolerance", "-1"]),
])
def test_parameter_refusals_say_what_the_command_line_says(kwargs, flags, npz):
    said = cli_error("compare", npz, *flags)
    with pytest.raises(ParameterError) as api:
        tieeval.evaluate(S, **kwargs)
    assert str(api.value).split(", got")[0] in said
    with pytest.raises(ParameterError) as api:
        tieeval.evaluate_path(npz, **kwargs)
    assert str(api.value).split(", got")[0] in said


def test_input_refusals_say_what_the_readers_say(tmp_path):
    def both(path, arrays, kwargs, exc=InputError):
        np.savez(tmp_path / path, **arrays)
        said = cli_error("compare", tmp_path / path)
        with pytest.raises(exc) as api:
            tieeval.evaluate(path=str(tmp_path / path), **kwargs)
        assert str(api.value) == said

    both("nan.npz", {"scores": np.array([[np.nan, 1.0]])},
         {"scores": np.array([[np.nan, 1.0]])})
    both("shape.npz", {"scores": S, "labels": np.zeros((2, 3))},
         {"scores": S, "labels": np.zeros((2, 3))})
    both("range.npz", {"scores": S, "positives": np.array([[0, 4], [1, -1]])},
         {"scores": S, "positives": [[0, 4], [1]]})
    both("clash.npz", {"scores": S, "positives": np.array([0, 1]),
                       "negatives": np.array([2, 1])},
         {"scores": S, "positives": [0, 1], "negatives": [[2], [1]]})
    both("two.npz", {"scores": S, "labels": np.ones((2, 4)), "positives": np.array([0, 1])},
         {"scores": S, "labels": np.ones((2, 4)), "positives": [0, 1]})
    both("pos.npz", {"scores": S, "positive": np.array([0, 1]), "labels": np.ones((2, 4))},
         {"scores": S, "positive": [0, 1], "labels": np.ones((2, 4))})
    both("float.npz", {"scores": S, "positives": np.array([0.0, 1.0])},
         {"scores": S, "positives": [0.0, 1.0]})
    both("inf.npz", {"scores": S, "labels": np.array([[1, np.inf, 0, 0], [0] * 4])},
         {"scores": S, "labels": np.array([[1, np.inf, 0, 0], [0] * 4])})


@pytest.mark.parametrize("kwargs,message", [
    ({"k": "5"}, "K must be a whole number >= 1, got '5'"),
    ({"k": 5.5}, "K must be a whole number >= 1, got 5.5"),
    ({"k": True}, "K must be a whole number >= 1, got True"),
    ({"k": [1, 0]}, "K must be >= 1, got 0"),
    ({"k": []}, "k is empty; give at least one cutoff, e.g. k=10 or k=[1, 5, 10]"),
    ({"metrics": []}, "metrics is empty; give at least one metric name, e.g. "
                      "metrics=['NDCG@10', 'MRR'] (or None for the defaults)"),
    ({"metrics": 5}, "metrics must be a metric name such as 'NDCG@10', or a list of them, "
                     "got 5"),
    ({"nan_policy": "ignore"}, "nan_policy must be one of raise, worst, got 'ignore'"),
    ({"gamma": []}, "give at least one gamma"),
    ({"gamma": "1"}, "gamma must be a number >= 0 or a list of them, got '1'"),
    ({"gain": "square"}, "gain must be one of exponential, linear; got 'square'"),
    ({"both": "yes"}, "both must be True or False, got 'yes'"),
    ({"cast": "int8"}, "cast must be one of float16, bfloat16, float32, got 'int8'"),
    ({"cast": "float16", "what_if": tieeval.WhatIf(tolerance=0.1)},
     "give what_if=WhatIf(...) or cast= / tolerance=, not both"),
    ({"run_labels": {"colour": "red"}}, "unknown label 'colour'; labels are method, dataset, "
                                         "task, seed"),
    ({"run_labels": ["method=x"]}, "run_labels must be a dict such as {'method': 'ConsRec', "
                                   "'seed': 1}, got ['method=x']"),
])
def test_parameter_refusals(kwargs, message, npz):
    for call in (lambda: tieeval.evaluate(S, **kwargs),
                 lambda: tieeval.evaluate_path(npz, **kwargs)):
        with pytest.raises(ParameterError) as got:
            call()
        assert str(got.value) == message


@pytest.mark.parametrize("kwargs,message", [
    ({"jobs": -1}, "jobs must be a whole number >= 0 (0: every core), got -1"),
    ({"jobs": 1.5}, "jobs must be a whole number >= 0 (0: every core), got 1.5"),
    ({"engine": "dask"}, "engine must be one of local, spark, got 'dask'"),
    ({"batch_rows": 0}, "batch_rows must be a whole number >= 1, got 0"),
    ({"options": {"scores": "s"}}, "options must be a tieeval.ReadOptions, got {'scores': 's'}"),
    ({"labels": np.ones((2, 4))}, "labels= here means run labels, a dict such as "
     "{'method': 'ConsRec'} (the clearer name is run_labels=), got ndarray; relevance labels "
     "are read from a file's 'labels' field"),
    ({"labels": {"seed": "1"}, "run_labels": {"seed": "2"}},
     "give run_labels= (labels= is its older name), not both"),
])
def test_evaluate_path_refusals(kwargs, message, npz):
    with pytest.raises(ParameterError) as got:
        tieeval.evaluate_path(npz, **kwargs)
    assert str(got.value) == message


def test_path_refusals(tmp_path):
    with pytest.raises(ParameterError, match="path must be a file path"):
        tieeval.evaluate_path(5)
    missing = str(tmp_path / "missing.npz")
    with pytest.raises(InputError) as got:
        tieeval.evaluate_path(missing)
    assert str(got.value) == cli_error("compare", missing)


@pytest.mark.skipif(importlib.util.find_spec("pyspark") is not None,
                    reason="pyspark is installed")
def test_spark_without_pyspark_says_what_the_command_line_says(npz, tmp_path):
    path = str(tmp_path / "s.parquet")
    tieeval.save_scores(path, S)
    said = cli_error("compare", path, "--engine", "spark")
    with pytest.raises(TieevalError) as got:
        tieeval.evaluate_path(path, engine="spark")
    assert str(got.value) == said == "the Spark engine needs pyspark: pip install 'tieeval[spark]'"


@pytest.mark.parametrize("kwargs,message", [
    ({"scores": [[0.9, 0.1], [0.5]]}, "<array>: scores: row 1 has 1 entries but row 0 has 2; "
     "pass ragged rows as a list of 1-D numpy arrays, or flat scores with offsets"),
    ({"scores": S, "positive": [0]}, "<array>: positive must be one int or one per row (2), "
     "got shape (1,)"),
    ({"scores": S, "positive": [0, 1, 2]}, "<array>: positive must be one int or one per row "
     "(2), got shape (3,)"),
    ({"scores": S, "positive": 4}, "<array>: row 0: positive index 4 is out of range for 4 "
     "candidate(s)"),
    ({"scores": S, "positives": [[0], [1], [2]]}, "<array>: 'positives' must have one row per "
     "instance (2), got 3"),
    ({"scores": S, "positives": [2**70, 0]}, "<array>: 'positives' must be a numeric array, "
     "got an object array (mixed types, ragged rows, or integers beyond int64?)"),
    ({"scores": S, "labels": [[1, 0, 0], [0, 0, 0, 1]]}, "<array>: labels: row 1 has 4 "
     "entries but row 0 has 3; pass ragged rows as a list of 1-D numpy arrays, or flat labels "
     "with offsets"),
    ({"scores": [np.ones(3), np.ones(2)], "labels": [[1, 0, 0], [0, 0, 1]]},
     "<array>: row 1: 'labels' has 3 entries but the row has 2 candidates"),
    ({"scores": [np.ones(2, np.float32), np.ones(3)]}, "<array>: scores rows hold different "
     "dtypes (float32, float64); ties are judged in the stored dtype, so give every row the "
     "same one"),
    ({"scores": np.ones(5), "offsets": [0, 2, 6]}, "<array>: offsets must start at 0, never "
     "decrease and end at the number of flat values (5); got 0 .. 6"),
    ({"scores": np.ones(5), "offsets": [0, 0, 5]}, "<array>: row 0: no candidates (a row "
     "needs at least one)"),
    ({"scores": S, "items": np.ones((2, 4))}, "<array>: 'items' must hold integer or string "
     "item ids, got float64"),
])
def test_data_refusals(kwargs, message):
    with pytest.raises(TieevalError) as got:
        tieeval.evaluate(**kwargs)
    assert str(got.value) == message


def test_evaluate_labels_needs_labels():
    with pytest.raises(ParameterError, match="evaluate_labels needs labels"):
        tieeval.evaluate_labels(S, None)


# ---------------------------------------------------------------------------------------
# property: whatever the arguments, a TieevalError or a result, never another exception

anything = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(max_size=8), st.lists(st.integers(-3, 12), max_size=4),
    st.lists(st.lists(st.integers(-3, 6), max_size=3), max_size=3),
    st.lists(st.floats(allow_nan=True), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                     st.integers(), max_size=2))
metric_text = st.one_of(st.from_regex(r"[A-Za-z\-]{0,6}(@[0-9\-xe.]{0,4})?", fullmatch=True),
                        st.text(max_size=10))


def accepted_or_refused(call) -> None:
    try:
        call()
    except TieevalError:
        pass


@pytest.mark.parametrize("budget", examples(50, 150))
def test_bad_arguments_raise_only_tieeval_errors(budget):
    @settings(max_examples=budget, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(k=anything, metric=st.one_of(metric_text, st.lists(metric_text, max_size=3),
                                        anything),
           positive=anything, positives=anything, negatives=anything)
    def check(k, metric, positive, positives, negatives):
        accepted_or_refused(lambda: tieeval.evaluate(S, k=k))
        accepted_or_refused(lambda: tieeval.evaluate(S, metrics=metric))
        accepted_or_refused(lambda: tieeval.evaluate(S, positive=positive))
        accepted_or_refused(
            lambda: tieeval.evaluate(S, positives=positives, negatives=negatives))
        accepted_or_refused(lambda: tieeval.evaluate(S, labels=positives))

    check()


@pytest.mark.parametrize("budget", examples(30, 80))
def test_bad_options_raise_only_tieeval_errors(budget):
    @settings(max_examples=budget, deadline=None)
    @given(gamma=anything, gain=anything, alpha=anything, cast=anything, tolerance=anything,
           jobs=anything, engine=anything, offsets=anything)
    def check(gamma, gain, alpha, cast, tolerance, jobs, engine, offsets):
        accepted_or_refused(lambda: tieeval.evaluate(S, gamma=gamma, metrics="SNDCG@2"))
        accepted_or_refused(
            lambda: tieeval.evaluate(S, gain=gain, discount="power", alpha=alpha))
        accepted_or_refused(lambda: tieeval.evaluate(S, cast=cast, tolerance=tolerance))
        accepted_or_refused(lambda: tieeval.evaluate(S.ravel(), offsets=offsets))
        for kwargs in ({"jobs": jobs}, {"engine": engine}):
            if kwargs.get("engine") == "spark":
                continue  # a real Spark run when pyspark is installed
            accepted_or_refused(
                lambda kwargs=kwargs: tieeval.evaluate_path("missing.npz", **kwargs))

    check()


@pytest.mark.parametrize("metric", [3, 2.5, None, b"HR@1"])
def test_a_metric_that_is_not_text_is_a_tieeval_error(metric):
    # the check of options written in parentheses reads text only: anything else is the
    # metric parser's own one-line refusal, never a TypeError
    with pytest.raises(tieeval.TieevalError):
        tieeval.evaluate(np.array([[0.9, 0.5, 0.1]]), metrics=[metric])
