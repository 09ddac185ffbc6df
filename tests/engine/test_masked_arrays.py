"""``tieeval.evaluate`` honours a numpy masked array's mask: a masked score is not a
candidate. Figures are those of the unmasked sub-rows, checked by enumerating every tie
order of each sub-row."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import enumerated_ranks, hr_of_rank, ndcg_of_rank, rr_of_rank

import tieeval
from tieeval.errors import InputError, ParameterError


def _masked_case(seed, rows=30, cols=6):
    rng = np.random.default_rng(seed)
    data = (rng.integers(0, 3, size=(rows, cols)) / 2).astype(np.float32)
    mask = rng.random((rows, cols)) < 0.3
    positive = rng.integers(0, cols, size=rows)
    mask[np.arange(rows), positive] = False  # the positive is always a candidate
    return np.ma.masked_array(data, mask=mask), positive


@pytest.mark.parametrize("seed", range(4))
def test_masked_scores_are_evaluated_on_the_unmasked_sub_rows(seed):
    scores, positive = _masked_case(seed)
    result = tieeval.evaluate(scores, positive=positive,
                              metrics=["HR@1", "HR@3", "NDCG@3", "MRR"])
    sub_ranks = []
    for row, pos in zip(range(scores.shape[0]), positive):
        kept = ~np.ma.getmaskarray(scores)[row]
        sub = np.ma.getdata(scores)[row][kept]
        sub_ranks.append(enumerated_ranks(sub, int(np.cumsum(kept)[pos] - 1)))
    oracle = {"HR@1": lambda r: hr_of_rank(r, 1), "HR@3": lambda r: hr_of_rank(r, 3),
              "NDCG@3": lambda r: ndcg_of_rank(r, 3), "MRR": rr_of_rank}
    for name, of_rank in oracle.items():
        row = result.metric(name)
        assert row.tie_aware == pytest.approx(np.mean([of_rank(r).mean() for r in sub_ranks]),
                                              abs=1e-12), name
        assert row.first == pytest.approx(np.mean([of_rank(r).max() for r in sub_ranks]))
        assert row.last == pytest.approx(np.mean([of_rank(r).min() for r in sub_ranks]))
    lengths = (~np.ma.getmaskarray(scores)).sum(axis=1)
    assert (result.candidates_min, result.candidates_max) == (lengths.min(), lengths.max())


def test_masked_labels_follow_the_scores():
    scores, _ = _masked_case(9, rows=12, cols=5)
    labels = np.random.default_rng(9).integers(0, 3, size=scores.shape)
    got = tieeval.evaluate(scores, labels=labels, metrics=["NDCG@3"])
    kept = ~np.ma.getmaskarray(scores)
    rows = [np.ma.getdata(scores)[i][kept[i]] for i in range(scores.shape[0])]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows])))
    want = tieeval.evaluate(np.concatenate(rows), offsets=offsets,
                            labels=np.concatenate([labels[i][kept[i]]
                                                   for i in range(len(rows))]),
                            metrics=["NDCG@3"])
    assert got.to_dict()["metrics"] == want.to_dict()["metrics"]


def test_an_all_false_mask_is_the_plain_array():
    data = np.random.default_rng(2).random((10, 4))
    got = tieeval.evaluate(np.ma.masked_array(data, mask=False), metrics=["MRR"])
    assert got.to_dict()["metrics"] == tieeval.evaluate(data, metrics=["MRR"]).to_dict()[
        "metrics"]


def test_a_masked_positive_is_an_error():
    scores = np.ma.masked_array([[0.5, 0.9, 0.1], [0.2, 0.3, 0.9]],
                                mask=[[True, False, False], [False, False, False]])
    with pytest.raises(InputError, match=r"row 0: the positive \(column 0\) is masked"):
        tieeval.evaluate(scores)


def test_masks_elsewhere_are_refused():
    scores = np.ma.masked_array([[0.5, 0.9]], mask=[[False, True]])
    with pytest.raises(ParameterError, match="'labels' is a masked array"):
        tieeval.evaluate(np.array([[0.5, 0.9]]),
                         labels=np.ma.masked_array([[1, 0]], mask=[[False, True]]))
    with pytest.raises(ParameterError, match="'positives' column indices"):
        tieeval.evaluate(scores, positives=[[0]])
