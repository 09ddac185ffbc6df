"""AUC-cut@K, the AUC of a top-K list (implicit's auc@K), against every tie order.

Oracles: implicit's loop (evaluation.pyx, ranking_metrics_at_k) written out on one ordering
of labels, applied to every tie order of small rows (``helpers.tie_orderings``); a pair
count written out as its definition (1 for a relevant item above another in the top K, 1/2
for a pair below K); and closed forms derived by hand for a row whose scores all tie. No
expected number comes from tieeval's own output.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import rel_batch, tie_orderings

import tieeval
from tieeval.errors import ParameterError
from tieeval.kernels.tie_blocks import RelBatch
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelMetric


def implicit_auc(seq, k) -> float:
    """implicit 0.7.3's auc of one user: ``seq`` the labels by place, every item a
    candidate (its ``items`` columns)."""
    likes = [x > 0 for x in seq]
    num_pos = sum(likes)
    num_neg = len(seq) - num_pos
    hit = miss = 0
    auc = 0.0
    for i in range(k):
        if i < len(seq) and likes[i]:
            hit += 1
        else:  # a place past the list is implicit's -1 padding: a miss
            miss += 1
            auc += hit
    auc += ((hit + num_pos) / 2.0) * (num_neg - miss)
    return auc / (num_pos * num_neg)


def pair_auc(seq, k) -> Fraction:
    """The same value as a sum over (relevant, other) pairs, in exact fractions."""
    rel = [x > 0 for x in seq]
    total = Fraction(0)
    for i, ri in enumerate(rel):
        for j, rj in enumerate(rel):
            if ri and not rj:
                if i < k and i < j:
                    total += 1  # the relevant item in the top K, above the other
                elif i >= k and j >= k:
                    total += Fraction(1, 2)  # both below K
    return total / (sum(rel) * (len(rel) - sum(rel)))


def moments(values):
    mean = math.fsum(values) / len(values)
    return mean, math.fsum((v - mean) ** 2 for v in values) / len(values)


def close(x, y, tol=1e-12):
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


def test_auc_cut_against_every_tie_order():
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(300):
        n = int(rng.integers(2, 8))
        scores = rng.choice(np.array([0.0, 0.5, 1.0, 2.0, -0.0]), n)
        labels = rng.choice(np.array([-1, 0, 0, 1, 2]), n)
        k = int(rng.integers(1, n + 2))
        got = RelBatch(scores[None, :], labels[None, :]).values(RelMetric("AUC-cut", k))
        rel = labels > 0
        if not (rel.any() and (~rel).any()):
            assert not got.defined[0] and np.isnan(got.tie_aware[0])
            continue
        orders = tie_orderings(scores, labels)
        values = [implicit_auc(seq, k) for seq in orders]
        assert all(close(v, float(pair_auc(seq, k))) for v, seq in zip(values, orders))
        mean, var = moments(values)
        assert close(got.tie_aware[0], mean) and close(got.variance[0], var)
        # monotone in the relevant items' places: relevant first and last are its extremes
        assert close(got.first[0], max(values)) and close(got.last[0], min(values))
        assert got.tie_decided[0] == (max(values) > min(values) + 1e-12)
        checked += 1
    assert checked > 200


def test_auc_cut_original_on_ragged_rows():
    # the Original column (a stable sort of each row) and rows of several lengths in one
    # batch
    rng = np.random.default_rng(12)
    sizes = rng.integers(2, 9, 40)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    scores = rng.integers(0, 3, offsets[-1]).astype(np.float64)
    labels = rng.integers(0, 2, offsets[-1])
    labels[offsets[:-1]] = 1
    labels[offsets[:-1] + 1] = 0
    for k in (1, 4, 9):
        got = rel_batch(scores, labels, offsets, original="stable").values(
            RelMetric("AUC-cut", k))
        for i in range(len(sizes)):
            s, lab = scores[offsets[i]:offsets[i + 1]], labels[offsets[i]:offsets[i + 1]]
            order = np.argsort(-s, kind="stable")
            assert close(got.original[i], implicit_auc(lab[order], k))
            mean, var = moments([implicit_auc(seq, k) for seq in tie_orderings(s, lab)])
            assert close(got.tie_aware[i], mean) and close(got.variance[i], var)


def test_auc_cut_is_the_auc_of_the_ranking_at_k_past_its_end():
    rng = np.random.default_rng(13)
    scores = rng.integers(0, 4, (20, 7)).astype(np.float64)
    labels = rng.integers(0, 2, (20, 7))
    labels[:, :2] = [1, 0]
    batch = RelBatch(scores, labels)
    auc, cut = batch.values(RelMetric("AUC")), batch.values(RelMetric("AUC-cut", 7))
    for column in ("first", "last", "tie_aware", "variance"):
        assert np.allclose(getattr(auc, column), getattr(cut, column), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("n", "p"), [(5, 1), (6, 2), (7, 3), (4, 3)])
def test_auc_cut_of_a_row_whose_scores_all_tie(n, p):
    # By symmetry a pair's two places are a uniform pair of places: it counts 1 with
    # probability 1/2 (1 - q), q the chance that both are below K, and 1/2 with
    # probability q, so E = 1/2 at every K. Relevant items first: 1 when K >= P, else
    # (K + P) / (2P); last: (N - K) / (2N) when K <= N.
    big_n = n - p
    labels = np.array([1] * p + [0] * big_n)
    scores = np.zeros((1, n))
    batch = RelBatch(scores, labels[None, :])
    for k in range(1, n + 1):
        got = batch.values(RelMetric("AUC-cut", k))
        assert close(got.tie_aware[0], 0.5)
        assert close(got.first[0], 1.0 if k >= p else (k + p) / (2 * p))
        if k <= big_n:
            assert close(got.last[0], (big_n - k) / (2 * big_n))
        if p == 1:
            # one relevant item, its rank r uniform on 1..n: (N - r + 1) / N in the top K,
            # (N - K) / (2N) below it
            values = [Fraction(big_n - r + 1, big_n) if r <= k else Fraction(big_n - k,
                                                                            2 * big_n)
                      for r in range(1, n + 1)]
            mean = sum(values) / n
            var = sum((v - mean) ** 2 for v in values) / n
            assert mean == Fraction(1, 2)
            assert close(got.variance[0], float(var))


def test_auc_cut_undefined_rows_and_its_name():
    scores = np.array([[1.0, 0.5, 0.5], [1.0, 0.5, 0.0], [1.0, 1.0, 0.0]])
    labels = np.array([[0, 0, 0], [1, 1, 1], [1, 0, 0]])
    got = RelBatch(scores, labels).values(RelMetric("AUC-cut", 2))
    assert list(got.defined) == [False, False, True]
    # names ignore case, - and _, and print back canonically; a cutoff is required
    assert str(Metric.parse("auc_cut@10")) == "AUC-cut@10"
    with pytest.raises(ParameterError) as refused:
        Metric.parse("AUC-cut")
    assert str(refused.value) == "AUC-cut needs a cutoff, e.g. AUC-cut@10"


def test_auc_cut_through_evaluate_with_a_family_name():
    rng = np.random.default_rng(14)
    scores = rng.integers(0, 3, (12, 6)).astype(np.float64)
    labels = rng.integers(0, 2, (12, 6))
    labels[:, :2] = [1, 0]
    run = tieeval.evaluate(scores, labels=labels, metrics="AUC-cut", k=[2, 4])
    for k in (2, 4):
        row = run.metric(f"AUC-cut@{k}")
        means = [moments([implicit_auc(seq, k) for seq in tie_orderings(s, lab)])[0]
                 for s, lab in zip(scores, labels)]
        assert close(row.tie_aware, math.fsum(means) / len(means))
        assert row.tie_aware_std is not None
