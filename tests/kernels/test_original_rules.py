"""``--original RULE``: each rule's Original column against the library that defines it.

Every reference below is computed here, row by row, with numpy's sorts (or torch.topk, or
a seeded random order among ties): the position each rule gives a candidate, and the
metric read off that position.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import fake_torch

from tieeval import save_scores
from tieeval.cli import cli
from tieeval.engine.local import evaluate_path

RULES = ("argsort", "stable", "reverse-stable")
SP_METRICS = ["HR@1", "HR@3", "NDCG@3", "NDCG@10", "MRR"]


def stable_desc(row):
    """np.argsort(-row, kind="stable") without negating: ties by ascending position."""
    return row.size - 1 - np.argsort(row[::-1], kind="stable")[::-1]


def reverse_stable_desc(row):
    """Descending, ties by descending position."""
    return np.argsort(row, kind="stable")[::-1]


def reference_order(row, rule):
    if rule == "argsort":
        return np.argsort(row * -1)
    if rule == "stable":
        return stable_desc(row)
    return reverse_stable_desc(row)


def sp_value(metric: str, rank: np.ndarray) -> float:
    name, _, k = metric.partition("@")
    rank = np.asarray(rank, dtype=np.float64)
    if name == "HR":
        return float(np.mean(rank <= int(k)))
    if name == "NDCG":
        return float(np.mean(np.where(rank <= int(k), 1.0 / np.log2(rank + 1.0), 0.0)))
    return float(np.mean(1.0 / rank))


def tied_rows(rng, dtype, rows=300, cols=12):
    if np.dtype(dtype).kind == "f":
        s = rng.integers(-2, 3, (rows, cols)).astype(dtype)
        s[s == 0] = np.where(rng.random(int((s == 0).sum())) < 0.5, -0.0, 0.0).astype(dtype)
        return s
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.min + 1, 0 if info.min < 0 else 5, info.max],
                    dtype=dtype)
    return pool[rng.integers(0, pool.size, (rows, cols))]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32",
                                   "uint8", "uint16", "uint64"])
@pytest.mark.parametrize("rule", RULES)
def test_single_positive_rules_match_numpy(tmp_path, dtype, rule):
    rng = np.random.default_rng(7)
    s = tied_rows(rng, dtype)
    if rule == "argsort" and np.dtype(dtype).kind != "f":
        s[s == np.iinfo(dtype).min] = np.iinfo(dtype).min + 1  # * -1 is order-reversing
        if np.dtype(dtype).kind == "u":
            pytest.skip("np.argsort(scores * -1) is not defined for unsigned dumps")
    pos = rng.integers(0, s.shape[1], s.shape[0])
    path = tmp_path / "run.npz"
    save_scores(path, s, pos)
    ranks = np.array([int(np.flatnonzero(reference_order(row, rule) == p)[0]) + 1
                      for row, p in zip(s, pos)])
    if dtype in ("float32", "float64") and rule == "stable":
        # the library's own spelling of the rule
        direct = np.array([int(np.flatnonzero(np.argsort(-row, kind="stable") == p)[0]) + 1
                           for row, p in zip(s, pos)])
        assert (direct == ranks).all()
    run = evaluate_path(str(path), SP_METRICS, original=rule)
    for m in SP_METRICS:
        row = run.metric(m)
        assert row.original == pytest.approx(sp_value(m, ranks), abs=1e-12), m
        assert row.last <= row.original <= row.first
    # the ragged (Parquet list) path and the general kernel agree
    ragged = tmp_path / "run.parquet"
    save_scores(ragged, [r for r in s], pos)
    other = evaluate_path(str(ragged), SP_METRICS, original=rule)
    general = evaluate_path(str(path), SP_METRICS + ["Recall@3"], original=rule)
    for m in SP_METRICS:
        assert other.metric(m).original == pytest.approx(run.metric(m).original, abs=1e-12)
        assert general.metric(m).original == pytest.approx(run.metric(m).original, abs=1e-12)
    assert general.metric("Recall@3").original == pytest.approx(sp_value("HR@3", ranks))


@pytest.mark.parametrize("rule", ("stable", "reverse-stable"))
def test_nan_worst_ranks_last_and_ties_by_position(tmp_path, rule):
    rng = np.random.default_rng(3)
    s = rng.integers(0, 3, (200, 9)).astype(np.float32)
    s[rng.random(s.shape) < 0.3] = np.nan
    pos = rng.integers(0, 9, 200)
    save_scores(tmp_path / "r.npz", s, pos)
    col = np.arange(9)
    ranks = []
    for row, p in zip(s, pos):
        nan = np.isnan(row)
        order = np.lexsort((col if rule == "stable" else -col, np.where(nan, 0, -row), nan))
        ranks.append(int(np.flatnonzero(order == p)[0]) + 1)
    run = evaluate_path(str(tmp_path / "r.npz"), SP_METRICS, original=rule,
                        nan_policy="worst")
    for m in SP_METRICS:
        assert run.metric(m).original == pytest.approx(sp_value(m, ranks), abs=1e-12)


def labelled_reference(s, lab, orders, k):
    """HR@k, Recall@k and MRR of label rows read in ``orders`` (per row index arrays)."""
    hr, rec, rr = [], [], []
    for row_lab, order in zip(lab, orders):
        seq = row_lab[order]
        rel = seq > 0
        hr.append(float(rel[:k].any()))
        rec.append(rel[:k].sum() / rel.sum())
        rr.append(1.0 / (np.flatnonzero(rel)[0] + 1))
    return float(np.mean(hr)), float(np.mean(rec)), float(np.mean(rr))


@pytest.mark.parametrize("rule", RULES)
def test_labelled_rows_follow_the_rule(tmp_path, rule):
    rng = np.random.default_rng(11)
    s = rng.integers(0, 4, (250, 15)).astype(np.float32)
    lab = (rng.random(s.shape) < 0.2).astype(np.int8)
    lab[np.arange(250), rng.integers(0, 15, 250)] = 1
    save_scores(tmp_path / "l.npz", s, labels=lab)
    run = evaluate_path(str(tmp_path / "l.npz"), ["HR@3", "Recall@3", "MRR"], original=rule)
    want = labelled_reference(s, lab, [reference_order(r, rule) for r in s], 3)
    got = [run.metric(m).original for m in ("HR@3", "Recall@3", "MRR")]
    assert got == pytest.approx(list(want), abs=1e-12)
    for row in run.metrics:
        assert row.last <= row.original <= row.first


def seeded_tie_order(s, seed):
    """A ranking no rule of tieeval knows: score descending, ties in a seeded random order."""
    rng = np.random.default_rng(seed)
    return np.stack([np.lexsort((rng.permutation(row.size), -row)) for row in s])


def test_given_reproduces_an_unknown_rule(tmp_path):
    rng = np.random.default_rng(5)
    s = rng.integers(0, 3, (400, 30)).astype(np.float32)
    pos = rng.integers(0, 30, 400)
    order = seeded_tie_order(s, 99)
    ranks = np.array([int(np.flatnonzero(o == p)[0]) + 1 for o, p in zip(order, pos)])
    # the full ranking: every metric
    save_scores(tmp_path / "full.npz", s, pos, ranking=order)
    run = evaluate_path(str(tmp_path / "full.npz"), SP_METRICS, original="given")
    for m in SP_METRICS:
        assert run.metric(m).original == pytest.approx(sp_value(m, ranks), abs=1e-12)
        assert run.metric(m).last <= run.metric(m).original <= run.metric(m).first
    assert run.to_dict()["original_rule"] == "given"
    # a top-10 list, as a codebase logs it: metrics with K <= 10, in both formats
    cut = ["HR@1", "HR@10", "NDCG@5", "NDCG@10"]
    for name in ("top.npz", "top.parquet"):
        save_scores(tmp_path / name, s, pos, ranking=order[:, :10])
        run = evaluate_path(str(tmp_path / name), cut, original="given")
        for m in cut:
            assert run.metric(m).original == pytest.approx(sp_value(m, ranks), abs=1e-12)
        general = evaluate_path(str(tmp_path / name), cut + ["Recall@10"], original="given")
        assert general.metric("Recall@10").original == pytest.approx(sp_value("HR@10", ranks))


def test_given_on_labelled_and_ragged_rows(tmp_path):
    rng = np.random.default_rng(8)
    rows = [rng.integers(0, 3, n).astype(np.float64) for n in rng.integers(5, 12, 150)]
    labels = [(rng.random(r.size) < 0.3).astype(np.int8) for r in rows]
    for lab in labels:
        lab[0] = 1
    orders = [seeded_tie_order(r[None, :], i)[0] for i, r in enumerate(rows)]
    save_scores(tmp_path / "g.parquet", rows, labels=labels, ranking=orders)
    run = evaluate_path(str(tmp_path / "g.parquet"), ["HR@3", "Recall@3", "MRR"],
                        original="given")
    hr, rec, rr = [], [], []
    for r, lab, o in zip(rows, labels, orders):
        want = labelled_reference(r[None, :], lab[None, :], [o], 3)
        hr.append(want[0]), rec.append(want[1]), rr.append(want[2])
    got = [run.metric(m).original for m in ("HR@3", "Recall@3", "MRR")]
    assert got == pytest.approx([np.mean(hr), np.mean(rec), np.mean(rr)], abs=1e-12)


def test_topk_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    s = rng.integers(0, 3, (300, 40)).astype(np.float32)
    pos = rng.integers(0, 40, 300)
    top = torch.topk(torch.from_numpy(s), 10, dim=1).indices.numpy()
    ranks = np.array([int(np.flatnonzero(t == p)[0]) + 1 if p in t else 11
                      for t, p in zip(top, pos)])
    save_scores(tmp_path / "t.npz", s, pos)
    metrics = ["HR@1", "HR@10", "NDCG@10"]
    run = evaluate_path(str(tmp_path / "t.npz"), metrics, original="topk")
    for m in metrics:
        assert run.metric(m).original == pytest.approx(sp_value(m, ranks), abs=1e-12)
        assert run.metric(m).last <= run.metric(m).original <= run.metric(m).first


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def quiet(*args):
    return invoke(*args, "-q", "-k", "1", "-k", "3")


def test_topk_without_torch_names_the_extra(tmp_path):
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed")
    except ImportError:
        pass
    save_scores(tmp_path / "t.npz", np.zeros((3, 4), dtype=np.float32))
    res = invoke("compare", tmp_path / "t.npz", "-m", "HR@1", "--original", "topk")
    assert res.exit_code == 2
    assert "tieeval[torch]" in res.output and res.output.count("\n") == 1


def test_rule_recorded_in_json_and_footer(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.integers(0, 2, (20, 6)).astype(np.float32)
    save_scores(tmp_path / "r.npz", s, ranking=np.argsort(-s, axis=1, kind="stable"))
    plain = json.loads(quiet("compare", tmp_path / "r.npz", "-f", "json").output)
    assert "original_rule" not in plain["runs"][0]
    same = json.loads(quiet("compare", tmp_path / "r.npz", "-f", "json",
                            "--original", "argsort").output)
    assert same == plain  # the default rule changes nothing in the JSON
    for rule in ("stable", "reverse-stable", "given"):
        res = quiet("compare", tmp_path / "r.npz", "-f", "json", "--original", rule)
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["runs"][0]["original_rule"] == rule
        md = quiet("compare", tmp_path / "r.npz", "-f", "markdown", "--original", rule)
        assert f"--original {rule}" in md.output.splitlines()[-1]


@pytest.mark.parametrize("ranking, message", [
    (None, "needs a 'ranking' field"),
    ([[1, 0, 2]] * 4, "below candidate"),  # scores 3 > 2 > 1 listed out of order
    ([[0, 2]] * 4, "leaves out a candidate"),
])
def test_bad_given_ranking_is_one_line_error(tmp_path, ranking, message):
    s = np.tile(np.array([3.0, 2.0, 1.0], dtype=np.float32), (4, 1))
    save_scores(tmp_path / "b.npz", s, ranking=ranking)
    res = invoke("compare", tmp_path / "b.npz", "-m", "HR@2", "--original", "given")
    assert res.exit_code == 2
    assert res.output.startswith("Error: ") and message in res.output
    assert res.output.count("\n") == 1


def test_trec_rule_only_for_trec_runs(tmp_path):
    save_scores(tmp_path / "x.npz", np.zeros((2, 3), dtype=np.float32))
    res = invoke("compare", tmp_path / "x.npz", "--original", "trec")
    assert res.exit_code == 2 and "TREC runs" in res.output


def test_original_rule_under_jobs_and_diff(tmp_path):
    rng = np.random.default_rng(4)
    s = rng.integers(0, 3, (3000, 20)).astype(np.float32)
    save_scores(tmp_path / "a.npz", s, ranking=seeded_tie_order(s, 1))
    one = evaluate_path(str(tmp_path / "a.npz"), ["HR@5"], original="given", jobs=1,
                        batch_rows=256)
    many = evaluate_path(str(tmp_path / "a.npz"), ["HR@5"], original="given", jobs=3,
                         batch_rows=256)
    assert one.to_dict() == many.to_dict()
    res = invoke("diff", tmp_path / "a.npz", tmp_path / "a.npz", "-m", "HR@5",
                 "--original", "reverse-stable", "-f", "json")
    assert res.exit_code == 0, res.output


_FakeTopk = fake_torch(stable_desc)  # topk by numpy's stable sort


def test_topk_plumbing_with_a_stand_in(tmp_path, monkeypatch):
    """The topk rule reads each row's top-K list from torch.topk (dense and ragged rows);
    the stand-in ranks like 'stable', so both rules must give the same Original."""
    import sys
    monkeypatch.setitem(sys.modules, "torch", _FakeTopk)
    rng = np.random.default_rng(6)
    s = rng.integers(0, 3, (200, 25)).astype(np.float32)
    pos = rng.integers(0, 25, 200)
    save_scores(tmp_path / "d.npz", s, pos)
    save_scores(tmp_path / "r.parquet", [r[:20 + i % 5] for i, r in enumerate(s)],
                np.minimum(pos, 19))
    metrics = ["HR@1", "HR@10", "NDCG@10"]
    for name in ("d.npz", "r.parquet"):
        topk = evaluate_path(str(tmp_path / name), metrics, original="topk")
        stable = evaluate_path(str(tmp_path / name), metrics, original="stable")
        for m in metrics:
            assert topk.metric(m).original == pytest.approx(stable.metric(m).original)
        assert topk.to_dict()["original_rule"] == "topk"
    md = invoke("compare", tmp_path / "d.npz", "-f", "markdown", "--original", "topk", "-q",
                "-m", "HR@10")
    assert md.exit_code == 0, md.output
    assert "GPU kernels may order ties differently" in md.output
    res = invoke("compare", tmp_path / "d.npz", "--original", "topk")
    assert res.exit_code == 2 and "MRR@K" in res.output


class _TopkByParity:
    """A torch stand-in whose topk(x, K) breaks ties by ascending position for odd K and
    by descending position for even K: a metric at K ranks like 'stable' or like
    'reverse-stable', by K's parity, under topk-each."""

    __version__ = "fake"
    from_numpy = staticmethod(_FakeTopk.from_numpy)

    @staticmethod
    def topk(t, k, dim=-1):
        order = stable_desc if k % 2 else reverse_stable_desc
        return fake_torch(order).topk(t, k, dim)


def test_topk_each_ranks_every_metric_by_its_own_k(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "torch", _TopkByParity)
    rng = np.random.default_rng(8)
    s = rng.integers(0, 3, (120, 16)).astype(np.float32)
    lab = (rng.random((120, 16)) < 0.3).astype(np.int64)
    lab[:, 3] = 1
    save_scores(tmp_path / "one.npz", s, rng.integers(0, 16, 120))
    save_scores(tmp_path / "lab.npz", s, labels=lab)
    for name, metrics in (("one.npz", ["HR@1", "HR@2", "NDCG@3", "NDCG@4"]),
                          ("lab.npz", ["Precision@3", "MAP@4", "MRR@5", "NDCG@2"])):
        each = evaluate_path(str(tmp_path / name), metrics, original="topk-each")
        assert each.to_dict()["original_rule"] == "topk-each"
        for rule in ("stable", "reverse-stable"):
            other = evaluate_path(str(tmp_path / name), metrics, original=rule)
            for m in metrics:
                if (int(m.split("@")[1]) % 2 == 1) == (rule == "stable"):
                    assert each.metric(m).original == pytest.approx(other.metric(m).original,
                                                                    abs=1e-15), (name, m)
    res = invoke("compare", tmp_path / "lab.npz", "--original", "topk-each", "-m", "MAP")
    assert res.exit_code == 2 and "each metric's own cutoff" in res.output
