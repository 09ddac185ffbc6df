"""Peak memory against the number of rows, the in-memory API against the file path, and
the automatic worker pool against one process: every figure of the Memory section of
docs/performance.md.

    python benchmarks/bench_memory.py [--only rows,api,jobs] [--repeat 3] [--keep]
                                      [--readers npy,npz,parquet,long,csv,unsorted,trec]
                                      [--baseline-src DIR]

Every measurement runs in a fresh process; peaks are the process's ``ru_maxrss`` (from
``wait4``) or, for ``jobs``, the resident memory of the whole process tree (the command
and any worker processes it starts, summed), sampled every 20 ms. Rounds are interleaved
and the medians of ``--repeat`` rounds are printed, with ratios from the same run.

* ``rows``: ``tieeval compare DUMP --format json -q`` (the default ``--jobs``) on a
  1,000,000 x 101 and a 10,000,000 x 101 dump of each reader (NPY, stored NPZ, Parquet
  with a list column, the long layout in Parquet sorted by instance), float32 sigmoid
  scores that saturate at 1.0 as ``make_data.py sampled`` writes them (the positive tied in
  about a third of the rows); then the 10M NPY with ``TIEEVAL_KERNEL=numba`` (the fused
  kernel, now opt-in). ``csv``: the long layout as CSV text, 200,000 and 2,000,000 x 101
  (0.43 and 4.3 GB; 10M rows would be 21 GB); ``unsorted``: the long layout in Parquet with
  the instance ids counting down (regrouped through spill files), 200,000 and 2,000,000
  x 101. Each reader's files are written, measured and deleted (``--keep`` keeps them)
  before the next's: the 10M files are 3.5-4 GB each. ``trec`` (in ``--readers``): the
  TREC drop-in, ``-m official --convention trec_eval --format trec_eval``, on runs of
  2,000 queries x 100 and x 1,000 lines (0.2M and 2M lines, 7 and 68 MB), the same qrels
  for both (the queries, and so the per-query values trec_eval's output needs, stay the
  same: only the lines grow 10x).
* ``api``: ``tieeval.evaluate(array)`` on the matrix loaded whole against
  ``tieeval.evaluate_path`` on its file: the 1M x 101 single-positive NPY, a graded
  100,000 x 200 NPZ (labels 0-3) and a multi-positive 50,000 x 5,000 NPZ (1-50 positives
  per row, 1.25 GB). Time of the call; working memory is the peak above the process's
  resident size just before the call (for ``evaluate``, after the arrays were loaded).
  ``--baseline-src DIR`` also runs ``evaluate`` from another checkout (before a change),
  and ``rows`` the command line from there.
* ``jobs``: the command line with ``--jobs 0`` (the default), ``--jobs 1`` and ``--jobs 2``
  (a pool of two workers, what ``--jobs 0`` started on 2 cores for NPY and stored NPZ
  matrices of 1 GB or more) on the 1M NPY, the 10M NPY and the 1.25 GB labelled NPZ
  (``--jobs-dumps 1m,10m,multi``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
from _common import DATA, npy_from_chunks, npy_to_npz, npy_to_parquet, warm_up

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FOLDER = os.path.join(DATA, "memory")
ONLY: list[str] = []  # the sections run (--only)
COLS = 101
CHUNK_ROWS = 1 << 17
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------------------
# data

def _score_chunks(rows: int, seed: int = 0):
    """``make_data.py sampled``'s scores: float32 sigmoids of N(8, 6) logits, +4 for the
    positive in column 0, in chunks."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, CHUNK_ROWS):
        n = min(CHUNK_ROWS, rows - start)
        z = rng.normal(8.0, 6.0, size=(n, COLS)).astype(np.float32)
        z[:, 0] += 4.0
        yield start, (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)


def write_npy(rows: int) -> str:
    os.makedirs(FOLDER, exist_ok=True)
    out = os.path.join(FOLDER, f"sampled_{rows}.npy")
    if not os.path.exists(out):
        npy_from_chunks(out, rows, COLS, _score_chunks(rows))
    return out


def write_dump(reader: str, rows: int) -> str:
    """The dump of ``rows`` rows for ``reader``, written once (from the NPY)."""
    os.makedirs(FOLDER, exist_ok=True)
    if reader == "npy":
        return write_npy(rows)
    out = os.path.join(FOLDER, f"sampled_{rows}.{reader}" + (
        "" if reader in ("npz", "csv") else ".parquet"))
    if os.path.exists(out):
        return out
    src = write_npy(rows)
    if reader == "npz":  # what np.savez writes (a stored member), streamed
        return npy_to_npz(src, out)
    if reader == "parquet":  # row groups of 32 MB of scores, as make_data.py writes
        return npy_to_parquet(src, out)
    return write_long(src, out, reader)


def write_long(src: str, out: str, reader: str) -> str:
    """The NPY ``src`` in the long layout, one row per (instance, candidate), written in
    blocks: ``long``, Parquet sorted by instance; ``unsorted``, the same rows with the
    instance ids counting down, so that they are regrouped through temporary spill files;
    ``csv``, CSV text sorted by instance."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    scores = np.load(src, mmap_mode="r")
    rows = len(scores)
    schema = pa.schema([("instance", pa.int64()), ("position", pa.int32()),
                        ("score", pa.float32()), ("label", pa.int8())])
    label = np.zeros(COLS, dtype=np.int8)
    label[0] = 1
    step = (1 << 22) // COLS
    make = pcsv.CSVWriter if reader == "csv" else pq.ParquetWriter
    with make(out + ".tmp", schema) as writer:
        for start in range(0, rows, step):
            block = np.ascontiguousarray(scores[start:start + step])
            n = len(block)
            ids = np.arange(start, start + n, dtype=np.int64)
            writer.write_table(pa.table({
                "instance": np.repeat(rows - 1 - ids if reader == "unsorted" else ids, COLS),
                "position": np.tile(np.arange(COLS, dtype=np.int32), n),
                "score": block.ravel(), "label": np.tile(label, n)}, schema=schema))
    os.replace(out + ".tmp", out)
    return out


# rows of the small and the large dump of each reader (a 10M-row CSV would be 21 GB)
ROWS = {"csv": (200_000, 2_000_000), "unsorted": (200_000, 2_000_000)}
DEFAULT_ROWS = (1_000_000, 10_000_000)


def _rows_name(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else f"{rows // 1_000}k"


def write_labelled(name: str) -> str:
    """``graded``: 100,000 x 200, labels 0-3 (about 10% relevant); ``multi``: 50,000 x
    5,000, 1-50 positives per row (label 1). Scores are saturating sigmoids as above,
    relevant items' logits +3."""
    os.makedirs(FOLDER, exist_ok=True)
    out = os.path.join(FOLDER, f"{name}.npz")
    if os.path.exists(out):
        return out
    rng = np.random.default_rng(1)
    if name == "graded":
        rows, cols = 100_000, 200
        labels = np.where(rng.random((rows, cols)) < 0.1, rng.integers(1, 4, (rows, cols)),
                          0).astype(np.int8)
    else:
        rows, cols = 50_000, 5_000
        labels = np.zeros((rows, cols), dtype=np.int8)
        count = rng.integers(1, 51, rows)
        for i in range(rows):
            labels[i, rng.choice(cols, count[i], replace=False)] = 1
    scores = np.empty((rows, cols), dtype=np.float32)
    for start in range(0, rows, 5_000):
        z = rng.normal(8.0, 6.0, size=(min(5_000, rows - start), cols)).astype(np.float32)
        z += 3.0 * (labels[start:start + 5_000] > 0)
        scores[start:start + 5_000] = np.float32(1) / (np.float32(1) + np.exp(-z))
    np.savez(out + ".tmp.npz", scores=scores, labels=labels)
    os.replace(out + ".tmp.npz", out)
    return out


def remove(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)


# ---------------------------------------------------------------------------------------
# measuring

def _tree_rss(root: int) -> int:
    """Resident bytes of the descendants of ``root`` (the launcher): the command, its
    worker processes and their fork server."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
        todo.extend(children.get(pid, []))
    return total


# Linux keeps a process's peak resident size across fork and exec: a command started
# straight from this (large) process would report this process's peak as its own. A small
# launcher starts it instead and reports its ``ru_maxrss`` on stderr's last line.
_LAUNCH = r"""
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(proc.pid, 0)
sys.stderr.write("\n" + json.dumps({"status": status, "maxrss_kb": usage.ru_maxrss}) + "\n")
"""


def run(args: list[str], env: dict | None = None, tree: bool = False) -> dict:
    """Run ``args`` in a fresh process: wall seconds, peak MB (``ru_maxrss``, or the
    process tree's sampled resident size with ``tree``), and its stdout."""
    full_env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    t0 = time.perf_counter()
    # run from the checkout measured: `python -m` puts the working folder first on the
    # path, so run from this one a --baseline-src run would import this checkout's code
    proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=full_env,
                            cwd=full_env["PYTHONPATH"].split(os.pathsep)[0] or None)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.02)
    sampler = threading.Thread(target=sample, daemon=True) if tree else None
    if sampler is not None:
        sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    done.set()
    if sampler is not None:
        sampler.join()
    import json
    lines = err.decode().strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"status": -1}
    if proc.returncode != 0 or report["status"] != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{err.decode()[-2000:]}")
    mb = (peak[0] / 2**20) if tree else report["maxrss_kb"] / 1024
    return {"seconds": seconds, "peak_mb": mb, "out": out.decode()}


def cli(path: str, *extra: str, env: dict | None = None, tree: bool = False) -> dict:
    return run([sys.executable, "-m", "tieeval", "compare", path, "--format", "json", "-q",
                *extra], env, tree)


def median(values) -> float:
    return statistics.median(values)


# ---------------------------------------------------------------------------------------
# rows: peak memory of 1M against 10M rows

def bench_rows(readers: list[str], repeat: int, keep: bool, baseline: str | None) -> None:
    print("## Peak memory against rows (tieeval compare, default --jobs; MB, median of "
          f"{repeat})\n")
    # the matrices: 1M and 10M rows of 101; a TREC run: 0.2M and 2M lines (its row says)
    print("| reader | peak MB | peak MB, 10x the rows | 10x / 1x | seconds | seconds, 10x "
          "the rows |" + (" before: 1x | before: 10x | before: 10x / 1x |"
                          if baseline else ""))
    print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: | ---: |"
                                                        if baseline else ""))
    for reader in readers:
        if reader == "trec":
            bench_trec_rows(repeat, keep, baseline)
            continue
        sizes = ROWS.get(reader, DEFAULT_ROWS)
        paths = {rows: write_dump(reader, rows) for rows in sizes}
        got: dict = {(rows, src): [] for rows in paths for src in (ROOT, baseline) if src}
        for _ in range(repeat):
            for rows, src in got:
                got[rows, src].append(cli(paths[rows], env={"PYTHONPATH": src}))
        mb = {key: median(r["peak_mb"] for r in runs) for key, runs in got.items()}
        s = {key: median(r["seconds"] for r in runs) for key, runs in got.items()}
        small, big = (sizes[0], ROOT), (sizes[1], ROOT)
        name = {"csv": "long csv", "unsorted": "long, unsorted"}.get(reader, reader)
        line = (f"| {name} ({_rows_name(sizes[0])} / {_rows_name(sizes[1])} x 101) | "
                f"{mb[small]:.1f} | {mb[big]:.1f} | "
                f"{mb[big] / mb[small]:.3f} | {s[small]:.2f} | {s[big]:.2f} |")
        if baseline:
            old = mb[sizes[0], baseline], mb[sizes[1], baseline]
            line += f" {old[0]:.1f} | {old[1]:.1f} | {old[1] / old[0]:.3f} |"
        print(line, flush=True)
        if reader == "npy":
            fused = [cli(paths[10_000_000], env={"TIEEVAL_KERNEL": "numba"})
                     for _ in range(repeat)]
            print(f"| npy, TIEEVAL_KERNEL=numba (10M x 101) | | "
                  f"{median(r['peak_mb'] for r in fused):.1f} | | | "
                  f"{median(r['seconds'] for r in fused):.2f} |", flush=True)
        if not keep and (reader != "npy" or sizes != DEFAULT_ROWS):
            for path in paths.values():  # the NPY files are the others' source
                remove(path)
            if sizes != DEFAULT_ROWS:  # this reader's own NPY sources
                for rows in sizes:
                    remove(os.path.join(FOLDER, f"sampled_{rows}.npy"))
    print()


TREC_QUERIES = 2_000
TREC_DOCS = (100, 1_000)  # lines per query: 0.2M and 2M lines


def write_trec(docs: int, seed: int = 0) -> tuple[str, str]:
    """A TREC run of :data:`TREC_QUERIES` queries x ``docs`` lines, each query's lines
    together, and qrels shared by both runs (200 judged documents a query, from the same
    pool the runs draw from): only the number of lines differs between the runs, while
    the queries, and so the per-query values kept for trec_eval's output, stay the same."""
    os.makedirs(FOLDER, exist_ok=True)
    run_path = os.path.join(FOLDER, f"trec_{TREC_QUERIES}x{docs}.run")
    qrels_path = os.path.join(FOLDER, f"trec_{TREC_QUERIES}.qrels")
    pool = 50_000
    if not os.path.exists(qrels_path):
        rng = np.random.default_rng(seed)
        with open(qrels_path + ".tmp", "w") as fh:
            for q in range(1, TREC_QUERIES + 1):
                judged = np.sort(rng.choice(pool, 200, replace=False))
                grades = rng.choice([0, 0, 0, 1, 1, 2, 3], size=judged.size)
                fh.write("".join(f"{q} 0 doc{d:07d} {g}\n" for d, g in zip(judged, grades)))
        os.replace(qrels_path + ".tmp", qrels_path)
    if not os.path.exists(run_path):
        rng = np.random.default_rng(seed + docs)
        with open(run_path + ".tmp", "w") as fh:
            for q in range(1, TREC_QUERIES + 1):
                ids = rng.choice(pool, size=docs, replace=False)
                scores = np.round(rng.normal(0.0, 1.0, size=docs), 2)  # two decimals: ties
                order = np.argsort(-scores, kind="stable")
                fh.write("".join(f"{q} Q0 doc{ids[i]:07d} {r} {scores[i]:.2f} bench\n"
                                 for r, i in enumerate(order, 1)))
        os.replace(run_path + ".tmp", run_path)
    return run_path, qrels_path


def bench_trec_rows(repeat: int, keep: bool, baseline: str | None) -> None:
    """The TREC drop-in (``-m official --convention trec_eval --format trec_eval``) on a
    run with 10x the lines of another, same queries and qrels."""
    files = {docs: write_trec(docs) for docs in TREC_DOCS}
    got: dict = {(docs, src): [] for docs in files for src in (ROOT, baseline) if src}
    for _ in range(repeat):
        for docs, src in got:
            run_path, qrels_path = files[docs]
            got[docs, src].append(run(
                [sys.executable, "-m", "tieeval", "compare", run_path, "--qrels", qrels_path,
                 "-m", "official", "--convention", "trec_eval", "--format", "trec_eval",
                 "-q"], {"PYTHONPATH": src}))
    mb = {key: median(r["peak_mb"] for r in runs) for key, runs in got.items()}
    s = {key: median(r["seconds"] for r in runs) for key, runs in got.items()}
    small, big = (TREC_DOCS[0], ROOT), (TREC_DOCS[1], ROOT)
    lines = [TREC_QUERIES * d / 1e6 for d in TREC_DOCS]
    line = (f"| trec ({TREC_QUERIES:,} queries x {TREC_DOCS[0]:,} / {TREC_DOCS[1]:,} lines: "
            f"{lines[0]:g}M / {lines[1]:g}M lines) | {mb[small]:.1f} | {mb[big]:.1f} | "
            f"{mb[big] / mb[small]:.3f} | {s[small]:.2f} | {s[big]:.2f} |")
    if baseline:
        old = mb[TREC_DOCS[0], baseline], mb[TREC_DOCS[1], baseline]
        line += f" {old[0]:.1f} | {old[1]:.1f} | {old[1] / old[0]:.3f} |"
    print(line, flush=True)
    if not keep:
        for path in {p for pair in files.values() for p in pair}:
            remove(path)


# ---------------------------------------------------------------------------------------
# api: evaluate(array) against evaluate_path on the same matrix

_API = r"""
import json, os, sys, time
import numpy as np
import tieeval

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

path, how = sys.argv[1], sys.argv[2]
tieeval.evaluate(np.ones((4, 20), dtype=np.float32))  # imports done before measuring
if how == "array":
    if path.endswith(".npz"):
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
    else:
        arrays = {"scores": np.load(path)}
    before = rss()
    t0 = time.perf_counter()
    r = tieeval.evaluate(arrays.pop("scores"), **arrays)
else:
    before = rss()
    t0 = time.perf_counter()
    r = tieeval.evaluate_path(path)
seconds = time.perf_counter() - t0
with open("/proc/self/status") as fh:  # this process's own peak (ru_maxrss is the launcher's)
    peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024
print(json.dumps({"seconds": seconds, "work_mb": peak - before, "peak_mb": peak,
                  "figures": [r.to_dict()[k] for k in ("metrics", "ties")]}))
"""


def _api(path: str, how: str, src: str = ROOT) -> dict:
    import json
    got = run([sys.executable, "-c", _API, path, how], {"PYTHONPATH": src})
    return json.loads(got["out"])


def bench_api(repeat: int, baseline: str | None) -> None:
    print(f"## evaluate(array) against evaluate_path (median of {repeat})\n")
    print("| dump | evaluate_path s | evaluate s | evaluate / path | path working MB | "
          "evaluate working MB |" + (" before: evaluate s | before: working MB |"
                                     if baseline else ""))
    print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if baseline else ""))
    dumps = [("sampled 1M x 101 NPY", write_npy(1_000_000)),
             ("graded 100k x 200 NPZ", write_labelled("graded")),
             ("multi-positive 50k x 5,000 NPZ", write_labelled("multi"))]
    for name, path in dumps:
        runs: dict = {"path": [], "array": [], "before": []}
        for _ in range(repeat):
            runs["path"].append(_api(path, "path"))
            runs["array"].append(_api(path, "array"))
            if baseline:
                runs["before"].append(_api(path, "array", baseline))
        assert all(r["figures"] == runs["path"][0]["figures"]
                   for r in runs["path"] + runs["array"]), f"{name}: figures differ"
        t = {k: median(r["seconds"] for r in v) for k, v in runs.items() if v}
        w = {k: median(r["work_mb"] for r in v) for k, v in runs.items() if v}
        line = (f"| {name} | {t['path']:.2f} | {t['array']:.2f} | "
                f"{t['array'] / t['path']:.2f}x | {w['path']:.0f} | {w['array']:.0f} |")
        if baseline:
            line += f" {t['before']:.2f} | {w['before']:.0f} |"
        print(line, flush=True)
    print()


# ---------------------------------------------------------------------------------------
# jobs: --jobs 0 against --jobs 1 (and a pool of two)

def bench_jobs(repeat: int, which: list[str]) -> None:
    print(f"## --jobs 0 against --jobs 1 and 2 (median of {repeat}; MB of the whole process "
          "tree)\n")
    print("| dump | -j1 s | -j0 s | -j2 s | -j0 / -j1 | -j2 / -j1 | -j1 MB | -j0 MB | "
          "-j2 MB | -j0 MB / -j1 | -j2 MB / -j1 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    makers = {"1m": ("sampled 1M x 101 NPY (404 MB)", lambda: write_npy(1_000_000)),
              "10m": ("sampled 10M x 101 NPY (4 GB)", lambda: write_npy(10_000_000)),
              "multi": ("multi-positive 50k x 5,000 NPZ (1.25 GB)",
                        lambda: write_labelled("multi"))}
    dumps = [(makers[key][0], makers[key][1]()) for key in which]
    for name, path in dumps:
        got: dict = {j: [] for j in ("1", "0", "2")}
        for _ in range(repeat):
            for j in got:
                got[j].append(cli(path, "--jobs", j, tree=True))
        assert len({r["out"] for runs in got.values() for r in runs}) == 1
        t = {j: median(r["seconds"] for r in runs) for j, runs in got.items()}
        m = {j: median(r["peak_mb"] for r in runs) for j, runs in got.items()}
        print(f"| {name} | {t['1']:.2f} | {t['0']:.2f} | {t['2']:.2f} | "
              f"{t['0'] / t['1']:.2f} | {t['2'] / t['1']:.2f} | {m['1']:.0f} | {m['0']:.0f} | "
              f"{m['2']:.0f} | {m['0'] / m['1']:.2f} | {m['2'] / m['1']:.2f} |", flush=True)
    print()


def main() -> None:
    global FOLDER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="rows,api,jobs")
    parser.add_argument("--readers", default="npy,npz,parquet,long,csv,unsorted,trec")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs-dumps", default="1m,10m,multi",
                        help="the dumps of the jobs section: 1m, 10m, multi")
    parser.add_argument("--keep", action="store_true", help="keep the data files")
    parser.add_argument("--data", default=FOLDER, help="where the data files go")
    parser.add_argument("--baseline-src", default=None,
                        help="another checkout (before a change) run beside (rows, api)")
    args = parser.parse_args()
    ONLY[:] = args.only.split(",")
    FOLDER = args.data
    warm_up()
    print(f"numpy {np.__version__}, {os.cpu_count()} cores\n")
    try:
        if "api" in ONLY:
            bench_api(args.repeat, args.baseline_src)
        if "jobs" in ONLY:
            bench_jobs(args.repeat, args.jobs_dumps.split(","))
        if "rows" in ONLY:
            bench_rows(args.readers.split(","), args.repeat, args.keep, args.baseline_src)
    finally:
        if not args.keep:  # 4 GB files: gone unless asked to keep them
            for name in os.listdir(FOLDER) if os.path.isdir(FOLDER) else ():
                remove(os.path.join(FOLDER, name))


if __name__ == "__main__":
    main()
