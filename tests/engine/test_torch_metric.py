"""tieeval.TieAwareMetric, the torchmetrics adapter, against the real torchmetrics: its
figures are evaluate's on the same rows, its synchronised state (as data-parallel training
gathers it) gives the figures of every process's rows, and forward gives the batch's.
torchmetrics takes seconds of CPU to import: the file runs in the slow tier."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import SLOW

import tieeval

pytestmark = SLOW
torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")

METRICS = ["HR@1", "HR@10", "NDCG@10", "MRR"]


def rows(seed: int, n: int = 64, cols: int = 40):
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(n, cols)) * 8 + 3).astype(np.float32)
    s = (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)
    return s, rng.integers(0, cols, n)


def expected(result) -> dict:
    out = {}
    for row in result.metrics:
        out[row.display] = row.tie_aware
        for column in ("original", "first", "last", "tie_aware_std"):
            out[f"{row.display}/{column}"] = getattr(row, column)
    out.update({f"tie_decided@{k}": v for k, v in result.ties.tie_decided.items()})
    return out


def check(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert float(got[key]) == pytest.approx(value, abs=1e-12), key


def test_a_torchmetrics_metric_gives_evaluate_s_figures():
    s, pos = rows(0)
    metric = tieeval.TieAwareMetric(metrics=METRICS)
    assert isinstance(metric, torchmetrics.Metric)
    for lo in range(0, 64, 24):
        metric.update(torch.from_numpy(s[lo:lo + 24]), positive=torch.from_numpy(pos[lo:lo + 24]))
    want = tieeval.evaluate(s, positive=pos, metrics=METRICS)
    check(metric.compute(), expected(want))
    assert metric.result().metric("NDCG@10").tie_aware == pytest.approx(
        want.metric("NDCG@10").tie_aware, abs=1e-12)
    metric.reset()
    metric.update(torch.from_numpy(s[:10]), positive=torch.from_numpy(pos[:10]))
    check(metric.compute(), expected(tieeval.evaluate(s[:10], positive=pos[:10],
                                                      metrics=METRICS)))


def test_the_synchronised_state_gives_every_process_s_rows():
    """Two processes of data-parallel training, as torchmetrics syncs them: the gather
    returns each process's state tensor (of different lengths); the figures are those of
    both processes' rows."""
    s, pos = rows(1)
    other = tieeval.TieAwareMetric(metrics=METRICS)
    other.update(torch.from_numpy(s[40:]), positive=torch.from_numpy(pos[40:]))

    def gather(tensor, group=None):
        from tieeval.engine.torch_metric import pack
        return [tensor, pack(other.stream)]
    metric = tieeval.TieAwareMetric(metrics=METRICS, dist_sync_fn=gather,
                                    distributed_available_fn=lambda: True)
    metric.update(torch.from_numpy(s[:40]), positive=torch.from_numpy(pos[:40]))
    check(metric.compute(), expected(tieeval.evaluate(s, positive=pos, metrics=METRICS)))
    # after compute the process's own state is back (unsync)
    assert metric.stream.rows == 40


def test_forward_gives_the_batch_and_keeps_the_total():
    s, pos = rows(2)
    metric = tieeval.TieAwareMetric(metrics=METRICS)
    first = metric(torch.from_numpy(s[:30]), positive=torch.from_numpy(pos[:30]))
    check(first, expected(tieeval.evaluate(s[:30], positive=pos[:30], metrics=METRICS)))
    metric(torch.from_numpy(s[30:]), positive=torch.from_numpy(pos[30:]))
    check(metric.compute(), expected(tieeval.evaluate(s, positive=pos, metrics=METRICS)))


def test_merge_state():
    s, pos = rows(3)
    a, b = tieeval.TieAwareMetric(metrics=METRICS), tieeval.TieAwareMetric(metrics=METRICS)
    a.update(torch.from_numpy(s[:20]), positive=torch.from_numpy(pos[:20]))
    b.update(torch.from_numpy(s[20:]), positive=torch.from_numpy(pos[20:]))
    a.merge_state(b)
    check(a.compute(), expected(tieeval.evaluate(s, positive=pos, metrics=METRICS)))
