"""tieeval.TieAware, the streaming metric: fed in batches (numpy or torch), merged over
shards, it gives the result tieeval.evaluate gives on the whole matrix.

The oracle is evaluate itself on all the rows at once (its figures are checked against
enumerations and independent libraries elsewhere): every column, every tie statistic and
the sd agree to 1e-12, under several batch splits and shard merges."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import tieeval
from tieeval.engine.local import ARRAY_KEYWORDS
from tieeval.engine.stream import OPTION_NAMES

SINGLE = ["HR@1", "HR@10", "NDCG@10", "MRR"]
LABELLED = ["HR@5", "NDCG@10", "MRR", "Recall@20", "MAP"]


def saturated(rows: int, cols: int, seed: int) -> np.ndarray:
    """float32 sigmoids of wide logits: the top of many rows saturates to exactly 1.0."""
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(rows, cols)) * 8 + 3).astype(np.float32)
    return (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)


def same(got: tieeval.RunResult, want: tieeval.RunResult) -> None:
    """Every figure of the two results agrees to 1e-12 (and everything else exactly)."""
    def close(x, y, where):
        if isinstance(x, dict):
            assert set(x) == set(y), where
            for key in x:
                close(x[key], y[key], f"{where}.{key}")
        elif isinstance(x, list):
            assert len(x) == len(y), where
            for i, (a, b) in enumerate(zip(x, y)):
                close(a, b, f"{where}[{i}]")
        elif isinstance(x, float) and isinstance(y, float):
            assert math.isclose(x, y, rel_tol=0, abs_tol=1e-12) or (x != x and y != y), where
        else:
            assert x == y, where
    a, b = got.to_dict(), want.to_dict()
    a.pop("path"), b.pop("path")
    close(a, b, "result")


def fed(metric: tieeval.TieAware, cuts, **arrays) -> tieeval.TieAware:
    """``metric`` updated with ``arrays`` cut into batches at ``cuts``."""
    rows = len(arrays["scores"])
    bounds = [0, *cuts, rows]
    for lo, hi in zip(bounds, bounds[1:]):
        metric.update(**{name: value[lo:hi] for name, value in arrays.items()})
    return metric


SPLITS = [[], [1], [7, 8, 50], list(range(10, 120, 10))]


@pytest.mark.parametrize("cuts", SPLITS)
def test_single_positive_batches_equal_the_whole(cuts):
    s = saturated(120, 60, 0)
    pos = np.random.default_rng(1).integers(0, 60, 120)
    want = tieeval.evaluate(s, positive=pos, metrics=SINGLE)
    same(fed(tieeval.TieAware(metrics=SINGLE), cuts, scores=s, positive=pos).compute(), want)


@pytest.mark.parametrize("cuts", SPLITS)
def test_labelled_batches_equal_the_whole(cuts):
    s = np.round(np.random.default_rng(2).random((120, 30)), 1).astype(np.float32)
    labels = np.random.default_rng(3).choice([0, 0, 0, 1, 2, -1], size=s.shape)
    want = tieeval.evaluate(s, labels=labels, metrics=LABELLED)
    got = fed(tieeval.TieAware(metrics=LABELLED), cuts, scores=s, labels=labels).compute()
    same(got, want)
    assert got.metric("NDCG@10").tie_aware_std == pytest.approx(
        want.metric("NDCG@10").tie_aware_std, abs=1e-12)


def test_ragged_positives_equal_the_whole():
    s = saturated(40, 25, 4)
    rng = np.random.default_rng(5)
    positives = [sorted(rng.choice(25, size=int(rng.integers(1, 4)), replace=False).tolist())
                 for _ in range(40)]
    want = tieeval.evaluate(s, positives=positives, metrics=LABELLED, k=[5])
    m = tieeval.TieAware(metrics=LABELLED, k=[5])
    for lo in range(0, 40, 16):
        m.update(s[lo:lo + 16], positives[lo:lo + 16])
    same(m.compute(), want)


@pytest.mark.parametrize("options", [{"original": "stable"}, {"original": "reverse-stable"},
                                     {"convention": "recbole"}, {"k": [1, 3]},
                                     {"cast": "bfloat16"}, {"nan_policy": "worst"}])
def test_options_are_evaluate_s(options):
    s = saturated(60, 20, 6)
    s[3, 4] = np.nan
    pos = np.random.default_rng(7).integers(0, 20, 60)
    if options.get("nan_policy") != "worst":
        s[3, 4] = 0.5
    want = tieeval.evaluate(s, positive=pos, **options)
    same(fed(tieeval.TieAware(**options), [13, 40], scores=s, positive=pos).compute(), want)


def test_merged_shards_equal_the_whole():
    s = np.round(np.random.default_rng(8).random((90, 30)), 1).astype(np.float32)
    labels = np.random.default_rng(9).choice([0, 0, 0, 1, 3], size=s.shape)
    want = tieeval.evaluate(s, labels=labels, metrics=LABELLED)
    shards = [fed(tieeval.TieAware(metrics=LABELLED), [7], scores=s[lo:lo + 30],
                  labels=labels[lo:lo + 30]) for lo in (0, 30, 60)]
    total = tieeval.TieAware(metrics=LABELLED)
    for shard in reversed(shards):
        total.merge(shard)
    same(total.compute(), want)
    assert total.rows == 90


def test_compute_leaves_the_state_and_reset_forgets():
    s = saturated(30, 10, 10)
    m = tieeval.TieAware(metrics=SINGLE)
    m.update(s[:10])
    first = m.compute()
    same(m.compute(), first)  # compute twice: the same
    m.update(s[10:])
    same(m.compute(), tieeval.evaluate(s, metrics=SINGLE))
    m.reset()
    with pytest.raises(tieeval.InputError, match="no instances"):
        m.compute()
    m.update(s[:10])
    same(m.compute(), first)


def test_instance_values_only_when_asked():
    s = saturated(30, 10, 11)
    m = tieeval.TieAware(metrics=["HR@1"], keep_values=True)
    fed(m, [4, 20], scores=s)
    values = m.instance_values()[tieeval.Metric.parse("HR@1")]
    want = tieeval.evaluate(s, metrics=["HR@1"]).metric("HR@1")
    assert values.tie_aware.size == 30
    assert values.tie_aware.mean() == pytest.approx(want.tie_aware, abs=1e-12)
    with pytest.raises(tieeval.ParameterError, match="keep_values"):
        tieeval.TieAware().instance_values()


def test_the_options_are_evaluate_s_keywords():
    """One declaration: TieAware takes exactly evaluate's option keywords."""
    evaluate_options = {name for name in inspect.signature(tieeval.evaluate).parameters
                        if name not in (*ARRAY_KEYWORDS, "path")}
    assert set(OPTION_NAMES) == evaluate_options
    with pytest.raises(TypeError, match="unexpected keyword argument 'jobs'"):
        tieeval.TieAware(jobs=2)
    with pytest.raises(tieeval.ParameterError):
        tieeval.TieAware(original="sideways")


def test_batches_must_agree():
    s = saturated(20, 10, 12)
    m = tieeval.TieAware()
    m.update(s[:10])
    with pytest.raises(tieeval.ParameterError, match="same way"):
        m.update(s[10:], labels=np.ones_like(s[10:], dtype=np.int8))
    with pytest.raises(tieeval.InputError, match="same one"):
        m.update(s[10:].astype(np.float64))
    with pytest.raises(tieeval.ParameterError, match="different options"):
        m.merge(tieeval.TieAware(k=[1]))
    same(m.compute(), tieeval.evaluate(s[:10]))  # a refused batch adds nothing


def test_a_failing_batch_adds_nothing():
    s = saturated(20, 10, 13)
    m = tieeval.TieAware()
    m.update(s[:10])
    bad = s[10:].copy()
    bad[5, 3] = np.nan
    with pytest.raises(tieeval.InputError, match="row 15: NaN score"):
        m.update(bad)
    same(m.compute(), tieeval.evaluate(s[:10]))


# -- torch -------------------------------------------------------------------------------


@pytest.mark.parametrize("original", [None, "stable", "reverse-stable", "topk"])
def test_torch_batches_are_counted_as_numpy_s(original):
    torch = pytest.importorskip("torch")
    metrics = ["HR@1", "HR@10", "NDCG@10", "MRR@20"]
    s = saturated(100, 50, 14)
    pos = np.random.default_rng(15).integers(0, 50, 100)
    want = tieeval.evaluate(s, positive=pos, metrics=metrics, original=original)
    m = tieeval.TieAware(metrics=metrics, original=original)
    for lo in range(0, 100, 32):
        m.update(torch.from_numpy(s[lo:lo + 32]), positive=torch.from_numpy(pos[lo:lo + 32]))
    same(m.compute(), want)


def test_torch_labels_and_positives():
    torch = pytest.importorskip("torch")
    s = np.round(np.random.default_rng(16).random((50, 20)), 1).astype(np.float64)
    labels = np.random.default_rng(17).choice([0, 0, 1, 2], size=s.shape)
    want = tieeval.evaluate(s, labels=labels, metrics=LABELLED)
    m = tieeval.TieAware(metrics=LABELLED)
    for lo in range(0, 50, 20):
        m.update(torch.from_numpy(s[lo:lo + 20]), labels=torch.from_numpy(labels[lo:lo + 20]))
    same(m.compute(), want)


def test_torch_nan_and_bfloat16_are_refused():
    torch = pytest.importorskip("torch")
    s = torch.rand(8, 5)
    s[2, 1] = float("nan")
    m = tieeval.TieAware()
    with pytest.raises(tieeval.InputError, match="row 2: NaN score"):
        m.update(s)
    with pytest.raises(tieeval.InputError, match="bfloat16 scores"):
        m.update(torch.rand(8, 5).to(torch.bfloat16))
    assert m.rows == 0


@pytest.mark.skipif("not __import__('importlib').util.find_spec('torch') or "
                    "not __import__('torch').cuda.is_available()")
@pytest.mark.parametrize("original", [None, "topk"])
def test_cuda_tensors(original):  # pragma: no cover - needs a GPU
    import torch
    metrics = ["HR@1", "NDCG@10", "MRR@20"]
    s = saturated(64, 40, 18)
    pos = np.random.default_rng(19).integers(0, 40, 64)
    m = tieeval.TieAware(metrics=metrics, original=original)
    m.update(torch.from_numpy(s).cuda(), positive=torch.from_numpy(pos).cuda())
    want = tieeval.evaluate(s, positive=pos, metrics=metrics, original=original)
    got = m.compute()
    for row, mine in zip(want.metrics, got.metrics):
        assert (mine.first, mine.last, mine.tie_aware) == pytest.approx(
            (row.first, row.last, row.tie_aware), abs=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float16, np.float64])
@pytest.mark.parametrize("original", [None, "topk"])
def test_torch_dtypes_and_masked_candidates(dtype, original):
    """Ties judged in the tensor's own dtype; -inf (a masked candidate) as evaluate takes it."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(20)
    s = rng.integers(0, 5, (70, 12)).astype(dtype)
    if s.dtype.kind == "f":
        s[s == 0] = -np.inf
    pos = rng.integers(0, 12, 70)
    metrics = ["HR@1", "NDCG@5", "MRR@12"]
    want = tieeval.evaluate(s, positive=pos, metrics=metrics, original=original)
    m = tieeval.TieAware(metrics=metrics, original=original)
    for lo in range(0, 70, 16):
        m.update(torch.from_numpy(s[lo:lo + 16]), positive=torch.from_numpy(pos[lo:lo + 16]))
    same(m.compute(), want)
