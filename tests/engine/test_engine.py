"""Run evaluation: dataset means, tie-break spread and tie statistics against enumeration,
invariants, batch-size independence and the evaluate() boundary checks."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import (
    FLOAT_DTYPES,
    RANK_METRICS,
    consistent_orders,
    enumerated_ranks,
    lexsort_rank,
    random_row,
)
from helpers import CountsAccumulator as Accumulator

from tieeval.engine.local import (
    evaluate,
    evaluate_dump,
    evaluate_path,
    iter_instance_values,
)
from tieeval.errors import InputError, ParameterError
from tieeval.io.open import open_dump
from tieeval.kernels.counts import dense_counts
from tieeval.kernels.single import batch_counts
from tieeval.metrics.metric import Metric, default_metrics
from tieeval.records.batch import Batch

KS = (1, 2, 3, 5, 8)


def metric_list():
    return default_metrics(KS)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("nan_policy", ["raise", "worst"])
def test_dataset_level_matches_enumeration(rng, dtype, nan_policy):
    n, rows = 6, 150
    pool = (np.inf, -np.inf, -0.0, 0.0, 1.0, 0.5, -2.0)
    if nan_policy == "worst":
        pool += (np.nan,)
    s = np.stack([random_row(rng, dtype, n, pool) for _ in range(rows)])
    positive = rng.integers(0, n, size=rows)
    worst = nan_policy == "worst"
    result = evaluate(s, k=KS, positive=positive, nan_policy=nan_policy)
    ranks = [enumerated_ranks(s[i], positive[i], worst) for i in range(rows)]
    for row in result.metrics:
        fn = RANK_METRICS[row.metric]
        per_order = [fn(r, row.k) for r in ranks]
        # mean of per-instance expectations; sd_tie = sqrt(sum of variances) / N
        assert row.tie_aware == pytest.approx(math.fsum(x.mean() for x in per_order) / rows,
                                              rel=1e-13, abs=1e-15)
        assert row.tie_aware_std == pytest.approx(
            math.sqrt(math.fsum(x.var() for x in per_order)) / rows, rel=1e-9, abs=1e-15)
        assert row.first == pytest.approx(math.fsum(x.max() for x in per_order) / rows,
                                          rel=1e-15)
        assert row.last == pytest.approx(math.fsum(x.min() for x in per_order) / rows,
                                         rel=1e-15)
        first = [float(fn(lexsort_rank(s[i], positive[i], "first", worst), row.k))
                 for i in range(rows)]
        assert row.first == pytest.approx(math.fsum(first) / rows, rel=1e-15)
        assert row.last <= row.tie_aware <= row.first
        assert row.last <= row.original <= row.first
        assert row.instances == rows
    # tie statistics
    t = result.ties
    b = np.array([len(set(r.tolist())) for r in ranks])
    top = np.array([len(set(consistent_orders(s[i], worst)[:, 0].tolist()))
                    for i in range(rows)])
    assert t.positive_tie_size == pytest.approx(b.mean(), rel=1e-15)
    assert t.positive_tie_frequency == pytest.approx(np.mean(b > 1), rel=1e-15)
    assert t.top_tie_size == pytest.approx(top.mean(), rel=1e-15)
    assert t.top_tie_ratio == pytest.approx(math.fsum(top / n) / rows, rel=1e-15)
    assert t.top_tie_frequency == pytest.approx(np.mean(top > 1), rel=1e-15)
    for k in KS:
        decided = [hr_of(r, k).max() > hr_of(r, k).min() for r in ranks]
        assert t.tie_decided[k] == pytest.approx(np.mean(decided), rel=1e-15)


def hr_of(ranks, k):
    return RANK_METRICS["HR"](ranks, k)


@pytest.mark.parametrize("n", [1, 4, 100])
def test_all_tied_closed_forms(n):
    # Every row fully tied: rank uniform on 1..n, so HR@K = min(K,n)/n,
    # NDCG@K = D[min(K,n)]/n, MRR = H[n]/n; first = 1, last = value at rank n.
    rows = 9
    r = evaluate(np.full((rows, n), 0.25, dtype=np.float32), k=(1, 5, 10))
    for k in (1, 5, 10):
        m = min(k, n)
        hr, ndcg = r.metric(f"HR@{k}"), r.metric(f"NDCG@{k}")
        assert hr.tie_aware == pytest.approx(m / n, rel=1e-15)
        # Var per row is h(1-h), the same for all rows: sd = sqrt(rows h (1-h)) / rows
        assert hr.tie_aware_std == pytest.approx(math.sqrt(rows * (m / n) * (1 - m / n)) / rows,
                                                 rel=1e-12, abs=1e-300)
        assert (hr.first, hr.last) == (1.0, float(n <= k))
        D = math.fsum(1 / math.log2(j + 1) for j in range(1, m + 1))
        assert ndcg.tie_aware == pytest.approx(D / n, rel=1e-14)
    mrr = r.metric("MRR")
    assert mrr.tie_aware == pytest.approx(math.fsum(1 / j for j in range(1, n + 1)) / n,
                                          rel=1e-14)
    t = r.ties
    assert (t.top_tie_size, t.top_tie_ratio, t.positive_tie_size) == (n, 1.0, n)
    assert t.top_tie_frequency == t.positive_tie_frequency == float(n > 1)


def test_tie_free_rows_have_one_value(rng):
    s = rng.permuted(np.tile(np.arange(30, dtype=np.float64), (40, 1)), axis=1)
    r = evaluate(s, k=(1, 5, 10))
    for row in r.metrics:
        assert row.original == row.first == row.last == row.tie_aware
        assert row.tie_aware_std == 0.0
    assert r.ties.positive_tie_frequency == 0.0 and r.ties.top_tie_frequency == 0.0
    assert all(v == 0.0 for v in r.ties.tie_decided.values())


def test_hand_derived_example():
    # Row 0: positive tied with one other at the top (a=0, b=2): HR@1 = 1/2, first 1, last 0.
    # Row 1: positive alone at the top (a=0, b=1): HR@1 = 1.  Means: 3/4, 1, 1/2.
    r = evaluate(np.array([[1.0, 1.0, 0.5], [0.9, 0.1, 0.2]]), k=[1])
    hr = r.metric("HR@1")
    assert (hr.first, hr.last, hr.tie_aware) == (1.0, 0.5, 0.75)
    # Var = 1/4 for row 0, 0 for row 1: sd = sqrt(1/4) / 2
    assert hr.tie_aware_std == 0.25
    # MRR row 0: (1 + 1/2)/2 = 3/4; row 1: 1 -> mean 7/8
    assert r.metric("MRR").tie_aware == 0.875


def write_npy(tmp_path, s, name="s.npy"):
    np.save(tmp_path / name, s)
    return str(tmp_path / name)


def test_batch_size_independence(tmp_path, rng):
    s = rng.integers(0, 7, size=(1000, 31)).astype(np.float32) / 6
    s[rng.random(s.shape) < 0.02] = -np.inf
    path = write_npy(tmp_path, s)
    dump = open_dump(path)
    metrics = [Metric.parse(x) for x in ("HR@1", "HR@10", "NDCG@5", "NDCG@40", "MRR")]
    results = [evaluate_dump(dump, metrics, batch_rows=b).to_dict() for b in (1, 7, 1000)]
    assert results[0] == results[1] == results[2]
    inline = evaluate(s, metrics=metrics, path=path).to_dict()
    assert inline == results[0]


def test_accumulators_merge_in_any_order(rng):
    s = rng.integers(0, 4, size=(300, 12)).astype(np.float64)
    positive = rng.integers(0, 12, size=300)
    metrics = metric_list()
    whole = Accumulator(metrics)
    whole.add(dense_counts(s, positive))
    parts = []
    for chunk in np.array_split(np.arange(300), [13, 14, 200]):
        acc = Accumulator(metrics)
        acc.add(dense_counts(s[chunk], positive[chunk]))
        parts.append(acc)
    merged = Accumulator(metrics)
    merged.merge(Accumulator(metrics))  # merging an empty accumulator is a no-op
    for acc in reversed(parts):
        merged.merge(acc)
    assert merged.result("x", s.dtype).to_dict() == whole.result("x", s.dtype).to_dict()


def test_row_order_does_not_change_a_bit(rng):
    s = rng.integers(0, 5, size=(400, 20)).astype(np.float32)
    positive = rng.integers(0, 20, size=400)
    perm = rng.permutation(400)
    a = evaluate(s, k=KS, positive=positive).to_dict()
    b = evaluate(s[perm], k=KS, positive=positive[perm]).to_dict()
    assert a == b


def test_invariant_to_permuting_negatives_and_shifting(rng):
    s = rng.integers(0, 5, size=(200, 15)).astype(np.float64)
    shuffled = s.copy()
    shuffled[:, 1:] = rng.permuted(s[:, 1:], axis=1)
    shifted = s + 1024.0  # small integers: the shift is exact and keeps every tie
    base = evaluate(s, k=KS)
    for other in (evaluate(shuffled, k=KS), evaluate(shifted, k=KS)):
        for x, y in zip(base.metrics, other.metrics):
            assert (x.first, x.last, x.tie_aware, x.tie_aware_std) == (
                y.first, y.last, y.tie_aware, y.tie_aware_std)
            assert y.last <= y.original <= y.first


def test_float32_never_downcast_and_float64_kept(rng):
    # near-ties in float64 that float32 would merge stay distinct
    s = np.tile(1.0 + np.arange(5) * 1e-10, (3, 1))
    r = evaluate(s, k=[1])
    assert r.dtype == "float64"
    assert r.metric("HR@1").tie_aware == 0.0  # the positive (column 0) is strictly last
    r32 = evaluate(s.astype(np.float32), k=[1])
    assert r32.metric("HR@1").tie_aware == pytest.approx(1 / 5, rel=1e-15)


def test_int64_above_2_53():
    big = 2 ** 53
    s = np.array([[big, big + 1, big - 1], [big + 1, big, big + 1]], dtype=np.int64)
    r = evaluate(s, k=[1])
    # row 0: one candidate strictly above (HR@1 = 0); row 1: tied with one (HR@1 = 1/2)
    assert r.metric("HR@1").tie_aware == 0.25
    assert r.dtype == "int64"


def test_nan_raises_naming_the_row():
    s = np.zeros((5, 3))
    s[4, 1] = np.nan
    with pytest.raises(InputError, match=r"^<array>: row 4: NaN score"):
        evaluate(s)
    with pytest.raises(InputError, match=r"^scores\.npy: row 4: NaN score"):
        evaluate(s, path="scores.npy")
    # batch_counts reports the dump row, not the row inside the batch
    with pytest.raises(InputError, match=r"row 104: NaN score"):
        batch_counts(Batch(s, np.zeros(5, dtype=np.int64), 100), "raise", "d.npy")


def test_nan_worst_closed_form():
    # positive NaN with two NaN and two numbers: a = 2, b = 2 -> HR@3 = 1/2, MRR = (1/3+1/4)/2
    s = np.array([[np.nan, 0.5, np.nan, -np.inf]])
    r = evaluate(s, k=[3], nan_policy="worst")
    assert r.metric("HR@3").tie_aware == 0.5
    assert r.metric("MRR").tie_aware == pytest.approx((1 / 3 + 1 / 4) / 2, rel=1e-15)
    # top: the row's largest number (0.5) is alone
    assert r.ties.top_tie_size == 1


def test_k_above_candidates_warns_and_saturates():
    s = np.array([[0.5, 0.5, 0.1]] * 4)
    r = evaluate(s, k=(1, 3, 10))
    assert len(r.warnings) == 1
    assert "K=10 exceeds the candidate count in 4 instance(s)" in r.warnings[0]
    assert r.metric("HR@10").tie_aware == r.metric("HR@10").last == 1.0
    assert r.metric("NDCG@10").tie_aware == r.metric("NDCG@3").tie_aware


def test_evaluate_boundary_checks(rng):
    s = rng.random((4, 3))
    with pytest.raises(ParameterError, match="nan_policy must be one of raise, worst"):
        evaluate(s, nan_policy="ignore")
    with pytest.raises(ParameterError):
        evaluate(s, k=[0])
    with pytest.raises(ParameterError, match="unknown metric 'Novelty'"):
        evaluate(s, metrics=["Novelty@10"])  # (AP@10 is MAP@10: see test_relevance_cli.py)
    with pytest.raises(InputError, match="object array"):
        evaluate(np.array([[0.1], "x"], dtype=object))
    with pytest.raises(InputError, match="must be a 2-D"):
        evaluate(np.arange(3.0))
    with pytest.raises(InputError, match="no instances"):
        evaluate(np.zeros((0, 3)))
    with pytest.raises(InputError, match="positive index 3 is out of range"):
        evaluate(s, positive=3)
    with pytest.raises(InputError, match="positive must hold integer"):
        evaluate(s, positive=np.array([0.0, 1.0, 0.0, 0.0]))


def test_evaluate_dump_checks_nan_policy(tmp_path, rng):
    dump = open_dump(write_npy(tmp_path, rng.random((3, 2))))
    with pytest.raises(ParameterError, match="nan_policy"):
        evaluate_dump(dump, nan_policy="bad")


def test_evaluate_inputs(rng):
    s = rng.integers(0, 3, size=(6, 4)).astype(np.float64)
    base = evaluate(s, k=[1, 2])
    # lists of lists, per-row positives and negative positive indices
    assert evaluate(s.tolist(), k=[1, 2]).to_dict() == base.to_dict()
    assert evaluate(s, k=[1, 2], positive=np.zeros(6, dtype=int)).to_dict() == base.to_dict()
    last = evaluate(s, k=[1, 2], positive=-1).to_dict()
    assert last == evaluate(s, k=[1, 2], positive=3).to_dict()
    chosen = evaluate(s, metrics=["ndcg@2", Metric("HR", 1)])
    assert [m.label for m in chosen.metrics] == ["NDCG@2", "HR@1"]
    assert [m.label for m in base.metrics] == ["HR@1", "HR@2", "NDCG@1", "NDCG@2", "MRR"]


def test_result_dict_is_json(rng):
    r = evaluate(rng.integers(0, 3, size=(10, 5)).astype(np.float16))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["instances"] == 10 and d["dtype"] == "float16"
    assert d["candidates"] == {"min": 5, "max": 5}
    assert [m["metric"] for m in d["metrics"]][-1] == "MRR" and d["metrics"][-1]["k"] is None
    assert set(d["ties"]["tie_decided"]) == {"1", "5", "10"}
    with pytest.raises(KeyError):
        r.metric("HR@2")
    assert r.metric("ndcg@5").label == "NDCG@5"


def test_progress_and_instance_values(tmp_path, rng):
    s = rng.integers(0, 4, size=(25, 6)).astype(np.float32)
    dump = open_dump(write_npy(tmp_path, s))
    seen = []
    r = evaluate_dump(dump, [Metric("NDCG", 3)], batch_rows=10, progress=seen.append)
    assert seen == [10, 10, 5]
    metric = Metric("NDCG", 3)
    total = [v[metric].tie_aware for _, v in iter_instance_values(dump, [metric], batch_rows=10)]
    assert math.fsum(np.concatenate(total)) / 25 == pytest.approx(r.metric("NDCG@3").tie_aware,
                                                                   rel=1e-15)


def test_evaluate_path_labels(tmp_path, rng):
    s = rng.integers(0, 4, size=(8, 6)).astype(np.float32)
    np.savez(tmp_path / "m.npz", scores=s, model=np.array("ConsRec"))
    r = evaluate_path(str(tmp_path / "m.npz"), labels={"seed": "1"})
    assert r.labels == {"model": "ConsRec", "seed": "1"}
    # the JSON labels may carry further (null) keys; the dump's and the caller's are there
    labels = r.to_dict()["labels"]
    assert (labels["model"], labels["seed"]) == ("ConsRec", "1")
    assert r.path == str(tmp_path / "m.npz")


def test_mrr_beyond_histogram_ranks(rng):
    # Ranks deeper than the rank histogram (4096) and the harmonic table, tied and untied.
    n = 6000
    s = np.linspace(1.0, 0.0, n)[None, :].repeat(4, axis=0)
    s[0, 0] = s[0, 5000]  # columns 1..4999 above: a = 4999, b = 2
    s[1, 0] = s[1, 4500]
    s[1, 4501:4800] = s[1, 4500]  # a = 4499, b = 1 + 1 + 299
    s[2, 0] = -1.0  # untied, last: a = n - 1, b = 1
    s[3, 0] = s[3, 10]  # shallow tie: a = 9, b = 2
    r = evaluate(s, metrics=["MRR", "HR@10"])
    blocks = [(4999, 2), (4499, 301), (n - 1, 1), (9, 2)]
    c = dense_counts(s, np.zeros(4, dtype=np.int64))
    assert list(zip(c.a.tolist(), c.b.tolist())) == blocks
    mean = [math.fsum(1 / j for j in range(a + 1, a + b + 1)) / b for a, b in blocks]
    mrr = r.metric("MRR")
    assert mrr.tie_aware == pytest.approx(math.fsum(mean) / 4, rel=1e-12)
    assert mrr.first == math.fsum(1 / (a + 1) for a, _ in blocks) / 4
    assert mrr.last == math.fsum(1 / (a + b) for a, b in blocks) / 4
    assert mrr.last <= mrr.original <= mrr.first
    # HR@10: only row 3 (ranks 10 or 11) can hit: first 1/4, last 0, mean 1/8, and
    # sd = sqrt(1/2 * 1/2) / 4
    hr = r.metric("HR@10")
    assert (hr.first, hr.last, hr.tie_aware, hr.tie_aware_std) == (0.25, 0.0, 0.125, 0.125)


def test_default_jobs_follow_the_sort_work(tmp_path, monkeypatch):
    from tieeval.engine import local
    from tieeval.io.open import open_dump
    rng = np.random.default_rng(3)
    free = rng.random((2000, 50)).astype(np.float32)
    tied = np.ones((2000, 50), dtype=np.float32)  # every positive tied: every row sorted
    np.save(tmp_path / "free.npy", free)
    np.save(tmp_path / "tied.npy", tied)
    monkeypatch.setattr(local, "AUTO_POOL_BYTES", 0)
    free_dump, tied_dump = open_dump(tmp_path / "free.npy"), open_dump(tmp_path / "tied.npy")
    assert local.sort_seconds(free_dump) == 0.0
    expected = 2000 * 50 * np.log2(50) * local.SORT_SECONDS_PER_NLOGN
    assert local.sort_seconds(tied_dump) == pytest.approx(expected)
    monkeypatch.setattr(local, "AUTO_POOL_SORT_SECONDS", expected / 2)
    assert local.auto_jobs(free_dump, local.kernel_for(free_dump), 8) == 1
    assert local.auto_jobs(tied_dump, local.kernel_for(tied_dump), 8) == 8
    assert local.auto_jobs(tied_dump, local.kernel_for(tied_dump, original="stable"), 8) == 1
    # with few cores one process evaluates batches on all of them: never a pool, whatever
    # the dump's size (a pool holds a copy of the working memory per worker)
    monkeypatch.setattr(local, "AUTO_POOL_BYTES", 0)
    for cores in range(1, local.AUTO_POOL_MIN_CORES):
        assert local.auto_jobs(tied_dump, local.kernel_for(tied_dump), cores) == 1
    table = pa.table({"scores": pa.array(list(tied[:50]), type=pa.list_(pa.float32()))})
    pq.write_table(table, tmp_path / "tied.parquet")
    parquet = open_dump(tmp_path / "tied.parquet")
    assert local.auto_jobs(parquet, local.kernel_for(parquet), 2) == 1  # memory: no pool
    assert local.auto_jobs(parquet, local.kernel_for(parquet), 8) == 8
    assert local.auto_jobs(free_dump, local.kernel_for(free_dump), 2) == 1
    assert local.auto_jobs(tied_dump, local.kernel_for(tied_dump), 1) == 1
    # whichever is chosen, the result is the one of a single process
    for dump in (free_dump, tied_dump):
        auto = local.evaluate_dump(dump, jobs=0).to_dict()
        assert auto == local.evaluate_dump(dump, jobs=1).to_dict()
