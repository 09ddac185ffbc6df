"""One evaluation epoch inside a training loop: tieeval.TieAware against a torch.topk evaluator.

    python benchmarks/bench_stream.py [--repeat 7] [--profile]

The epoch: a float32 score matrix of saturated sigmoids (``1 / (1 + exp(-z))`` in float32,
``z ~ N(3, 8)``: the top of most rows is exactly 1.0), one held-out positive per row, as
torch tensors, evaluated in batches of 128 rows (the way a validation loop hands them
over), on one thread (``torch.set_num_threads(1)``, tieeval's sort threads 1):

* ``943 x 1,683`` (MovieLens-100k's users by items) and ``100,000 x 1,000``;
* ``topk``: the plain evaluator codebases write: ``torch.topk(scores, 20)``, the
  positive's place in it, HR@1 / HR@10 / NDCG@10 / Recall@20 from that place and MRR
  from ``(scores > positive).sum() + 1``, summed per batch (one figure per metric);
* ``TieAware``: ``tieeval.TieAware(metrics=...)`` made for the epoch (or, as a training
  loop keeps one, one object ``reset()`` every epoch), ``update(batch, positive=...)`` per
  batch, ``compute`` once: the four columns, the sd and the tie statistics of every
  metric, the result ``evaluate`` gives on the whole matrix (JSON keys and all). The
  metrics are a validation step's, HR@1, HR@10, NDCG@10, MRR and Recall@20, under the default
  Original rule (numpy's ``argsort``), under ``original='topk'`` (the evaluator's own
  rule, which ranks the top K only: MRR@10 there) and ``original='stable'``; and HR@1,
  HR@10, NDCG@10 and MRR alone (the single-positive kernel, without Recall@K).

Each configuration's median over ``--repeat`` interleaved rounds, and the ratio to the
topk evaluator's median. ``--profile``: where TieAware's time goes (cProfile, top 15).

Where the time goes (943 x 1,683, one thread). Every batch's counts (scores above the
positive, tied with it, tied with the row's top) are made where the tensor is: a CPU
tensor by the host's own counts on its memory (``dense_counts``: a row maximum and three
comparisons per score, about 0.3 ms a batch, where the evaluator's ``torch.topk`` costs
0.7 ms and its ``>`` count 0.26 ms). Under the default rule the rows whose positive is
tied (15% here) are sorted by numpy's ``argsort`` for their Original rank: about 1.1 ms a
batch, nearly the evaluator's whole batch, the largest part of the epoch and the one
that cannot shrink (the rank is numpy's sort's). ``original='topk'`` calls ``torch.topk``
instead (the evaluator's own cost) and ``'stable'`` counts the rank (no sort). Once per
epoch (per 8,192 rows) the counts are added to the sums: with Recall@K the general
kernel's sparse table is built from them (``RelBatch.one_relevant``) and every metric
read off it (about 3-4 ms for 943 rows, MRR's tie-aware series the largest part), and
``compute`` rounds the exact sums (about 1 ms). Those fixed costs are a third of the
small epoch and nothing on 100,000 rows. A new object also chooses its kernel (about
0.5 ms); one kept across epochs, ``reset()`` each time as a training loop keeps its
metric, chooses it once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TIEEVAL_SORT_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tieeval  # noqa: E402

BATCH = 128
#: what a validation step computes every epoch
METRICS = ["HR@1", "HR@10", "NDCG@10", "MRR", "Recall@20"]
#: the same under original='topk', which ranks the top K only (MRR needs a cutoff there)
TOPK = ["HR@1", "HR@10", "NDCG@10", "MRR@10", "Recall@20"]
#: the single-positive kernel's metrics (no Recall@K)
SINGLE = ["HR@1", "HR@10", "NDCG@10", "MRR"]


def matrix(rows: int, cols: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(rows, cols)) * 8 + 3).astype(np.float32)
    s = (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)
    return torch.from_numpy(s), torch.from_numpy(rng.integers(0, cols, rows))


def topk_epoch(scores, positive) -> dict:
    """The plain evaluator: HR@1, HR@10, NDCG@10, Recall@20 from torch.topk, MRR from the
    count of higher scores (a full-ranking MRR, as RecBole's)."""
    sums = torch.zeros(5, dtype=torch.float64)
    for lo in range(0, scores.shape[0], BATCH):
        s, p = scores[lo:lo + BATCH], positive[lo:lo + BATCH]
        idx = torch.topk(s, 20, dim=1).indices
        hit = idx == p[:, None]
        found = hit.any(dim=1)
        place = torch.argmax(hit.to(torch.int8), dim=1) + 1
        rank = (s > s.gather(1, p[:, None])).sum(dim=1) + 1
        sums += torch.stack([
            (found & (place <= 1)).sum(), (found & (place <= 10)).sum(),
            torch.where(found & (place <= 10), 1 / torch.log2(place + 1.0), 0).sum(),
            (1.0 / rank).sum(), found.sum()]).to(torch.float64)
    return dict(zip(["HR@1", "HR@10", "NDCG@10", "MRR", "Recall@20"],
                    (sums / scores.shape[0]).tolist()))


def tie_epoch(scores, positive, metrics, **options) -> tieeval.RunResult:
    m = tieeval.TieAware(metrics=metrics, **options)
    for lo in range(0, scores.shape[0], BATCH):
        m.update(scores[lo:lo + BATCH], positive=positive[lo:lo + BATCH])
    return m.compute()


def reused_epoch(m: tieeval.TieAware, scores, positive) -> tieeval.RunResult:
    """An epoch of the metric object a training loop keeps: ``reset()``, the batches,
    ``compute()`` (the kernel chosen in an earlier epoch is kept)."""
    m.reset()
    for lo in range(0, scores.shape[0], BATCH):
        m.update(scores[lo:lo + BATCH], positive=positive[lo:lo + BATCH])
    return m.compute()


def contestants(scores, positive) -> dict:
    kept = tieeval.TieAware(metrics=METRICS)
    return {"topk evaluator": lambda: topk_epoch(scores, positive),
            "TieAware, default Original (argsort)":
                lambda: tie_epoch(scores, positive, METRICS),
            "the same, one object reset() every epoch":
                lambda: reused_epoch(kept, scores, positive),
            "TieAware, original='topk' (MRR@10)":
                lambda: tie_epoch(scores, positive, TOPK, original="topk"),
            "TieAware, original='stable' (no sort)":
                lambda: tie_epoch(scores, positive, METRICS, original="stable"),
            "TieAware HR/NDCG/MRR only (single-positive kernel)":
                lambda: tie_epoch(scores, positive, SINGLE)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [(943, 1683), (100_000, 1000)]
    if args.only:
        sizes = [sizes[int(i)] for i in args.only.split(",")]
    for rows, cols in sizes:
        scores, positive = matrix(rows, cols)
        runs = contestants(scores, positive)
        # HR@10 of the plain evaluator beside the tie-aware value and its [Last, First]
        plain = topk_epoch(scores, positive)
        got = tie_epoch(scores, positive, METRICS)
        print(f"\n{rows:,} x {cols:,}, batches of {BATCH}: HR@10 topk {plain['HR@10']:.4f}, "
              f"tie-aware {got.metric('HR@10').tie_aware:.4f} "
              f"[{got.metric('HR@10').last:.4f}, {got.metric('HR@10').first:.4f}]")
        times: dict[str, list[float]] = {k: [] for k in runs}
        for fn in runs.values():
            fn()  # warm
        for _ in range(args.repeat):
            for key, fn in runs.items():
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
        base = statistics.median(times["topk evaluator"])
        print("| what | median s | ratio to topk |")
        print("| --- | ---: | ---: |")
        for key, ts in times.items():
            t = statistics.median(ts)
            print(f"| {key} | {t:.4f} | {t / base:.2f}x |")
        if args.profile:
            import cProfile
            import pstats
            for metrics, options in ((METRICS, {}), (TOPK, {"original": "topk"})):
                prof = cProfile.Profile()
                prof.runcall(tie_epoch, scores, positive, metrics, **options)
                print(f"\nprofile, {metrics} {options}:")
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
