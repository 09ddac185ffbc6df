"""Single-positive dumps: tieeval against the exact-Original floor, and against its peers.

    python benchmarks/bench_floor.py [--scale 1.0] [--repeat 5] [--formats] [--check-floor]

The *exact-Original floor* of a single-positive dump is the least work any exact tool must
do: read it (np.load with mmap), one pass computing each row's a (scores above the
positive), b (tied with it), the row maximum and its count, and numpy's own
``np.argsort(scores * -1)`` of the rows whose positive is tied, in cache-sized blocks of
rows on one thread per core (argsort and the comparisons release the GIL).
``python benchmarks/bench_floor.py --check-floor`` checks that it is exact (against
``count_nonzero`` and a full argsort of every row). Four seeded float32 dumps (scaled by
``--scale``): sampled 200,000 x 101 and all-item 4,000 x 10,000, each tied (a sigmoid that
saturates at 1.0) and tie-free (raw logits).

Measured in one run, medians of ``--repeat`` (the rounds interleave the contestants, and
each ratio is the median of the per-round ratios to the floor): the floor in this process,
and the floor as a script (a fresh interpreter importing numpy, as a user runs one from a
shell: the CLI's times are also compared with it); ``tieeval
compare`` with the default ``--jobs`` and with ``--jobs 1`` (a fresh process each, as a
user runs it); the API in this process (``jobs=1``); naive numpy (``np.argsort(S * -1)``
of every row, the positive's place, HR@10 / NDCG@10 / MRR under Original only).

Then, once per dump after the rounds, the peers on the same data (NDCG@10, the positive
as the one relevant item), where installed: scikit-learn's tie-averaged ``ndcg_score``;
ranx ``evaluate`` and pytrec_eval ``RelevanceEvaluator`` (each with the cost of building
its input dicts from the array stated apart); torchmetrics'
``retrieval_normalized_dcg`` (tie-averaged, one call per query); and a ``torch.topk``
evaluator (one order, no tie handling) over the whole memory-mapped dump. torch is
optional: ``pip install --target benchmarks/data/torch_site torch torchmetrics`` puts it
where the script looks. Each peer runs on the whole dump when its first rows (2,000 of a
sampled dump, 200 of an all-item one) predict at most :data:`PEER_BUDGET` seconds (and,
for the dict-taking peers, at most :data:`PEER_MAX_ENTRIES` scores); otherwise on those
rows, scaled per row, and the table says which. Each peer's own mean is printed beside
tieeval's tie-aware and Original values on the same rows, to show what it computes.
``--formats``: the same dumps as NPY, a
stored NPZ and Parquet (row groups of about 32 MB), the API and the CLI against the floor
on each format (a stored NPZ's member memory-mapped; Parquet's row-group stream, one row
group at a time as tieeval reads it, its values counted and sorted on every core). Labelled
rows are ``bench_labelled.py``'s. The header names the CRC-32 that checks a stored NPZ
(``TIEEVAL_CRC32=zlib`` asks for zlib's, for the API and the CLI).

The machine is small and shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from _common import (
    DATA,
    interleaved,
    npy_to_npz,
    npy_to_parquet,
    peer_pytrec,
    peer_ranx,
    peer_torchmetrics,
    topk_ndcg,
    warm_up,
)


def write(name: str, rows: int, cols: int, tied: bool, seed: int = 0) -> str:
    path = os.path.join(DATA, f"floor_{name}_{rows}x{cols}_{'tied' if tied else 'free'}.npy")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    step = max(1, 4_000_000 // cols)
    for lo in range(0, rows, step):
        n = min(step, rows - lo)
        logits = rng.normal(size=(n, cols)).astype(np.float32) * 8
        logits[:, 0] += 2  # the positive (column 0) scores a little higher
        if tied:  # an extra sigmoid on large logits: float32 saturates at exactly 1.0
            out[lo:lo + n] = (1 / (1 + np.exp(-(logits + 8)))).astype(np.float32)
        else:
            out[lo:lo + n] = logits
    out.flush()
    del out
    return path


_LOCAL = threading.local()


def _work(key: str, size: int, dtype) -> np.ndarray:
    """A reused flat work array per thread (a fresh one per block pays its page faults)."""
    buf = getattr(_LOCAL, key, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_LOCAL, key, buf)
    return buf[:size]


def floor_block(x: np.ndarray):
    """One block of rows (positive in column 0): ``a``, ``b`` and the top tie of every row
    (each comparison written as booleans into a reused work array and summed per row as
    0/1 bytes into uint16 — exact while a row has fewer than 65,536 candidates, and
    several times cheaper than comparing into a float array; rows of fewer than 160
    candidates are first copied column by column, so that numpy's loops run along the
    block's rows instead of along 101 scores), then numpy's ``np.argsort(rows * -1)`` of
    the rows whose positive is tied and the positive's place in it (looked for in its
    tie block only). Returns ``(a, b, top, tied rows, ranks)``."""
    rows, cols = x.shape
    flags = _work("flags", x.size, np.bool_)
    total = np.uint16 if cols < (1 << 16) else np.int64
    if cols < 160:
        view = _work("copy", x.size, x.dtype).reshape(cols, rows)
        np.copyto(view, x.T)
        p, top_score, axis = view[0], view.max(axis=0), 0
        flags = flags.reshape(cols, rows)
    else:
        view, p, axis = x, x[:, :1], 1
        top_score = x.max(axis=1)[:, None]
        flags = flags.reshape(rows, cols)
    ones = flags.view(np.uint8)
    np.greater(view, p, out=flags)
    a = ones.sum(axis=axis, dtype=total).astype(np.int64)
    np.equal(view, p, out=flags)
    b = ones.sum(axis=axis, dtype=total).astype(np.int64)
    np.equal(view, top_score, out=flags)
    top = ones.sum(axis=axis, dtype=total).astype(np.int64)
    tied = np.flatnonzero(b > 1)
    rank = tied
    if tied.size:
        order = np.argsort(x[tied] * -1, axis=1)
        lo, hi = int(a[tied].min()), int((a[tied] + b[tied]).max())
        rank = np.argmax(order[:, lo:hi] == 0, axis=1) + lo + 1
    return a, b, top, tied, rank


def floor(path: str) -> list:
    """The exact-Original floor: blocks of rows (1 MB of float32) of the memory-mapped
    file, one thread per core, each block counted and its tied rows sorted in the same
    thread (:func:`floor_block`)."""
    s = np.load(path, mmap_mode="r")
    cores = len(os.sched_getaffinity(0))
    step = max(1, (1 << 18) // s.shape[1])
    with ThreadPoolExecutor(cores) as pool:
        return list(pool.map(lambda lo: floor_block(s[lo:lo + step]),
                             range(0, s.shape[0], step)))


def as_npz(path: str) -> str:
    """The dump as a stored NPZ (member ``scores``), written once."""
    out = path[:-4] + ".npz"
    return out if os.path.exists(out) else npy_to_npz(path, out)


def as_parquet(path: str) -> str:
    """The dump as Parquet (a ``list<float>`` column, row groups of about 32 MB), as
    make_data.py writes them, written once."""
    out = path[:-4] + ".parquet"
    return out if os.path.exists(out) else npy_to_parquet(path, out)


def floor_npz(path: str) -> list:
    """The floor on a stored NPZ: its member memory-mapped, then as :func:`floor`."""
    from labelled_floor import npz_members
    s = npz_members(path)["scores"]
    step = max(1, (1 << 18) // s.shape[1])
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        return list(pool.map(lambda lo: floor_block(s[lo:lo + step]),
                             range(0, s.shape[0], step)))


def floor_parquet(path: str) -> list:
    """The floor on Parquet: its row-group stream (one row group at a time, no
    pre-buffering, as tieeval reads it), each group's values as a matrix, counted and
    sorted in blocks on one thread per core while the next group is read."""
    import pyarrow.parquet as pq
    pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    out = []
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        for i in range(pf.num_row_groups):
            col = pf.read_row_group(i, columns=["scores"]).column(0).combine_chunks()
            values = np.frombuffer(col.values.buffers()[1], dtype=np.float32,
                                   count=len(col.values), offset=col.values.offset * 4)
            x = values.reshape(len(col), -1)
            step = max(1, (1 << 18) // x.shape[1])
            out += list(pool.map(lambda lo, x=x, step=step: floor_block(x[lo:lo + step]),
                                 range(0, x.shape[0], step)))
    return out


def formats(sampled: int, allitem: int, repeat: int) -> None:
    """The same dumps as a stored NPZ and as Parquet: the CLI and the API against the
    floor on that format (interleaved rounds, medians, per-round ratios)."""
    import tieeval
    print("\n| dump | format | floor s | API s (ratio) | CLI default s (ratio) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, rows, cols in (("sampled", sampled, 101), ("all-item", allitem, 10_000)):
        for tied in (True, False):
            npy = write(name, rows, cols, tied)
            for fmt, path, fl in (("NPY", npy, floor), ("NPZ stored", as_npz(npy), floor_npz),
                                  ("Parquet", as_parquet(npy), floor_parquet)):
                times = interleaved({"floor": lambda path=path, fl=fl: fl(path),
                                     "api": lambda path=path: tieeval.evaluate_path(path),
                                     "cli": lambda path=path: cli(path)}, repeat)
                med = {k: statistics.median(v) for k, v in times.items()}
                cells = [f"{med['floor']:.3f}"]
                for key in ("api", "cli"):
                    r = statistics.median(t / f for t, f in zip(times[key], times["floor"]))
                    cells.append(f"{med[key]:.3f} ({r:.2f}x)")
                print(f"| {name} {'tied' if tied else 'tie-free'} {rows:,} x {cols:,} | "
                      f"{fmt} | " + " | ".join(cells) + " |", flush=True)


def check_floor() -> None:
    """The floor against the plain definitions on seeded tied dumps: a, b and the top tie
    by ``count_nonzero`` and the positive's place in a full ``np.argsort(S * -1)``."""
    rng = np.random.default_rng(4)
    for _trial in range(20):
        rows, cols = int(rng.integers(1, 3000)), int(rng.integers(2, 300))
        x = (rng.integers(0, int(rng.integers(2, 50)), size=(rows, cols)) / 7).astype(
            np.float32)
        a, b, top, tied, rank = floor_block(x)
        p = x[:, :1]
        assert (a == np.count_nonzero(x > p, axis=1)).all()
        assert (b == np.count_nonzero(x == p, axis=1)).all()
        assert (top == np.count_nonzero(x == x.max(1)[:, None], axis=1)).all()
        want = np.argmax(np.argsort(x * -1, axis=1) == 0, axis=1) + 1
        assert (rank == want[tied]).all() and (tied == np.flatnonzero(b > 1)).all()
    print("floor exact: a, b, top tie and the argsort rank agree with the plain "
          "definitions on 20 seeded tied dumps")


def naive(path: str) -> None:
    """What a user writes with numpy alone: sort every row as the codebases do, find the
    positive (column 0), average HR@10, NDCG@10 and MRR of that one order (Original)."""
    s = np.load(path, mmap_mode="r")
    step = max(1, (1 << 22) // s.shape[1])
    for lo in range(0, s.shape[0], step):
        order = np.argsort(np.asarray(s[lo:lo + step]) * -1, axis=1)
        rank = np.argmax(order == 0, axis=1) + 1
        ((rank <= 10).sum(), (np.where(rank <= 10, 1 / np.log2(rank + 1), 0)).sum(),
         (1 / rank).sum())


K = 10
PEER_BUDGET = 60.0
"""Seconds: a peer runs on the whole dump when its time on the first rows, scaled per row,
predicts at most this; otherwise the scaled figure is printed and says so."""
PEER_MAX_ENTRIES = 25_000_000
"""ranx and pytrec_eval take Python dicts (about 120 bytes per score): beyond this many
scores they run on the first rows only, whatever the time, to keep a shared machine's
memory."""


def _head(path: str, rows: int):
    s = np.load(path, mmap_mode="r")
    return np.ascontiguousarray(s[:min(rows, s.shape[0])]), s.shape[0]


def _labels(s) -> np.ndarray:
    """The labels of single-positive rows: the positive (column 0) relevant, 1."""
    y = np.zeros(s.shape, dtype=np.int8)
    y[:, 0] = 1
    return y


def _sklearn(s, y, k: int = K):
    """scikit-learn's tie-averaged ``ndcg_score`` on the rows: (seconds, None, mean)."""
    try:
        from sklearn.metrics import ndcg_score
    except ImportError:
        return None
    t0 = time.perf_counter()
    value = ndcg_score(y, s, k=k, ignore_ties=False)
    return time.perf_counter() - t0, None, float(value)


def _torchmetrics(s, y, k: int = K):
    got = peer_torchmetrics(s, y, k)
    return None if got is None else (got[0], None, got[1])


#: (what the table calls it, how it treats ties, the peer on rows in memory)
PEERS = (("scikit-learn `ndcg_score(ignore_ties=False)`", "tie-averaged", _sklearn),
         ("ranx `evaluate` ndcg@10", "one order: ties by document id", peer_ranx),
         ("pytrec_eval ndcg_cut_10", "one order: ties by docno", peer_pytrec),
         ("torchmetrics `retrieval_normalized_dcg`", "tie-averaged", _torchmetrics))


def run_peer(peer, path: str, head_rows: int):
    """``peer`` on the whole dump when its first ``head_rows`` rows predict at most
    :data:`PEER_BUDGET` seconds (and, with dicts, at most :data:`PEER_MAX_ENTRIES` scores);
    else on those rows, its seconds scaled per row. ``(seconds, build seconds or None,
    mean, rows it ran on, whether that is the whole dump)``, or None if not installed."""
    s, total = _head(path, head_rows)
    got = peer(s, _labels(s))
    if got is None:
        return None
    predicted = (got[0] + (got[1] or 0.0)) * total / s.shape[0]
    dicts_fit = got[1] is None or total * s.shape[1] <= PEER_MAX_ENTRIES
    if s.shape[0] < total and predicted <= PEER_BUDGET and dicts_fit:
        s = np.array(np.load(path, mmap_mode="r"))
        got = peer(s, _labels(s))
    if s.shape[0] == total:
        return got[0], got[1], got[2], total, True
    scale = total / s.shape[0]
    return (got[0] * scale, None if got[1] is None else got[1] * scale, got[2],
            s.shape[0], False)


def peer_topk(path: str):
    """The ``torch.topk`` evaluator over the whole memory-mapped dump (blocks of rows)."""
    s = np.load(path, mmap_mode="r")
    step = max(1, (1 << 22) // s.shape[1])
    return topk_ndcg(((np.asarray(s[lo:lo + step]), _labels(s[lo:lo + step]))
                      for lo in range(0, s.shape[0], step)), K)


def print_peers(label: str, path: str, floor_t: float, cli_t: float) -> None:
    """The peers' table of one dump: seconds (dict building apart), against the floor and
    the CLI, and each peer's mean beside tieeval's on the same rows."""
    head_rows = 2_000 if "x101_" in path else 200
    import warnings

    import tieeval
    with warnings.catch_warnings():  # a scaled-down all-item dump's chance-level warning
        warnings.simplefilter("ignore")
        whole = tieeval.evaluate_path(path, [f"NDCG@{K}"]).metrics[0]
        s, total = _head(path, head_rows)
        part = tieeval.evaluate(s, metrics=[f"NDCG@{K}"]).metrics[0]
    print(f"\n{label}: peers on the same dump (NDCG@10; once, after the rounds)\n")
    print("| peer | rows | seconds | x floor | x CLI default | its mean | tieeval tie-aware "
          "/ Original on those rows |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")

    def row(what, rows, t, mean, m):
        print(f"| {what} | {rows} | {t:.2f} | {t / floor_t:.0f}x | {t / cli_t:.1f}x | "
              f"{mean:.6f} | {m.tie_aware:.6f} / {m.original:.6f} |")
    for name, ties, peer in PEERS:
        got = run_peer(peer, path, head_rows)
        if got is None:
            print(f"| {name} | not installed | | | | | |")
            continue
        t, build, mean, rows, is_whole = got
        rows_text = (f"whole dump ({rows:,})" if is_whole else
                     f"first {rows:,}, scaled to {total:,}")
        m = whole if is_whole else part
        row(f"{name} ({ties})", rows_text, t, mean, m)
        if build is not None:
            row(f"{name.split()[0]}: building its dicts from the array", rows_text, build,
                mean, m)
    tk = peer_topk(path)
    if tk is None:
        print("| torchmetrics, `torch.topk` evaluator | torch not installed | | | | | |")
    else:
        row("`torch.topk` evaluator (one order: ties by torch.topk)",
            f"whole dump ({total:,})", tk[0], tk[1], whole)


def cli(path: str, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "-q", "-f", "json",
                    *extra], check=True, stdout=subprocess.DEVNULL)


def floor_script(path: str) -> None:
    """The floor as a user runs a script: a fresh interpreter that imports numpy, then the
    floor (what any exact tool run from a shell pays at least)."""
    subprocess.run([sys.executable, __file__, "--floor-task", path], check=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--floor-task":
        floor(sys.argv[2])
        return
    if sys.argv[1:] == ["--check-floor"]:
        check_floor()
        return
    import tieeval
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-labelled", action="store_true",
                    help="accepted for older command lines (labelled rows are "
                         "benchmarks/bench_labelled.py's)")
    ap.add_argument("--formats", action="store_true",
                    help="only the NPY / stored NPZ / Parquet table (API and CLI vs the "
                         "floor on each format)")
    args = ap.parse_args()
    warm_up()
    sampled, allitem = int(200_000 * args.scale), int(4_000 * args.scale)
    from tieeval.io.crc32 import implementation  # TIEEVAL_CRC32 picks it, here and in the CLI
    print(f"numpy {np.__version__}, tieeval {tieeval.__version__}, a stored NPZ's CRC-32 "
          f"by {implementation()}, {len(os.sched_getaffinity(0))} cores; medians of "
          f"{args.repeat}\n")
    if args.formats:
        formats(sampled, allitem, args.repeat)
        return
    print("| dump | floor s | floor as a script s | CLI default | CLI --jobs 1 | API -j1 | "
          "naive numpy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    measured = []
    for name, rows, cols in (("sampled", sampled, 101), ("all-item", allitem, 10_000)):
        for tied in (True, False):
            path = write(name, rows, cols, tied)
            runs = {"floor": lambda path=path: floor(path),
                    "script": lambda path=path: floor_script(path),
                    "cli": lambda path=path: cli(path),
                    "cli1": lambda path=path: cli(path, "--jobs", "1"),
                    "api": lambda path=path: tieeval.evaluate_path(path, jobs=1),
                    "naive": lambda path=path: naive(path)}
            times = interleaved(runs, args.repeat)
            floor_t = statistics.median(times["floor"])
            cells = [f"{floor_t:.3f} s", f"{statistics.median(times['script']):.3f} s"]
            for key in ("cli", "cli1", "api", "naive"):
                ratio = statistics.median(t / f for t, f in zip(times[key], times["floor"]))
                cell = f"{statistics.median(times[key]):.3f} s ({ratio:.2f}x"
                if key in ("cli", "cli1"):  # a fresh process against a fresh process
                    script = statistics.median(t / f for t, f in zip(times[key],
                                                                     times["script"]))
                    cell += f"; {script:.2f}x the script"
                cells.append(cell + ")")
            label = f"{name} {'tied' if tied else 'tie-free'} {rows:,} x {cols:,}"
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
            measured.append((label, path, floor_t, statistics.median(times["cli"])))
    for label, path, floor_t, cli_t in measured:
        print_peers(label, path, floor_t, cli_t)

if __name__ == "__main__":
    main()
