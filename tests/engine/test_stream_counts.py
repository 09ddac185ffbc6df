"""TieAware on torch batches with one positive per row, counted where the tensor is, for
the general kernel's metrics too (Recall@K, MRR@K, ``positives=``): the result is the one
``evaluate`` gives on the whole matrix, JSON and all, byte for byte.

Oracles: ``evaluate`` on all the rows at once (its figures are checked against
enumerations and independent libraries elsewhere), and, for the sparse table built from
counts, the sparse table the scores themselves give (:class:`RelBatch`), metric by
metric, bit for bit. Each test also makes sure the batches took the counted path: the
host's batch reader is replaced by one that fails."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tieeval
from tieeval.engine import stream
from tieeval.kernels.choose import choose_kernel, spec_for
from tieeval.kernels.counts import dense_counts
from tieeval.kernels.tie_blocks import RelBatch

torch = pytest.importorskip("torch")

STEP = ["HR@1", "HR@10", "NDCG@10", "MRR", "Recall@20"]  # a validation step's metrics
CUT = ["HR@1", "NDCG@10", "MRR@10", "Recall@20"]  # every one cut: original='topk' takes it


def saturated(rows: int, cols: int, seed: int) -> np.ndarray:
    """float32 sigmoids of wide logits: the top of many rows is exactly 1.0, and many
    positives tie below it (float32 is coarse near 1)."""
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(rows, cols)) * 8 + 3).astype(np.float32)
    return (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)


def text(result: tieeval.RunResult) -> str:
    return json.dumps(result.to_dict())


@pytest.fixture
def on_device(monkeypatch):
    """Fail any batch read on the host: the counted path must take every batch."""
    def host(*args, **kwargs):
        raise AssertionError("a batch was read on the host")
    monkeypatch.setattr(stream, "array_batch", host)


def feed(metric: tieeval.TieAware, s: np.ndarray, pos: np.ndarray, cuts, how: str
         ) -> tieeval.TieAware:
    bounds = [0, *cuts, len(s)]
    for lo, hi in zip(bounds, bounds[1:]):
        metric.update(torch.from_numpy(s[lo:hi]), **{how: torch.from_numpy(pos[lo:hi])})
    return metric


CASES = [(STEP, None), (STEP, "stable"), (STEP, "reverse-stable"), (CUT, "topk"),
         (["HR@5", "Recall@20", "MAP@10", "P@5"], None), (["MRR", "MRR@10"], None)]


@pytest.mark.parametrize("metrics, original", CASES)
@pytest.mark.parametrize("how", ["positive", "positives"])
@pytest.mark.parametrize("cuts", [[], [1, 40, 41, 90], list(range(7, 140, 7))])
def test_batches_give_evaluate_s_json(metrics, original, how, cuts, on_device):
    s = saturated(140, 60, 1)
    pos = np.random.default_rng(2).integers(0, 60, 140)
    options = {} if original is None else {"original": original}
    want = tieeval.evaluate(s, metrics=metrics, **{how: pos}, **options)
    m = tieeval.TieAware(metrics=metrics, path="<array>", **options)
    assert text(feed(m, s, pos, cuts, how).compute()) == text(want)


@pytest.mark.parametrize("metrics, original", CASES[:4])
def test_merged_shards_give_evaluate_s_json(metrics, original, on_device):
    s = saturated(150, 40, 3)
    pos = np.random.default_rng(4).integers(0, 40, 150)
    options = {} if original is None else {"original": original}
    want = tieeval.evaluate(s, metrics=metrics, positive=pos, **options)
    shards = [feed(tieeval.TieAware(metrics=metrics, path="<array>", **options),
                   s[lo:lo + 50], pos[lo:lo + 50], [17], "positive") for lo in (0, 50, 100)]
    total = tieeval.TieAware(metrics=metrics, path="<array>", **options)
    for shard in reversed(shards):
        total.merge(shard)
    assert text(total.compute()) == text(want)


def test_wide_rows_and_small_integer_ties(on_device):
    """Rows wider than the table's partial sort (1,500 candidates) and rows of few
    distinct scores, where most positives tie."""
    rng = np.random.default_rng(5)
    for s in (saturated(60, 1600, 6), rng.integers(0, 4, (60, 30)).astype(np.int16)):
        pos = rng.integers(0, s.shape[1], 60)
        for metrics, original in [(STEP, None), (CUT, "topk"),
                                  (["HR@10", "NDCG@10", "Recall@20"], None)]:
            options = {} if original is None else {"original": original}
            want = tieeval.evaluate(s, metrics=metrics, positive=pos, **options)
            m = feed(tieeval.TieAware(metrics=metrics, path="<array>", **options), s, pos,
                     [25], "positive")
            assert text(m.compute()) == text(want)


def test_compute_then_more_rows():
    s = saturated(60, 30, 7)
    pos = np.random.default_rng(8).integers(0, 30, 60)
    m = tieeval.TieAware(metrics=STEP, path="<array>")
    feed(m, s[:20], pos[:20], [], "positive")
    first = text(m.compute())
    assert text(m.compute()) == first  # compute twice: the same
    assert first == text(tieeval.evaluate(s[:20], metrics=STEP, positive=pos[:20]))
    feed(m, s[20:], pos[20:], [10], "positive")
    m.update(s[50:55][:0])  # an empty batch adds nothing
    assert text(m.compute()) == text(tieeval.evaluate(s, metrics=STEP, positive=pos))


def test_device_and_host_batches_mixed_keep_their_values_in_order():
    """A numpy batch between torch batches: the sums and the per-instance values are
    those of the rows in the order they came."""
    s = saturated(45, 20, 9)
    pos = np.random.default_rng(10).integers(0, 20, 45)
    m = tieeval.TieAware(metrics=STEP, path="<array>", keep_values=True)
    m.update(torch.from_numpy(s[:15]), positive=torch.from_numpy(pos[:15]))
    m.update(s[15:30], positive=pos[15:30])  # numpy: read on the host
    m.update(torch.from_numpy(s[30:]), positive=torch.from_numpy(pos[30:]))
    assert text(m.compute()) == text(tieeval.evaluate(s, metrics=STEP, positive=pos))
    host = tieeval.TieAware(metrics=STEP, keep_values=True)
    host.update(s, positive=pos)
    got, want = m.instance_values(), host.instance_values()
    assert list(got) == list(want)
    for key in want:
        for column in ("original", "first", "last", "tie_aware", "variance"):
            assert np.array_equal(getattr(got[key], column), getattr(want[key], column),
                                  equal_nan=True), (key, column)


def test_positives_the_counts_do_not_take_are_read_on_the_host():
    """-1 padding (a row without a positive) and several positives per row: the host
    reads them, as evaluate does."""
    s = saturated(40, 25, 11)
    rng = np.random.default_rng(12)
    one = rng.integers(0, 25, 40)
    padded = np.where(np.arange(40) % 7 == 0, -1, one)
    two = np.stack([one, (one + 3) % 25], axis=1)
    for positives in (padded, two):
        want = tieeval.evaluate(s, metrics=STEP, positives=positives)
        m = tieeval.TieAware(metrics=STEP, path="<array>")
        for lo in range(0, 40, 16):
            m.update(torch.from_numpy(s[lo:lo + 16]),
                     torch.from_numpy(positives[lo:lo + 16]))
        assert text(m.compute()) == text(want)


def test_nan_is_the_host_s_message():
    s = torch.from_numpy(saturated(8, 30, 13))
    s[5, 2] = float("nan")
    for metrics, original in [(STEP, None), (CUT, "topk")]:
        m = tieeval.TieAware(metrics=metrics, original=original)
        with pytest.raises(tieeval.InputError) as got:
            m.update(s, positive=torch.zeros(8, dtype=torch.int64))
        with pytest.raises(tieeval.InputError) as want:
            tieeval.evaluate(s.numpy(), metrics=metrics, original=original,
                             positive=np.zeros(8, dtype=np.int64), path="<stream>")
        assert str(got.value) == str(want.value)
        assert m.rows == 0


@pytest.mark.parametrize("rule", ["argsort", "stable", "reverse-stable", "topk"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8])
def test_torch_counts_are_the_host_s(rule, dtype):
    """The counts made with torch (a GPU's path, run here on the CPU) are those the host
    makes on the tensor's memory, in the tensor's own dtype."""
    from tieeval.kernels import device
    rng = np.random.default_rng(14)
    s = rng.integers(0, 6, (50, 40)).astype(dtype)
    pos = rng.integers(0, 40, 50)
    tensor = torch.from_numpy(s)
    for depth in (None, 3):
        host = device._host_counts(tensor, pos, rule, depth)
        mine = device._torch_counts(torch, tensor, pos, rule, depth)
        assert host is not None and mine is not None
        for name in ("a", "b", "n", "top", "original"):
            assert np.array_equal(getattr(host, name), getattr(mine, name)), name
    if dtype == np.float32:
        tensor = tensor.clone()
        tensor[7, 3] = float("nan")
        assert device._host_counts(tensor, pos, rule, None) is None
        assert device._torch_counts(torch, tensor, pos, rule, None) is None


METRICS = ["HR@1", "HR@10", "Recall@5", "Recall@20", "NDCG@3", "NDCG@10", "MRR", "MRR@10",
           "MAP", "MAP@5", "P@5", "R-Prec", "AUC", "bpref"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_table_from_counts_is_the_scores_own(seed):
    """:meth:`RelBatch.one_relevant` from a row's counts gives every metric's values of the
    sparse table built from the scores themselves, bit for bit (cut and uncut metric
    lists: with and without a rank depth)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, int(rng.integers(2, 9)), (80, 35)).astype(np.float32)
    pos = rng.integers(0, 35, 80)
    labels = np.zeros(s.shape, dtype=np.int8)
    labels[np.arange(80), pos] = 1
    for metrics in (METRICS, [m for m in METRICS if "@" in m and m != "MRR@10"]):
        kernel = choose_kernel(spec_for(None, metrics))
        forms = [e.form for e in kernel.entries if not e.form.spec.every_position]
        options = kernel.table_options(False)
        want = RelBatch(s, labels, options=options)
        counts = dense_counts(s, pos, "raise", "argsort")
        got = RelBatch.one_relevant(counts.n, counts.a, counts.b, counts.top,
                                    counts.original - 1, options)
        for form in forms:
            v, w = got.values(form), want.values(form)
            for column in ("original", "first", "last", "tie_aware", "variance",
                           "tie_decided", "defined"):
                x, y = getattr(v, column), getattr(w, column)
                assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), (form, column)
        assert [x.tolist() for x in got.top_ties()] == [x.tolist() for x in want.top_ties()]


@pytest.mark.parametrize("options", [{"relevant_scores": "positive"},
                                     {"relevance_level": 1}, {"metrics": STEP + ["ERR@10"]}])
def test_options_the_counts_do_not_cover_read_on_the_host(options):
    """A positive scored <= 0 read as not relevant, a relevance level, a metric reading
    every position: the batches take the host's path, and the result is still evaluate's."""
    s = saturated(50, 30, 15) - np.float32(0.5)  # some positives score <= 0
    pos = np.random.default_rng(16).integers(0, 30, 50)
    options = {"metrics": STEP, **options}
    want = tieeval.evaluate(s, positive=pos, **options)
    m = feed(tieeval.TieAware(path="<array>", **options), s, pos, [20], "positive")
    assert text(m.compute()) == text(want)


def test_epochs_after_reset_equal_a_fresh_object(on_device):
    """A training loop resets one object every epoch: each epoch's result is that of
    ``evaluate`` on its rows, whatever an earlier epoch saw (another dtype included)."""
    m = tieeval.TieAware(metrics=STEP, path="<array>")
    for seed, dtype in ((11, np.float32), (12, np.float64), (13, np.float32)):
        s = saturated(40, 25, seed).astype(dtype)
        pos = np.random.default_rng(seed).integers(0, 25, 40)
        m.reset()
        feed(m, s, pos, [16], "positive")
        assert text(m.compute()) == text(tieeval.evaluate(s, metrics=STEP, positive=pos))


def test_positive_columns_counted_from_the_end_or_out_of_range_as_evaluate():
    """``positive`` indices that count from the end of the row, or fall outside it, are
    read as ``evaluate`` reads them: the same figures, the same error."""
    s = saturated(30, 20, 14)
    pos = np.random.default_rng(14).integers(-20, 20, 30)
    m = tieeval.TieAware(metrics=STEP, path="<array>")
    m.update(torch.from_numpy(s), positive=torch.from_numpy(pos))
    assert text(m.compute()) == text(tieeval.evaluate(s, metrics=STEP, positive=pos))
    bad = np.where(np.arange(30) == 7, 20, pos % 20)
    with pytest.raises(tieeval.InputError) as want:
        tieeval.evaluate(s, metrics=STEP, positive=bad)
    with pytest.raises(tieeval.InputError) as got:
        tieeval.TieAware(metrics=STEP, path="<array>").update(torch.from_numpy(s),
                                                            positive=torch.from_numpy(bad))
    assert str(got.value) == str(want.value)
