"""tieeval end to end beside what a user would otherwise run, with peak memory.

    python benchmarks/make_data.py sampled allitem big   # once: writes benchmarks/data/
    python benchmarks/bench_scale.py [--repeat 3] [--only sampled,allitem,big] [--out FILE]

Every measurement runs in a fresh subprocess (so page-cache state is the only thing shared:
each file is read once before timing, so all rows compare warm-cache runs) and reports the
median wall time of ``--repeat`` runs and the peak resident memory (``ru_maxrss`` of the
process and of any worker processes it started). Rows:

* ``tieeval jobs=N``: ``evaluate_dump(open_dump(path), jobs=N)``, everything: read, counts,
  the argsort of tied rows for the Original column, exact sums, tie statistics;
* ``read only``: NPY ``np.load``; NPZ ``np.load(...)["scores"]``; Parquet
  ``pq.read_table`` and, separately, the row-group stream tieeval uses;
* ``numpy pass``: ``(S > S[:, :1]).sum(1)`` on the matrix in memory;
* ``argsort all rows``: ``np.argsort(-S, axis=1)`` on the matrix in memory;
* ``scikit-learn``: ``ndcg_score(y_true, S, k=10, ignore_ties=False)`` on the first rows,
  scaled per row to the whole dump (it loops over rows);
* ``ranx``: ``evaluate(qrels, run, "ndcg@10")`` on the first rows (dict building excluded,
  numba warm), scaled the same way.

Prints a Markdown table (medians, ratios) and writes the raw numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_data  # noqa: E402
from _common import warm_up  # noqa: E402


def _peak_mb() -> float:
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def _worker_peak_mb(_) -> float:
    import resource
    time.sleep(0.05)  # let every worker take one
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def task(name: str, path: str, arg: str) -> dict:
    """One measurement, in this (fresh) process."""
    import numpy as np
    t0 = time.perf_counter()
    extra = {}
    if name == "tieeval":
        from tieeval.engine.local import evaluate_dump
        from tieeval.io.open import open_dump
        t0 = time.perf_counter()
        r = evaluate_dump(open_dump(path), jobs=int(arg))
        seconds = time.perf_counter() - t0
        from tieeval.engine import parallel
        workers = 0.0
        for executor in parallel._POOL.values():  # workers are the forkserver's children
            workers = max(executor.map(_worker_peak_mb, range(16)))
        parallel._shutdown()
        return {"seconds": seconds, "peak_mb": max(_peak_mb(), workers),
                "instances": r.instances,
                "hr1": r.metric("HR@1").tie_aware, "tied": r.ties.positive_tie_frequency}
    elif name == "cli":
        subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "--format", "json",
                        "--quiet", "--jobs", arg], check=True, stdout=subprocess.DEVNULL)
    elif name == "read":
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq
            if arg == "stream":
                from tieeval.io.arrow import parquet_file
                pf = parquet_file(path)
                for g in range(pf.num_row_groups):
                    for b in pf.iter_batches(batch_size=65536, row_groups=[g],
                                             use_threads=False):
                        b.column(0).values.to_numpy()
            elif arg == "iter_batches":
                for b in pq.ParquetFile(path).iter_batches(batch_size=65536):
                    b.column(0).values.to_numpy()
            else:
                t = pq.read_table(path)
                t.column(0).combine_chunks().values.to_numpy()
        elif path.endswith(".npz"):
            np.load(path)["scores"]
        else:
            np.load(path)
    else:
        S = np.load(path, mmap_mode="r")
        rows = int(arg) if arg else S.shape[0]
        S = np.ascontiguousarray(S[:rows])
        t0 = time.perf_counter()
        if name == "pass":
            (S > S[:, :1]).sum(1)
        elif name == "argsort":
            np.argsort(-S, axis=1)
        elif name == "sklearn":
            from sklearn.metrics import ndcg_score
            y = np.zeros(S.shape, dtype=np.float64)
            y[:, 0] = 1
            t0 = time.perf_counter()
            ndcg_score(y, S, k=10, ignore_ties=False)
        elif name == "ranx":
            from ranx import Qrels, Run, evaluate
            qrels = Qrels({f"q{i}": {"d0": 1} for i in range(rows)})
            run = Run({f"q{i}": {f"d{j}": float(S[i, j]) for j in range(S.shape[1])}
                       for i in range(rows)})
            evaluate(qrels, run, "ndcg@10")  # numba compile, cached conversions
            run = Run({f"q{i}": {f"d{j}": float(S[i, j]) for j in range(S.shape[1])}
                       for i in range(rows)})
            t0 = time.perf_counter()
            evaluate(qrels, run, "ndcg@10")
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb(), **extra}


def measure(name, path, arg="", repeat=3, kernel=None) -> dict:
    runs = []
    env = dict(os.environ)
    if kernel:
        env["TIEEVAL_KERNEL"] = kernel
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--task", name, path, str(arg)],
                             check=True, capture_output=True, text=True, env=env)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = statistics.median(r["seconds"] for r in runs)
    return {"seconds": med, "peak_mb": max(r["peak_mb"] for r in runs),
            "all": [round(r["seconds"], 3) for r in runs],
            **{k: v for k, v in runs[0].items() if k not in ("seconds", "peak_mb")}}


def warm(path: str) -> None:
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def bench_dataset(name: str, repeat: int) -> list[dict]:
    rows, cols = make_data.SHAPES[name]
    out = []
    formats = ("npy", "parquet") if name == "big" else ("npy", "npz", "npz-deflated", "parquet")
    for fmt in formats:
        path = make_data.path(name, fmt)
        if not os.path.exists(path):
            print(f"missing {path}: run benchmarks/make_data.py {name}", file=sys.stderr)
            continue
        warm(path)
        rep = repeat
        for jobs in (1, 2):
            out.append({"dataset": name, "format": fmt, "what": f"tieeval jobs={jobs}",
                        **measure("tieeval", path, jobs, rep)})
        if fmt == "npy":  # the fused kernel against the numpy path, one process
            other = "numpy" if name == "big" else "numba"
            out.append({"dataset": name, "format": fmt,
                        "what": f"tieeval jobs=1, TIEEVAL_KERNEL={other}",
                        **measure("tieeval", path, 1, rep, kernel=other)})
        if name == "big":
            if fmt == "parquet":
                for how in ("stream", "iter_batches"):
                    out.append({"dataset": name, "format": fmt, "what": f"read only ({how})",
                                **measure("read", path, how, 1)})
            else:
                out.append({"dataset": name, "format": fmt, "what": "read only",
                            **measure("read", path, "", 1)})
            continue
        out.append({"dataset": name, "format": fmt, "what": "read only",
                    **measure("read", path, "", repeat)})
        if fmt == "parquet":
            for how in ("stream", "iter_batches"):
                out.append({"dataset": name, "format": fmt, "what": f"read only ({how})",
                            **measure("read", path, how, repeat)})
        if fmt == "npy":
            out.append({"dataset": name, "format": "in memory", "what": "numpy pass",
                        **measure("pass", path, "", repeat)})
            out.append({"dataset": name, "format": "in memory", "what": "argsort all rows",
                        **measure("argsort", path, "", 1)})
            sub = 2000 if name == "sampled" else 200
            for tool in ("sklearn", "ranx"):
                try:
                    m = measure(tool, path, sub, 1)
                except subprocess.CalledProcessError as exc:
                    print(f"{tool} failed: {exc.stderr[-300:]}", file=sys.stderr)
                    continue
                m["seconds"] *= rows / sub
                out.append({"dataset": name, "format": "in memory",
                            "what": f"{tool} (x{rows // sub} from {sub} rows)", **m})
    return out


def table(results: list[dict]) -> str:
    lines = []
    for name in dict.fromkeys(r["dataset"] for r in results):
        rows, cols = make_data.SHAPES[name]
        group = [r for r in results if r["dataset"] == name]
        lines.append(f"\n{name}: {rows:,} x {cols:,} float32\n")
        lines.append("| format | what | median s | peak MB | vs tieeval jobs=1 |")
        lines.append("| --- | --- | ---: | ---: | ---: |")
        base = {r["format"]: r["seconds"] for r in group if r["what"] == "tieeval jobs=1"}
        ref = base.get("npy") or next(iter(base.values()), 1.0)
        for r in group:
            b = base.get(r["format"], ref)
            lines.append(f"| {r['format']} | {r['what']} | {r['seconds']:.3f} | "
                         f"{r['peak_mb']:.0f} | {r['seconds'] / b:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--task":
        print(json.dumps(task(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4
                              else "")))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="sampled,allitem,big")
    parser.add_argument("--out", default=os.path.join(make_data.DATA, "bench_scale.json"))
    args = parser.parse_args()
    warm_up()
    results = []
    for name in args.only.split(","):
        results += bench_dataset(name, args.repeat)
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
    print(table(results))


if __name__ == "__main__":
    main()
