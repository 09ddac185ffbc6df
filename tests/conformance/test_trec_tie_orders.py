"""Every trec_eval measure on tied TREC runs against the enumeration of all tie orders.

The oracle scores each tie order of a query as its own query of an untied run (strictly
decreasing scores in that order), through tieeval's trec_eval-order Original column,
itself checked line for line against trec_eval 10 (``test_trec_dropin.py``,
``test_trec_reference.py``) and here against a small independent re-implementation of
trec_eval's ``-M`` and ``-J`` (cut at N in the list's order, then drop the documents not
judged >= 0) for a few measures. Under ``-J -M N`` (``--judged-only --depth N``), a tie
block across rank N decides which of its documents survive the cut: the tie-aware value
is the mean over the tie orders, First and Last the values of the orders docs/METRICS.md
names (section 16), Original trec_eval's own.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tieeval.analysis.trec_eval import query_values
from tieeval.engine.arguments import metric_list, rel_options
from tieeval.io.base import RelevanceReadOptions

GRADES = [-1, 0, 0, 1, 2, 3]
pytestmark = pytest.mark.filterwarnings("ignore")


def random_case(rng, depth: int, queries: int = 6, limit: int = 300, grades=None):
    """A tied run whose blocks straddle rank ``depth`` in most queries, with grades -1..2
    or no judgement: ``{q: [(docno, score), ...]}`` (trec_eval's order) and qrels."""
    run, qrels = {}, {}
    for q in range(queries):
        while True:
            n = int(rng.integers(depth, depth + 5))
            scores = np.sort(rng.choice([1.0, 2.0, 3.0, 4.0], size=n,
                                        p=[0.4, 0.3, 0.2, 0.1]))[::-1]
            sizes = [len(list(g)) for _, g in itertools.groupby(scores.tolist())]
            if math.prod(math.factorial(s) for s in sizes) <= limit:
                break
        docs = [f"d{q}-{i:02d}" for i in rng.permutation(n)]
        ranked = sorted(zip(docs, scores.tolist()), key=lambda x: (-x[1], x[0]),
                        reverse=False)
        # trec_eval's order: score descending, docno descending
        ranked = sorted(ranked, key=lambda x: x[0], reverse=True)
        ranked = sorted(ranked, key=lambda x: -x[1])
        run[f"q{q}"] = ranked
        judged = {d: int(rng.choice(grades or GRADES)) for d in docs if rng.random() < 0.7}
        judged[f"d{q}-unretrieved"] = 1
        qrels[f"q{q}"] = judged
    return run, qrels


def tie_orders(ranked):
    """Every order of ``ranked`` that only reorders documents of equal score."""
    blocks = [list(g) for _, g in itertools.groupby(ranked, key=lambda x: x[1])]
    for parts in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [d for part in parts for d, _ in part]


def label_key(judged, best: bool):
    """First's (``best``) or Last's rank of a document inside its tie block: grade
    descending (ascending), judged before unjudged among equal grades; a document
    judged below 0 has its grade, one without a judgement grade 0, unjudged."""
    def key(d):
        grade = judged.get(d, 0)
        return (-grade if best else grade, 0 if d in judged and grade >= 0 else 1)
    return key


def is_sorted(items, key) -> bool:
    """Whether ``items`` (docno, score) are sorted by ``key`` inside each run of equal
    scores."""
    return all(key(a[0]) <= key(b[0]) for a, b in zip(items, items[1:]) if a[1] == b[1])


def write(tmp_path, name, run, qrels):
    run_path, qrels_path = tmp_path / f"{name}.run", tmp_path / f"{name}.qrels"
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n"
                                for q, ranked in run.items() for d, s in ranked))
    qrels_path.write_text("".join(f"{q} 0 {d} {v}\n"
                                  for q, judged in qrels.items() for d, v in judged.items()))
    return str(run_path), str(qrels_path)


def values(run_path, qrels_path, metrics, judged_only, depth):
    opts = RelevanceReadOptions(qrels=qrels_path, judged_only=judged_only,
                                judged_depth=depth if judged_only else None)
    rel = rel_options(None, {"convention": "trec_eval", "depth": depth})
    return query_values(run_path, metrics, options=opts, relevance=rel)


def enumerate_orders(tmp_path, run, qrels, metrics, judged_only, depth):
    """Per query: each tie order's values (``{metric key: array over orders}``), the index
    of trec_eval's order among them, and the orders First and Last take their values
    from (see :func:`documented_first_last`)."""
    flat, flat_qrels, where = {}, {}, {}
    for q, ranked in run.items():
        score = dict(ranked)
        orders = list(tie_orders(ranked))
        trec = next(i for i, o in enumerate(orders) if o == [d for d, _ in ranked])
        ends = []
        for best in (True, False):
            key = label_key(qrels[q], best)
            if judged_only:  # the list trec_eval evaluates, sorted inside its ties
                kept = [[(d, score[d]) for d in trec_eval_docs(o, qrels[q], depth, True)]
                        for o in orders]
                ends.append([i for i, k in enumerate(kept) if is_sorted(k, key)])
            else:  # the whole list sorted inside its ties
                ends.append([i for i, o in enumerate(orders)
                             if is_sorted([(d, score[d]) for d in o], key)])
        where[q] = (len(flat), len(orders), (trec, *ends))
        for i, order in enumerate(orders):
            name = f"{q}.{i:05d}"
            flat[name] = [(d, float(len(order) - j)) for j, d in enumerate(order)]
            flat_qrels[name] = qrels[q]
    got = values(*write(tmp_path, "orders", flat, flat_qrels), metrics, judged_only, depth)
    index = {q: i for i, q in enumerate(got.qids)}
    out = {}
    for q, (_, count, special) in where.items():
        rows = [index[f"{q}.{i:05d}"] for i in range(count)]
        out[q] = ({key: cols["original"][rows] for key, cols in got.values.items()}, special)
    return out


def trec_eval_docs(order, judged, depth, judged_only):
    """trec_eval's ranking of one tie order: cut at ``depth``, then (``-J``) the documents
    not judged >= 0 dropped."""
    kept = order[:depth] if depth else order
    if judged_only:
        kept = [d for d in kept if judged.get(d, -1) >= 0]
    return kept


def trec_eval_list(order, judged, depth, judged_only):
    """trec_eval's ranking of one tie order: cut at ``depth``, then (``-J``) the documents
    not judged >= 0 dropped; the grades of what is left."""
    return [max(judged.get(d, 0), 0) for d in trec_eval_docs(order, judged, depth,
                                                             judged_only)]


def independent(grades, big_r):
    """A few measures as trec_eval defines them, on one ranked list of grades."""
    hits = [g > 0 for g in grades]
    ap = sum(sum(hits[:i]) / i for i, h in enumerate(hits, 1) if h) / big_r
    rr = next((1 / i for i, h in enumerate(hits, 1) if h), 0.0)
    return {"Precision@5": sum(hits[:5]) / 5, "MAP": ap, "MRR": rr,
            "NumRet": len(grades), "NumRelRet": sum(hits),
            "SetP": sum(hits) / len(grades) if grades else 0.0}


CASES = [(True, 4, 0), (True, 6, 1), (True, 3, 2), (True, None, 3), (False, 4, 4),
         (False, None, 5)]
#: docs/METRICS.md section 16: the measures whose First and Last are the values of the
#: label orders (grade descending / ascending inside each tie block), which are not the
#: maximum and minimum over the tie orders; and rbp_resid, whose First is its minimum and
#: Last its maximum. Every other measure: First = maximum, Last = minimum.
BY_ORDER = {"InfAP", "NormGain"}
REVERSED = {"TrecRBP-resid"}


def check_query(cols, r, found, special, name, short):
    """One query's four columns against its tie orders' values ``found``."""
    trec, firsts, lasts = special
    close = {"rel": 1e-12, "abs": 1e-13}
    assert cols["original"][r] == pytest.approx(found[trec], **close), name
    if not np.isnan(cols["tie_aware"][r]):
        assert cols["tie_aware"][r] == pytest.approx(math.fsum(found) / found.size,
                                                     rel=1e-11, abs=1e-13), name
    first, last = cols["first"][r], cols["last"][r]
    if short in REVERSED:
        assert (first, last) == pytest.approx((found.min(), found.max()), **close), name
        return
    if short in BY_ORDER:  # the label orders' values (the best of them under -J -M)
        assert first == pytest.approx(found[firsts].max(), **close), name
        assert last == pytest.approx(found[lasts].min(), **close), name
        return
    assert (first, last) == pytest.approx((found.max(), found.min()), **close), name


@pytest.mark.parametrize("judged_only,depth,seed", CASES)
def test_every_column_is_the_tie_orders(tmp_path, judged_only, depth, seed):
    """Original = trec_eval's order's value, tie-aware = the mean over every tie order, and
    First / Last as docs/METRICS.md states them per measure, for every measure of
    all_trec (graded qrels with -1, with and without -J, with and without -M through a
    tie block)."""
    rng = np.random.default_rng(seed)
    run, qrels = random_case(rng, depth or 5)
    metrics = metric_list("all_trec")
    got = values(*write(tmp_path, "tied", run, qrels), metrics, judged_only, depth)
    want = enumerate_orders(tmp_path, run, qrels, metrics, judged_only, depth)
    row = {q: i for i, q in enumerate(got.qids)}
    straddled = 0
    for q, (per_order, special) in want.items():
        if depth and len(run[q]) > depth and run[q][depth - 1][1] == run[q][depth][1]:
            straddled += 1
        for key, cols in got.values.items():
            if not np.isnan(per_order[key]).all():
                check_query(cols, row[q], per_order[key], special, (q, *key), key[0])
    if depth:
        assert straddled >= 2


@pytest.mark.parametrize("name", sorted(BY_ORDER | REVERSED))
def test_first_is_not_the_maximum_for(tmp_path, name):
    """A counter-example for each measure documented as not First = maximum: a query whose
    First is below the largest value over its tie orders."""
    metrics = metric_list([name])
    for seed in range(20):
        rng = np.random.default_rng(1000 + seed)
        run, qrels = random_case(rng, 5, queries=8, grades=[-1, 0, 0, 1, 2, 3, 4])
        want = enumerate_orders(tmp_path, run, qrels, metrics, False, None)
        got = values(*write(tmp_path, "tied", run, qrels), metrics, False, None)
        row = {q: i for i, q in enumerate(got.qids)}
        (key, cols), = got.values.items()
        if any(cols["first"][row[q]] < per_order[key].max() - 1e-9
               for q, (per_order, _) in want.items()):
            return
    raise AssertionError(f"no query with {name}'s First below its maximum")


@pytest.mark.parametrize("judged_only,depth,seed", CASES[:3])
def test_the_oracle_is_trec_evals_cut_then_judged(tmp_path, judged_only, depth, seed):
    """The enumeration's per-order values (tieeval's Original on untied lists) equal a
    plain re-implementation of trec_eval's -M then -J for P@5, MAP, MRR, num_ret,
    num_rel_ret and set_P: the oracle above is trec_eval's cut, not tieeval's."""
    rng = np.random.default_rng(seed)
    run, qrels = random_case(rng, depth, queries=3, limit=60)
    names = ["Precision@5", "MAP", "MRR", "NumRet", "NumRelRet", "SetP"]
    metrics = metric_list(names)
    want = enumerate_orders(tmp_path, run, qrels, metrics, judged_only, depth)
    for q, (per_order, _) in want.items():
        big_r = sum(v > 0 for v in qrels[q].values())
        for i, order in enumerate(tie_orders(run[q])):
            mine = independent(trec_eval_list(order, qrels[q], depth, judged_only), big_r)
            for key, found in per_order.items():
                assert found[i] == pytest.approx(mine[key[0] if key[1] is None
                                                      else f"{key[0]}@{key[1]}"],
                                                 rel=1e-12), (q, i, key)


def test_judged_only_depth_straddle_dataset_variance(tmp_path):
    """The dataset's tie-aware sd under -J -M through a tie block: sqrt(sum of the
    queries' variances over their tie orders) / Q."""
    from tieeval import evaluate_path
    rng = np.random.default_rng(7)
    run, qrels = random_case(rng, 4)
    run_path, qrels_path = write(tmp_path, "tied", run, qrels)
    metrics = metric_list(["Precision@5", "NumRelRet"])
    want = enumerate_orders(tmp_path, run, qrels, metrics, True, 4)
    result = evaluate_path(run_path, metrics, qrels=qrels_path, convention="trec_eval",
                           judged_only=True, depth=4)
    count = len(want)
    for key in next(iter(want.values()))[0]:
        variances = [np.var(per_order[key]) for per_order, _ in want.values()]
        name = key[0] if key[1] is None else f"{key[0]}@{key[1]}"
        row = result.metric(name)
        scale = 1 if row.aggregate == "sum" else count  # a sum's sd is not divided by Q
        assert sum(v > 0 for v in variances) >= 2
        assert row.tie_aware_std == pytest.approx(math.sqrt(math.fsum(variances)) / scale,
                                                  rel=1e-9)


def test_a_block_beyond_the_limit_has_no_tie_aware_value(tmp_path, monkeypatch):
    """Past the composition limit a query keeps Original, its First and Last come from the
    two extreme compositions (values of some tie orders, so within the range of all of
    them), and the tie-aware figure is null with its reason, never estimated."""
    from tieeval import evaluate_path
    from tieeval.io import straddle
    monkeypatch.setattr(straddle, "MAX_COMPOSITIONS", 1)
    rng = np.random.default_rng(0)
    run, qrels = random_case(rng, 4)
    run_path, qrels_path = write(tmp_path, "tied", run, qrels)
    metrics = metric_list(["MAP", "Precision@5"])
    want = enumerate_orders(tmp_path, run, qrels, metrics, True, 4)
    got = values(run_path, qrels_path, metrics, True, 4)
    row = {q: i for i, q in enumerate(got.qids)}
    for q, (per_order, special) in want.items():
        for key, cols in got.values.items():
            found = per_order[key]
            assert cols["original"][row[q]] == pytest.approx(found[special[0]], rel=1e-12)
            assert found.min() - 1e-12 <= cols["last"][row[q]] <= \
                cols["first"][row[q]] <= found.max() + 1e-12
    result = evaluate_path(run_path, metrics, qrels=qrels_path, convention="trec_eval",
                           judged_only=True, depth=4)
    for metric in result.metrics:
        assert metric.tie_aware is None and metric.tie_aware_reason
