"""The exact labelled floor: NDCG@K of labelled rows in numpy alone, written from scratch.

For each row of a dense float32 score matrix with whole-number labels 0-255 (gain = label,
discount 1/log2(1 + place)), it gives what ``tieeval compare -m NDCG@K`` reports: the
Original column (``np.argsort(scores * -1)``, numpy's default kind, as the codebases call
it), First and Last (each tie block's labels in descending / ascending order), the exact
tie-aware expectation (McSherry & Najork) and its tie-break variance, and the tie counts
(the top-score tie, the tie block of the highest-scored relevant item, whether HR@K is
decided by the tie order). Rows without a relevant item are left out of the NDCG and
the relevant-item figures, as tieeval does; the top-score tie counts every row.

The least work it knows for that:

* per row, the K-th largest score (``np.partition``, no sort): only the scores at or above
  it can sit in the top K of any ordering, and every score tied with or above such a score
  is among them, so their places and tie blocks are computed within that small set;
* the set sorted once, as packed 64-bit keys (row, score descending, label descending):
  ``np.sort`` of values, no argsort, gives every item's place, tie block and the First
  ordering at once; Last and the tie-aware moments follow from the block sums;
* the ideal DCG from per-grade counts of each row (no sort of labels);
* ``np.argsort(row * -1)`` only of the rows where the tie order can change the value (a
  tie block inside the top K holding different labels), on every core;
* the memory-mapped members of a stored NPZ, blocks of rows on one thread per core.

How it was checked to be exact: ``python benchmarks/labelled_floor.py --check`` compares
every column and tie count, per dataset, with tieeval's JSON (``tieeval compare -m
NDCG@10``) and the tie-aware mean with scikit-learn's ``ndcg_score(ignore_ties=False)``
(the same expectation) on seeded small dumps with heavy ties, and the Original column
with a plain full ``np.argsort`` of every row (agreement to 1e-12).
"""

from __future__ import annotations

import os
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def npz_members(path: str) -> dict:
    """The stored (uncompressed) arrays of an NPZ file, memory-mapped, by name."""
    out = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise SystemExit(f"{path}: member {info.filename} is compressed")
            fh.seek(info.header_offset + 26)
            name_len, extra_len = np.frombuffer(fh.read(4), dtype="<u2")
            start = info.header_offset + 30 + int(name_len) + int(extra_len)
            fh.seek(start)
            version = np.lib.format.read_magic(fh)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read(fh)
            out[info.filename[:-4]] = np.memmap(path, dtype=dtype, mode="r",
                                                offset=fh.tell(), shape=shape,
                                                order="F" if fortran else "C")
    return out


def _desc_key(s: np.ndarray) -> np.ndarray:
    """uint64 keys whose ascending order is the float32 scores' descending order
    (equal scores, equal keys; -0.0 and 0.0 made equal)."""
    bits = (s + np.float32(0)).view(np.uint32).astype(np.uint64)
    neg = bits >> np.uint64(31)
    # ascending order of the float: flip all bits of negatives, the sign bit of positives
    asc = np.where(neg == 1, ~bits & np.uint64(0xFFFFFFFF), bits | np.uint64(0x80000000))
    return np.uint64(0xFFFFFFFF) - asc


def block_ndcg(s: np.ndarray, lab: np.ndarray, k: int) -> dict:
    """Sums over one block of rows (``s`` float32, ``lab`` small whole numbers)."""
    rows, n = s.shape
    kk = min(k, n)
    disc = 1.0 / np.log2(np.arange(2, kk + 2, dtype=np.float64))
    cum = np.concatenate(([0.0], np.cumsum(disc)))
    cum2 = np.concatenate(([0.0], np.cumsum(disc * disc)))
    # the ideal DCG from the count of each grade, largest first
    ideal = np.zeros(rows)
    above = np.zeros(rows, dtype=np.int64)
    grades = [g for g in range(int(lab.max()), 0, -1)] if lab.size else []
    for g in grades:
        c = np.count_nonzero(lab == g, axis=1)
        ideal += g * (cum[np.minimum(above + c, kk)] - cum[np.minimum(above, kk)])
        above += c
    has_rel = above > 0
    # the set that can reach the top K: scores >= the K-th largest
    kth = np.partition(s, n - kk, axis=1)[:, n - kk]
    r, c = np.nonzero(s >= kth[:, None])
    g = lab[r, c].astype(np.uint64)
    key = (r.astype(np.uint64) << np.uint64(40)) | (_desc_key(s[r, c]) << np.uint64(8)) \
        | (np.uint64(255) - g)
    key.sort()
    r = (key >> np.uint64(40)).astype(np.int64)
    v = (key >> np.uint64(8)) & np.uint64(0xFFFFFFFF)
    g = (np.uint64(255) - (key & np.uint64(0xFF))).astype(np.float64)
    size = r.size
    counts = np.bincount(r, minlength=rows)
    start = np.concatenate(([0], np.cumsum(counts)))
    place = np.arange(size) - start[r]  # 0-based, in the First ordering
    new = np.ones(size, dtype=bool)
    new[1:] = (r[1:] != r[:-1]) | (v[1:] != v[:-1])
    bstart = np.flatnonzero(new)
    bsize = np.diff(np.append(bstart, size))
    bid = np.cumsum(new) - 1
    a = place[bstart]  # scores above each block
    j = np.arange(size) - bstart[bid]  # place inside the block
    in_k = place < kk
    first = np.bincount(r[in_k], weights=(g * disc[np.minimum(place, kk - 1)])[in_k],
                        minlength=rows)
    last_place = a[bid] + bsize[bid] - 1 - j
    in_k_last = last_place < kk
    last = np.bincount(r[in_k_last], weights=(g * disc[np.minimum(last_place, kk - 1)])
                       [in_k_last], minlength=rows)
    # tie-aware: each block's mean gain over its places inside the top K
    gsum = np.add.reduceat(g, bstart)
    g2sum = np.add.reduceat(g * g, bstart)
    lo, hi = np.minimum(a, kk), np.minimum(a + bsize, kk)
    s1, s2 = cum[hi] - cum[lo], cum2[hi] - cum2[lo]
    brow = r[bstart]
    mean = gsum / bsize
    tie_aware = np.bincount(brow, weights=mean * s1, minlength=rows)
    var_g = np.maximum(g2sum / bsize - mean * mean, 0.0)
    tied = bsize > 1
    bvar = np.where(tied, var_g * (s2 - (s1 * s1 - s2) / np.where(tied, bsize - 1, 1)), 0.0)
    variance = np.bincount(brow, weights=bvar, minlength=rows)
    # Original: numpy's argsort of the rows where a tie block inside the top K mixes labels
    gmax, gmin = g[bstart], g[bstart + bsize - 1]
    mixed = tied & (a < kk) & (gmax != gmin)
    original = first.copy()
    sort_rows = np.unique(brow[mixed])
    if sort_rows.size:
        order = np.argsort(s[sort_rows] * -1, axis=1)[:, :kk]
        original[sort_rows] = (lab[sort_rows[:, None], order] * disc).sum(1)
    # tie counts: the top tie, the tie block of the highest-scored relevant item
    top = bsize[bid[start[:-1]]]
    relb = np.flatnonzero(gsum > 0)
    first_rel = np.full(rows, -1, dtype=np.int64)
    rel_rows, at = np.unique(brow[relb], return_index=True)  # blocks are in row order
    first_rel[rel_rows] = relb[at]
    pos_size = np.zeros(rows, dtype=np.int64)
    found = first_rel >= 0
    pos_size[found] = bsize[first_rel[found]]
    deep = np.flatnonzero(has_rel & ~found)  # the first relevant item is below the top K
    if deep.size:
        sv, lv = s[deep], lab[deep]
        best = np.where(lv > 0, sv, -np.inf).max(1)
        pos_size[deep] = np.count_nonzero(sv == best[:, None], axis=1)
    hr_first = np.bincount(r[in_k], weights=(g > 0)[in_k], minlength=rows) > 0
    hr_last = np.bincount(r[in_k_last], weights=(g > 0)[in_k_last], minlength=rows) > 0
    keep = has_rel
    norm = np.where(keep, ideal, 1.0)
    return {"count": int(keep.sum()),
            "original": (original / norm)[keep].sum(), "first": (first / norm)[keep].sum(),
            "last": (last / norm)[keep].sum(), "tie_aware": (tie_aware / norm)[keep].sum(),
            "variance": (variance / norm ** 2)[keep].sum(),
            "rows": rows, "top_size": int(top.sum()), "top_tied": int((top > 1).sum()),
            "pos_size": int(pos_size[keep].sum()), "pos_tied": int((pos_size[keep] > 1).sum()),
            "decided": int((hr_first != hr_last)[keep].sum())}


def floor(path: str, k: int = 10, threads: int | None = None, rows_per_block: int = 0) -> dict:
    """The whole dump's NDCG@k columns and tie counts (dataset means), as tieeval gives them."""
    m = npz_members(path)
    s, lab = m["scores"], m["labels"]
    rows, n = s.shape
    cores = threads or len(os.sched_getaffinity(0))
    step = rows_per_block or max(1, (1 << 20) // n)
    starts = range(0, rows, step)

    def run(lo):
        return block_ndcg(np.asarray(s[lo:lo + step]), np.asarray(lab[lo:lo + step]), k)
    with ThreadPoolExecutor(cores) as pool:
        parts = list(pool.map(run, starts))
    tot = {key: sum(p[key] for p in parts) for key in parts[0]}
    count = tot["count"]
    out = {c: tot[c] / count for c in ("original", "first", "last", "tie_aware")}
    out["tie_aware_std"] = float(np.sqrt(tot["variance"])) / count
    out.update(instances=count, top_tie_size=tot["top_size"] / tot["rows"],
               top_tie_frequency=tot["top_tied"] / tot["rows"],
               positive_tie_size=tot["pos_size"] / count,
               positive_tie_frequency=tot["pos_tied"] / count,
               tie_decided=tot["decided"] / count)
    return out


def check(k: int = 10) -> None:
    """The floor against tieeval, scikit-learn and a full argsort on seeded tied dumps."""
    import json
    import subprocess
    import tempfile

    from sklearn.metrics import ndcg_score
    rng = np.random.default_rng(3)
    worst = 0.0
    for trial in range(12):
        rows, n = int(rng.integers(50, 400)), int(rng.integers(k, 60))
        levels = int(rng.integers(2, 30))  # few distinct scores: heavy ties everywhere
        s = (rng.integers(0, levels, size=(rows, n)) / levels).astype(np.float32)
        top = int(rng.integers(1, 4))
        lab = rng.integers(0, top + 1, size=(rows, n)).astype(np.int8)
        lab[rng.random((rows, n)) < 0.6] = 0
        lab[0] = 0  # a row without a relevant item: left out
        lab[1, 0] = top
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.npz")
            np.savez(path, scores=s, labels=lab)
            got = floor(path, k, rows_per_block=int(rng.integers(7, 100)))
            out = subprocess.run([sys.executable, "-m", "tieeval", "compare", path, "-m",
                                  f"NDCG@{k}", "-q", "-f", "json"], check=True,
                                 capture_output=True, text=True).stdout
        run = json.loads(out)["runs"][0]
        row, ties = run["metrics"][0], run["ties"]
        want = {c: row[c] for c in ("original", "first", "last", "tie_aware",
                                    "tie_aware_std")}
        want.update(instances=row["instances"], top_tie_size=ties["top_tie_size"],
                    top_tie_frequency=ties["top_tie_frequency"],
                    positive_tie_size=ties["positive_tie_size"],
                    positive_tie_frequency=ties["positive_tie_frequency"],
                    tie_decided=ties["tie_decided"][str(k)])
        keep = (lab > 0).any(1)
        sk = ndcg_score(lab[keep].astype(float), s[keep].astype(float), k=k,
                        ignore_ties=False)
        order = np.argsort(s * -1, axis=1)[:, :k]
        disc = 1 / np.log2(np.arange(2, k + 2))
        ideal = (-np.sort(-lab, axis=1)[:, :k] * disc).sum(1)
        plain = ((lab[np.arange(rows)[:, None], order] * disc).sum(1)[keep] / ideal[keep]).mean()
        for key, value in want.items():
            err = abs(got[key] - value) / max(1.0, abs(value))
            worst = max(worst, err)
            assert err < 1e-12, (trial, key, got[key], value)
        assert abs(got["tie_aware"] - sk) < 1e-12, (trial, got["tie_aware"], sk)
        assert abs(got["original"] - plain) < 1e-12, (trial, got["original"], plain)
    print(f"exact: 12 seeded tied dumps agree with tieeval, scikit-learn and a full argsort "
          f"(largest relative difference {worst:.1e})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        check()
    else:
        print(floor(sys.argv[1]))
