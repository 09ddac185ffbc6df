"""A measure declares how deep it reads (``Measure.read_depth``), and the kernels take their
depths from it, never from K alone.

Two measures that read past their cutoff are registered for these tests only: HR2@K (a
hit within the top 2K, the measure of CONTRIBUTING's kind that once printed a wrong
Original) and Hits2@K (the relevant items within the top 2K, which reads every relevant
block down to 2K, not only the first). Every column (Original under each ``--original``
rule, First, Last, Tie-aware and its std) and the tie statistics are checked against an
enumeration of every tie order of every row, on short rows, ragged rows, long rows of one
width (partitioned at their depth, 1,500 scores and more) and long ragged rows, all on the
sparse table cut at the declared depth; single-positive rows through the closed-form
kernel; a TREC run under trec_eval's order.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from helpers import fake_torch, rel_batch

from tieeval import save_scores
from tieeval.engine.local import evaluate_path
from tieeval.errors import ParameterError
from tieeval.kernels import sparse_blocks
from tieeval.kernels.base import EvalSpec
from tieeval.kernels.general import GeneralKernel
from tieeval.kernels.tie_blocks import RelBatch
from tieeval.metrics.measures import MEASURES
from tieeval.metrics.measures.base import Measure, deepest
from tieeval.metrics.measures.series import hypergeometric_hits, pmiss
from tieeval.metrics.options import RelMetric, RelOptions
from tieeval.metrics.registry import REGISTRY, key, register


@dataclass(frozen=True)
class HitWithin2K(Measure):
    """[a relevant item in the top 2K]; exact E and Var from the first relevant block."""

    def read_depth(self, k, r=None, n=None):
        return None if k is None else 2 * k

    def closed(self, ev):
        b = ev.b
        e = np.zeros(b.rows)
        decided = np.zeros(b.rows, dtype=bool)
        _, rows, a, nb, p, _ = ev.first_block_stats(b.p_t > 0, b.p_t)
        m = np.clip(2 * ev.kc[rows] - a, 0, nb)
        e[rows] = 1.0 - pmiss(nb, p, m)
        decided[rows] = (m >= 1) & (m <= nb - p)
        return e, e * (1.0 - e), decided

    def realise(self, ev, lab, judged):
        _, row, _, place, _, _ = ev.b.relevant_places(lab)
        inside = row[place < 2 * ev.kc[row]]
        return (np.bincount(inside, minlength=ev.b.rows) > 0).astype(np.float64)

    # one held-out positive: its rank is uniform on a+1 .. a+b
    def covers_single_positive(self, k) -> bool:
        return k is not None

    def rank_value(self, k, rank):
        return (np.asarray(rank) <= 2 * k).astype(np.float64)

    def tie_moments(self, k, a, b):
        lo, hi = np.minimum(a, 2 * k), np.minimum(a + b, 2 * k)
        e = (hi - lo) / b.astype(np.float64)
        return e, e, (a < 2 * k) & (2 * k < a + b)


@dataclass(frozen=True)
class HitsWithin2K(Measure):
    """Relevant items in the top 2K: hypergeometric in every block reaching into it."""

    def read_depth(self, k, r=None, n=None):
        return None if k is None else 2 * k

    def _m_t(self, ev):
        b = ev.b
        return np.clip(2 * ev.kc[b.brow] - b.ba, 0, b.bsz)

    def closed(self, ev):
        return hypergeometric_hits(ev.b, self._m_t(ev), ev.b.p_t)

    def realise(self, ev, lab, judged):
        _, row, _, place, _, _ = ev.b.relevant_places(lab)
        inside = row[place < 2 * ev.kc[row]]
        return np.bincount(inside, minlength=ev.b.rows).astype(np.float64)


HR2 = HitWithin2K("HR2", "required", "a hit within the top 2K",
                  names={"tieeval": ("HR2",)}, single_positive=True,
                  needs=frozenset({"positive", "labels", "cutoff"}))
HITS2 = HitsWithin2K("Hits2", "required", "relevant items within the top 2K",
                     names={"tieeval": ("Hits2",)}, needs=frozenset({"labels", "cutoff"}))


@pytest.fixture
def deep_measures():
    """HR2 and Hits2 registered for one test, and gone after it."""
    for m in (HR2, HITS2):
        assert key(m.name) not in REGISTRY
        register(m)
    yield
    for m in (HR2, HITS2):
        dict.__delitem__(REGISTRY, key(m.name))
    assert key(HR2.name) not in REGISTRY and key(HITS2.name) not in REGISTRY


# -- the reference: every tie order, and each rule's own order --------------------------

def tie_orders(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Every distinct label sequence of an ordering consistent with the scores, one per
    line: blocks of equal scores permuted independently (each distinct sequence arises
    from equally many orderings, so the plain mean over them is the mean over all)."""
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    s, lab = scores[order], labels[order].astype(np.int8)  # labels -1 .. 3 here
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] != s[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], s.size)
    seqs = lab[None, :].copy()
    tied = ends - starts > 1
    for a, b in zip(starts[tied].tolist(), ends[tied].tolist()):
        if np.unique(lab[a:b]).size > 1:
            perms = np.array(sorted(set(itertools.permutations(lab[a:b].tolist()))))
            # every sequence so far with each arrangement of this block
            seqs = np.repeat(seqs, len(perms), axis=0)
            seqs[:, a:b] = np.tile(perms, (seqs.shape[0] // len(perms), 1))
    return seqs


def first_block(scores: np.ndarray, mark: np.ndarray) -> int:
    """The size of the tie block of the highest-scored marked item (0: none)."""
    if not mark.any():
        return 0
    best = scores[mark].max()
    return int(np.count_nonzero(scores == best))


def rule_order(row: np.ndarray, rule: str, ranking=None) -> np.ndarray:
    if rule == "argsort":
        return np.argsort(row * -1)
    if rule in ("stable", "topk"):  # the stand-in torch.topk ranks like 'stable'
        return row.size - 1 - np.argsort(row[::-1], kind="stable")[::-1]
    if rule == "reverse-stable":
        return np.argsort(row, kind="stable")[::-1]
    # a listed ranking, then the rest in the order of the full sort (as tieeval fills it;
    # those places lie below the depth every metric reads)
    listed = np.asarray(ranking)
    rest = rule_order(row, "argsort")
    return np.concatenate((listed, rest[~np.isin(rest, listed)]))


def reference(rows, labels, k: int, rule: str, rankings=None, unranked=None, orders=None):
    """The dataset figures of HR2@k and Hits2@k and the tie statistics at k, from every
    tie order of every row (``unranked``: per row, relevant items not ranked; ``orders``:
    each row's :func:`tie_orders`, if already enumerated)."""
    out = {m: {c: [] for c in ("original", "first", "last", "tie_aware", "var")}
           for m in ("HR2", "Hits2")}
    top, ratio, pos, decided = [], [], [], []
    for i, (s, lab) in enumerate(zip(rows, labels)):
        seqs = (tie_orders(s, lab) if orders is None else orders[i]) > 0
        n = s.size
        size = first_block(s, np.ones(n, dtype=bool))
        top.append(size)
        ratio.append(size / n)
        if (lab > 0).any():
            pos.append(first_block(s, lab > 0))
            hr_k = seqs[:, :k].any(axis=1)
            decided.append(hr_k.max() != hr_k.min())
        r = int(np.count_nonzero(lab > 0)) + (0 if unranked is None else unranked[i])
        if r == 0:
            continue  # undefined: left out of every mean
        order = rule_order(s, rule, None if rankings is None else rankings[i])
        orig = lab[order] > 0
        for name, value, at in (
                ("HR2", lambda x: x[..., :2 * k].any(axis=-1).astype(float), orig),
                ("Hits2", lambda x: x[..., :2 * k].sum(axis=-1).astype(float), orig)):
            v = value(seqs)
            col = out[name]
            col["original"].append(float(value(at)))
            col["first"].append(v.max())
            col["last"].append(v.min())
            col["tie_aware"].append(math.fsum(v) / v.size)
            col["var"].append(math.fsum((v - v.mean()) ** 2) / v.size)
    figures = {}
    for name, col in out.items():
        count = len(col["first"])
        figures[name] = {c: math.fsum(col[c]) / count
                         for c in ("original", "first", "last", "tie_aware")}
        figures[name]["tie_aware_std"] = math.sqrt(math.fsum(col["var"])) / count
    ties = {"top_tie_size": float(np.mean(top)), "top_tie_ratio": float(np.mean(ratio)),
            "top_tie_frequency": float(np.mean(np.array(top) > 1)),
            "positive_tie_size": float(np.mean(pos)),
            "positive_tie_frequency": float(np.mean(np.array(pos) > 1)),
            "tie_decided": {k: float(np.mean(decided))}}
    return figures, ties


def assert_matches(run, figures, ties, k: int) -> None:
    for name, want in figures.items():
        row = run.metric(f"{name}@{k}")
        for column, value in want.items():
            assert getattr(row, column) == pytest.approx(value, abs=1e-12), (name, column)
    got = run.ties
    for field in ("top_tie_size", "top_tie_ratio", "top_tie_frequency",
                  "positive_tie_size", "positive_tie_frequency"):
        assert getattr(got, field) == pytest.approx(ties[field], abs=1e-12), field
    assert got.tie_decided == pytest.approx(ties["tie_decided"], abs=1e-12)


# -- the dumps ------------------------------------------------------------------------

def short_rows(rng, rows=160, cols=10):
    scores = rng.integers(0, 5, (rows, cols)).astype(np.float32)
    labels = (rng.random((rows, cols)) < 0.3).astype(np.int64)
    return list(scores), list(labels)


def ragged_rows(rng, rows=160):
    scores = [rng.integers(0, 4, n).astype(np.float64) for n in rng.integers(3, 14, rows)]
    labels = [(rng.random(s.size) < 0.3).astype(np.int64) for s in scores]
    return scores, labels


def long_rows(rng, rows, widths, k):
    """Rows of distinct scores but for a few small tie blocks, relevant items among them,
    placed about the cutoff, between K and 2K, just past 2K and deep in the row."""
    scores, labels = [], []
    for width in widths:
        s = rng.permutation(width).astype(np.float64)
        lab = np.zeros(width, dtype=np.int64)
        by_rank = np.argsort(-s)
        for place in (k - 1, k + 1, 2 * k - 1, 2 * k + 2, int(rng.integers(3 * k, width - 4))):
            size = int(rng.integers(2, 5))
            members = by_rank[place:place + size]
            s[members] = s[members[0]]
            lab[rng.choice(members, int(rng.integers(1, size)), replace=False)] = 1
        if rng.random() < 0.25:  # a row whose relevant items all lie below the depth
            lab[:] = 0
            members = by_rank[5 * k:5 * k + 3]
            s[members] = s[members[0]]
            lab[members[0]] = 1
        scores.append(s)
        labels.append(lab)
    return scores, labels


def seeded_ranking(s, seed):
    rng = np.random.default_rng(seed)
    return np.lexsort((rng.permutation(s.size), -s))


_FakeTorch = fake_torch(lambda row: rule_order(row, "stable"))


RULES = ("argsort", "stable", "reverse-stable", "given", "topk")


def check_every_rule(tmp_path, monkeypatch, scores, labels, k, dense: bool):
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch)
    orders = [tie_orders(s, lab) for s, lab in zip(scores, labels)]
    for rule in RULES:
        rankings = None
        kw = {}
        if rule == "given":
            # the codebase's own list, as deep as the measure reads (2K), no deeper
            rankings = [seeded_ranking(s, i)[:2 * k] for i, s in enumerate(scores)]
            kw["ranking"] = rankings
        path = tmp_path / f"{rule}.{'npz' if dense else 'parquet'}"
        if dense:
            save_scores(path, np.stack(scores), labels=np.stack(labels),
                        **({"ranking": np.stack(rankings)} if rankings else {}))
        else:
            save_scores(path, scores, labels=labels, **kw)
        run = evaluate_path(str(path), [f"HR2@{k}", f"Hits2@{k}"], k=[k], original=rule)
        figures, ties = reference(scores, labels, k, rule, rankings, orders=orders)
        assert_matches(run, figures, ties, k)


# -- the tests ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["dense", "ragged"])
def test_a_measure_reading_2k_against_every_tie_order(deep_measures, tmp_path, monkeypatch,
                                                      layout):
    rng = np.random.default_rng(41)
    scores, labels = short_rows(rng) if layout == "dense" else ragged_rows(rng)
    check_every_rule(tmp_path, monkeypatch, scores, labels, 2, layout == "dense")


@pytest.mark.parametrize("layout", ["dense", "ragged"])
def test_long_rows_partitioned_at_the_declared_depth(deep_measures, tmp_path, monkeypatch,
                                                     layout):
    rng = np.random.default_rng(7)
    k = 4
    widths = [1600] * 12 if layout == "dense" else list(rng.integers(1500, 1700, 12))
    scores, labels = long_rows(rng, 12, widths, k)
    # rows of one width of 1,500 scores and more are partitioned at the table's depth
    assert widths[0] >= sparse_blocks._PARTIAL_WIDTH
    check_every_rule(tmp_path, monkeypatch, scores, labels, k, layout == "dense")


def test_the_kernel_plans_its_depths_from_the_measures(deep_measures):
    spec = EvalSpec((f"HR2@{3}",), RelOptions(), source="labels")
    kernel = GeneralKernel(spec)
    assert (kernel.rank_depth, kernel.prune_depth) == (6, 6)
    both = GeneralKernel(EvalSpec(("HR2@3", "HR@10"), RelOptions(), source="labels"))
    assert (both.rank_depth, both.prune_depth) == (10, 10)
    assert GeneralKernel(EvalSpec(("HR2@3", "MRR"), RelOptions(),
                                  source="labels")).rank_depth is None
    # a table cut at K refuses a measure that declares it reads deeper
    scores = np.array([[4.0, 3, 3, 2, 2, 1, 1, 0]])
    labels = np.array([[0, 0, 1, 0, 1, 0, 1, 0]])
    cut = rel_batch(scores, labels, sparse=True, rank_depth=3, prune_depth=3)
    with pytest.raises(ParameterError, match="prune_depth=3"):
        cut.values(RelMetric("Hits2", 3))
    deep = rel_batch(scores, labels, sparse=True, rank_depth=6, prune_depth=6)
    whole = RelBatch(scores, labels)
    for column in ("original", "first", "last", "tie_aware", "variance"):
        assert getattr(deep.values(RelMetric("Hits2", 3)), column) == pytest.approx(
            getattr(whole.values(RelMetric("Hits2", 3)), column), abs=1e-15)


def test_a_listed_ranking_must_reach_the_declared_depth(deep_measures, tmp_path):
    s = np.tile(np.arange(8, 0, -1).astype(np.float32), (3, 1))
    lab = np.zeros_like(s, dtype=np.int64)
    lab[:, 5] = 1
    save_scores(tmp_path / "g.npz", s, labels=lab, ranking=np.tile(np.arange(5), (3, 1)))
    # the ranking lists 5, HR2@3 reads 6: its Original alone is left empty, with a note
    with pytest.warns(UserWarning, match="HR2@3 needs the top 6"):
        short = evaluate_path(str(tmp_path / "g.npz"), ["HR2@3"], k=[3], original="given")
    assert short.metric("HR2@3").original is None
    assert short.metric("HR2@3").first == 1.0  # the relevant item at place 6 <= 2K
    run = evaluate_path(str(tmp_path / "g.npz"), ["HR@3"], k=[3], original="given")
    assert run.metric("HR@3").original == 0.0


def test_single_positive_rows_past_the_rank_counts(deep_measures, tmp_path):
    """HR2@3000 reads 6,000 places: positives ranked 4,097 .. 6,000 (past the kernel's
    rank counts) score 1, and are counted as such."""
    rng = np.random.default_rng(3)
    k, width, rows = 3000, 7000, 24
    s = np.stack([rng.permutation(width) for _ in range(rows)]).astype(np.float64)
    pos = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        by_rank = np.argsort(-s[i])
        place = int(rng.choice([2, 2 * k - 2, 4200, 5999, 6500, int(rng.integers(0, width - 4))]))
        size = int(rng.integers(1, 4))
        members = by_rank[place:place + size]
        s[i, members] = s[i, members[0]]
        pos[i] = rng.choice(members)
    save_scores(tmp_path / "sp.npz", s, pos)
    for rule in ("argsort", "stable", "reverse-stable"):
        run = evaluate_path(str(tmp_path / "sp.npz"), [f"HR2@{k}"], k=[k], original=rule)
        a = (s > s[np.arange(rows), pos][:, None]).sum(axis=1)
        b = (s == s[np.arange(rows), pos][:, None]).sum(axis=1)
        orig = np.array([int(np.flatnonzero(rule_order(r, rule) == p)[0]) + 1
                         for r, p in zip(s, pos)])
        e = np.array([np.mean(np.arange(x + 1, x + y + 1) <= 2 * k) for x, y in zip(a, b)])
        row = run.metric(f"HR2@{k}")
        assert row.original == pytest.approx(np.mean(orig <= 2 * k), abs=1e-12)
        assert row.first == pytest.approx(np.mean(a + 1 <= 2 * k), abs=1e-12)
        assert row.last == pytest.approx(np.mean(a + b <= 2 * k), abs=1e-12)
        assert row.tie_aware == pytest.approx(e.mean(), abs=1e-12)
        assert row.tie_aware_std == pytest.approx(
            math.sqrt(np.sum(e * (1 - e))) / rows, abs=1e-12)
        assert run.ties.tie_decided == pytest.approx(
            {k: float(np.mean((a < k) & (k < a + b)))}, abs=1e-12)
        assert run.ties.positive_tie_size == pytest.approx(b.mean(), abs=1e-12)


def test_a_trec_run_under_trec_evals_order(deep_measures, tmp_path):
    rng = np.random.default_rng(9)
    k = 2
    run_lines, qrels_lines = [], []
    rows, labels, unranked = [], [], []
    for q in range(60):
        n = int(rng.integers(4, 12))
        docs = [f"d{d:03d}" for d in rng.choice(200, n, replace=False)]
        sc = rng.integers(0, 4, n) / 4
        lab = (rng.random(n) < 0.3).astype(np.int64)
        extra = int(rng.integers(0, 2))  # a relevant document the run did not retrieve
        if not lab.any() and not extra:
            extra = 1
        for d, v, r in zip(docs, sc, lab):
            run_lines.append(f"q{q} Q0 {d} 0 {v:g} t\n")
            qrels_lines.append(f"q{q} 0 {d} {r}\n")
        for j in range(extra):
            qrels_lines.append(f"q{q} 0 x{j:03d} 1\n")
        # trec_eval's order: score descending, then docno descending
        order = sorted(range(n), key=lambda i: (sc[i], docs[i]), reverse=True)
        rows.append(np.asarray(sc)[order])
        labels.append(lab[order])
        unranked.append(extra)
    (tmp_path / "run").write_text("".join(run_lines))
    (tmp_path / "qrels").write_text("".join(qrels_lines))
    run = evaluate_path(str(tmp_path / "run"), [f"HR2@{k}", f"Hits2@{k}"], k=[k],
                        qrels=str(tmp_path / "qrels"))
    # the rows as listed are trec_eval's order: 'given' with the whole list
    figures, ties = reference(rows, labels, k, "given",
                              [np.arange(r.size) for r in rows], unranked)
    assert_matches(run, figures, ties, k)


# -- the declarations of the measures that ship ----------------------------------------

def test_every_measure_declares_a_depth_it_does_not_read_past():
    """For every built-in measure with a bounded depth: rows without ties whose labels
    below that depth are shuffled keep every value (the labels, R and the ideal are the
    same; only places the measure declares it does not read changed)."""
    rng = np.random.default_rng(5)
    checked = []
    for measure in MEASURES:
        k = {"required": 4, "optional": 4, "level": 1.5}.get(measure.cutoff)
        if measure.read_depth(k, 3, 20) is None:
            continue
        for _ in range(30):
            n = int(rng.integers(6, 20))
            s = rng.permutation(n).astype(np.float64)
            lab = rng.integers(-1, 3, n)
            r = int(np.count_nonzero(lab > 0))
            depth = measure.read_depth(k, r, n)
            assert depth is not None
            by_rank = np.argsort(-s)
            below = by_rank[int(min(depth, n)):]
            shuffled = lab.copy()
            shuffled[below] = lab[rng.permutation(below)]
            metric = RelMetric(measure.name, k)
            one = RelBatch(s[None, :], lab[None, :]).values(metric)
            two = RelBatch(s[None, :], shuffled[None, :]).values(metric)
            for column in ("original", "first", "last", "tie_aware"):
                assert np.array_equal(getattr(one, column), getattr(two, column),
                                      equal_nan=True), (measure.name, column)
        checked.append(measure.name)
    assert {"HR", "Recall", "NDCG", "MRR", "MAP", "Rprec", "RprecMult"} <= set(checked)


def test_the_declared_depths_of_the_measures_that_ship():
    by_name = {m.name: m for m in MEASURES}
    assert by_name["NDCG"].read_depth(10) == 10
    assert by_name["NDCG"].read_depth(None) is None  # NDCG of the whole list
    assert by_name["MRR"].read_depth(None) is None
    assert by_name["MAP"].read_depth(None) is None and by_name["MAP"].read_depth(5) == 5
    assert by_name["V-AUC"].read_depth(None) is None
    assert by_name["IPrec"].read_depth(0.5, 4, 10) is None  # every relevant item's place
    assert by_name["Rprec"].read_depth(None) is None  # R is not known before the row
    assert by_name["Rprec"].read_depth(None, 4, 10) == 4
    assert int(by_name["RprecMult"].read_depth(1.5, 3, 10)) == 5  # (long)(1.5 * 3 + .9)
    assert (by_name["Rprec"].read_depth(None, np.array([1, 3]), None) == [1, 3]).all()

    class Form:
        def __init__(self, name, k):
            self.spec, self.k = by_name[name], k
    assert deepest([Form("HR", 5), Form("NDCG", 20)]) == 20
    assert deepest([Form("HR", 5), Form("MRR", None)]) is None
    assert deepest([]) is None
