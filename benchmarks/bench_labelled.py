"""Labelled rows end to end: tieeval against the exact labelled floor and against its peers.

    python benchmarks/bench_labelled.py [--repeat 5] [--only graded,multi] [--peer-rows 2000]

Two seeded stored NPZ dumps (``scores`` float32, ``labels`` int8) in benchmarks/data/:

* ``graded``: 100,000 x 200, grades 0-3 (85 / 8 / 5 / 2 %), the score a float32 sigmoid
  of N(8, 6) logits plus the grade: the top of every row saturates to 1.0 (ties);
* ``multi``: 50,000 x 5,000, 1-50 relevant items (label 1) per row at random places, the
  score a float32 sigmoid of N(0, 9) logits, +12 for the relevant items (1.25 GB).

Measured in one run, rounds interleaving the contestants, medians of ``--repeat`` and each
ratio the median of the per-round ratios:

* ``tieeval compare DUMP -m NDCG@10`` (a fresh process, as a user runs it; default
  ``--jobs``) and ``evaluate_path(DUMP, ["NDCG@10"])`` in this process;
* the exact labelled floor (``labelled_floor.py``: the same four NDCG@10 columns, the
  tie-break sd and the tie counts, in numpy alone) in this process and as a script (a
  fresh interpreter, against which the CLI is compared).

Then once, on the same data in the same run (the per-query peers on the first
``--peer-rows`` rows, their time scaled per row to the dump; every peer's own mean on
those rows is printed beside tieeval's, to show what it computes):

* scikit-learn ``ndcg_score(k=10, ignore_ties=False)`` (tie-averaged) in a fresh process:
  start-up and the read counted once, the score scaled (timed in the rounds too);
* ranx ``evaluate(qrels, run, "ndcg@10")`` (numba compiled first), and the cost of
  building its ``Qrels`` / ``Run`` from the arrays, stated apart;
* pytrec_eval ``RelevanceEvaluator(qrels, {"ndcg_cut_10"})``, the dicts' cost apart;
* torchmetrics ``retrieval_normalized_dcg(preds, target, top_k=10)`` (tie-averaged, one
  call per query) and a ``torch.topk`` evaluator (the top 10 of every row in blocks of
  the whole dump, NDCG@10 of that one order: no tie handling), when torch is installed
  (an optional extra; ``pip install --target benchmarks/data/torch_site torch
  torchmetrics`` puts it where this script looks, outside the environment).

The machine is small and shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from _common import (
    DATA,
    HERE,
    interleaved,
    peer_pytrec,
    peer_ranx,
    peer_torchmetrics,
    topk_ndcg,
    torch_or_none,
    warm_up,
)
from labelled_floor import floor, npz_members

K = 10


def make_graded(rows: int = 100_000, cols: int = 200, seed: int = 0) -> str:
    path = os.path.join(DATA, f"labelled_graded_{rows}x{cols}.npz")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    lab = rng.choice(4, size=(rows, cols), p=[0.85, 0.08, 0.05, 0.02]).astype(np.int8)
    z = rng.normal(8.0, 6.0, size=(rows, cols)).astype(np.float32) + lab
    s = (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)
    np.savez(path + ".tmp.npz", scores=s, labels=lab)
    os.replace(path + ".tmp.npz", path)
    return path


def make_multi(rows: int = 50_000, cols: int = 5_000, seed: int = 1) -> str:
    path = os.path.join(DATA, f"labelled_multi_{rows}x{cols}.npz")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    s = np.empty((rows, cols), np.float32)
    lab = np.zeros((rows, cols), np.int8)
    for lo in range(0, rows, 5000):
        n = min(5000, rows - lo)
        z = rng.normal(0.0, 9.0, size=(n, cols)).astype(np.float32)
        k = rng.integers(1, 51, size=n)
        r = np.repeat(np.arange(n), k)
        c = np.concatenate([rng.choice(cols, size=x, replace=False) for x in k])
        lab[lo + r, c] = 1
        z[r, c] += 12.0
        s[lo:lo + n] = np.float32(1) / (np.float32(1) + np.exp(-z))
    np.savez(path + ".tmp.npz", scores=s, labels=lab)
    os.replace(path + ".tmp.npz", path)
    return path


def cli(path: str, *extra: str) -> str:
    return subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "-m",
                           f"NDCG@{K}", "-q", "-f", "json", *extra], check=True,
                          capture_output=True, text=True).stdout


def floor_script(path: str) -> None:
    subprocess.run([sys.executable, os.path.join(HERE, "labelled_floor.py"), path],
                   check=True, stdout=subprocess.DEVNULL)


def head(path: str, rows: int):
    m = npz_members(path)
    n = min(rows, m["scores"].shape[0])
    return np.array(m["scores"][:n]), np.array(m["labels"][:n]), m["scores"].shape[0]


SKLEARN = """
import sys, time, zipfile
import numpy as np
from sklearn.metrics import ndcg_score
with np.load(sys.argv[1]) as f:
    s, y = f["scores"][:int(sys.argv[2])], f["labels"][:int(sys.argv[2])]
keep = y.sum(axis=1) > 0  # scikit-learn scores rows without a relevant item as 0
t0 = time.perf_counter()
v = ndcg_score(y[keep].astype(np.float64), s[keep].astype(np.float64), k=10,
               ignore_ties=False)
print(time.perf_counter() - t0, v)
"""


def peer_sklearn(path: str, rows: int, total: int):
    """(scaled seconds, mean on the rows): a fresh process, start-up and read once."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SKLEARN, path, str(rows)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return None
    score, value = (float(x) for x in done.stdout.split())
    return wall - score + score * total / rows, value


def scaled_peers(s, y, total):
    """ranx, pytrec_eval and torchmetrics on the first rows, their seconds scaled per row to
    the dump: ``{peer: (seconds, build seconds or None, mean)}`` for those installed."""
    scale = total / s.shape[0]
    out = {}
    for name, peer in (("ranx", peer_ranx), ("pytrec", peer_pytrec)):
        got = peer(s, y, K)
        if got is not None:
            out[name] = (got[0] * scale, got[1] * scale, got[2])
    got = peer_torchmetrics(s, y, K)
    if got is not None:
        out["torchmetrics"] = (got[0] * scale, None, got[1])
    return out


def peer_topk(path: str):
    """A torch.topk evaluator over the whole dump: (seconds, mean NDCG@10 of that order)."""
    m = npz_members(path)
    s, y = m["scores"], m["labels"]
    step = max(1, (1 << 22) // s.shape[1])
    return topk_ndcg(((np.array(s[lo:lo + step]), np.array(y[lo:lo + step]))
                      for lo in range(0, s.shape[0], step)), K)


def tieeval_on_head(s, y) -> float:
    import tieeval
    keep = y.any(1)
    r = tieeval.evaluate(s[keep], labels=y[keep], metrics=[f"NDCG@{K}"])
    return r.metrics[0].tie_aware, r.metrics[0].original


def main() -> None:
    import tieeval
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="graded,multi")
    ap.add_argument("--peer-rows", type=int, default=2000)
    args = ap.parse_args()
    warm_up()
    makers = {"graded": make_graded, "multi": make_multi}
    torch = torch_or_none()
    print(f"numpy {np.__version__}, tieeval {tieeval.__version__}, "
          f"torch {torch.__version__ if torch is not None else 'not installed'}, "
          f"{len(os.sched_getaffinity(0))} cores; medians of {args.repeat} rounds\n")
    for name in args.only.split(","):
        path = makers[name]()
        m = npz_members(path)
        rows, cols = m["scores"].shape
        sub = min(args.peer_rows, rows)
        sk_values = []

        def sklearn(path=path, sub=sub, rows=rows, values=sk_values):
            got = peer_sklearn(path, sub, rows)
            if got is None:
                return None
            values.append(got[1])
            return got[0]
        runs = {"cli": lambda path=path: cli(path),
                "api": lambda path=path: tieeval.evaluate_path(path, [f"NDCG@{K}"]),
                "floor": lambda path=path: floor(path, K),
                "script": lambda path=path: floor_script(path),
                "sklearn": sklearn}
        times = interleaved(runs, args.repeat, self_timed=("sklearn",))
        if any(x is None for x in times["sklearn"]):
            del times["sklearn"]
        med = {k: statistics.median(v) for k, v in times.items()}

        def ratio(a, b, times=times):
            return statistics.median(x / y for x, y in zip(times[a], times[b]))
        got = json.loads(cli(path))["runs"][0]["metrics"][0]
        want = floor(path, K)
        same = all(abs(got[c] - want[c]) < 1e-12 for c in ("original", "first", "last",
                                                             "tie_aware", "tie_aware_std"))
        s, y, total = head(path, sub)
        ta, orig = tieeval_on_head(s, y)
        print(f"### {name} {rows:,} x {cols:,} ({os.path.getsize(path) / 1e6:,.0f} MB "
              f"stored NPZ)\n")
        print(f"tieeval NDCG@10: original {got['original']:.6f}, tie-aware "
              f"{got['tie_aware']:.6f}, first {got['first']:.6f}, last {got['last']:.6f}; "
              f"the floor gives the same to 1e-12: {same}\n")
        print("| what | seconds | ratio |")
        print("| --- | ---: | ---: |")
        print(f"| tieeval CLI `compare -m NDCG@10` | {med['cli']:.3f} | "
              f"{ratio('cli', 'script'):.2f}x the floor as a script |")
        print(f"| tieeval `evaluate_path` in process | {med['api']:.3f} | "
              f"{ratio('api', 'floor'):.2f}x the floor in process |")
        print(f"| exact labelled floor, in process | {med['floor']:.3f} | |")
        print(f"| exact labelled floor, as a script | {med['script']:.3f} | |")
        cli_t = med["cli"]
        rows_note = f"first {sub:,} rows, scaled"
        if "sklearn" in med:
            print(f"| scikit-learn `ndcg_score(ignore_ties=False)`, fresh process, in the "
                  f"rounds ({rows_note}; mean {sk_values[0]:.6f}, tieeval tie-aware "
                  f"{ta:.6f}) | {med['sklearn']:.1f} | {ratio('sklearn', 'cli'):.1f}x "
                  "tieeval CLI |")
        print("\nOnce, after the rounds (single measurements: read their ratios "
              "loosely):\n")
        print("| what | seconds | ratio |")
        print("| --- | ---: | ---: |")
        peers = scaled_peers(s, y, total)
        rx = peers.get("ranx")
        if rx is not None:
            print(f"| ranx `evaluate` ndcg@10 ({rows_note}; mean {rx[2]:.6f}, no tie "
                  f"averaging) | {rx[0]:.1f} | {rx[0] / cli_t:.1f}x |")
            print(f"| ranx: building `Qrels` / `Run` from the arrays ({rows_note}) | "
                  f"{rx[1]:.1f} | {rx[1] / cli_t:.1f}x |")
        pt = peers.get("pytrec")
        if pt is not None:
            print(f"| pytrec_eval ndcg_cut_10 ({rows_note}; mean {pt[2]:.6f}, ties by "
                  f"docno) | {pt[0]:.1f} | {pt[0] / cli_t:.1f}x |")
            print(f"| pytrec_eval: building the dicts ({rows_note}) | {pt[1]:.1f} | "
                  f"{pt[1] / cli_t:.1f}x |")
        tm = peers.get("torchmetrics")
        if tm is not None:
            print(f"| torchmetrics `retrieval_normalized_dcg` ({rows_note}; mean "
                  f"{tm[2]:.6f}, tie-averaged) | {tm[0]:.1f} | {tm[0] / cli_t:.1f}x |")
        tk = peer_topk(path)
        if tk is not None:
            print(f"| `torch.topk` evaluator, whole dump in process (mean {tk[1]:.6f}, "
                  f"one order, no tie handling; tieeval Original {got['original']:.6f}) | "
                  f"{tk[0]:.3f} | {tk[0] / cli_t:.2f}x |")
        if torch is None:
            print("| torchmetrics, torch.topk | not installed | |")
        print(f"\n(tieeval on the peers' {sub:,} rows: tie-aware {ta:.6f}, Original "
              f"{orig:.6f})\n")


if __name__ == "__main__":
    main()
