"""Seeded benchmark dumps in NPY, NPZ (stored and deflated) and Parquet, under benchmarks/data/.

    python benchmarks/make_data.py [sampled|allitem|big|all]

* ``sampled``: 1,000,000 x 101 float32 (one positive in column 0 + 100 sampled negatives);
* ``allitem``: 20,000 x 7,710 float32 (all-item evaluation, positive in column 0);
* ``big``: 10,000,000 x 101 float32, a 4 GB dump for the peak-memory target (NPY, Parquet).

Scores are float32 sigmoids of normal logits, so the top of each row saturates to exactly
1.0f (the sigmoid-before-BPR artefact): realistic, heavy ties. Files are written once and
reused; the data directory is gitignored. Never commit it.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _common import DATA, npy_from_chunks, npy_to_npz, npy_to_parquet

CHUNK_BYTES = 64 << 20

SHAPES = {"sampled": (1_000_000, 101), "allitem": (20_000, 7_710), "big": (10_000_000, 101)}
# Parquet row groups of about 32 MB of scores: streaming-friendly (see docs/performance.md).
ROW_GROUP_BYTES = 32 << 20


def _rows_per_chunk(cols: int) -> int:
    return max(1, CHUNK_BYTES // (4 * cols))


def _chunks(name: str, seed: int = 0):
    rows, cols = SHAPES[name]
    rng = np.random.default_rng(seed)
    step = _rows_per_chunk(cols)
    for start in range(0, rows, step):
        n = min(step, rows - start)
        if name == "allitem":
            z = rng.normal(0.0, 9.0, size=(n, cols)).astype(np.float32)
            z[:, 0] += 12.0
        else:
            z = rng.normal(8.0, 6.0, size=(n, cols)).astype(np.float32)
            z[:, 0] += 4.0  # the positive tends to score high
        yield start, (np.float32(1) / (np.float32(1) + np.exp(-z))).astype(np.float32)


def path(name: str, fmt: str) -> str:
    rows, cols = SHAPES[name]
    suffix = {"npy": ".npy", "npz": ".npz", "npz-deflated": ".deflated.npz",
              "parquet": ".parquet"}[fmt]
    return os.path.join(DATA, f"{name}_{rows}x{cols}_float32{suffix}")


def write_npy(name: str) -> str:
    out = path(name, "npy")
    if os.path.exists(out):
        return out
    os.makedirs(DATA, exist_ok=True)
    rows, cols = SHAPES[name]
    return npy_from_chunks(out, rows, cols, _chunks(name))


def write_npz(name: str, deflated: bool) -> str:
    out = path(name, "npz-deflated" if deflated else "npz")
    if os.path.exists(out):
        return out
    return npy_to_npz(write_npy(name), out, deflated=deflated)


def write_parquet(name: str) -> str:
    out = path(name, "parquet")
    if os.path.exists(out):
        return out
    return npy_to_parquet(write_npy(name), out, ROW_GROUP_BYTES)


def make(name: str) -> None:
    write_npy(name)
    write_parquet(name)
    if name != "big":
        write_npz(name, deflated=False)
        write_npz(name, deflated=True)


if __name__ == "__main__":
    which = sys.argv[1:] or ["sampled", "allitem"]
    for name in (SHAPES if which == ["all"] else which):
        make(name)
        print(name, "ok", file=sys.stderr)
