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

Two smaller sets serve the guide's examples:

* ``runs/{method}/{dataset}_group_seed{seed}.npz``: two methods x two datasets x three
  seeds, 200 instances x 51 candidates each, for the multi-run tables (Tables 1, 3, 4) and
  Figure 1: ``ConsRec`` scores through the saturating sigmoid, ``GroupIM`` raw logits.
* ``trec/run.txt`` and ``trec/qrels.txt``: a TREC run of 12 queries x 40 documents whose
  scores are rounded to two decimals (so documents tie), and graded judgements 0-2, with a
  retrieved query without judgements (313, which trec_eval ignores).
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


def save_runs(rng: np.random.Generator) -> None:
    """The multi-run tree: ConsRec saturates (ties), GroupIM does not."""
    dim, instances, negatives = 16, 200, 50
    for dataset, lean in (("Mafengwo", 0.7), ("CAMRa2011", 0.5)):
        for seed in (1, 2, 3):
            users = rng.normal(size=(instances, dim))
            items = rng.normal(size=(instances, negatives + 1, dim))
            items[:, 0, :] += lean * users
            raw = (4.0 * np.einsum("ud,ucd->uc", users, items)).astype(np.float32)
            for method, scores in (("ConsRec", sigmoid32(raw)), ("GroupIM", raw)):
                os.makedirs(os.path.join(HERE, "runs", method), exist_ok=True)
                np.savez_compressed(
                    os.path.join(HERE, "runs", method, f"{dataset}_group_seed{seed}.npz"),
                    scores=scores, positive=np.zeros(instances, dtype=np.int64))


def save_trec(rng: np.random.Generator) -> None:
    """A small TREC run and its qrels: tied scores, graded judgements, unmatched queries."""
    os.makedirs(os.path.join(HERE, "trec"), exist_ok=True)
    with open(os.path.join(HERE, "trec", "run.txt"), "w") as run, \
            open(os.path.join(HERE, "trec", "qrels.txt"), "w") as qrels:
        for q in range(301, 314):
            docs = [f"D{q}-{d:03d}" for d in range(60)]
            grades = rng.choice([0, 0, 0, 1, 1, 2], size=len(docs))
            if q != 313:  # 313: retrieved, never judged
                for doc, grade in zip(docs[::2], grades[::2]):
                    qrels.write(f"{q} 0 {doc} {grade}\n")
            chosen = rng.choice(len(docs), size=40, replace=False)
            quality = grades[chosen] + rng.normal(scale=0.8, size=40)
            scores = np.round(1 / (1 + np.exp(-quality)), 2)
            for rank, i in enumerate(np.argsort(-scores, kind="stable"), start=1):
                run.write(f"{q} Q0 {docs[chosen[i]]} {rank} {scores[i]:.2f} sample\n")


def main() -> None:
    rng = np.random.default_rng(SEED)
    raw = logits(rng)
    save("tie_free", raw, {"method": "control", "dataset": "synthetic", "task": "user",
                           "seed": str(SEED)})
    save("sigmoid_saturated", sigmoid32(raw),
         {"method": "sigmoid-bpr", "dataset": "synthetic", "task": "user", "seed": str(SEED)})
    save_runs(np.random.default_rng(SEED + 1))
    save_trec(np.random.default_rng(SEED + 2))


if __name__ == "__main__":
    main()
