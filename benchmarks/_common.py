"""What the timing scripts share: where the data lives, the median of repeated runs, the
Markdown table of timings relative to one baseline row, and the peers timed beside tieeval
(ranx, pytrec_eval, torchmetrics, a ``torch.topk`` evaluator) on rows with labels.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and
they import this module as ``_common``.
"""

from __future__ import annotations

import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
# torch is an optional extra: `pip install --target benchmarks/data/torch_site torch
# torchmetrics` puts it where the peers look, outside the environment
TORCH_SITE = os.path.join(DATA, "torch_site")

# Fresh processes run with Python's bytecode cache on, as an installed package does (pip
# compiles it at install): with PYTHONDONTWRITEBYTECODE set, every run would compile
# tieeval's modules from source again (0.1-0.3 s of each CLI run). The cache goes under
# data/ so that timing never writes next to the sources.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(DATA, "pycache"))


def npy_from_chunks(out: str, rows: int, cols: int, chunks) -> str:
    """A float32 NPY of ``rows`` x ``cols`` at ``out`` from ``(start row, block)``
    chunks, written through a memory map and moved into place whole."""
    import numpy as np
    mm = np.lib.format.open_memmap(out + ".tmp", mode="w+", dtype=np.float32,
                                   shape=(rows, cols))
    for start, block in chunks:
        mm[start:start + len(block)] = block
    mm.flush()
    del mm
    os.replace(out + ".tmp", out)
    return out


def npy_to_npz(src: str, out: str, *, deflated: bool = False) -> str:
    """The NPY file ``src`` as an NPZ at ``out`` with its one member ``scores.npy``, as
    ``np.savez`` (or ``np.savez_compressed``) writes it, streamed 64 MB at a time (zip64
    allowed) and moved into place whole."""
    import zipfile
    method = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
    with zipfile.ZipFile(out + ".tmp", "w", compression=method, allowZip64=True) as zf:
        with zf.open("scores.npy", "w", force_zip64=True) as dst, open(src, "rb") as fh:
            while buf := fh.read(64 << 20):
                dst.write(buf)
    os.replace(out + ".tmp", out)
    return out


def npy_to_parquet(src: str, out: str, group_bytes: int = 32 << 20) -> str:
    """The NPY matrix ``src`` as Parquet at ``out``: one ``list<float>`` column
    ``scores``, row groups of about ``group_bytes`` of scores (snappy), as pyarrow and
    Spark write such rows by default; read memory-mapped, written one row group at a time
    and moved into place whole."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    scores = np.load(src, mmap_mode="r")
    rows, cols = scores.shape
    group = max(1, group_bytes // (4 * cols))
    schema = pa.schema([("scores", pa.list_(pa.float32()))])
    with pq.ParquetWriter(out + ".tmp", schema) as writer:
        for start in range(0, rows, group):
            block = np.ascontiguousarray(scores[start:start + group])
            offsets = pa.array(np.arange(len(block) + 1, dtype=np.int32) * cols)
            col = pa.ListArray.from_arrays(offsets, pa.array(block.ravel()))
            writer.write_table(pa.table({"scores": col}), row_group_size=group)
    os.replace(out + ".tmp", out)
    return out


def interleaved(runs: dict, repeat: int, self_timed=()) -> dict:
    """Each run's wall times over ``repeat`` rounds, every round running each in turn;
    a run named in ``self_timed`` returns its own time (None: not installed)."""
    times: dict = {k: [] for k in runs}
    for _ in range(repeat):
        for key, fn in runs.items():
            t0 = time.perf_counter()
            got = fn()
            times[key].append(got if key in self_timed else time.perf_counter() - t0)
    return times


def warm_up() -> None:
    """Run the CLI once on a single-positive and a labelled dump, so that the bytecode of
    every module the timed runs import is cached before the first timed run."""
    import subprocess
    import sys

    import numpy as np
    os.makedirs(DATA, exist_ok=True)
    scores = np.arange(60, dtype=np.float32).reshape(6, 10) % 7
    for name, arrays in (("warm_up_single.npz", {"scores": scores}),
                         ("warm_up_labels.npz", {"scores": scores,
                                                 "labels": (scores > 4).astype(np.int8)})):
        path = os.path.join(DATA, name)
        if not os.path.exists(path):
            np.savez(path, **arrays)
        subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "-q", "-f", "json"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def median_time(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn()``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def print_timings(results: dict[str, float], base: float, baseline: str) -> None:
    """``| what | seconds | relative to BASELINE |``, one row per entry of ``results``."""
    print(f"| what | seconds | relative to {baseline} |")
    print("| --- | ---: | ---: |")
    for name, t in results.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")


# The peers. Each takes a block of rows in memory (``s`` float32 scores, ``y`` integer labels,
# 0 = not relevant) and returns what it measured on exactly those rows, unscaled: the
# caller decides whether they are the whole dump or its first rows scaled per row.


def trec_dicts(s, y):
    """``(qrels, run)`` as ranx and pytrec_eval take them: ``{query: {doc: label}}`` for the
    relevant items, ``{query: {doc: score}}`` for every item; rows without a relevant item
    are left out (both peers score them 0, tieeval leaves them out)."""
    import numpy as np
    keep = [i for i in range(s.shape[0]) if y[i].any()]
    qrels = {f"q{i}": {f"d{j}": int(y[i, j]) for j in np.flatnonzero(y[i])} for i in keep}
    run = {f"q{i}": {f"d{j}": float(v) for j, v in enumerate(s[i])} for i in keep}
    return qrels, run


def peer_ranx(s, y, k: int = 10):
    """ranx ``evaluate(qrels, run, "ndcg@K")`` (numba compiled first, on three rows):
    ``(evaluate seconds, seconds building Qrels / Run from the arrays, mean)``, or None
    when ranx is not installed."""
    try:
        from ranx import Qrels, Run, evaluate
    except ImportError:
        return None
    q2, r2 = trec_dicts(s[:3], y[:3])
    evaluate(Qrels(q2), Run(r2), f"ndcg@{k}")
    t0 = time.perf_counter()
    q, r = trec_dicts(s, y)
    qrels, run = Qrels(q), Run(r)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    value = evaluate(qrels, run, f"ndcg@{k}")
    return time.perf_counter() - t0, build, float(value)


def peer_pytrec(s, y, k: int = 10):
    """pytrec_eval ``RelevanceEvaluator(qrels, {"ndcg_cut_K"})``: ``(evaluate seconds,
    seconds building the dicts, mean)``, or None when it is not installed."""
    try:
        import pytrec_eval
    except ImportError:
        return None
    import numpy as np
    t0 = time.perf_counter()
    q, r = trec_dicts(s, y)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = pytrec_eval.RelevanceEvaluator(q, {f"ndcg_cut_{k}"}).evaluate(r)
    ev = time.perf_counter() - t0
    return ev, build, float(np.mean([v[f"ndcg_cut_{k}"] for v in got.values()]))


def torch_or_none():
    """torch, from the environment or :data:`TORCH_SITE`; None when neither has it."""
    import sys
    if os.path.isdir(TORCH_SITE) and TORCH_SITE not in sys.path:
        sys.path.append(TORCH_SITE)  # after the environment: its numpy stays first
    try:
        import torch
        return torch
    except ImportError:
        return None


def peer_torchmetrics(s, y, k: int = 10):
    """torchmetrics ``retrieval_normalized_dcg(preds, target, top_k=K)`` (tie-averaged), one
    call per query with a relevant item: ``(seconds, mean)``, or None without torchmetrics."""
    torch = torch_or_none()
    try:
        from torchmetrics.functional.retrieval import retrieval_normalized_dcg
    except ImportError:
        return None
    import numpy as np
    keep = np.flatnonzero(y.any(1))
    # torch takes writable arrays only (a memory-mapped dump's rows are read-only)
    preds = torch.from_numpy(np.require(s, requirements=["C", "W"]))
    target = torch.from_numpy(y.astype(np.int64))
    t0 = time.perf_counter()
    vals = [float(retrieval_normalized_dcg(preds[i], target[i], top_k=k)) for i in keep]
    return time.perf_counter() - t0, float(np.mean(vals))


def topk_ndcg(blocks, k: int = 10):
    """A ``torch.topk`` evaluator: NDCG@K of the order ``torch.topk(scores, K)`` gives (one
    order, no tie handling), over ``blocks`` of ``(scores, labels)`` row blocks as numpy
    arrays: ``(seconds, mean over rows with a relevant item)``, reading the blocks counted;
    None without torch."""
    torch = torch_or_none()
    if torch is None:
        return None
    import numpy as np
    t0 = time.perf_counter()
    disc = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64))
    total, count = 0.0, 0
    for s, y in blocks:
        sb = torch.from_numpy(np.require(s, requirements=["C", "W"]))
        yb = torch.from_numpy(np.require(y, requirements=["C", "W"])).to(torch.float64)
        idx = torch.topk(sb, k, dim=1).indices
        dcg = (yb.gather(1, idx) * disc).sum(1)
        ideal = (torch.topk(yb, k, dim=1).values * disc).sum(1)
        keep = ideal > 0
        total += float((dcg[keep] / ideal[keep]).sum())
        count += int(keep.sum())
    return time.perf_counter() - t0, total / count
