"""The sparse block table gives the full table's values, bit for bit, for every metric."""

import math

import numpy as np
import pytest
from helpers import rel_batch, tie_orderings
from tiers import seeds, tiered

from tieeval.errors import InputError, ParameterError
from tieeval.kernels import sparse_blocks
from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.options import RelMetric, parse_rel_metric

METRICS = ["HR@1", "HR@3", "Recall@3", "Precision@3", "DCG@3", "NDCG@3", "NDCG", "DCG",
           "MRR", "MAP", "MAP@3", "SHR@3", "SRecall@3", "SDCG@3", "SNDCG@3", "SNDCG",
           "V-AUC", "Success@3", "Rprec", "Bpref", "Judged@3", "NumRet", "NumRel",
           "NumRelRet", "NumQ", "GMAP", "ERR@3", "IPrec@0.5", "NDCG@50",
           # the compact table evaluates IPrec itself (the full one only under a depth)
           "IPrec@0", "IPrec@0.1", "IPrec@1", "IPrec11pt"]
VARIANTS = [RelMetric("NDCG", 3, gain="exponential", discount="linear"),
            RelMetric("DCG", 4, discount="power", alpha=0.7, short_list="truncate"),
            RelMetric("SNDCG", 2, gamma=0.5, discount="news"),
            RelMetric("NDCG", 5, discount="logb", base=3.0, short_list="skip"),
            RelMetric("MAP", 3, ap_norm="min"), RelMetric("SRecall", 4, gamma=2.0)]


def _same(x, y):
    if x is None or y is None:
        return x is None and y is None
    return np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)


def _check(scores, labels, offsets, **kw):
    full = rel_batch(scores, labels, offsets, **kw)
    sparse = rel_batch(scores, labels, offsets, sparse=True, **kw)
    assert np.array_equal(full.n_pos, sparse.n_pos)
    assert np.array_equal(full.n_neg, sparse.n_neg)
    assert np.array_equal(full.n_judged_nonrel, sparse.n_judged_nonrel)
    assert np.array_equal(full.row_max_label(), sparse.row_max_label())
    for got, want in zip(sparse.top_ties(), full.top_ties()):
        assert np.array_equal(got, want)
    for m in [parse_rel_metric(x) for x in METRICS] + VARIANTS:
        a, b = full.values(m), sparse.values(m)
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided",
                  "defined"):
            assert _same(getattr(a, c), getattr(b, c)), (str(m), c)


def _ragged(rng, rows, max_n, values, label_choice, dtype=np.float32):
    n = rng.integers(0, max_n + 1, size=rows)
    n[0] = max(n[0], 1)
    offsets = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    scores = rng.choice(values, size=int(n.sum())).astype(dtype)
    labels = rng.choice(label_choice, size=scores.size)
    return scores, labels, offsets


@pytest.mark.parametrize("seed", seeds(12, quick=2))
@pytest.mark.parametrize("original", ["argsort", "stable", "reverse-stable"])
def test_sparse_matches_full_ragged(seed, original):
    rng = np.random.default_rng(seed)
    scores, labels, offsets = _ragged(rng, 60, 25, [0.0, -0.0, 0.5, 1.0, 2.0, 3.0],
                                      [-2, -1, 0, 0, 0, 0, 1, 2, 3])
    _check(scores, labels, offsets, original=original)


@pytest.mark.parametrize("seed", seeds(8))
def test_sparse_matches_full_dense_graded(seed):
    rng = np.random.default_rng(100 + seed)
    z = rng.normal(8.0, 6.0, size=(80, 40)).astype(np.float32)
    scores = (1.0 / (1.0 + np.exp(-z))).astype(np.float32)  # saturates at 1.0: ties
    labels = np.where(rng.random(z.shape) < 0.2, rng.random(z.shape) * 3, 0.0)
    labels[::5] = 0.0  # rows without a relevant item
    _check(scores, labels, None)
    _check(scores, labels, None, relevance_level=1.5)
    _check(scores, labels, None, depth=7)


@pytest.mark.parametrize("seed", seeds(8))
def test_sparse_matches_full_integers_judged_unranked(seed):
    rng = np.random.default_rng(200 + seed)
    scores, labels, offsets = _ragged(rng, 40, 30, [-3, -2, 0, 1, 5], [-1, 0, 0, 0, 1, 4],
                                      dtype=np.int32)
    judged = rng.random(scores.size) < 0.3
    u = rng.integers(0, 4, size=offsets.size - 1)
    uoff = np.concatenate(([0], np.cumsum(u))).astype(np.int64)
    ulab = rng.choice([0, 1, 2, 3], size=int(u.sum()))
    ujd = rng.random(ulab.size) < 0.8
    _check(scores, labels, offsets, judged=judged)
    _check(scores, labels, offsets, judged=judged, unranked=(ulab, uoff),
           unranked_judged=ujd)
    _check(scores, labels, offsets, unranked=(ulab, uoff), depth=5, relevance_level=2)
    _check(scores, labels, offsets, max_grade=4.0, unranked=(ulab, uoff))


@pytest.mark.parametrize("seed", seeds(6))
def test_sparse_matches_full_given_order(seed):
    rng = np.random.default_rng(300 + seed)
    scores, labels, offsets = _ragged(rng, 50, 20, [0.0, 1.0, 2.0, 4.0],
                                      [-1, 0, 0, 1, 2], dtype=np.float64)
    for i in range(offsets.size - 1):  # rows listed best first, as the codebase ranked
        lo, hi = offsets[i], offsets[i + 1]
        scores[lo:hi] = np.sort(scores[lo:hi])[::-1]
    _check(scores, labels, offsets, original="given")


def test_sparse_given_order_checked():
    with pytest.raises(Exception, match="row 1: candidates are not listed best first"):
        RelBatch(np.array([2.0, 1.0, 1.0, 3.0]), np.array([1, 0, 1, 0]), np.array([0, 2, 4]),
                 options=TableOptions(original="given", sparse=True))


def test_sparse_falls_back_with_nan_and_tolerance():
    scores = np.array([[1.0, np.nan, 1.0, 0.5], [0.2, 0.2, 0.3, 0.25]])
    labels = np.array([[1, 0, 2, 0], [0, 1, 0, 1]])
    assert not RelBatch(scores, labels,
                        options=TableOptions(nan_policy="worst", sparse=True)).compact
    assert not RelBatch(scores[1:], labels[1:],
                        options=TableOptions(tolerance=0.1, sparse=True)).compact
    assert RelBatch(scores[1:], labels[1:], options=TableOptions(sparse=True)).compact


def test_sparse_keeps_only_marked_blocks():
    # row 0: blocks {5}, {4, 4}, {3}, {1, 1, 1}; labelled items in {4, 4} and {1, 1, 1}
    rb = RelBatch(np.array([[5.0, 4.0, 4.0, 3.0, 1.0, 1.0, 1.0]]),
                  np.array([[0, 0, 2, 0, -1, 1, 0]]), options=TableOptions(sparse=True))
    assert rb.ba.tolist() == [1, 4] and rb.bsz.tolist() == [2, 3]
    assert rb.lab_first.tolist() == [2.0, 0.0, 1.0, 0.0, -1.0]
    assert rb.lab_last.tolist() == [0.0, 2.0, -1.0, 0.0, 1.0]
    assert rb.pos.tolist() == [1, 2, 4, 5, 6]
    assert [x.tolist() for x in rb.top_ties()] == [[0], [1]]


@pytest.mark.parametrize("seed", seeds(6))
def test_rank_depth_leaves_every_value_unchanged(seed):
    rng = np.random.default_rng(400 + seed)
    scores, labels, offsets = _ragged(rng, 60, 30, [0.0, 1.0, 2.0, 3.0], [-1, 0, 0, 0, 1, 2])
    full = RelBatch(scores, labels, offsets)
    shallow = RelBatch(scores, labels, offsets, options=TableOptions(sparse=True, rank_depth=4))
    for name in ["HR@1", "HR@4", "Recall@3", "Precision@4", "DCG@4", "NDCG@2", "MAP@4",
                 "SHR@3", "SRecall@4", "SDCG@4", "SNDCG@4", "Success@2", "Judged@4"]:
        a, b = full.values(parse_rel_metric(name)), shallow.values(parse_rel_metric(name))
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided"):
            assert _same(getattr(a, c), getattr(b, c)), (name, c)
    for name in ["NDCG@5", "MRR", "MAP", "V-AUC"]:
        with pytest.raises(ParameterError, match="rank_depth=4"):
            shallow.values(parse_rel_metric(name))
        assert _same(shallow.values(parse_rel_metric(name), original_order=False).tie_aware,
                     full.values(parse_rel_metric(name)).tie_aware)


def _cut_metrics() -> list[str]:
    """Every registered metric that takes a cutoff (K = 3 and 4), and a few at K = 1, 2."""
    from tieeval.metrics.registry import REGISTRY
    names = ["HR@1", "NDCG@2", "Success@2"]
    for name in REGISTRY:
        for k in (3, 4):
            try:
                m = parse_rel_metric(f"{name}@{k}")
            except ParameterError:  # a metric without a cutoff
                continue
            if isinstance(m.k, int) and m.level is None:
                names.append(f"{name}@{k}")
    return names


CUT_METRICS = _cut_metrics()


def _layout(layout, monkeypatch):
    """'dense-partitioned': rows of one length, each partitioned at the depth and sorted
    above it only (as rows of at least _PARTIAL_WIDTH scores are), however short."""
    if layout == "dense-partitioned":
        monkeypatch.setattr(sparse_blocks, "_PARTIAL_WIDTH", 0)
        return "dense"
    return layout


@pytest.mark.parametrize("seed", seeds(8))
@pytest.mark.parametrize("original", ["argsort", "stable", "reverse-stable"])
@pytest.mark.parametrize("layout", ["ragged", "dense", "dense-partitioned"])
def test_prune_depth_leaves_every_value_and_tie_figure_unchanged(seed, original, layout,
                                                                 monkeypatch):
    # blocks starting at or below the depth are left out of the table: every metric with a
    # cutoff within it, the top ties, R and each row's first relevant block stay the same
    # (rows of one length find the items kept by a comparison of the whole batch)
    layout = _layout(layout, monkeypatch)
    rng = np.random.default_rng(500 + seed)
    scores, labels, offsets = _ragged(rng, 60, 30, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                                      [-1, 0, 0, 0, 0, 0, 1, 2])
    if layout == "dense":
        scores = rng.choice([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], size=(60, 12)).astype(np.float32)
        labels = rng.choice([-1, 0, 0, 0, 0, 0, 1, 2], size=scores.shape)
        labels[0] = 0  # a row without a labelled item
        offsets = None
    judged = rng.random(scores.shape) < 0.2
    for kw in ({}, {"judged": judged}, {"relevance_level": 2}):
        full = rel_batch(scores, labels, offsets, original=original, **kw)
        cut = rel_batch(scores, labels, offsets, original=original, sparse=True,
                        rank_depth=4, prune_depth=4, **kw)
        assert cut.compact
        for name in CUT_METRICS:
            a, b = full.values(parse_rel_metric(name)), cut.values(parse_rel_metric(name))
            for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided",
                      "defined"):
                assert _same(getattr(a, c), getattr(b, c)), (name, c, kw)
        for got, want in zip(cut.top_ties(), full.top_ties()):
            assert np.array_equal(got, want)
        for x in ("n_pos", "n_neg", "n_judged_nonrel"):
            assert np.array_equal(getattr(cut, x), getattr(full, x))
        assert np.array_equal(cut.row_max_label(), full.row_max_label())
        fb, cb = full._first_block(full.p_t > 0), cut._first_block(cut.p_t > 0)
        assert np.array_equal(full.brow[fb], cut.brow[cb])
        assert np.array_equal(full.bsz[fb], cut.bsz[cb])
        for name in ["NDCG@5", "MRR", "MAP", "V-AUC"]:
            with pytest.raises(ParameterError, match="prune_depth=4"):
                cut.values(parse_rel_metric(name), original_order=False)


def test_prune_depth_drops_blocks_below_it():
    # row 0: blocks {9}, {8, 8}, {5}, {3, 3}, {1}: the labelled items at 5 and 1 lie below
    # depth 3 and go; the row's first relevant block {8, 8} stays
    rb = RelBatch(np.array([[9.0, 8.0, 8.0, 5.0, 3.0, 3.0, 1.0]]),
                  np.array([[0, 1, 0, 2, 0, 0, 1]]),
                  options=TableOptions(sparse=True, prune_depth=3))
    assert rb.ba.tolist() == [1]
    assert rb.n_pos.tolist() == [3]
    # row 1: no relevant item within the depth: its first relevant block {3, 3} stays
    rb = RelBatch(np.array([[9.0, 8.0, 8.0, 5.0, 3.0, 3.0, 1.0]]),
                  np.array([[0, 0, 0, -1, 1, 0, 1]]),
                  options=TableOptions(sparse=True, prune_depth=3))
    assert rb.ba.tolist() == [4] and rb.bsz.tolist() == [2]


@pytest.mark.parametrize("right", [False, True])
def test_searches_match_searchsorted(right):
    rng = np.random.default_rng(7)
    n = np.array([5, 1, 7, 7, 3, 0, 9])
    offsets = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    ss = np.concatenate([np.sort(rng.integers(0, 4, size=k)).astype(np.float32) for k in n])
    rows = np.repeat(np.arange(n.size), 6)
    rows = rows[n[rows] > 0]
    v = rng.integers(-1, 5, size=rows.size).astype(np.float32)
    lo, hi = offsets[:-1][rows], offsets[1:][rows]
    want = [lo_ + np.searchsorted(ss[lo_:hi_], x, side="right" if right else "left")
            for lo_, hi_, x in zip(lo, hi, v)]
    assert sparse_blocks._bound(ss, lo, hi - lo, v, right).tolist() == want
    same = np.flatnonzero(n[rows] == 7)
    assert (sparse_blocks._bound(ss, lo[same], 7, v[same], right).tolist()
            == [want[i] for i in same])



@pytest.mark.parametrize("scores, labels, offsets", [
    (np.zeros((0, 5), np.float32), np.zeros((0, 5), np.int8), None),
    (np.zeros(0, np.float32), np.zeros(0, np.int8), np.array([0, 0, 0])),
    (np.array([[1, 1, 0]], np.float16), np.array([[True, False, True]]), None),
    (np.array([[3, 3, 1, 1]], np.uint8), np.array([[1, 0, -1, 2]]), None),
    (np.array([[np.iinfo(np.int64).min, 0, 0, 5]]), np.array([[1, 0, 2, 0]]), None),
    (np.array([[0.0, -0.0, 0.0, 1.0]]), np.array([[1, 2, 0, -1]]), None),
    (np.array([[1.0, 1.0, 1.0, 1.0]]), np.array([[0.5, 2.5, 0, -1.5]]), None),
])
def test_sparse_matches_full_edge_cases(scores, labels, offsets):
    full = RelBatch(scores, labels, offsets)
    sparse = RelBatch(scores, labels, offsets, options=TableOptions(sparse=True))
    for name in ["NDCG@3", "NDCG", "MAP", "MRR", "V-AUC", "HR@2", "Bpref", "Judged@2",
                 "SNDCG@2"] + (["ERR@3", "IPrec@0.5"] if scores.size else []):
        a, b = full.values(parse_rel_metric(name)), sparse.values(parse_rel_metric(name))
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided"):
            assert _same(getattr(a, c), getattr(b, c)), (name, c)


@pytest.mark.parametrize("original", tiered(["argsort", "reverse-stable"], quick=1))
def test_sparse_large_tie_blocks(original):
    # blocks of ~1,000 tied scores holding ~10 labelled items: the rows are inverted whole
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 3, size=(20, 3000)).astype(np.float32)
    labels = np.where(rng.random(scores.shape) < 0.01, rng.integers(1, 4, scores.shape), 0)
    _check(scores, labels, None, original=original)


def test_sparse_labels_must_be_finite():
    with pytest.raises(InputError, match="labels must be finite"):
        RelBatch(np.array([[1.0, 2.0]]), np.array([[np.nan, 0]]),
                 options=TableOptions(sparse=True))


# ---------------------------------------------------------------------------------------
# The rank depth: only the first places of each sorted row are looked at


def _oracle(name: str, seq, k: int):
    """``name``@k of the labels ``seq`` listed best first (plain Python); None where
    undefined (no relevant item)."""
    n_pos = sum(1 for x in seq if x > 0)
    if n_pos == 0:
        return None
    top = list(seq[:k])
    disc = [1.0 / math.log2(r + 2) for r in range(k)]
    if name == "HR":
        return float(any(x > 0 for x in top))
    if name == "Precision":
        return sum(x > 0 for x in top) / k
    if name == "Recall":
        return sum(x > 0 for x in top) / n_pos
    if name == "DCG":
        return sum(max(x, 0) * d for x, d in zip(top, disc))
    if name == "NDCG":
        ideal = sorted(seq, reverse=True)[:k]
        return (sum(max(x, 0) * d for x, d in zip(top, disc))
                / sum(max(x, 0) * d for x, d in zip(ideal, disc)))
    if name == "MAP":
        found, total = 0, 0.0
        for r, x in enumerate(top, 1):
            if x > 0:
                found += 1
                total += found / r
        return total / n_pos
    raise AssertionError(name)


def _codebase_order(row: np.ndarray, original: str) -> np.ndarray:
    if original == "argsort":
        return np.argsort(row * -1)
    if original == "stable":
        return np.argsort(row * -1, kind="stable")
    return row.size - 1 - np.argsort(row[::-1] * -1, kind="stable")


# every run: each rule once and each layout once; the slow tier the other six pairs
@pytest.mark.parametrize("layout, original", tiered(
    [("dense", "argsort"), ("ragged", "stable"), ("dense-partitioned", "reverse-stable"),
     ("dense", "stable"), ("dense", "reverse-stable"), ("ragged", "argsort"),
     ("ragged", "reverse-stable"), ("dense-partitioned", "argsort"),
     ("dense-partitioned", "stable")], quick=3))
def test_rank_depth_places_match_every_tie_order(original, layout, monkeypatch):
    # tie blocks straddling the depth: the items found in the first `depth` places of the
    # sorted row take those places, the others free places below; every column against
    # the enumeration of all tie orders and the codebases' own argsort of the row
    layout = _layout(layout, monkeypatch)
    rng = np.random.default_rng(910 + len(original) + len(layout))
    if layout == "dense":
        scores = rng.choice([0.0, 1.0, 2.0], size=(40, 7)).astype(np.float32)
        labels = rng.choice([-1, 0, 0, 1, 2, 3], size=scores.shape)
        offsets = None
        rows = list(zip(scores, labels))
    else:
        scores, labels, offsets = _ragged(rng, 40, 7, [0.0, 1.0, 2.0], [-1, 0, 0, 1, 2, 3])
        rows = [(scores[lo:hi], labels[lo:hi]) for lo, hi in zip(offsets[:-1], offsets[1:])]
    checked = 0
    for depth in (1, 2, 3):
        rb = RelBatch(scores, labels, offsets,
                      options=TableOptions(original=original, sparse=True, rank_depth=depth,
                                           prune_depth=depth))
        for name in ("HR", "Precision", "Recall", "DCG", "NDCG", "MAP"):
            for k in range(1, depth + 1):
                got = rb.values(parse_rel_metric(f"{name}@{k}"))
                for i, (s, lab) in enumerate(rows):
                    orders = [_oracle(name, seq, k) for seq in tie_orderings(s, list(lab))]
                    if not orders or orders[0] is None:
                        assert not got.defined[i]
                        continue
                    mean = math.fsum(orders) / len(orders)
                    var = math.fsum((v - mean) ** 2 for v in orders) / len(orders)
                    orig = _oracle(name, tuple(lab[_codebase_order(s, original)]), k)
                    want = {"original": orig, "first": max(orders), "last": min(orders),
                            "tie_aware": mean, "variance": var}
                    for col, value in want.items():
                        assert float(getattr(got, col)[i]) == pytest.approx(
                            value, rel=1e-12, abs=1e-12), (name, k, depth, i, col)
                    checked += 1
    assert checked > 1000


@pytest.mark.parametrize("original", ["argsort", "reverse-stable"])
@pytest.mark.parametrize("layout", ["dense", "ragged"])
def test_rank_depth_large_tie_blocks_leave_every_value_unchanged(original, layout):
    # long rows whose saturated top ties (hundreds of scores) hold labelled items: only the
    # first places of each sorted row are read, and every cutoff metric is the full
    # table's, bit for bit; the Original NDCG@4 is the one of numpy's argsort of the row
    rng = np.random.default_rng(7)
    scores = rng.random((16, 2000)).astype(np.float32)
    scores[rng.random(scores.shape) < 0.15] = 1.0
    scores[:, :300][rng.random((16, 300)) < 0.5] = 0.5
    labels = np.where(rng.random(scores.shape) < 0.02, rng.integers(-1, 4, scores.shape), 0)
    labels[3] = 0  # a row without a labelled item
    offsets = None
    if layout == "ragged":
        n = rng.integers(1500, 2001, size=16)
        offsets = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
        scores = np.concatenate([r[:k] for r, k in zip(scores, n)])
        labels = np.concatenate([r[:k] for r, k in zip(labels, n)])
    full = RelBatch(scores, labels, offsets, options=TableOptions(original=original))
    cut = RelBatch(scores, labels, offsets,
                   options=TableOptions(original=original, sparse=True, rank_depth=4,
                                        prune_depth=4))
    for name in CUT_METRICS:
        a, b = full.values(parse_rel_metric(name)), cut.values(parse_rel_metric(name))
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided",
                  "defined"):
            assert _same(getattr(a, c), getattr(b, c)), (name, c)
    got = cut.values(parse_rel_metric("NDCG@4")).original
    starts = np.arange(17) * 2000 if offsets is None else offsets
    flat_s, flat_l = np.ravel(scores), np.ravel(labels)
    for i in range(16):
        s, lab = flat_s[starts[i]:starts[i + 1]], flat_l[starts[i]:starts[i + 1]]
        want = _oracle("NDCG", tuple(lab[_codebase_order(s, original)]), 4)
        if want is None:
            assert np.isnan(got[i])
        else:
            assert got[i] == pytest.approx(want, rel=1e-12)


def _listed(scores, offsets):
    """Each row sorted best first, as a TREC run lists it (original='given')."""
    out = scores.copy()
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        out[lo:hi] = np.sort(scores[lo:hi])[::-1]
    return out


@pytest.mark.parametrize("seed", seeds(6))
@pytest.mark.parametrize("layout", ["ragged", "dense"])
def test_listed_rows_take_their_blocks_without_a_sort(seed, layout):
    # rows listed best first: each item's place above its block and the block's size come
    # from equal neighbours, not from a sort and searches; every value, the top ties and the
    # counts equal the full table's (signed zeros tie, empty rows, judged items, a depth)
    rng = np.random.default_rng(900 + seed)
    values = [-0.0, 0.0, 0.5, 1.0, 2.0, 3.0]
    if layout == "dense":
        scores, labels = rng.choice(values, size=(40, 9)), rng.choice([0, 0, 0, 1, 2], (40, 9))
        offsets = np.arange(41, dtype=np.int64) * 9
        scores, labels = scores.ravel(), labels.ravel()
    else:
        scores, labels, offsets = _ragged(rng, 50, 20, values, [-1, 0, 0, 0, 1, 2],
                                          dtype=np.float64)
    scores = _listed(scores, offsets)
    judged = rng.random(scores.size) < 0.3
    for kw in ({}, {"judged": judged}, {"relevance_level": 2}, {"depth": 4}):
        _check(scores, labels, offsets, original="given", **kw)
    full = RelBatch(scores, labels, offsets, options=TableOptions(original="given"))
    cut = RelBatch(scores, labels, offsets,
                   options=TableOptions(original="given", sparse=True, rank_depth=3,
                                        prune_depth=3))
    for name in ["HR@1", "Precision@3", "NDCG@3", "MAP@3", "Recall@2"]:
        a, b = full.values(parse_rel_metric(name)), cut.values(parse_rel_metric(name))
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided"):
            assert _same(getattr(a, c), getattr(b, c)), (name, c)
    for got, want in zip(cut.top_ties(), full.top_ties()):
        assert np.array_equal(got, want)
    n = np.diff(offsets)
    assert np.array_equal(sparse_blocks._reversed_rows(scores, n, offsets),
                          sparse_blocks._sorted_rows(scores, n, offsets))



def test_bound_top_matches_the_search_of_the_whole_row():
    # the window of each row's last `depth` places holds every bound of a score above the
    # depth-th largest; other scores (and depths past the row) search the whole row
    rng = np.random.default_rng(11)
    for _ in range(200):
        rows, width, depth = (int(x) for x in rng.integers(1, 40, size=3))
        levels = rng.random(int(rng.integers(1, 8))).astype(np.float32)
        ss = np.sort(rng.choice(levels, size=(rows, width)), axis=1).ravel()
        lo = (np.arange(rows) * width).astype(np.int32)
        at = rng.integers(0, rows, size=60)
        v = np.where(rng.random(60) < 0.7, ss[lo[at] + rng.integers(0, width, 60)],
                     rng.random(60).astype(np.float32))
        for right in (True, False):
            want = np.array([np.searchsorted(ss[lo[r]:lo[r] + width], x,
                                             side="right" if right else "left")
                             for r, x in zip(at, v)]) + lo[at]
            got = sparse_blocks._bound_top(ss, lo[at], width, v, right, depth)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64,
                                   np.uint16])
@pytest.mark.parametrize("depth", [1, 3, 10])
def test_partitioned_rows_match_whole_sorted_rows(dtype, depth, monkeypatch):
    # long rows partitioned at the depth (np.partition, the places above it sorted): the
    # same table, bit for bit, as rows sorted whole, on every dtype, where the depth-th
    # largest score is tied below and above its place, where a row's top tie is longer
    # than the depth (its maximum is that score), where the first relevant block lies
    # below the depth (counted in the row), and with -0.0 beside 0.0
    rng = np.random.default_rng(40 + depth)
    rows, width = 30, 1600
    levels = np.array([0, 1, 2, 3, 5, 8, 100], dtype=np.float64)
    scores = rng.choice(levels, size=(rows, width)).astype(dtype)
    scores[:5, :400] = levels.max()  # a saturated top: hundreds tied at the maximum
    scores[5:10] = rng.choice(levels[:3], size=(5, width))  # the depth-th score tied
    if np.dtype(dtype).kind == "f":
        scores[10, ::2] = -0.0
    labels = np.where(rng.random(scores.shape) < 0.004, rng.integers(-1, 4, scores.shape), 0)
    labels[12] = 0
    labels[12, scores[12] == scores[12].min()] = 1  # relevant only at the bottom, tied
    labels[13] = 0  # no labelled item
    cut = TableOptions(sparse=True, rank_depth=depth, prune_depth=depth)
    monkeypatch.setattr(sparse_blocks, "_PARTIAL_WIDTH", width + 1)
    whole = RelBatch(scores, labels, options=cut)
    monkeypatch.setattr(sparse_blocks, "_PARTIAL_WIDTH", width)
    part = RelBatch(scores, labels, options=cut)
    full = RelBatch(scores, labels)
    for x in ("bst", "bsz", "brow", "ba", "p_t", "q_t", "lab_first", "lab_last", "offsets"):
        assert np.array_equal(getattr(part, x), getattr(whole, x)), x
    for got, want in zip(part.top_ties(), full.top_ties()):
        assert np.array_equal(got, want)
    for name in [m for m in CUT_METRICS if _cut_within(m, depth)]:
        a, b = full.values(parse_rel_metric(name)), part.values(parse_rel_metric(name))
        for c in ("original", "first", "last", "tie_aware", "variance", "tie_decided",
                  "defined"):
            assert _same(getattr(a, c), getattr(b, c)), (name, c)
    fb, pb = full._first_block(full.p_t > 0), part._first_block(part.p_t > 0)
    assert np.array_equal(full.bsz[fb], part.bsz[pb])
    assert np.array_equal(full.ba[fb], part.ba[pb])


def _cut_within(name: str, depth: int) -> bool:
    return "@" in name and name.split("@")[1].isdigit() and int(name.split("@")[1]) <= depth


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_row_longer_than_a_sort_block_beside_shorter_rows(threads, monkeypatch):
    # A row of more than SORT_CHUNK candidates beside a row of another length, its relevant
    # item tied at the top: the rows to sort are cut into blocks of at most SORT_CHUNK
    # scores, and a lone row longer than a block once gave an empty block (an IndexError).
    import tieeval

    monkeypatch.setenv("TIEEVAL_SORT_THREADS", threads)
    long, short = sparse_blocks.SORT_CHUNK + 1000, 10
    s = np.random.default_rng(0).random(long + short).astype(np.float32)
    s[5] = s[6] = 2.0  # the relevant item 5 tied with item 6, above every other
    s[long:] = 0.25  # the short row: all ten tied
    lab = np.zeros(long + short, dtype=np.int8)
    lab[5] = lab[long + 1] = 1
    offsets = np.array([0, long, long + short])
    row = tieeval.evaluate(s, labels=lab, offsets=offsets, k=[10],
                           metrics=["NDCG@10"]).metrics[0]

    def ndcg(place):  # one relevant item at the 1-based place
        return 1 / math.log2(place + 1) if place <= 10 else 0.0

    # every tie order: item 5 is first or second of its block of two; the short row's
    # relevant item takes each of the ten places
    expected = (np.mean([ndcg(1), ndcg(2)]) + np.mean([ndcg(p) for p in range(1, 11)])) / 2
    assert row.tie_aware == pytest.approx(expected, rel=1e-12)
    assert (row.first, row.last) == pytest.approx((1.0, (ndcg(2) + ndcg(10)) / 2), rel=1e-12)
    # the original: each row's place of its relevant item in numpy's argsort(-scores)
    places = [int(np.flatnonzero(np.argsort(-s[a:b]) == p)[0]) + 1
              for a, b, p in ((0, long, 5), (long, long + short, 1))]
    assert row.original == pytest.approx(np.mean([ndcg(p) for p in places]), rel=1e-12)
    assert row.last <= row.original <= row.first
