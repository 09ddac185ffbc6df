"""Tests for tieeval.kernels.tie_blocks against independent oracles.

The oracle here is a plain-Python definition of every metric on one fixed ordering of
labels (``oracle_value``). Expectations, variances, first and last are checked against the
mean, variance, maximum and minimum of that definition over every ordering the scores allow,
enumerated with ``itertools.permutations``; scikit-learn's tie-averaged NDCG, a double loop
for V-AUC, ``tieeval.kernels.closed_forms.single_positive`` and exact ``Fraction`` arithmetic
at depth are the other references. No expected number is taken from the kernel itself.
"""

from __future__ import annotations

import itertools
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest
from helpers import tie_orderings
from tiers import SLOW, seeds

from tieeval.errors import InputError, ParameterError
from tieeval.kernels.closed_forms import single_positive
from tieeval.kernels.counts import dense_counts
from tieeval.kernels.tie_blocks import InstanceValues, RelBatch, relevance_values
from tieeval.metrics.measures.series import rr_moments
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import (
    REL_REGISTRY,
    RelMetric,
    parse_rel_metric,
    rel_metric_names,
)

COLUMNS = ("original", "first", "last", "tie_aware", "variance")


def make_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


# ---------------------------------------------------------------------------------------
# The oracle: each metric on one fixed ordering, in plain Python


def _discount(spec: dict, r: int, k: int) -> float:
    kind = spec.get("discount", "log2")
    if kind == "log2":
        return 1.0 / math.log2(r + 1)
    if kind == "power":
        return r ** -spec.get("alpha", 1.0)
    if kind == "news":
        return 1.0 / (1.0 + math.log2(r) ** 1.5)
    if kind == "logb":  # Järvelin & Kekäläinen: ranks up to b undiscounted, then 1/log_b(r)
        base = spec.get("base", 2.0)
        return 1.0 if r <= base else 1.0 / math.log(r, base)
    return (k - r + 1) / k  # linear


def _gain(spec: dict, label: float) -> float:
    rel = max(label, 0.0)
    return 2.0 ** rel - 1.0 if spec.get("gain") == "exponential" else rel


def oracle_value(spec: dict, seq, k):
    """The metric ``spec`` of the labels ``seq`` listed best first; None if undefined."""
    name, gamma = spec["name"], spec.get("gamma", 1.0)
    n = len(seq)
    n_pos = sum(1 for x in seq if x > 0)
    n_neg = sum(1 for x in seq if x < 0)
    if n_pos == 0 or (name == "VAUC" and n_neg == 0):
        return None
    policy = spec.get("short_list", "pad")
    if k is None:
        kk = n
    elif policy == "skip" and n < k:
        return None
    else:
        kk = min(k, n) if policy == "truncate" else k
    top = list(seq[:kk])
    hits = sum(1 for x in top if x > 0)
    misses = sum(1 for x in top if x < 0)
    if name == "HR":
        return 1.0 if hits else 0.0
    if name == "Recall":
        return hits / n_pos
    if name == "Precision":
        return hits / kk
    if name in ("DCG", "NDCG"):
        dcg = sum(_gain(spec, x) * _discount(spec, r, kk) for r, x in enumerate(top, 1))
        if name == "DCG":
            return dcg
        ideal = sorted(seq, reverse=True)[:kk]
        idcg = sum(_gain(spec, x) * _discount(spec, r, kk) for r, x in enumerate(ideal, 1))
        return dcg / idcg if idcg > 0 else None
    if name in ("SDCG", "SNDCG"):
        sdcg = sum((1.0 if x > 0 else -gamma if x < 0 else 0.0) * _discount(spec, r, kk)
                   for r, x in enumerate(top, 1))
        if name == "SDCG":
            return sdcg
        return sdcg / sum(_discount(spec, r, kk) for r in range(1, min(kk, n_pos) + 1))
    if name == "MRR":
        return next((1.0 / r for r, x in enumerate(top, 1) if x > 0), 0.0)
    if name == "MAP":
        found, total = 0, 0.0
        for r, x in enumerate(top, 1):
            if x > 0:
                found += 1
                total += found / r
        z = min(kk, n_pos) if (k is not None and spec.get("ap_norm") == "min") else n_pos
        return total / z
    if name == "SHR":
        return (1.0 if hits else 0.0) - gamma * (1.0 if misses else 0.0)
    if name == "SRecall":
        return (hits - gamma * misses) / n_pos
    if name == "VAUC":
        good = sum(1 for i in range(n) for j in range(i + 1, n) if seq[i] > 0 and seq[j] < 0)
        return good / (n_pos * n_neg)
    raise AssertionError(name)


def spec_metric(spec: dict, k) -> RelMetric:
    opts = {key: v for key, v in spec.items() if key != "name"}
    return RelMetric(spec["name"], k, **opts)


GAMMAS = (0.0, 0.5, 1.0, 2.0)
CUT_SPECS = [
    {"name": "HR"}, {"name": "Recall"}, {"name": "Precision"},
    {"name": "Precision", "short_list": "truncate"}, {"name": "Precision", "short_list": "skip"},
    {"name": "DCG"}, {"name": "DCG", "gain": "exponential"},
    {"name": "NDCG"}, {"name": "NDCG", "gain": "exponential"},
    {"name": "NDCG", "discount": "power", "alpha": 0.5},
    {"name": "NDCG", "discount": "power", "alpha": 0.0},
    {"name": "NDCG", "discount": "news"}, {"name": "NDCG", "discount": "linear"},
    {"name": "NDCG", "discount": "linear", "short_list": "truncate"},
    {"name": "NDCG", "discount": "logb"}, {"name": "DCG", "discount": "logb", "base": 3.0},
    {"name": "MRR"}, {"name": "MAP"}, {"name": "MAP", "ap_norm": "min"},
] + [{"name": m, "gamma": g} for g in GAMMAS for m in ("SHR", "SRecall", "SDCG", "SNDCG")] + [
    {"name": "SNDCG", "gamma": 0.5, "discount": "news"},
    {"name": "SNDCG", "gamma": 1.0, "discount": "logb", "base": 10.0},
]
FULL_SPECS = [{"name": "MRR"}, {"name": "MAP"}, {"name": "NDCG"},
              {"name": "DCG", "gain": "exponential"}, {"name": "SNDCG", "gamma": 2.0},
              {"name": "VAUC"}]

SCORE_POOL = (np.inf, -np.inf, -0.0, 0.0, 1e-30, 1.0, 0.5, 2.0, -1.0, 1.0 + 1e-10)
INT_POOL = (np.iinfo(np.int64).min, -5, 0, 3, 2 ** 53, 2 ** 53 + 1, np.iinfo(np.int64).max)


def random_instances(rng, dtype, count):
    pool = np.array(INT_POOL if dtype == np.int64 else SCORE_POOL, dtype=object)
    rows = []
    for _ in range(count):
        n = int(rng.integers(1, 8))
        levels = rng.choice(pool, size=int(rng.integers(1, 5)), replace=False)
        scores = np.array(list(rng.choice(levels, size=n)), dtype=dtype)
        labels = rng.choice([-1, 0, 1, 2, 3], size=n, p=[0.2, 0.3, 0.25, 0.15, 0.1])
        rows.append((scores, labels.astype(np.int64)))
    return rows


def close(x, y, tol=1e-9):
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


# every run checks the first 12 rows of each dtype with at most 100 tie orders (a row of
# 1,260 orders costs seconds); the slow tier all 36, however many orders they have
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
@pytest.mark.parametrize("count", [12, pytest.param(36, marks=SLOW)])
def test_exhaustive_against_enumeration(dtype, count):
    rng = make_rng(f"exhaustive-{np.dtype(dtype).name}")
    rows = random_instances(rng, dtype, 36)
    orderings = [tie_orderings(s, list(lab)) for s, lab in rows]
    if count < len(rows):
        quick = [i for i, o in enumerate(orderings) if len(o) <= 100][:count]
        rows, orderings = [rows[i] for i in quick], [orderings[i] for i in quick]
    offsets = np.cumsum([0] + [len(s) for s, _ in rows])
    batch = RelBatch(np.concatenate([s for s, _ in rows]),
                     np.concatenate([lab for _, lab in rows]), offsets)
    # 'original' is whatever np.argsort(row * -1) gives on this machine; evaluate it with
    # the oracle too (integer rows holding the minimum use ~row, as the kernel documents).
    originals = []
    for s, lab in rows:
        key = s * -1 if (s.dtype.kind == "f" or not (s == np.iinfo(s.dtype).min).any()) else ~s
        originals.append(tuple(lab[np.argsort(key)]))
    jobs = [(spec, k) for spec in CUT_SPECS for k in range(1, 10)]
    jobs += [(spec, None) for spec in FULL_SPECS]
    failures = []
    checked = 0
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        for spec, k in jobs:
            metric = spec_metric(spec, k)
            got = batch.values(metric)
            for i, (s, lab) in enumerate(rows):
                if k is not None and k > len(s) + 2:
                    continue
                vals = [oracle_value(spec, seq, k) for seq in orderings[i]]
                where = f"{metric} row {list(s)} labels {list(lab)}"
                if vals[0] is None:
                    if got.defined[i] or not np.isnan(got.tie_aware[i]):
                        failures.append(f"{where}: should be undefined")
                    continue
                checked += 1
                mean = math.fsum(vals) / len(vals)
                var = math.fsum((v - mean) ** 2 for v in vals) / len(vals)
                hi, lo = max(vals), min(vals)
                orig = oracle_value(spec, originals[i], k)
                # every metric here has an exact variance, AP's included (the variance
                # over every tie order)
                expect = {"tie_aware": mean, "first": hi, "last": lo, "original": orig,
                          "variance": var}
                for col, want in expect.items():
                    have = float(getattr(got, col)[i])
                    if not close(have, want):
                        failures.append(f"{where}: {col} {have!r} != {want!r}")
                if not got.defined[i]:
                    failures.append(f"{where}: should be defined")
                if bool(got.tie_decided[i]) != (hi - lo > 1e-9):
                    failures.append(f"{where}: tie_decided {got.tie_decided[i]} but "
                                    f"range [{lo}, {hi}]")
                if not (got.last[i] <= got.tie_aware[i] <= got.first[i]):
                    failures.append(f"{where}: tie_aware outside [last, first]")
                if spec["name"] == "SNDCG" and k is not None:
                    # ISDCG = D[min(K, R)] is the literal ideal whenever K <= n - |N|.
                    n_neg = int((lab < 0).sum())
                    kk = min(k, len(s)) if spec.get("short_list") == "truncate" else k
                    if kk <= len(s) - n_neg:
                        ideal = sorted((int(x) for x in lab), reverse=True,
                                       key=lambda x: (x > 0) - (x < 0))
                        sdcg = oracle_value(dict(spec, name="SDCG"), tuple(ideal), k)
                        if sdcg <= 0 or not close(oracle_value(spec, tuple(ideal), k), 1.0):
                            failures.append(f"{where}: ISDCG is not the literal ideal")
    assert not failures, f"{len(failures)} failures, e.g.\n" + "\n".join(failures[:15])
    assert checked > 4000 * count // 36  # enough rows have defined values


# ---------------------------------------------------------------------------------------
# scikit-learn's tie-averaged NDCG


@pytest.mark.parametrize("seed", seeds(3))
def test_ndcg_matches_sklearn_tie_averaged(seed):
    # 20 random rows a seed: the first seed every run, all three in the slow tier
    sk = pytest.importorskip("sklearn.metrics")
    rng = make_rng(f"sklearn-{seed}")
    for _ in range(20):
        n = int(rng.integers(2, 14))
        scores = rng.integers(0, 4, size=n).astype(np.float64) / 2
        labels = rng.integers(0, 4, size=n)
        if labels.max() == 0:
            labels[rng.integers(n)] = 2
        for k in (1, 2, 3, 5, 10, 20):
            lin = relevance_values(scores, labels, np.array([0, n]), RelMetric("NDCG", k))
            exp = relevance_values(scores, labels, np.array([0, n]),
                                   RelMetric("NDCG", k, gain="exponential"))
            dcg = relevance_values(scores, labels, np.array([0, n]), RelMetric("DCG", k))
            want_lin = sk.ndcg_score([labels], [scores], k=k, ignore_ties=False)
            want_exp = sk.ndcg_score([2.0 ** labels - 1], [scores], k=k, ignore_ties=False)
            want_dcg = sk.dcg_score([labels], [scores], k=k, ignore_ties=False)
            assert lin.tie_aware[0] == pytest.approx(want_lin, rel=1e-12, abs=1e-15)
            assert exp.tie_aware[0] == pytest.approx(want_exp, rel=1e-12, abs=1e-15)
            assert dcg.tie_aware[0] == pytest.approx(want_dcg, rel=1e-12, abs=1e-15)


def test_sklearn_multi_row_batch():
    sk = pytest.importorskip("sklearn.metrics")
    rng = make_rng("sklearn-batch")
    rows, n = 40, 25
    scores = rng.integers(0, 6, size=(rows, n)).astype(np.float32)
    labels = rng.integers(0, 4, size=(rows, n))
    labels[:, 0] = 1  # every row defined
    got = RelBatch(scores, labels).values(RelMetric("NDCG", 7))
    for i in range(rows):
        want = sk.ndcg_score(labels[i:i + 1], scores[i:i + 1].astype(np.float64), k=7,
                             ignore_ties=False)
        assert got.tie_aware[i] == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Signed metrics reduce to the unsigned ones; V-AUC by a double loop


def _random_ragged(rng, rows, max_n, labels=(-1, 0, 1, 2, 3), levels=5, dtype=np.float32):
    n = rng.integers(0, max_n + 1, size=rows)
    offsets = np.concatenate(([0], np.cumsum(n)))
    scores = (rng.integers(0, levels, size=offsets[-1]) / 4).astype(dtype)
    lab = rng.choice(np.array(labels), size=offsets[-1])
    return scores, lab, offsets


def _rows(v: InstanceValues, rows) -> InstanceValues:
    return InstanceValues(*(getattr(v, f)[rows] for f in COLUMNS + ("tie_decided", "defined")))


def _assert_same(a: InstanceValues, b: InstanceValues, rtol=0.0):
    for col in COLUMNS:
        x, y = getattr(a, col), getattr(b, col)
        if rtol and col in ("tie_aware", "variance"):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-16, err_msg=col)
        else:
            np.testing.assert_array_equal(x, y, err_msg=col)
    np.testing.assert_array_equal(a.tie_decided, b.tie_decided)
    np.testing.assert_array_equal(a.defined, b.defined)


def test_signed_metrics_at_gamma_zero_equal_unsigned():
    rng = make_rng("gamma0")
    scores, lab, offsets = _random_ragged(rng, 300, 30)
    signed = RelBatch(scores, lab, offsets)
    binary = RelBatch(scores, (lab > 0).astype(np.int64), offsets)
    for k in (1, 3, 10, 40):
        # Same values by different closed forms: equal up to rounding.
        _assert_same(signed.values(RelMetric("SHR", k, gamma=0)),
                     signed.values(RelMetric("HR", k)), rtol=1e-13)
        _assert_same(signed.values(RelMetric("SRecall", k, gamma=0)),
                     signed.values(RelMetric("Recall", k)), rtol=1e-13)
        for d in ("log2", "news"):
            s, u = (signed.values(RelMetric("SNDCG", k, gamma=0, discount=d)),
                    binary.values(RelMetric("NDCG", k, discount=d)))
            for col in COLUMNS:
                np.testing.assert_allclose(getattr(s, col), getattr(u, col), rtol=1e-13,
                                           atol=1e-15, err_msg=col)
            np.testing.assert_array_equal(s.tie_decided, u.tie_decided)
            sd, ud = (signed.values(RelMetric("SDCG", k, gamma=0)),
                      binary.values(RelMetric("DCG", k)))
            np.testing.assert_allclose(sd.tie_aware, ud.tie_aware, rtol=1e-13, atol=1e-15)


def test_vauc_double_loop():
    rng = make_rng("vauc")
    scores, lab, offsets = _random_ragged(rng, 200, 25, labels=(-1, 0, 1), levels=4,
                                          dtype=np.float16)
    got = relevance_values(scores, lab, offsets, "V-AUC")
    for i in range(len(offsets) - 1):
        s, y = scores[offsets[i]:offsets[i + 1]], lab[offsets[i]:offsets[i + 1]]
        pos, neg = s[y > 0], s[y < 0]
        if len(pos) == 0 or len(neg) == 0:
            assert not got.defined[i] and np.isnan(got.tie_aware[i])
            continue
        greater = ties = 0
        for sp in pos:
            for sn in neg:
                greater += bool(sp > sn)
                ties += bool(sp == sn)
        pairs = len(pos) * len(neg)
        assert got.tie_aware[i] == pytest.approx((greater + 0.5 * ties) / pairs, rel=1e-14)
        assert got.last[i] == pytest.approx(greater / pairs, rel=1e-14)  # strict
        assert got.first[i] == pytest.approx((greater + ties) / pairs, rel=1e-14)
        assert got.tie_decided[i] == (ties > 0)


# ---------------------------------------------------------------------------------------
# Batches: ragged == row by row; dense == ragged; single positive == tieeval.kernels.closed_forms


BATCH_METRICS = ["HR@5", "Recall@10", "P@10", "NDCG@10", "NDCG(gain=exp)@3", "DCG", "MRR",
                 "RR@5", "AP", "MAP@20", "SHR@5", "SRecall@10", "SNDCG@10", "SDCG@4", "V-AUC",
                 "NDCG(discount=power, alpha=0.7)@8", "NDCG(discount=linear)@20",
                 "P(short_list=truncate)@20"]


def test_ragged_batch_equals_row_by_row():
    rng = make_rng("ragged")
    scores, lab, offsets = _random_ragged(rng, 80, 30, levels=3, dtype=np.float64)
    batch = RelBatch(scores, lab, offsets)
    assert (np.diff(offsets) == 0).any()  # empty rows are in the batch
    for text in BATCH_METRICS:
        metric = parse_rel_metric(text)
        whole = batch.values(metric)
        for i in range(len(offsets) - 1):
            lo, hi = offsets[i], offsets[i + 1]
            one = relevance_values(scores[lo:hi], lab[lo:hi], np.array([0, hi - lo]), metric)
            _assert_same(one, _rows(whole, slice(i, i + 1)))


def test_original_is_the_codebases_argsort():
    # Long rows take numpy's SIMD sorting paths; the kernel sorts rows of one length as a
    # 2-D array, and each row must come out as the 1-D np.argsort(row * -1) orders it.
    rng = make_rng("original")
    metrics = [parse_rel_metric(t) for t in ("NDCG@10", "MRR", "MAP@50", "SRecall@20")]
    specs = [{"name": "NDCG"}, {"name": "MRR"}, {"name": "MAP"}, {"name": "SRecall"}]
    lengths = [16, 16, 101, 101, 101, 1000, 1000, 5000, 5000]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    scores = rng.random(offsets[-1]).astype(np.float32)
    scores[rng.random(offsets[-1]) < 0.6] = 1.0  # a saturated top tie in every row
    labels = rng.choice([-1, 0, 0, 1, 2], size=offsets[-1])
    batch = RelBatch(scores, labels, offsets)
    for metric, spec in zip(metrics, specs):
        got = batch.values(metric)
        for i in range(len(lengths)):
            row = scores[offsets[i]:offsets[i + 1]]
            seq = tuple(labels[offsets[i]:offsets[i + 1]][np.argsort(row * -1)])
            assert got.original[i] == pytest.approx(oracle_value(spec, seq, metric.k),
                                                    rel=1e-12)
            assert got.last[i] <= got.original[i] <= got.first[i]


def test_dense_equals_ragged():
    rng = make_rng("dense")
    scores = (rng.integers(0, 5, size=(50, 12)) / 3).astype(np.float32)
    lab = rng.choice([-1, 0, 1, 2], size=(50, 12))
    offsets = np.arange(51) * 12
    for text in BATCH_METRICS:
        _assert_same(relevance_values(scores, lab, None, text),
                     relevance_values(scores.ravel(), lab.ravel(), offsets, text))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_positive_matches_metrics_module(dtype):
    rng = make_rng(f"single-{np.dtype(dtype).name}")
    rows, n = 400, 101
    # Saturated scores: many rows tie the positive at the top, others deep in a big block.
    scores = rng.choice(np.array([1.0, 1.0, 0.75, 0.5, 0.25], dtype=dtype), size=(rows, n))
    scores[:50] = rng.random((50, n)).astype(dtype)  # some rows without ties
    positive = rng.integers(0, n, size=rows)
    labels = np.zeros((rows, n), dtype=np.int64)
    labels[np.arange(rows), positive] = 1
    counts = dense_counts(scores, positive)
    batch = RelBatch(scores, labels)
    for name, k in [("HR", 1), ("HR", 5), ("HR", 10), ("NDCG", 1), ("NDCG", 5),
                    ("NDCG", 10), ("MRR", None)]:
        want = single_positive(Metric(name, k), counts.a, counts.b, counts.original)
        got = batch.values(RelMetric(name, k))
        for col in ("original", "first", "last"):
            np.testing.assert_array_equal(getattr(got, col), getattr(want, col), err_msg=col)
        np.testing.assert_allclose(got.tie_aware, want.tie_aware, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.variance, want.variance, rtol=1e-9, atol=1e-14)
        np.testing.assert_array_equal(got.tie_decided, want.tie_decided)
        assert got.defined.all()


# ---------------------------------------------------------------------------------------
# Numerics at depth


def test_rr_shortcut_equals_general_path():
    rng = make_rng("rr-shortcut")
    size = 3000
    a = rng.integers(0, 10 ** 6, size=size)
    a[:500] = rng.integers(0, 100, size=500)
    nb = rng.integers(1, 3000, size=size)
    k = np.where(rng.random(size) < 0.5, a + rng.integers(0, 4000, size=size), 10 ** 9)
    p = np.ones(size, dtype=np.int64)
    fast = rr_moments(a, nb, p, k, shortcut=True)
    slow = rr_moments(a, nb, p, k, shortcut=False)
    np.testing.assert_allclose(fast[0], slow[0], rtol=2e-13, atol=0)
    np.testing.assert_allclose(fast[1], slow[1], rtol=2e-13, atol=0)


def test_rr_moments_exact_at_depth():
    # E[RR] = sum_j C(nb-j, p-1)/C(nb, p) / (a+j), in exact rationals.
    cases = [(0, 5, 1, 10 ** 9), (99_950, 40, 1, 10 ** 9), (250_000, 300, 1, 250_100),
             (99_950, 40, 3, 10 ** 9), (70_000, 60, 2, 70_030), (5, 200, 7, 10 ** 9)]
    a, nb, p, k = (np.array(c) for c in zip(*cases))
    e1, e2 = rr_moments(a, nb, p, k)
    for i, (ai, ni, pi, ki) in enumerate(cases):
        top = min(ni - pi + 1, ki - ai)
        pmf = [Fraction(math.comb(ni - j, pi - 1), math.comb(ni, pi)) for j in range(1, top + 1)]
        want1 = sum(w / (ai + j) for j, w in enumerate(pmf, 1))
        want2 = sum(w / (ai + j) ** 2 for j, w in enumerate(pmf, 1))
        assert e1[i] == pytest.approx(float(want1), rel=1e-14)
        assert e2[i] == pytest.approx(float(want2), rel=1e-13)


def _exact_ap(sequence_relevant, depth_cut, z):
    found, total = 0, Fraction(0)
    for r in sorted(sequence_relevant):
        if r > depth_cut:
            break
        found += 1
        total += Fraction(found, r)
    return total / z


@pytest.mark.parametrize("p_block,k", [(2, None), (3, None), (2, 99_917), (3, 99_930)])
def test_ap_segment_sums_at_depth(p_block, k):
    # 100_000 candidates: distinct scores with 6 relevant items spread over the top part,
    # then a 40-item tie block at depth a = 99_900 holding p_block relevant items, then
    # 60 more distinct scores (one relevant). E[AP] is the exact average over every
    # placement of the block's relevant items (uniform by symmetry), in Fractions.
    n, a, size = 100_000, 99_900, 40
    scores = -np.arange(n, dtype=np.float64)
    scores[a:a + size] = -a
    labels = np.zeros(n, dtype=np.int64)
    above = [1, 17, 900, 45_000, 99_000, 99_899]  # 1-based ranks
    labels[np.array(above) - 1] = 1
    labels[a + np.arange(p_block)] = 1
    labels[a + size + 10] = 1
    order = np.random.default_rng(3).permutation(n)  # the kernel must not rely on layout
    metric = RelMetric("MAP", k)
    got = relevance_values(scores[order], labels[order], np.array([0, n]), metric)
    total_rel = len(above) + p_block + 1
    cut = n if k is None else k
    values = []
    for slots in itertools.combinations(range(1, size + 1), p_block):
        ranks = above + [a + s for s in slots] + [a + size + 11]
        values.append(_exact_ap(ranks, cut, total_rel))
    want = sum(values) / len(values)
    assert got.tie_aware[0] == pytest.approx(float(want), rel=1e-14)
    assert got.first[0] == pytest.approx(float(max(values)), rel=1e-14)
    assert got.last[0] == pytest.approx(float(min(values)), rel=1e-14)
    assert got.tie_decided[0]


# ---------------------------------------------------------------------------------------
# Edge cases and policies


def test_nan_policies():
    scores = np.array([np.nan, 1.0, np.nan, 0.5, np.nan])
    labels = np.array([1, 0, 2, 1, -1])
    with pytest.raises(InputError, match="NaN score in row 0"):
        relevance_values(scores, labels, np.array([0, 5]), "NDCG@3")
    # 'worst': NaN ranks below every number and NaNs tie, as -inf would here.
    as_inf = np.where(np.isnan(scores), -np.inf, scores)
    for text in BATCH_METRICS:
        worst = relevance_values(scores, labels, np.array([0, 5]), text, nan_policy="worst")
        inf = relevance_values(as_inf, labels, np.array([0, 5]), text)
        for col in ("first", "last", "tie_aware", "variance"):
            np.testing.assert_array_equal(getattr(worst, col), getattr(inf, col))


def test_undefined_rows_never_divide():
    scores = np.array([1.0, 1.0, 0.0, 2.0, 2.0, 3.0])
    labels = np.array([0, 0, -1, 1, -1, 1])
    offsets = np.array([0, 3, 3, 5, 6])  # no positive; empty; both; a positive only
    with np.errstate(all="raise"):
        for text in BATCH_METRICS:
            v = relevance_values(scores, labels, offsets, text)
            assert not v.defined[0] and not v.defined[1]
            assert np.isnan(v.tie_aware[:2]).all() and not v.tie_decided[:2].any()
            vauc = parse_rel_metric(text).name == "V-AUC"
            assert v.defined[2] and v.defined[3] != vauc


def test_short_list_policies():
    scores = np.array([3.0, 2.0, 2.0])
    labels = np.array([1, 0, 1])
    off = np.array([0, 3])
    pad = relevance_values(scores, labels, off, "P@10")
    trunc = relevance_values(scores, labels, off, "P(short_list=truncate)@10")
    skip = relevance_values(scores, labels, off, "P(short_list=skip)@10")
    assert pad.tie_aware[0] == pytest.approx(2 / 10)  # TREC: divide by K
    assert trunc.tie_aware[0] == pytest.approx(2 / 3)
    assert not skip.defined[0] and not skip.tie_decided[0]
    assert relevance_values(scores, labels, off, "P(short_list=skip)@3").tie_aware[0] == \
        pytest.approx(2 / 3)
    # HR, Recall, RR and log2 NDCG do not depend on the policy.
    for text in ("HR@10", "Recall@10", "RR@10", "NDCG@10", "MAP@10", "SNDCG@10"):
        a = relevance_values(scores, labels, off, text)
        b = relevance_values(scores, labels, off, text.replace("@", "(short_list=truncate)@"))
        _assert_same(a, b)


def test_integer_scores_are_not_negated():
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    scores = np.array([lo, hi, lo, 0, hi], dtype=np.int64)
    labels = np.array([1, 0, 0, 1, 1])
    v = relevance_values(scores, labels, np.array([0, 5]), "MRR")
    # Ranking: block {hi: labels 0, 1}, then 0 (label 1), then block {lo: labels 1, 0}.
    assert v.first[0] == 1.0 and v.last[0] == 0.5 and v.tie_aware[0] == pytest.approx(0.75)
    assert v.last[0] <= v.original[0] <= v.first[0]


def test_float32_ties_are_judged_on_the_stored_dtype():
    s64 = 1.0 + np.arange(5) * 1e-10  # five distinct doubles, one float32
    labels = np.array([1, 0, 0, 0, 0])  # the positive has the lowest double
    distinct = relevance_values(s64, labels, np.array([0, 5]), "HR@1")
    tied = relevance_values(s64.astype(np.float32), labels, np.array([0, 5]), "HR@1")
    assert distinct.tie_aware[0] == 0.0 and not distinct.tie_decided[0]
    assert tied.tie_aware[0] == pytest.approx(0.2) and tied.tie_decided[0]


def test_original_order_can_be_skipped():
    v = relevance_values(np.array([1.0, 1.0]), np.array([1, 0]), np.array([0, 2]), "HR@1",
                         original_order=False)
    assert np.isnan(v.original).all() and v.tie_aware[0] == 0.5


def test_bad_inputs():
    s, y = np.array([1.0, 2.0]), np.array([1, 0])
    with pytest.raises(ParameterError, match="offsets"):
        relevance_values(s, y, np.array([0, 3]), "HR@1")
    with pytest.raises(ParameterError, match="shape"):
        relevance_values(s, y[:1], np.array([0, 2]), "HR@1")
    with pytest.raises(ParameterError, match="2-D"):
        relevance_values(s, y, None, "HR@1")
    with pytest.raises(ParameterError, match="float or integer"):
        relevance_values(s.astype(bool), y, np.array([0, 2]), "HR@1")
    with pytest.raises(InputError, match="finite"):
        relevance_values(s, np.array([1.0, np.nan]), np.array([0, 2]), "HR@1")
    with pytest.raises(ParameterError, match="nan_policy"):
        relevance_values(s, y, np.array([0, 2]), "HR@1", nan_policy="best")
    with pytest.raises(ParameterError, match="overflows"):
        relevance_values(s, np.array([2000, 0]), np.array([0, 2]), "NDCG(gain=exp)@1")


# ---------------------------------------------------------------------------------------
# Parsing: a metric is a value


@pytest.mark.parametrize("text,name,k", [
    ("NDCG@10", "NDCG", 10), ("sndcg@20", "SNDCG", 20), ("MAP@100", "MAP", 100),
    ("MRR", "MRR", None), ("V-AUC", "V-AUC", None), ("vauc", "V-AUC", None),
    ("RR@10", "MRR", 10), ("Recall@20", "Recall", 20), ("P@10", "Precision", 10),
    ("precision@10", "Precision", 10), ("HR@5", "HR", 5), ("SHR@10", "SHR", 10),
    ("SRecall@10", "SRecall", 10), ("s-recall @ 10", "SRecall", 10), ("AP", "MAP", None),
    ("dcg", "DCG", None), ("SDCG@3", "SDCG", 3),
])
def test_parse_names(text, name, k):
    m = parse_rel_metric(text)
    assert (m.name, m.k) == (name, k)
    assert parse_rel_metric(str(m)) == m


def test_parse_options_round_trip():
    cases = ["NDCG(gain=exp)@10", "NDCG(discount=power, alpha=0.5)@5",
             "SNDCG(gamma=0.5, discount=news)@20", "MAP(ap_norm=min)@10",
             "P(short_list=truncate)@10", "SHR(gamma=2)@1", "NDCG(discount=linear)@3",
             "NDCG(discount=logb, base=10)@5"]
    for text in cases:
        m = parse_rel_metric(text)
        assert parse_rel_metric(str(m)) == m
        assert hash(parse_rel_metric(str(m))) == hash(m)
    assert str(parse_rel_metric("ndcg(gain=exp)@10")) == "NDCG(gain=exponential)@10"
    assert parse_rel_metric("SNDCG@20", gamma=0.5) == RelMetric("SNDCG", 20, gamma=0.5)
    assert str(RelMetric("AP", 10, ap_norm="min")) == "MAP(ap_norm=min)@10"
    assert {RelMetric("NDCG", 10): 1}[parse_rel_metric("ndcg@10")] == 1


@pytest.mark.parametrize("text,match", [
    ("FOO@10", "choose from HR, Recall, Precision, DCG, NDCG, MRR, MAP, SHR, SRecall, SDCG, "
               "SNDCG, V-AUC"),
    ("HR", "HR needs a cutoff"), ("V-AUC@5", "takes no cutoff"), ("NDCG@0", ">= 1"),
    ("NDCG@x", "whole number"), ("NDCG@", "cannot parse"), ("HR(gamma=2)@5", "does not apply"),
    ("NDCG(alpha=2)@5", "unless discount=power"), ("NDCG(gain=cubic)@5", "gain must be"),
    ("NDCG(base=3)@5", "unless discount=logb"), ("NDCG(discount=logb, base=1)@5", "> 1"),
    ("SHR(gamma=-1)@5", ">= 0"), ("SHR(gamma=x)@5", "gamma must be a number"),
    ("NDCG(foo=1)@5", "bad option"), ("MAP(ap_norm=min)", "without a cutoff"),
    ("MRR(short_list=skip)", "without a cutoff"),
])
def test_parse_errors(text, match):
    with pytest.raises(ParameterError, match=match.replace("(", r"\(").replace(")", r"\)")):
        parse_rel_metric(text)


def test_parse_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse_rel_metric("nDCG@ten")
    with pytest.raises(ParameterError, match="given twice"):
        parse_rel_metric("SHR(gamma=1)@5", gamma=2)
    with pytest.raises(ParameterError, match="K must be"):
        RelMetric("HR", True)


def test_registry_lists_every_name():
    assert rel_metric_names() == ["HR", "Recall", "Precision", "DCG", "NDCG", "MRR", "MAP",
                                  "SHR", "SRecall", "SDCG", "SNDCG", "V-AUC", "Success",
                                  "Rprec", "Bpref", "Judged", "NumRet", "NumRel",
                                  "NumRelRet", "NumQ", "GMAP", "ERR", "IPrec", "AUC",
                                  "AUC-cut", "InfAP", "GBpref", "RprecMult", "Utility",
                                  "IPrec11pt", "BinG",
                                  "NormGain", "NDCG-rel", "Rndcg", "RelativeP", "SetP", "SetRelP",
                                  "SetR", "SetAP", "SetF", "NumNonRelJudgedRet", "TrecRBP",
                                  "TrecRBP-resid", "Unjudged"]
    suffix = {"required": "@5", "level": "@0.5"}
    for key, spec in REL_REGISTRY.items():
        assert parse_rel_metric(key + suffix.get(spec.cutoff, "")).name == spec.name


def test_docstring_examples():
    import doctest

    import tieeval.kernels.tie_blocks

    assert doctest.testmod(tieeval.kernels.tie_blocks).failed == 0
