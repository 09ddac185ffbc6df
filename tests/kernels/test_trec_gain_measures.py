"""trec_eval's rbp, rbp_resid, binG, G, ndcg_rel, Rndcg, infAP and gm_bpref against
exhaustive enumeration of tie orders.

The oracle translates trec_eval's m_*.c line by line on one ordering of (label, judged)
items: ``res_rels`` as form_res_rels.c builds it (a judged item's level, -1 for an item
outside the qrels, -2 for a negative judgement), the levels' counts over every judged
item (ranked or not), gains as gain_init.c sets them (level i gains i). Rows are TREC
rows: a positive label is judged, a negative one is in the pool but unjudged, a 0 is
judged or outside the pool. The kernel's tie-aware value must be the mean of the oracle
over every ordering the scores allow, its variance (where computed) their variance,
First / Last the oracle on the label orderings and Original on the given order.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from helpers import tie_orderings
from tiers import SLOW

from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.options import RelMetric


def make_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def res_rels(seq, unranked, level, depth):
    """trec_eval's res_rels: the ranked list's rel values, the levels' counts, num_rel."""
    ret = seq[:depth] if depth is not None else seq
    lst = [int(x) if j else (-2 if x < 0 else -1) for x, j in ret]
    judged = [int(x) for x, j in seq + unranked if j and x >= 0]
    top = max(judged, default=-1)
    levels = [judged.count(i) for i in range(top + 1)]
    lvl = 1 if level is None else int(level)
    num_rel = sum(c for i, c in enumerate(levels) if i >= lvl)
    return lst, levels, num_rel, lvl


def gains_table(levels):
    """gain_init.c without parameters: level i gains i, sorted by gain ascending."""
    return [(i, float(i), c) for i, c in enumerate(levels)]


def get_gain(x, table):
    for lvl, g, _ in table:
        if x == lvl:
            return g
    return 0.0


class Ideal:
    """The ideal-gain walk shared by G, ndcg_rel and Rndcg (cur_level / num_at_level)."""

    def __init__(self, table):
        self.table = table
        self.cur = len(table) - 1
        self.gain = table[self.cur][1] if self.cur >= 0 else 0.0
        self.num = 0

    def step(self):
        self.num += 1
        while self.cur >= 0 and self.num > self.table[self.cur][2]:
            self.num = 1
            self.cur -= 1
            self.gain = self.table[self.cur][1] if self.cur >= 0 else 0.0


def oracle(name, seq, unranked, level, depth):
    lst, levels, num_rel, lvl = res_rels(seq, unranked, level, depth)
    table = gains_table(levels)
    n = len(lst)
    if name == "TrecRBP":
        p = 0.9
        lo, hi = min([0.0] + [g for _, g, _ in table]), max([0.0] + [g for _, g, _ in table])
        if lo < 0 or hi > 1:
            table = [(lv, (g - lo) / (hi - lo), c) for lv, g, c in table]
        total, cur = 0.0, 1.0
        for x in lst:
            total += get_gain(x, table) * cur
            cur *= p
        return (1 - p) * total
    if name == "TrecRBP-resid":
        p, total, cur, unj = 0.9, 0.0, 1.0, 0
        for x in lst:
            if x < 0:
                unj += 1
                total += cur
            cur *= p
        return cur + (1 - p) * total if unj else 0.0
    if name == "BinG":
        so_far, total = 0, 0.0
        for i, x in enumerate(lst):
            if x >= lvl:
                so_far += 1
                total += 1.0 / math.log2(3 + i - so_far)
        return total / num_rel if so_far else 0.0
    if name == "NormGain":
        ideal = Ideal(table)
        res_g = sum_res = sum_ideal = sum_cost = 0.0
        i = 0
        while i < n and ideal.gain > 0:
            g = get_gain(lst[i], table)
            sum_res += g
            ideal.step()
            if ideal.gain > 0:
                sum_ideal += ideal.gain
            sum_cost += ideal.gain if ideal.gain >= 1.0 else 1.0
            if g != 0:
                res_g += g / math.log2(2 + sum_cost - sum_res)
            i += 1
        while i < n:
            g = get_gain(lst[i], table)
            sum_res += g
            sum_cost += 1.0
            if g != 0:
                res_g += g / math.log2(2 + sum_cost - sum_res)
            i += 1
        while ideal.gain > 0:
            ideal.step()
            if ideal.gain > 0:
                sum_ideal += ideal.gain
        return res_g / sum_ideal if sum_ideal > 0 else 0.0
    if name == "NDCG-rel":
        ideal = Ideal(table)
        dcg = idcg = total = 0.0
        rel_ret = rel = 0
        i = 0
        while i < n and ideal.gain > 0:
            g = get_gain(lst[i], table)
            if g != 0:
                dcg += g / math.log2(i + 2)
            ideal.step()
            if ideal.gain > 0:
                rel += 1
                idcg += ideal.gain / math.log2(i + 2)
            if g > 0:
                total += dcg / idcg
                rel_ret += 1
            i += 1
        while i < n:
            g = get_gain(lst[i], table)
            if g != 0:
                dcg += g / math.log2(i + 2)
            if g > 0:
                total += dcg / idcg
                rel_ret += 1
            i += 1
        while ideal.gain > 0:
            ideal.step()
            if ideal.gain > 0:
                rel += 1
                idcg += ideal.gain / math.log2(i + 2)
            i += 1
        if rel:
            total += (rel - rel_ret) * dcg / idcg
        return total / rel if total > 0 else 0.0
    if name == "Rndcg":
        if num_rel == 0:
            return 0.0
        ideal = Ideal(table)
        old = ideal.gain
        dcg = idcg = total = 0.0
        points = 0
        i = 0
        while i < n and ideal.gain > 0:
            g = get_gain(lst[i], table)
            ideal.step()
            if old != ideal.gain:
                if idcg > 0:
                    total += dcg / idcg
                    points += 1
                old = ideal.gain
            if g != 0:
                dcg += g / math.log2(i + 2)
            if ideal.gain > 0:
                idcg += ideal.gain / math.log2(i + 2)
            i += 1
        if i < n:
            while i < n:
                g = get_gain(lst[i], table)
                if g != 0:
                    dcg += g / math.log2(i + 2)
                i += 1
            if idcg > 0:
                total += dcg / idcg
                points += 1
        while ideal.gain > 0:
            ideal.step()
            if old != ideal.gain:
                if idcg > 0:
                    total += dcg / idcg
                    points += 1
                old = ideal.gain
            if ideal.gain > 0:
                idcg += ideal.gain / math.log2(i + 2)
            i += 1
        return total / points
    if name == "InfAP":
        nonrel = rel = pooled = 0
        total = 0.0
        for j, x in enumerate(lst):
            if x == -1:
                continue
            if x == -2:
                pooled += 1
                continue
            if 0 <= x < lvl:
                nonrel += 1
            else:
                rel += 1
                if j == 0:
                    total += 1.0
                else:
                    eps = 1e-5
                    total += 1.0 / (j + 1) + (j / (j + 1)) * (
                        (rel - 1 + nonrel + pooled) / j) * (
                        (rel - 1 + eps) / (rel - 1 + nonrel + 2 * eps))
        return total / num_rel if num_rel else 0.0
    if name == "GBpref":  # m_gm_bpref.c's per-query bpref
        num_nonrel = sum(levels[:lvl])
        nonrel = 0
        total = 0.0
        for x in lst:
            if x < 0:
                continue
            if x < lvl:
                nonrel += 1
            else:
                total += (1.0 - min(nonrel, num_rel) / min(num_nonrel, num_rel)
                          if nonrel else 1.0)
        return total / num_rel if num_rel else 0.0
    raise AssertionError(name)


METRICS = ["TrecRBP", "TrecRBP-resid", "BinG", "NormGain", "NDCG-rel", "Rndcg", "InfAP",
           "GBpref"]
EXACT_VARIANCE = {"TrecRBP", "TrecRBP-resid", "Rndcg"}


def trec_row(rng, n_max=7):
    """A TREC row: labels > 0 judged, < 0 pooled but unjudged, 0 judged or not."""
    n = int(rng.integers(1, n_max))
    scores = rng.integers(0, 3, n).astype(np.float64)  # heavy ties
    labels = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0], n)
    judged = np.where(labels > 0, True, np.where(labels < 0, False, rng.random(n) < 0.6))
    u = int(rng.integers(0, 3))
    ulab = rng.choice([-1.0, 0.0, 1.0, 2.0], u)
    return scores, labels, judged, ulab, ulab >= 0


def zero_undefined(v, i=0):
    """trec_eval's value of a row tieeval leaves undefined (no_relevant zero): 0."""
    return v if v is not None else 0.0


@pytest.mark.parametrize("setting", [(None, None), (2.0, None), (None, 3), (2.0, 2),
                                     (3.0, 4)])
@pytest.mark.parametrize("rows", [50, pytest.param(150, marks=SLOW)])
def test_tie_aware_is_the_mean_over_every_tie_order(setting, rows):
    # every run checks the first 50 rows of each setting; the slow tier all 150
    level, depth = setting
    rng = make_rng(f"trec-gain-{level}-{depth}")
    checked = 0
    for _ in range(rows):
        scores, labels, judged, ulab, ujudged = trec_row(rng)
        rb = RelBatch(scores, labels, np.array([0, scores.size]), judged=judged,
                      unranked=(ulab, np.array([0, ulab.size])), unranked_judged=ujudged,
                      options=TableOptions(relevance_level=level, depth=depth, original="stable"))
        items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
        unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
        orders = tie_orderings(scores, items)
        stable = [items[i] for i in np.argsort(-scores, kind="stable")]
        # the label orderings: labels descending inside ties, judged first among equals
        key = np.lexsort((~judged, -labels, -scores))
        first = [items[i] for i in key]
        back = np.lexsort((judged, labels, -scores))
        last = [items[i] for i in back]
        for name in METRICS:
            v = rb.values(RelMetric(name))
            values = [oracle(name, list(o), unranked, level, depth) for o in orders]
            if not v.defined[0]:
                # undefined rows are the ones trec_eval scores 0 in every order
                assert all(x == 0.0 for x in values), (name, items, unranked)
                continue
            want = math.fsum(values) / len(values)
            assert v.tie_aware[0] == pytest.approx(want, abs=1e-12), (name, scores, items,
                                                                      unranked)
            assert v.original[0] == pytest.approx(
                oracle(name, stable, unranked, level, depth), abs=1e-12), name
            assert v.first[0] == pytest.approx(
                oracle(name, first, unranked, level, depth), abs=1e-12), name
            assert v.last[0] == pytest.approx(
                oracle(name, last, unranked, level, depth), abs=1e-12), name
            if name in EXACT_VARIANCE and not np.isnan(v.variance[0]):
                var = math.fsum((x - want) ** 2 for x in values) / len(values)
                assert v.variance[0] == pytest.approx(var, abs=1e-12), name
            checked += 1
    assert checked > 600 * rows // 150


def test_rbp_and_rndcg_first_and_last_bound_every_order():
    # linear in the gains with non-increasing weights: the label orderings are the
    # maximum and the minimum (rearrangement); the residual is the other way round
    rng = make_rng("trec-gain-bounds")
    for _ in range(100):
        scores, labels, judged, ulab, ujudged = trec_row(rng)
        rb = RelBatch(scores, labels, np.array([0, scores.size]), judged=judged,
                      unranked=(ulab, np.array([0, ulab.size])), unranked_judged=ujudged)
        items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
        unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
        orders = tie_orderings(scores, items)
        for name in ("TrecRBP", "Rndcg", "BinG"):
            v = rb.values(RelMetric(name))
            if not v.defined[0]:
                continue
            values = [oracle(name, list(o), unranked, None, None) for o in orders]
            assert v.first[0] == pytest.approx(max(values), abs=1e-12), name
            assert v.last[0] == pytest.approx(min(values), abs=1e-12), name
        v = rb.values(RelMetric("TrecRBP-resid"))
        values = [oracle("TrecRBP-resid", list(o), unranked, None, None) for o in orders]
        assert v.first[0] == pytest.approx(min(values), abs=1e-12)
        assert v.last[0] == pytest.approx(max(values), abs=1e-12)


def test_large_tie_blocks_stay_exact_and_bounded():
    # one block of 60 tied items (many of each kind) below a few ranked ones: the
    # per-item sums run over every composition, within the work limit, between last
    # and first; a block far over the limit gives NaN (never a sample)
    from tieeval.metrics.measures.placement import ITEM_WORK_LIMIT

    rng = make_rng("trec-gain-large")
    labels = rng.choice([-1.0, 0.0, 1.0, 2.0, 3.0], 63)
    judged = labels >= 0
    scores = np.concatenate(([3.0, 2.0, 2.0], np.ones(60)))
    rb = RelBatch(scores, labels, np.array([0, 63]), judged=judged, options=TableOptions(depth=40))
    for name in ("BinG", "NormGain", "InfAP"):
        v = rb.values(RelMetric(name))
        assert v.last[0] - 1e-12 <= v.tie_aware[0] <= v.first[0] + 1e-12, name
    big = 400
    labels = np.tile([-1.0, 0.0, 1.0, 2.0, 3.0, 0.0], big // 6 + 1)[:big]
    judged = np.tile([False, True, True, True, True, False], big // 6 + 1)[:big]
    rb = RelBatch(np.ones(big), labels, np.array([0, big]), judged=judged)
    assert (big // 6) ** 4 > ITEM_WORK_LIMIT
    v = rb.values(RelMetric("InfAP"))
    assert math.isnan(v.tie_aware[0])
    assert not math.isnan(v.first[0])


@pytest.mark.parametrize("depth", [None, 4])
@pytest.mark.parametrize("grid_slice,exact_block", [(5, 57), (1 << 17, 57), (7, 1)])
def test_every_row_of_a_batch_is_the_mean_over_its_own_tie_orders(monkeypatch, depth,
                                                                  grid_slice, exact_block):
    # binG, G and infAP sum the terms of every tie block of a batch at once, laid end to
    # end and cut in slices: rows batched together, and a slice ending inside a block's
    # terms, change no row's value (each is the mean of the oracle over its tie orders);
    # the chances come from exact binomials (small blocks) or from logarithms (large
    # ones: every block here, with exact_block 1)
    from tieeval.metrics.measures import placement

    monkeypatch.setattr(placement, "_GRID_SLICE", grid_slice)
    monkeypatch.setattr(placement, "EXACT_BLOCK", exact_block)
    rng = make_rng(f"trec-gain-batch-{depth}")
    rows = [trec_row(rng, n_max=8) for _ in range(30)]
    offsets = np.cumsum([0] + [r[0].size for r in rows])
    uoffsets = np.cumsum([0] + [r[3].size for r in rows])
    rb = RelBatch(np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]),
                  offsets, judged=np.concatenate([r[2] for r in rows]),
                  unranked=(np.concatenate([r[3] for r in rows]), uoffsets),
                  unranked_judged=np.concatenate([r[4] for r in rows]),
                  options=TableOptions(depth=depth, original="stable"))
    checked = 0
    for name in ("BinG", "NormGain", "InfAP"):
        v = rb.values(RelMetric(name))
        for i, (scores, labels, judged, ulab, ujudged) in enumerate(rows):
            items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
            unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
            values = [oracle(name, list(o), unranked, None, depth)
                      for o in tie_orderings(scores, items)]
            if not v.defined[i]:
                assert all(x == 0.0 for x in values), (name, items, unranked)
                continue
            want = math.fsum(values) / len(values)
            assert v.tie_aware[i] == pytest.approx(want, abs=1e-12), (name, i, scores, items)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("lengths", [[4, 4, 4], [3, 0, 5, 3, 1], [7]])
def test_segment_cumsum_is_each_segments_own_running_sum(lengths):
    # bit for bit the running sum of each segment alone, rows of one length (one 2-D
    # array) or not: a row's sums never depend on the rows batched with it
    from tieeval.metrics.measures.placement import segment_cumsum

    rng = make_rng(f"segment-cumsum-{lengths}")
    offsets = np.cumsum([0] + lengths)
    x = rng.random(int(offsets[-1])) * 10.0 ** rng.integers(-8, 8, int(offsets[-1]))
    got = segment_cumsum(x, offsets)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        assert got[lo:hi].tolist() == np.cumsum(x[lo:hi]).tolist()
