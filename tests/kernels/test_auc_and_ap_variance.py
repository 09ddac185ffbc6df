"""AUC against every other candidate, and the exact tie-break variance of AP.

Oracles: every tie order of small rows (``helpers.tie_orderings``) with the definitions
written out as plain loops, scikit-learn's ``roc_auc_score`` per row (which counts a tied
pair one half) and a strict double loop (a tied pair counts 0: Cornac's AUC). No expected
number comes from tieeval's own output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import tie_orderings

import tieeval
from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.options import RelMetric

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def auc_of(seq) -> float:
    """AUC of one ordering (labels by place): relevant items ranked above others."""
    rel = [x > 0 for x in seq]
    pairs = sum(rel) * (len(rel) - sum(rel))
    above = sum(1 for i, r in enumerate(rel) if r for j in range(i + 1, len(rel)) if not rel[j])
    return above / pairs


def ap_of(seq, k=None, norm=None) -> float:
    """AP@K of one ordering, divided by R (or ``norm``)."""
    rel = [x > 0 for x in seq]
    hits, total = 0, 0.0
    for r, x in enumerate(rel[:k] if k else rel, 1):
        if x:
            hits += 1
            total += hits / r
    return total / (norm if norm else sum(rel))


def moments(values):
    mean = math.fsum(values) / len(values)
    return mean, math.fsum((v - mean) ** 2 for v in values) / len(values)


def close(x, y, tol=1e-12):
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


def random_rows(seed: int, count: int, max_n: int = 7):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, max_n + 1))
        scores = rng.choice(np.array([0.0, 0.5, 1.0, 2.0, -0.0]), n)
        labels = rng.choice(np.array([-1, 0, 0, 1, 2]), n)
        yield scores, labels


def test_auc_against_every_tie_order():
    checked = 0
    for scores, labels in random_rows(1, 300):
        rel = labels > 0
        rb = RelBatch(scores[None, :], labels[None, :])
        got = rb.values(RelMetric("AUC"))
        if not (rel.any() and (~rel).any()):
            assert not got.defined[0] and np.isnan(got.tie_aware[0])
            continue
        values = [auc_of(seq) for seq in tie_orderings(scores, labels)]
        mean, var = moments(values)
        assert close(got.tie_aware[0], mean) and close(got.variance[0], var)
        assert close(got.first[0], max(values)) and close(got.last[0], min(values))
        assert got.tie_decided[0] == (max(values) > min(values))
        checked += 1
    assert checked > 150


def test_auc_is_sklearn_roc_auc_per_row_and_last_is_strict():
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 6, size=(40, 30)).astype(np.float32)  # heavy ties
    labels = (rng.random((40, 30)) < 0.2).astype(np.int64)
    labels[0] = 0  # no relevant item: skipped
    labels[1] = 1  # no other candidate: skipped
    got = RelBatch(scores, labels).values(RelMetric("AUC"))
    for i in range(40):
        y = labels[i] > 0
        if y.all() or not y.any():
            assert not got.defined[i]
            continue
        want = sklearn_metrics.roc_auc_score(y, scores[i])
        pos, oth = scores[i][y], scores[i][~y]
        strict = (pos[:, None] > oth[None, :]).mean()
        loose = (pos[:, None] >= oth[None, :]).mean()
        assert close(got.tie_aware[i], want) and close(got.last[i], strict)
        assert close(got.first[i], loose)


def test_auc_on_the_sparse_table_equals_the_full_table():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 50, size=(30, 400)).astype(np.float64)
    labels = np.zeros((30, 400), dtype=np.int64)
    for i in range(30):
        labels[i, rng.choice(400, 6, replace=False)] = rng.integers(-1, 3, 6)
    metric = RelMetric("AUC")
    full = RelBatch(scores, labels).values(metric)
    sparse = RelBatch(scores, labels, options=TableOptions(sparse=True)).values(metric)
    for column in ("original", "first", "last", "tie_aware", "variance"):
        np.testing.assert_array_equal(getattr(full, column), getattr(sparse, column))


def test_auc_dataset_figure_through_the_api():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 4, size=(25, 12)).astype(np.float64)
    labels = (rng.random((25, 12)) < 0.3).astype(np.int64)
    labels[:, 0] = 1
    result = tieeval.evaluate(scores, labels=labels, metrics=["AUC"])
    row = result.metric("AUC")
    per_row = [sklearn_metrics.roc_auc_score(labels[i] > 0, scores[i]) for i in range(25)
               if not (labels[i] > 0).all()]
    assert row.instances == len(per_row)
    assert row.tie_aware == pytest.approx(math.fsum(per_row) / len(per_row), rel=1e-12)
    assert row.last <= row.tie_aware <= row.first and row.tie_aware_std > 0


def test_ap_variance_deep_in_the_ranking():
    # a tied block of 7 (3 relevant) below 100,000 untied candidates (2 relevant): the
    # variance against every order of the block, with the deep reciprocal places exact
    above = 100_000
    scores = np.concatenate((np.arange(above, 0, -1.0), np.zeros(7)))
    labels = np.zeros(above + 7, dtype=np.int64)
    labels[[3, 50_000]] = 1
    labels[above + np.array([0, 2, 5])] = 1
    got = RelBatch(scores[None, :], labels[None, :]).values(RelMetric("MAP"))
    head = 1.0 / 4 + 2.0 / 50_001  # the two untied relevant items
    values = []
    for block in tie_orderings(np.zeros(7), labels[above:]):
        hits, total = 2, head
        for i, x in enumerate(block, 1):
            if x > 0:
                hits += 1
                total += hits / (above + i)
        values.append(total / 5)
    mean, var = moments(values)
    assert got.tie_aware[0] == pytest.approx(mean, rel=1e-13)
    assert got.variance[0] == pytest.approx(var, rel=1e-9)


@pytest.mark.parametrize("k", [None, 2, 4, 6])
def test_ap_variance_of_several_tied_blocks(k):
    rng = np.random.default_rng(5)
    for _ in range(60):
        scores = rng.integers(0, 3, 8).astype(np.float64)
        labels = rng.integers(0, 2, 8)
        if not labels.any():
            continue
        norm = min(k, labels.sum()) if k else None
        metric = RelMetric("MAP", k, ap_norm="min") if k else RelMetric("MAP")
        got = RelBatch(scores[None, :], labels[None, :]).values(metric)
        values = [ap_of(seq, k, norm) for seq in tie_orderings(scores, labels)]
        mean, var = moments(values)
        assert close(got.tie_aware[0], mean) and close(got.variance[0], var)


def test_map_sd_of_the_dataset_is_the_root_of_the_summed_variances():
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 3, size=(12, 7)).astype(np.float64)
    labels = rng.integers(0, 2, size=(12, 7))
    labels[:, 0] = 1
    row = tieeval.evaluate(scores, labels=labels, metrics=["MAP"]).metric("MAP")
    variances = [moments([ap_of(seq) for seq in tie_orderings(scores[i], labels[i])])[1]
                 for i in range(12)]
    assert row.tie_aware_std == pytest.approx(math.sqrt(math.fsum(variances)) / 12,
                                              rel=1e-9)


def bpref_of(seq, R, nonrel_judged) -> float:
    """trec_eval's bpref (m_bpref.c) of one ordering of (label, judged) pairs."""
    so_far, total = 0, 0.0
    for label, judged in seq:
        if label > 0:
            total += 1.0 - min(so_far, R) / min(nonrel_judged, R) if so_far else 1.0
        elif judged:
            so_far += 1
    return total / R


def test_bpref_variance_against_every_tie_order():
    rng = np.random.default_rng(8)
    checked = 0
    for _ in range(250):
        n = int(rng.integers(2, 8))
        scores = rng.integers(0, 3, n).astype(np.float64)
        labels = rng.choice(np.array([0.0, 0.0, 1.0, 2.0]), n)
        judged = rng.random(n) < 0.6
        ulab = rng.choice(np.array([0.0, 1.0]), int(rng.integers(0, 3)))
        rb = RelBatch(scores, labels, np.array([0, n]), judged=judged,
                      unranked=(ulab, np.array([0, ulab.size])))
        got = rb.values(RelMetric("Bpref"))
        R = int((labels > 0).sum() + (ulab > 0).sum())
        if R == 0:
            continue
        items = [(float(x), bool(j or x > 0)) for x, j in zip(labels, judged)]
        # unranked items are judged when their label is not 0 (the default): none of the
        # unranked non-relevant ones here
        nonrel = sum(j and x <= 0 for x, j in items)
        values = [bpref_of(seq, R, nonrel) for seq in tie_orderings(scores, items)]
        mean, var = moments(values)
        assert close(got.tie_aware[0], mean) and close(got.variance[0], var)
        checked += 1
    assert checked > 150


def test_bpref_variance_is_not_computed_where_the_depth_cuts_a_tie():
    scores = np.array([[1.0, 1.0, 1.0, 1.0, 0.0]])
    labels = np.array([[1, 0, 1, 0, 0]])
    judged = np.array([[True, True, True, True, False]])
    cut = RelBatch(scores, labels, judged=judged,
                   options=TableOptions(depth=2)).values(RelMetric("Bpref"))
    assert np.isnan(cut.variance[0]) and not np.isnan(cut.tie_aware[0])
    whole = RelBatch(scores, labels, judged=judged,
                     options=TableOptions(depth=4)).values(RelMetric("Bpref"))
    assert whole.variance[0] > 0
