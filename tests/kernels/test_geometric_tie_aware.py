"""The exact tie-aware geometric means (GMAP, GBpref) against enumeration of every
combination of the queries' tie orders.

Queries break their ties independently, so the oracle runs over the product of every
query's tie orders, computing trec_eval's geometric mean exp(mean(log(max(x, 1e-5))))
on each combination (AP and bpref written out from m_map.c / m_bpref.c, in
``test_trec_gain_measures.oracle`` and here) and averaging. The kernel's figure must be
that mean, the same through any batching and through the accumulator's state.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import tie_orderings
from test_trec_gain_measures import make_rng, oracle

from tieeval.engine.local import evaluate_dump, kernel_for
from tieeval.io.trec_stream import open_trec_run
from tieeval.kernels.accumulator import Accumulator
from tieeval.metrics.options import RelOptions


def ap(seq, unranked, level, depth):
    ret = seq[:depth] if depth is not None else seq
    lvl = 1 if level is None else level
    R = sum(x >= lvl for x, _ in seq + unranked)
    hits, total = 0, 0.0
    for i, (x, _) in enumerate(ret):
        if x >= lvl:
            hits += 1
            total += hits / (i + 1)
    return total / R if R else 0.0


def write_collection(tmp_path, rng, queries=3):
    """A TREC run with heavy ties and its qrels (labels -1..2, some documents unjudged);
    returns the paths and, per query, (scores, items) listed in docno order."""
    run, qrels, rows = [], [], {}
    for q in range(queries):
        qid = f"q{q}"
        n = int(rng.integers(3, 7))
        scores = rng.integers(0, 3, n).astype(np.float64)
        items = []
        for d in range(n):
            lab = float(rng.choice([-1.0, 0.0, 0.0, 1.0, 1.0, 2.0]))
            judged = lab != 0 or rng.random() < 0.5
            if judged:
                qrels.append(f"{qid} 0 d{d} {int(lab)}")
            items.append((lab, judged and lab >= 0))
            run.append(f"{qid} Q0 d{d} 1 {scores[d]} tag")
        if not any(x > 0 for x, _ in items):  # every query gets a relevant document
            qrels.append(f"{qid} 0 extra 1")
            rows[qid] = (scores, items, [(1.0, True)])
        else:
            rows[qid] = (scores, items, [])
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    return str(tmp_path / "run"), str(tmp_path / "qrels"), rows


def expected_gm(rows, value, level=None, depth=None):
    per_query = []
    for scores, items, unranked in rows.values():
        per_query.append([value(list(o), unranked, level, depth)
                          for o in tie_orderings(scores, items)])
    total, count = 0.0, 0
    for combo in itertools.product(*per_query):
        total += math.exp(sum(math.log(max(x, 1e-5)) for x in combo) / len(combo))
        count += 1
    return total / count, per_query


def bpref(seq, unranked, level, depth):
    return oracle("GBpref", seq, unranked, level, depth)


@pytest.mark.parametrize("setting", [(None, None), (2.0, None), (None, 2)])
def test_expected_geometric_mean_over_every_combination_of_tie_orders(tmp_path, setting):
    level, depth = setting
    rng = make_rng(f"geometric-{level}-{depth}")
    checked = 0
    for trial in range(6):
        path = tmp_path / str(trial)
        path.mkdir()
        run, qrels, rows = write_collection(path, rng)
        options = RelOptions(no_relevant="zero", relevance_level=level, depth=depth)
        for name, value in (("GMAP", ap), ("GBpref", bpref)):
            want, per_query = expected_gm(rows, value, level, depth)
            for batch_rows in (None, 1):
                result = evaluate_dump(open_trec_run(run, qrels), [name], relevance=options,
                                       batch_rows=batch_rows)
                row = result.metrics[0]
                assert row.tie_aware == pytest.approx(want, rel=1e-12), (name, rows)
                # the figure is not the geometric mean of the expectations
                lo = math.exp(np.mean([math.log(max(min(v), 1e-5)) for v in per_query]))
                hi = math.exp(np.mean([math.log(max(max(v), 1e-5)) for v in per_query]))
                assert row.last == pytest.approx(lo, rel=1e-12)
                assert row.first == pytest.approx(hi, rel=1e-12)
            checked += 1
    assert checked == 12


def test_gmap_differs_from_the_geometric_mean_of_expected_ap(tmp_path):
    # two queries, each a tie of one relevant and one non-relevant document: AP is 1 or
    # 1/2 with probability 1/2 each, independently; E[GMAP] = E[sqrt(AP1 AP2)]
    (tmp_path / "run").write_text("a Q0 x 1 1 t\na Q0 y 1 1 t\nb Q0 x 1 1 t\nb Q0 y 1 1 t\n")
    (tmp_path / "qrels").write_text("a 0 x 1\na 0 y 0\nb 0 x 1\nb 0 y 0\n")
    result = evaluate_dump(open_trec_run(str(tmp_path / "run"), str(tmp_path / "qrels")),
                           ["GMAP"], relevance=RelOptions(no_relevant="zero"))
    want = (1 + 2 * math.sqrt(0.5) + 0.5) / 4
    assert result.metrics[0].tie_aware == pytest.approx(want, rel=1e-15)
    assert want != pytest.approx(0.75)  # the geometric mean of E[AP] = 3/4


def test_state_round_trip_and_merge_keep_the_figure(tmp_path):
    rng = make_rng("geometric-state")
    run, qrels, _ = write_collection(tmp_path, rng, queries=5)
    dump = open_trec_run(run, qrels)
    kernel = kernel_for(dump, ["GMAP", "GBpref"], relevance=RelOptions(no_relevant="zero"))
    whole = kernel.accumulate(dump.batches(2))
    parts = [kernel.new(), kernel.new()]
    for i, batch in enumerate(dump.batches(1)):
        kernel.add(parts[i % 2], batch)
    merged = Accumulator.from_state(parts[1].to_state())
    merged.merge(Accumulator.from_state(parts[0].to_state()))
    a = kernel.result(whole, dump.path, dump.dtype).to_dict()["metrics"]
    b = kernel.result(merged, dump.path, dump.dtype).to_dict()["metrics"]
    assert a == b
    assert all(row["tie_aware"] is not None for row in a)


def test_beyond_the_work_limit_the_figure_is_null_with_the_reason(tmp_path):
    # one query whose 40 tied documents hold 20 relevant: C(40, 20) orders of one block
    from tieeval.metrics.measures.geometric import GEO_WORK_LIMIT

    assert math.comb(40, 20) > GEO_WORK_LIMIT
    run = "".join(f"a Q0 d{i} 1 1.0 t\n" for i in range(40))
    qrels = "".join(f"a 0 d{i} {i % 2}\n" for i in range(40))
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text(qrels)
    result = evaluate_dump(open_trec_run(str(tmp_path / "run"), str(tmp_path / "qrels")),
                           ["GMAP"], relevance=RelOptions(no_relevant="zero"))
    row = result.metrics[0]
    assert row.tie_aware is None
    assert f"{GEO_WORK_LIMIT:,}" in row.tie_aware_reason
    assert "not estimated by sampling" in row.tie_aware_reason


def test_work_screen_leaves_out_only_rows_whose_exact_work_is_over_the_limit():
    """The vectorised work of spread() is the exact per-block sum of log_orders to far
    less than the margin inside which the per-block sum decides, so which rows are
    enumerated never changes."""
    from types import SimpleNamespace

    from tieeval.metrics.measures.geometric import (
        _SURE_MARGIN,
        GEO_WORK_LIMIT,
        _row_work,
        log_orders,
    )

    rng = np.random.default_rng(7)
    limit = math.log(GEO_WORK_LIMIT)
    for classes, droppable in ((2, None), (3, 2)):
        count = 400
        sizes = rng.integers(1, 12, count)
        brow = np.sort(rng.integers(0, 150, count))
        bst = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        cls = rng.integers(0, classes, int(sizes.sum())).astype(np.int8)
        m_t = np.minimum(sizes, rng.integers(1, 14, count))
        b = SimpleNamespace(bst=bst, bsz=sizes, brow=brow)
        starts = np.flatnonzero(np.concatenate(([True], brow[1:] != brow[:-1])))
        got = _row_work(b, np.arange(count), starts, m_t, cls, classes, droppable)
        assert (got > limit).any() and (got <= limit).any()
        for estimate, lo, hi in zip(got, starts, np.append(starts[1:], count)):
            work = 0.0
            for t in range(lo, hi):
                first = cls[bst[t]:bst[t] + sizes[t]]
                if droppable is not None and m_t[t] == first.size:
                    first = first[first != droppable]
                work += log_orders(np.bincount(first, minlength=classes))
            assert abs(estimate - work) < _SURE_MARGIN / 1000


@pytest.mark.parametrize("depth", [None, 5])
@pytest.mark.parametrize("chunks", [(1 << 20, 1 << 20), (3, 7)])
def test_each_row_of_a_batch_gets_its_distribution_over_its_own_tie_orders(monkeypatch,
                                                                          depth, chunks):
    # AP and bpref distributions are built for the rows of a batch at once (blocks of one
    # make-up valued together, rows convolved block after block): each row's must be the
    # distribution of the oracle over its own tie orders, whatever the groups' sizes
    from collections import defaultdict

    from test_trec_gain_measures import trec_row

    from tieeval.kernels.tie_blocks import RelBatch, TableOptions
    from tieeval.metrics.measures import geometric
    from tieeval.metrics.options import RelMetric

    monkeypatch.setattr(geometric, "_SPREAD_CHUNK", chunks[0])
    monkeypatch.setattr(geometric, "_TERM_CHUNK", chunks[1])
    rng = make_rng(f"geometric-batch-{depth}")
    rows = []
    for _ in range(40):
        scores, labels, judged, ulab, ujudged = trec_row(rng, n_max=9)
        scores = rng.integers(0, 4, scores.size).astype(np.float64)
        rows.append((scores, labels, judged, ulab, ujudged))
    rb = RelBatch(np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]),
                  np.cumsum([0] + [r[0].size for r in rows]),
                  judged=np.concatenate([r[2] for r in rows]),
                  unranked=(np.concatenate([r[3] for r in rows]),
                            np.cumsum([0] + [r[3].size for r in rows])),
                  unranked_judged=np.concatenate([r[4] for r in rows]),
                  options=TableOptions(depth=depth))
    spread_rows = 0
    for name, value in (("GMAP", ap), ("GBpref", bpref)):
        sp = rb.values(RelMetric(name)).spread
        assert not sp.over.any()
        got = {row: (v, p) for row, v, p in zip(sp.rows.tolist(), sp.values, sp.probs)}
        for i, (scores, labels, judged, ulab, ujudged) in enumerate(rows):
            items = [(float(x), bool(j)) for x, j in zip(labels, judged)]
            unranked = [(float(x), bool(j)) for x, j in zip(ulab, ujudged)]
            values = [value(list(o), unranked, None, depth)
                      for o in tie_orderings(scores, items)]
            want: dict = defaultdict(float)
            for x in values:
                want[round(x, 9)] += 1 / len(values)
            if i not in got:  # no tie moves the row's value
                assert len(want) == 1, (name, i)
                continue
            v, p = got[i]
            assert np.all(np.diff(v) >= 0) and math.fsum(p) == pytest.approx(1.0, abs=1e-12)
            have: dict = defaultdict(float)
            for x, q in zip(v.tolist(), p.tolist()):
                have[round(x, 9)] += q
            assert have.keys() == want.keys(), (name, i)
            for x in want:
                assert have[x] == pytest.approx(want[x], abs=1e-12), (name, i)
            spread_rows += 1
    assert spread_rows > 20
