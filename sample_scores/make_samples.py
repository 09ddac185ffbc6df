"""Make the sample score dumps in this folder (seeded, so the files are reproducible).

    python sample_scores/make_samples.py

One synthetic model scores 1,000 test instances, each with the held-out positive in column
0 followed by 100 sampled negatives (the ConsRec-family protocol). Its raw float32 logits
are written twice:

* ``tie_free``: the raw logits; continuous, practically no ties (the control).
* ``sigmoid_saturated``: the same logits after an extra float32 sigmoid, as in codebases
  that apply ``sigmoid`` before the BPR loss. Logits above about 17 round to exactly 1.0f,
  so the top of many rankings becomes one tied block that the positive shares.

Each is saved as Parquet (list column ``scores`` plus ``positive``) and as NPZ (arrays
``scores`` and ``positive``), with the run's labels as metadata.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20260501
INSTANCES = 1000
NEGATIVES = 100
HERE = os.path.dirname(os.path.abspath(__file__))


def logits(rng: np.random.Generator) -> np.ndarray:
    """Raw float32 scores: a wide-margin model whose best items reach large logits."""
    dim = 16
    users = rng.normal(size=(INSTANCES, dim))
    items = rng.normal(size=(INSTANCES, NEGATIVES + 1, dim))
    # the positive leans toward its user, so a good model usually ranks it near the top
    items[:, 0, :] += 0.6 * users
    raw = np.einsum("ud,ucd->uc", users, items)
    return (4.0 * raw).astype(np.float32)


def sigmoid32(z: np.ndarray) -> np.ndarray:
    """The float32 sigmoid a PyTorch model would compute; saturates to exactly 1.0f."""
    z = z.astype(np.float32)
    return (np.float32(1.0) / (np.float32(1.0) + np.exp(-z))).astype(np.float32)


def save(name: str, scores: np.ndarray, labels: dict[str, str]) -> None:
    positive = np.zeros(len(scores), dtype=np.int64)
    table = pa.table({
        "scores": pa.FixedSizeListArray.from_arrays(pa.array(scores.ravel()), scores.shape[1]),
        "positive": pa.array(positive),
    })
    table = table.replace_schema_metadata(labels)
    pq.write_table(table, os.path.join(HERE, f"{name}.parquet"), compression="zstd")
    np.savez_compressed(os.path.join(HERE, f"{name}.npz"), scores=scores, positive=positive,
                        **{k: np.array(v) for k, v in labels.items()})


def main() -> None:
    rng = np.random.default_rng(SEED)
    raw = logits(rng)
    save("tie_free", raw, {"method": "control", "dataset": "synthetic", "task": "user",
                           "seed": str(SEED)})
    save("sigmoid_saturated", sigmoid32(raw),
         {"method": "sigmoid-bpr", "dataset": "synthetic", "task": "user", "seed": str(SEED)})


if __name__ == "__main__":
    main()
