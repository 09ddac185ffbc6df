"""Time reading and evaluating a TREC run: tieeval against pytrec_eval, ranx, ir_measures.

    python benchmarks/bench_trec.py [--queries 2000] [--docs 1000] [--repeat 3]

Writes a seeded run and its qrels to benchmarks/data/ (``--queries`` x ``--docs`` lines:
scores rounded to two decimals, so most queries hold ties; graded qrels 0-3 on about 200
documents per query, a quarter of them not retrieved), then times each tool end to end in a
fresh process, as a user runs it, on the same five measures (MAP, reciprocal rank, P@10,
recall@100, nDCG@10):

* **tieeval**: ``tieeval compare --qrels QRELS RUN --format json`` (read, trec_eval's
  order, the original / first / last / tie-aware columns, tie statistics, JSON);
* **pytrec_eval**: ``pytrec_eval.parse_qrel`` / ``parse_run`` on the files, then
  ``RelevanceEvaluator(...).evaluate`` (trec_eval's code; one tie-break only);
* **ranx**: ``Qrels.from_file`` / ``Run.from_file`` (TREC format), then ``evaluate``;
* **ir_measures**: ``read_trec_qrels`` / ``read_trec_run``, then ``calc_aggregate``.

A tool that is not installed is skipped with a note. Each row is the median of
``--repeat`` runs, with the peak resident memory of the process (``ru_maxrss``). The machine
is small and shared: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
from _common import DATA, warm_up

MEASURES = {"tieeval": ["-m", "MAP", "-m", "MRR", "-m", "P@10", "-m", "Recall@100",
                        "-m", "NDCG@10"],
            "pytrec_eval": ["map", "recip_rank", "P.10", "recall.100", "ndcg_cut.10"],
            "ranx": ["map", "mrr", "precision@10", "recall@100", "ndcg@10"],
            "ir_measures": ["AP", "RR", "P@10", "R@100", "nDCG@10"]}


def make_files(queries: int, docs: int, seed: int = 0) -> tuple[str, str]:
    run_path = os.path.join(DATA, f"trec_{queries}x{docs}.run")
    qrels_path = os.path.join(DATA, f"trec_{queries}x{docs}.qrels")
    if os.path.exists(run_path) and os.path.exists(qrels_path):
        return run_path, qrels_path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    pool = 50 * docs
    with open(run_path + ".tmp", "w") as run, open(qrels_path + ".tmp", "w") as qrels:
        for q in range(1, queries + 1):
            ids = rng.choice(pool, size=docs, replace=False)
            scores = np.round(rng.normal(0.0, 1.0, size=docs), 2)  # two decimals: ties
            order = np.argsort(-scores, kind="stable")
            run.write("".join(f"{q} Q0 doc{ids[i]:07d} {r} {scores[i]:.2f} bench\n"
                              for r, i in enumerate(order, 1)))
            judged = np.unique(np.concatenate([ids[rng.choice(docs, 150, replace=False)],
                                               rng.choice(pool, 50)]))
            grades = rng.choice([0, 0, 0, 1, 1, 2, 3], size=judged.size)
            qrels.write("".join(f"{q} 0 doc{d:07d} {g}\n" for d, g in zip(judged, grades)))
    os.replace(run_path + ".tmp", run_path)
    os.replace(qrels_path + ".tmp", qrels_path)
    return run_path, qrels_path


def task(tool: str, run_path: str, qrels_path: str) -> dict:
    """One measurement in this process (a fresh one per call): seconds and a checksum."""
    t0 = time.perf_counter()
    if tool == "tieeval":
        out = subprocess.run([sys.executable, "-m", "tieeval", "compare", "--qrels",
                              qrels_path, run_path, "--format", "json", "--quiet",
                              *MEASURES["tieeval"]], check=True, capture_output=True,
                             text=True).stdout
        seconds = time.perf_counter() - t0
        rows = json.loads(out)["runs"][0]["metrics"]
        value = {f"{r['metric']}@{r['k']}": r["original"] for r in rows}
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        return {"seconds": seconds, "peak_mb": peak, "check": value}
    if tool == "pytrec_eval":
        import pytrec_eval
        with open(qrels_path) as fh:
            qrels = pytrec_eval.parse_qrel(fh)
        with open(run_path) as fh:
            run = pytrec_eval.parse_run(fh)
        per_query = pytrec_eval.RelevanceEvaluator(
            qrels, set(MEASURES["pytrec_eval"])).evaluate(run)
        value = {m: statistics.fmean(q[m] for q in per_query.values())
                 for m in next(iter(per_query.values()))}
    elif tool == "ranx":
        from ranx import Qrels, Run, evaluate
        qrels = Qrels.from_file(qrels_path, kind="trec")
        run = Run.from_file(run_path, kind="trec")
        value = evaluate(qrels, run, MEASURES["ranx"])
    elif tool == "ir_measures":
        import ir_measures
        measures = [ir_measures.parse_measure(m) for m in MEASURES["ir_measures"]]
        value = {str(k): v for k, v in ir_measures.calc_aggregate(
            measures, ir_measures.read_trec_qrels(qrels_path),
            ir_measures.read_trec_run(run_path)).items()}
    else:
        raise SystemExit(f"unknown tool {tool}")
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_mb": peak,
            "check": {k: float(v) for k, v in dict(value).items()}}


def installed(tool: str) -> bool:
    if tool == "tieeval":
        return True
    module = {"pytrec_eval": "pytrec_eval", "ranx": "ranx", "ir_measures": "ir_measures"}[tool]
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return found.returncode == 0


def measure(tool: str, run_path: str, qrels_path: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--task", tool, run_path, qrels_path],
                             check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "peak_mb": max(r["peak_mb"] for r in runs),
            "all": [round(r["seconds"], 2) for r in runs], "check": runs[0]["check"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--task", nargs=3, metavar=("TOOL", "RUN", "QRELS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    warm_up()
    if args.task:
        print(json.dumps(task(*args.task)))
        return
    run_path, qrels_path = make_files(args.queries, args.docs)
    for path in (run_path, qrels_path):  # warm page cache, as a second run would see it
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    print(f"{args.queries * args.docs:,} run lines ({os.path.getsize(run_path) / 1e6:.0f} MB), "
          f"{sum(1 for _ in open(qrels_path)):,} judgements; median of {args.repeat}\n")
    results = {}
    for tool in ("tieeval", "pytrec_eval", "ranx", "ir_measures"):
        if not installed(tool):
            print(f"{tool}: not installed, skipped", file=sys.stderr)
            continue
        results[tool] = measure(tool, run_path, qrels_path, args.repeat)
        print(f"{tool}: {results[tool]['all']} s; {results[tool]['check']}", file=sys.stderr)
    base = results["pytrec_eval"]["seconds"] if "pytrec_eval" in results else None
    print("| tool | seconds (median) | relative to pytrec_eval | peak RSS (MB) |")
    print("| --- | ---: | ---: | ---: |")
    for tool, r in results.items():
        ratio = f"{r['seconds'] / base:.2f}x" if base else "-"
        print(f"| {tool} | {r['seconds']:.2f} | {ratio} | {r['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
