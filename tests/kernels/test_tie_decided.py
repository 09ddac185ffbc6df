"""The tie-decided shares of labelled rows against every tie order, enumerated.

The general kernel reads each row's share off the counts of its first block holding a
relevant item; here HR@K is computed for every ordering consistent with the scores
(``helpers.tie_orderings``), and a row is decided when two orderings give different HR@K.
"""

import numpy as np
import pytest
from helpers import tie_orderings

import tieeval

KS = (1, 2, 3, 5)


def _enumerated(scores, labels, ks, *, level=None, depth=None, both=False):
    """{K: share of the counted rows whose HR@K some tie order changes}."""
    decided = {k: 0 for k in ks}
    counted = 0
    for s, lab in zip(scores, labels):
        relevant = [(x >= level) if level is not None else (x > 0) for x in lab.tolist()]
        if not any(relevant):
            continue  # no relevant item ranked: not among the rows the shares count
        if both and not (lab < 0).any():
            continue  # --both keeps rows with a relevant item and an explicit negative
        counted += 1
        orders = tie_orderings(s, lab.tolist())
        for k in ks:
            kc = k if depth is None else min(k, depth)
            hits = {any((x >= level) if level is not None else (x > 0) for x in o[:kc])
                    for o in orders}
            decided[k] += len(hits) > 1
    return {k: decided[k] / counted for k in ks}


def _dump(seed, rows=40, n=7):
    rng = np.random.default_rng(seed)
    # few distinct scores: ties everywhere, also across the cutoffs
    scores = rng.choice([0.0, 0.25, 0.5, 1.0], size=(rows, n)).astype(np.float32)
    labels = rng.choice([-1, 0, 0, 0, 1, 2, 3], size=(rows, n)).astype(np.int8)
    labels[0] = 0  # a row without a relevant item
    labels[1, :] = 0
    labels[1, 3] = 2
    return scores, labels


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metrics", [
    [f"NDCG@{k}" for k in KS],  # every metric has a cutoff: the pruned block table
    [f"HR@{k}" for k in KS] + ["MRR"],  # HR@K itself, and the unpruned table
    [f"ERR@{k}" for k in KS],  # a cascade measure: its values from the full table
])
def test_tie_decided_matches_enumerated_tie_orders(seed, metrics):
    scores, labels = _dump(seed)
    got = tieeval.evaluate(scores, labels=labels, metrics=metrics).ties.tie_decided
    want = _enumerated(scores, labels, KS)
    assert set(got) == set(KS)
    for k in KS:
        assert got[k] == pytest.approx(want[k], rel=1e-15), k


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", [{"relevance_level": 2}, {"depth": 2}, {"both": True}])
def test_tie_decided_with_relevance_options_matches_enumerated_tie_orders(seed, options):
    scores, labels = _dump(seed + 10)
    got = tieeval.evaluate(scores, labels=labels, metrics=[f"NDCG@{k}" for k in KS],
                           **options).ties.tie_decided
    want = _enumerated(scores, labels, KS, level=options.get("relevance_level"),
                       depth=options.get("depth"), both=options.get("both", False))
    for k in KS:
        assert got[k] == pytest.approx(want[k], rel=1e-15), k


def test_tie_decided_past_every_row_end_matches_enumerated_tie_orders():
    # a cutoff beyond every row: HR@K is 1 in every order, nothing is decided
    scores, labels = _dump(3, rows=12, n=4)
    got = tieeval.evaluate(scores, labels=labels, metrics=["NDCG@50"]).ties.tie_decided
    assert got[50] == _enumerated(scores, labels, (50,))[50] == 0.0
