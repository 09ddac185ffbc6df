"""trec_eval's measures in the general kernel against exhaustive enumeration of tie orders.

The oracle is a plain-Python definition of each measure on one ordering of (label, judged)
items, written from trec_eval's m_*.c (``oracle``). On small random rows with graded
labels, judged masks, unranked judged items, a relevance level and a retrieval depth, the
kernel's tie-aware value must be the mean of the oracle over every ordering the scores
allow, First / Last its maximum / minimum (the metrics are monotone in moving a relevant
item up; Judged@K in moving a judged item up), and Original its value on the given order.
pytrec_eval is the second, independent oracle on a heavily tied run.
"""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
from helpers import tie_orderings
from tiers import SLOW

from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.options import RelMetric, parse_rel_metric


def make_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def oracle(name, k, seq, unranked, level, depth, max_grade=None, rounding="trec_eval"):
    """The measure on ``seq``, a list of (label, judged) listed best first; ``unranked``
    the (label, judged) items not ranked. None where undefined (no relevant item)."""
    def rel(x):
        return x >= level if level is not None else x > 0
    ret = seq[:depth] if depth is not None else seq
    R = sum(rel(x) for x, _ in seq) + sum(rel(x) for x, _ in unranked)
    if name == "NumRet":
        return len(ret)
    if name == "NumRel":
        return R
    if name == "NumQ":
        return 1
    if name == "NumRelRet":
        return sum(rel(x) for x, _ in ret)
    if name == "Judged":  # ir_measures' judged provider: any qrels line, / min(K, retrieved)
        judged = [bool(j or rel(x) or x < 0) for x, j in seq]
        if not (any(judged) or any(j or rel(x) for x, j in unranked)):
            return None
        return sum(judged[:len(ret)][:k]) / max(min(k, len(seq)), 1)
    if R == 0:
        return None
    if name in ("Success", "HR"):
        return float(any(rel(x) for x, _ in ret[:k]))
    if name == "Rprec":
        return sum(rel(x) for x, _ in ret[:R]) / R
    if name in ("MAP", "GMAP"):
        hits, total = 0, 0.0
        for i, (x, _) in enumerate(ret[:k] if k else ret):
            if rel(x):
                hits += 1
                total += hits / (i + 1)
        return total / R
    if name == "Bpref":  # m_bpref.c
        nonrel = sum(j and not rel(x) for x, j in seq + unranked)
        so_far, total = 0, 0.0
        for x, j in ret:
            if rel(x):
                total += 1.0 - min(so_far, R) / min(nonrel, R) if so_far else 1.0
            elif j:
                so_far += 1
        return total / R
    if name == "IPrec":  # m_iprec_at_recall.c: trec_eval 10 lround, 9.0.8 (long)(x R + 0.9)
        cut = math.floor(k * R + (0.9 if rounding == "trec_eval9" else 0.5))
        prec, hits = [], 0
        at = None
        for i, (x, _) in enumerate(ret):
            if rel(x):
                hits += 1
                if hits == cut:
                    at = i
            prec.append(hits / (i + 1))
        if cut == 0:
            return max(prec, default=0.0)
        return 0.0 if at is None else max(prec[at:])
    if name == "ERR":  # gdeval: R_i = (2^g - 1) / 2^g_max
        gmax = max_grade
        out, go_on = 0.0, 1.0
        for i, (x, _) in enumerate(ret[:k]):
            g = min(max(x, 0.0), gmax)
            stop = (2.0 ** g - 1.0) / 2.0 ** gmax
            out += go_on * stop / (i + 1)
            go_on *= 1.0 - stop
        return out
    raise AssertionError(name)


METRICS = ["Rprec", "Bpref", "Success@2", "Judged@3", "NumRet", "NumRel", "NumRelRet",
           "NumQ", "GMAP", "ERR@3", "IPrec@0", "IPrec@0.3", "IPrec@0.5", "IPrec@1",
           "IPrec(iprec_rounding=trec_eval9)@0.3", "IPrec(iprec_rounding=trec_eval9)@0.5",
           "MAP", "MAP@3"]
MONOTONE_IN_LABELS = {"Rprec", "Bpref", "Success", "NumRelRet", "GMAP", "ERR", "IPrec",
                      "MAP", "NumRet", "NumRel", "NumQ"}


def random_row(rng):
    n = int(rng.integers(1, 7))
    scores = rng.integers(0, 3, n).astype(np.float64)  # heavy ties
    labels = rng.choice([-1.0, 0.0, 0.0, 1.0, 2.0, 3.0], n)
    judged = rng.random(n) < 0.6
    u = int(rng.integers(0, 3))
    ulab = rng.choice([-1.0, 0.0, 1.0, 2.0], u)
    ujudged = rng.random(u) < 0.7
    return scores, labels, judged, ulab, ujudged


# every run checks the first 40 rows of each setting; the slow tier all 120
@pytest.mark.parametrize("setting", [(None, None), (2.0, None), (None, 3), (1.5, 2)])
@pytest.mark.parametrize("rows", [40, pytest.param(120, marks=SLOW)])
def test_tie_aware_is_the_mean_over_every_tie_order(setting, rows):
    level, depth = setting
    rng = make_rng(f"trec-measures-{level}-{depth}")
    checked = 0
    for _ in range(rows):
        scores, labels, judged, ulab, ujudged = random_row(rng)
        rb = RelBatch(scores, labels, np.array([0, scores.size]), judged=judged,
                      unranked=(ulab, np.array([0, ulab.size])), unranked_judged=ujudged,
                      options=TableOptions(relevance_level=level, depth=depth, original="stable"))
        items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
        unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
        orders = tie_orderings(scores, items)
        stable = [items[i] for i in np.argsort(-scores, kind="stable")]
        gmax = max([4.0] + [x for x, _ in items + unranked])  # gdeval: g_max >= 4
        for text in METRICS:
            metric = parse_rel_metric(text)
            v = rb.values(metric)
            rounding = metric.iprec_rounding
            values = [oracle(metric.name, metric.k, list(o), unranked, level, depth, gmax,
                             rounding) for o in orders]
            if values[0] is None:
                assert not v.defined[0], text
                continue
            assert v.defined[0], text
            want = sum(values) / len(values)
            got = v.tie_aware[0]
            # ERR and IPrec come from tieeval.metrics.measures.cascade: within its work limits on
            # rows this small, so computed (never NaN) and exact
            assert not math.isnan(got), text
            assert got == pytest.approx(want, abs=1e-12), (text, scores, items, unranked)
            assert v.original[0] == pytest.approx(
                oracle(metric.name, metric.k, stable, unranked, level, depth, gmax,
                       rounding), abs=1e-12), text
            if metric.name in MONOTONE_IN_LABELS or metric.name == "Judged":
                assert v.first[0] == pytest.approx(max(values), abs=1e-12), text
                assert v.last[0] == pytest.approx(min(values), abs=1e-12), text
                assert v.tie_decided[0] == (max(values) - min(values) > 1e-12), text
            if not np.isnan(v.variance[0]):
                var = sum((x - want) ** 2 for x in values) / len(values)
                assert v.variance[0] == pytest.approx(var, abs=1e-12), text
            checked += 1
    assert checked > 500 * rows // 120


def test_bpref_block_cut_by_the_depth_is_exact():
    # A block of 40 tied items (5 relevant, 12 judged non-relevant) cut by the depth at 25,
    # below 3 judged non-relevant items: the hypergeometric sum against a direct count over
    # the positions of the relevant item (P uniform, X | P hypergeometric), in fractions.
    from fractions import Fraction
    from math import comb

    n, p, j, above, depth = 40, 5, 12, 3, 28
    labels = np.array([0.0] * above + [1.0] * p + [0.0] * j + [0.0] * (n - p - j))
    judged = np.array([True] * above + [True] * p + [True] * j + [False] * (n - p - j))
    scores = np.array([2.0] * above + [1.0] * n)
    rb = RelBatch(scores, labels, np.array([0, labels.size]), judged=judged,
                  options=TableOptions(depth=depth))
    v = rb.values(RelMetric("Bpref"))
    R, D = p, min(j + above, p)
    m = depth - above  # the block's retrieved positions
    total = Fraction(0)
    for pos in range(m):  # the relevant item's position in the block, uniform on 0..n-1
        for x in range(0, min(pos, j) + 1):  # judged non-relevant of the block above it
            prob = Fraction(comb(j, x) * comb(n - 1 - j, pos - x), comb(n - 1, pos) * n)
            total += prob * (1 - Fraction(min(above + x, R), D))
    want = p * total / R
    assert v.tie_aware[0] == pytest.approx(float(want), rel=1e-12)


def test_judged_default_and_first_last_meaning():
    # default judged mask: label != 0; a relevant item is always judged
    rb = RelBatch(np.array([1.0, 1.0, 1.0, 0.0]), np.array([0.0, -1.0, 2.0, 0.0]),
                  np.array([0, 4]))
    v = rb.values(RelMetric("Judged", 2))
    # two of the three tied items are judged; the top 2 hold 2 * 2/3 judged on average
    assert (v.first[0], v.last[0], v.tie_aware[0]) == (1.0, 0.5, pytest.approx(2 / 3))


def test_depth_caps_every_cutoff_but_not_denominators():
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    labels = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    rb = RelBatch(scores, labels, np.array([0, 5]), options=TableOptions(depth=2))
    assert rb.values(RelMetric("Precision", 5)).original[0] == 1 / 5
    assert rb.values(RelMetric("Recall", 5)).original[0] == 1 / 3
    assert rb.values(RelMetric("MAP")).original[0] == 1 / 3
    assert rb.values(RelMetric("NumRet")).original[0] == 2
    ndcg = rb.values(RelMetric("NDCG")).original[0]
    assert ndcg == pytest.approx(1.0 / (1 + 1 / math.log2(3) + 1 / math.log2(4)))


def test_relevance_level_keeps_raw_gains():
    scores = np.array([3.0, 2.0, 1.0])
    labels = np.array([1.0, 2.0, 0.0])
    rb = RelBatch(scores, labels, np.array([0, 3]), options=TableOptions(relevance_level=2))
    assert rb.values(RelMetric("Precision", 1)).original[0] == 0.0
    assert rb.values(RelMetric("NumRel")).original[0] == 1
    dcg = 1.0 + 2.0 / math.log2(3)
    assert rb.values(RelMetric("DCG")).original[0] == pytest.approx(dcg)


@pytest.mark.parametrize("text", ["IPrec@0.1", "IPrec@1", "IPrec@0", "IPrec@0.25"])
def test_level_metric_prints_back(text):
    from tieeval.metrics.metric import Metric

    assert str(parse_rel_metric(text)) == text == str(Metric.parse(text))


def ndcg_oracle(k, seq, unranked, depth):
    """trec_eval's ndcg / ndcg_cut_k on one ordering (m_ndcg.c, m_ndcg_cut.c): the gain is
    the raw judgement whatever -l says (a negative one gains 0), the ideal ranks every
    judged document's positive gain, retrieved or not, and is never cut at the depth.
    None where the ideal DCG is 0."""
    ret = seq[:depth] if depth is not None else seq
    cut = k if k is not None else len(ret)
    dcg = sum(max(x, 0.0) / math.log2(i + 2) for i, (x, _) in enumerate(ret[:cut]))
    gains = sorted((x for x, _ in seq + unranked if x > 0), reverse=True)
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k] if k else gains))
    return None if ideal == 0 else dcg / ideal


@pytest.mark.parametrize("setting", [(2.0, 2), (3.0, None), pytest.param((2.0, None), marks=SLOW),
                                     pytest.param((4.0, 3), marks=SLOW)])
def test_ndcg_keeps_raw_gains_under_a_relevance_level(setting):
    # -l N decides relevant / non-relevant only: ndcg still scores a row whose graded labels
    # are all below N (trec_eval 10 and pytrec_eval do), in every column
    level, depth = setting
    rng = make_rng(f"ndcg-level-{level}-{depth}")
    below = 0
    for _ in range(150):
        scores, labels, judged, ulab, ujudged = random_row(rng)
        rb = RelBatch(scores, labels, np.array([0, scores.size]), judged=judged,
                      unranked=(ulab, np.array([0, ulab.size])), unranked_judged=ujudged,
                      options=TableOptions(relevance_level=level, depth=depth, original="stable"))
        sparse = RelBatch(scores, labels, np.array([0, scores.size]), judged=judged,
                          unranked=(ulab, np.array([0, ulab.size])), unranked_judged=ujudged,
                          options=TableOptions(relevance_level=level, depth=depth,
                                               original="stable", sparse=True))
        items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
        unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
        orders = tie_orderings(scores, items)
        stable = [items[i] for i in np.argsort(-scores, kind="stable")]
        for k in (None, 1, 3):
            v = rb.values(RelMetric("NDCG", k))
            w = sparse.values(RelMetric("NDCG", k))
            assert w.defined[0] == v.defined[0]
            assert not v.defined[0] or w.tie_aware[0] == pytest.approx(v.tie_aware[0])
            values = [ndcg_oracle(k, list(o), unranked, depth) for o in orders]
            if values[0] is None:
                assert not v.defined[0], (k, items, unranked)
                continue
            assert v.defined[0], (k, items, unranked)
            below += k is None and rb.n_pos[0] == 0
            want = sum(values) / len(values)
            assert v.tie_aware[0] == pytest.approx(want, abs=1e-12), (k, items, unranked)
            assert v.first[0] == pytest.approx(max(values), abs=1e-12)
            assert v.last[0] == pytest.approx(min(values), abs=1e-12)
            assert v.original[0] == pytest.approx(
                ndcg_oracle(k, stable, unranked, depth), abs=1e-12)
            var = sum((x - want) ** 2 for x in values) / len(values)
            assert v.variance[0] == pytest.approx(var, abs=1e-12)
    assert below >= 10  # rows with nothing at the level were scored, not left out


# ---------------------------------------------------------------------------------------
# pytrec_eval on a heavily tied run


def test_original_matches_pytrec_eval_on_a_tied_run():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from tieeval.io.trec import trec_order

    rng = make_rng("pytrec-eval-tied")
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        docs = [f"d{i:03d}" for i in range(40)]
        qrels[qid] = {d: int(rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs[:30]
                      if rng.random() < 0.8}
        qrels[qid].update({f"x{i}": int(rng.integers(1, 3)) for i in range(3)})  # unretrieved
        if not any(v >= 1 for v in qrels[qid].values()):
            qrels[qid]["x9"] = 1
        run[qid] = {d: float(rng.integers(0, 4)) for d in docs if rng.random() < 0.9}
    measures = {"map", "Rprec", "bpref", "recip_rank", "P_5", "recall_10", "ndcg_cut_10",
                "ndcg", "success_5", "num_ret", "num_rel", "num_rel_ret", "map_cut_10",
                "gm_map"}
    # iprec_at_recall is left out: pytrec_eval bundles trec_eval 9, which turns the recall
    # level into a count as (long)(x R + 0.9); trec_eval 10 rounds (lround(x R)), and the
    # vendored trec_eval 10 outputs check it (tests/conformance/test_trec_eval_measures.py)
    names = {"map": "MAP", "Rprec": "Rprec", "bpref": "Bpref", "recip_rank": "MRR",
             "P_5": "Precision@5", "recall_10": "Recall@10", "ndcg_cut_10": "NDCG@10",
             "ndcg": "NDCG", "success_5": "Success@5", "num_ret": "NumRet",
             "num_rel": "NumRel", "num_rel_ret": "NumRelRet", "map_cut_10": "MAP@10",
             "gm_map": "GMAP"}
    # level 4: no query has a relevant document, yet ndcg scores the graded labels
    for level in (1, 2, 4):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
        want = evaluator.evaluate(run)
        for qid in sorted(run):
            docs = np.array(sorted(run[qid]), dtype=bytes)
            s = np.array([run[qid][d.decode()] for d in docs])
            order = trec_order(docs, s)
            docs, s = docs[order], s[order]
            rel = {d.encode(): v for d, v in qrels[qid].items()}
            labels = np.array([rel.get(d, 0) for d in docs.tolist()], dtype=np.float64)
            judged = np.array([rel.get(d, -1) >= 0 for d in docs.tolist()])
            missed = np.array([v for d, v in rel.items() if d not in set(docs.tolist())],
                              dtype=np.float64)
            rb = RelBatch(s, labels, np.array([0, s.size]), judged=judged,
                          unranked=(missed, np.array([0, missed.size])),
                          unranked_judged=missed >= 0,
                          options=TableOptions(original="given", relevance_level=level))
            for measure, name in names.items():
                v = rb.values(parse_rel_metric(name))
                got = v.original[0] if v.defined[0] else 0.0
                expected = want[qid][measure]
                if measure == "gm_map":  # pytrec_eval reports log(max(AP, 1e-5)) per query
                    got = math.log(max(got, 1e-5))
                assert got == pytest.approx(expected, abs=1e-9), (level, qid, measure)


def test_the_orderings_helper_covers_every_order():
    # sanity of the enumeration used above on (label, judged) items
    seqs = tie_orderings(np.array([1.0, 1.0, 0.0]), [(1.0, True), (0.0, False), (2.0, True)])
    assert len(seqs) == 2 and all(s[2] == (2.0, True) for s in seqs)
    assert list(itertools.chain(*seqs))


@pytest.mark.parametrize("setting", [(None, None), (2.0, None), (None, 3), (1.5, 2)])
def test_iprec_levels_planned_together_equal_each_level_computed_alone(setting):
    """trec_eval's 11 iprec_at_recall levels share, per batch, the expectation's set-up
    and each ordering's precision curve (``RelBatch.plan``): every column must be the one
    a batch computing that level alone gives, bit for bit (that one is checked against
    enumeration above), on the sparse table and on the full one."""
    level, depth = setting
    rng = make_rng(f"iprec-planned-{level}-{depth}")
    rows = [random_row(rng) for _ in range(80)]
    for _ in range(10):  # longer rows with wide ties
        n = int(rng.integers(8, 30))
        rows.append((rng.integers(0, 4, n).astype(np.float64),
                     rng.choice([0.0, 0.0, 1.0, 2.0], n), rng.random(n) < 0.7,
                     rng.choice([0.0, 1.0], 2), np.array([True, True])))
    scores, labels, judged, ulab, ujudged = (np.concatenate([r[i] for r in rows])
                                             for i in range(5))
    offsets = np.concatenate(([0], np.cumsum([r[0].size for r in rows])))
    uoffsets = np.concatenate(([0], np.cumsum([r[3].size for r in rows])))

    def batch(sparse):
        return RelBatch(scores, labels, offsets, judged=judged, unranked=(ulab, uoffsets),
                        unranked_judged=ujudged,
                        options=TableOptions(relevance_level=level, depth=depth,
                                             original="stable", sparse=sparse))
    texts = [f"IPrec@{x / 10:g}" for x in range(11)] + ["IPrec@0.25", "IPrec11pt", "MAP"]
    metrics = [parse_rel_metric(t) for t in texts]
    for sparse in (False, True):
        shared = batch(sparse)
        shared.plan(metrics)
        for metric in reversed(metrics):  # not the plan's order
            got, alone = shared.values(metric), batch(sparse).values(metric)
            for column in ("original", "first", "last", "tie_aware", "variance"):
                np.testing.assert_array_equal(getattr(got, column), getattr(alone, column),
                                              err_msg=f"{metric} {column}")
        # the first level asked computed all twelve at once
        # on the table that evaluates IPrec: the compact one unless a depth cuts blocks
        table = shared.full() if sparse and depth is not None else shared
        assert table.compact == (sparse and depth is None)
        assert len(table.shared[("IPrec", "expectation", "trec_eval")]) == 12
