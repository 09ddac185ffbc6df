"""Write the reference collections of ``trec_reference/`` and trec_eval 10's output on them.

The oracle of ``tests/conformance/test_trec_reference.py``: three small random collections
built to stress what trec_eval's definitions leave to chance or to corner cases, and
trec_eval 10's ``-q -m all_trec`` output on each under nine option sets (``OPTION_SETS``).
CI has no trec_eval binary, so the committed outputs are the oracle; this script is how they
were made and how to make them again.

Each collection (``trec_reference/<name>/``) holds

* ``qrels``: graded judgements 0-3 and negative ones (-1, -2: trec_eval's "in the pool,
  unjudged"), queries with no relevant document, one with only negative judgements, and
  queries whose relevant documents are all unretrieved;
* ``run``: scores drawn from a few values (huge tie blocks, a query tied throughout, tie
  blocks straddling every cutoff and ``-M 10``), docnos in mixed styles (``d7``,
  ``DOC-00007``, ``clueweb09-en0003-07-01234``, ``7``, ``Ab7``: trec_eval breaks ties by
  docno, descending), queries of the qrels the run does not answer (they count under
  ``-c``) and run queries the qrels do not judge (trec_eval ignores them);
* ``<option set>.txt.gz``: ``trec_eval -q -m all_trec <options> qrels run``.

trec_eval 10 stops (exit 4, "result qid ... not found in qrels") when a judged query has no
ranking and ``-c`` is not given; for the option sets without ``-c`` the output is therefore
trec_eval's on the qrels restricted to the run's queries: the queries it evaluates and the
values it prints are then those of trec_eval 9 and of tieeval's default
(``--missing-queries skip``), which leave such queries out.

The outputs come from trec_eval 10.0 built from usnistgov/trec_eval (commit f425365,
"Updating CHANGELOG for version 10.0", VERSIONID 10.0-rc3) with one change: its two print
files (``meas_print_single.c``, ``meas_print_final.c``) print values with ``%.17g`` instead
of ``%6.4f``, so that the tests can compare to 1e-9 rather than to trec_eval's 4 printed
decimals. The script applies that change itself, builds the binary in a temporary folder and
checks that every value it prints, rounded to 4 decimals, is what the unchanged trec_eval
prints (pass ``--trec-eval`` to name the unchanged binary).

Regenerate (from the repository root, with a C compiler and make)::

    git clone https://github.com/usnistgov/trec_eval /tmp/trec_eval
    python tests/conformance/make_trec_reference.py --source /tmp/trec_eval \\
        [--trec-eval /path/to/unchanged/trec_eval]

The collections are drawn with Python's ``random.Random`` from fixed seeds, so the same
script writes the same files (gzip with a zero timestamp).
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "trec_reference"

#: trec_eval's options per output file name: -c (queries the run misses count as 0),
#: -M 10 (the top 10 of each ranking), -J (unjudged documents leave the ranking),
#: -l 2 (relevant from judgement 2 up), and combinations.
OPTION_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "c": ("-c",),
    "M10": ("-M", "10"),
    "J": ("-J",),
    "l2": ("-l", "2"),
    "c_J": ("-c", "-J"),
    "c_M10": ("-c", "-M", "10"),
    "J_l2": ("-J", "-l", "2"),
    "c_J_M10_l2": ("-c", "-J", "-M", "10", "-l", "2"),
}

#: collection name -> seed
COLLECTIONS = {"alpha": 20260101, "beta": 20260202, "gamma": 20260303}


def docno(rng: random.Random, i: int) -> str:
    style = rng.randrange(5)
    if style == 0:
        return f"d{i}"
    if style == 1:
        return f"DOC-{i:05d}"
    if style == 2:
        return f"clueweb09-en{i % 7:04d}-{i % 100:02d}-{i * 37 % 100000:05d}"
    if style == 3:
        return str(i)
    return f"Ab{i}"


def score_text(rng: random.Random, values: list[float], style: int) -> str:
    v = rng.choice(values)
    if style == 0:
        return f"{v:g}"
    if style == 1:
        return f"{v:.6f}"
    return repr(float(v))


def query(rng: random.Random, qid: str, kind: str):
    """One query's run lines and qrels lines. ``kind``: ``both``, ``qrels_only``,
    ``run_only``; the query's shape (length, ties, judgements) is drawn."""
    n = rng.choice([0, 1, 3, 8, 12, 25, 40, 60, 90, 150, 240]) if kind != "qrels_only" else 0
    if kind == "both" and n == 0:
        n = rng.choice([2, 9, 30])
    pool = rng.sample(range(1, 100000), n + 30)
    docs = []
    seen = set()
    for i in pool:
        d = docno(rng, i)
        if d not in seen:
            seen.add(d)
            docs.append(d)
    retrieved, unretrieved = docs[:n], docs[n:n + rng.randrange(0, 25)]
    # ties: a few score values (one query tied throughout), sometimes all distinct
    shape = rng.randrange(6)
    if shape == 0:
        values = [1.0]
    elif shape == 5:
        values = [rng.uniform(-5, 5) for _ in range(max(n, 1))]
    else:
        values = sorted({round(rng.uniform(-3, 10), rng.choice([0, 1, 2]))
                         for _ in range(rng.choice([2, 3, 4, 6]))})
    style = rng.randrange(3)
    run = []
    for rank, d in enumerate(retrieved, 1):
        run.append(f"{qid} Q0 {d} {rank} {score_text(rng, values, style)} trecref\n")
    qrels = []
    if kind != "run_only":
        judgements = rng.choice(["graded", "graded", "graded", "none_relevant", "negative",
                                 "unretrieved_relevant"])
        judged_share = rng.choice([0.3, 0.6, 0.9, 1.0])
        for d in retrieved:
            if rng.random() < judged_share:
                qrels.append((d, label(rng, judgements, retrieved=True)))
        for d in unretrieved:
            qrels.append((d, label(rng, judgements, retrieved=False)))
        if not qrels:  # a qrels query has at least one judgement
            qrels.append((unretrieved[0] if unretrieved else docs[-1], 0))
    qrels_lines = [f"{qid} 0 {d} {rel}\n" for d, rel in qrels]
    return run, qrels_lines


def label(rng: random.Random, judgements: str, retrieved: bool) -> int:
    if judgements == "none_relevant":
        return rng.choice([0, 0, 0, -1])
    if judgements == "negative":
        return rng.choice([-1, -2])
    if judgements == "unretrieved_relevant" and retrieved:
        return rng.choice([0, -1])
    return rng.choices([-2, -1, 0, 1, 2, 3], weights=[1, 2, 8, 4, 3, 2])[0]


def collection(seed: int) -> tuple[str, str]:
    """The run and qrels text of one collection."""
    rng = random.Random(seed)
    qids = rng.sample(range(1, 400), 19)
    names = [str(q) for q in qids[:15]] + [f"q{qids[15]}", f"Q{qids[16]}"] + \
        [str(q) for q in qids[17:]]
    kinds = ["both"] * 13 + ["qrels_only"] * 2 + ["run_only"] * 2 + ["both"] * 2
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    order = list(zip(names, kinds))
    rng.shuffle(order)
    for qid, kind in order:
        r, q = query(rng, qid, kind)
        rng.shuffle(r)  # trec_eval reads a run in any order
        run_lines += r
        qrels_lines += q
    return "".join(run_lines), "".join(qrels_lines)


def build_wide(source: Path, work: Path) -> Path:
    """trec_eval built from ``source`` with values printed as %.17g."""
    tree = work / "trec_eval"
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git", "trec_eval"))
    for name in ("meas_print_single.c", "meas_print_final.c"):
        path = tree / name
        text = path.read_text()
        if "%6.4f" not in text:
            sys.exit(f"{path}: no %6.4f to widen; is this trec_eval 10?")
        path.write_text(text.replace("%6.4f", "%.17g"))
    subprocess.run(["make", "-s", "trec_eval"], cwd=tree, check=True)
    return tree / "trec_eval"


def run_trec_eval(binary: Path, options, qrels: Path, run: Path) -> str:
    if "-c" not in options:  # see the module docstring: only the run's queries
        answered = {line.split()[0] for line in run.read_text().splitlines() if line.split()}
        kept = [line for line in qrels.read_text().splitlines(keepends=True)
                if line.split() and line.split()[0] in answered]
        qrels = run.parent / "qrels.answered"
        qrels.write_text("".join(kept))
    done = subprocess.run([str(binary), "-q", "-m", "all_trec", *options, str(qrels),
                           str(run)], capture_output=True, text=True, check=True)
    return done.stdout


def same_to_4_decimals(wide: str, narrow: str) -> bool:
    a, b = wide.splitlines(), narrow.splitlines()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        (m1, q1, v1), (m2, q2, v2) = x.split(), y.split()
        if (m1, q1) != (m2, q2):
            return False
        if v1 == v2 or m1 == "runid":
            continue
        if "nan" in v1 or "nan" in v2:
            if v1 != v2:
                return False
            continue
        if f"{float(v1):6.4f}" != v2 and abs(float(v1) - float(v2)) > 0.5e-4 + 1e-12:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True,
                        help="a checkout of usnistgov/trec_eval (version 10.0)")
    parser.add_argument("--trec-eval", type=Path,
                        help="the unchanged trec_eval binary, to check the widened one against")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wide = build_wide(args.source, Path(tmp))
        for name, seed in COLLECTIONS.items():
            folder = OUT / name
            folder.mkdir(parents=True, exist_ok=True)
            run_text, qrels_text = collection(seed)
            (folder / "run").write_text(run_text)
            (folder / "qrels").write_text(qrels_text)
            for option_name, options in OPTION_SETS.items():
                text = run_trec_eval(wide, options, folder / "qrels", folder / "run")
                if args.trec_eval is not None:
                    narrow = run_trec_eval(args.trec_eval, options, folder / "qrels",
                                           folder / "run")
                    if not same_to_4_decimals(text, narrow):
                        sys.exit(f"{name} {option_name}: the widened trec_eval disagrees "
                                 "with the unchanged one")
                with open(folder / f"{option_name}.txt.gz", "wb") as raw, \
                        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                      filename="") as fh:
                    fh.write(text.encode())
            (folder / "qrels.answered").unlink(missing_ok=True)
            print(f"{name}: {run_text.count(chr(10))} run lines, "
                  f"{qrels_text.count(chr(10))} qrels lines", file=sys.stderr)


if __name__ == "__main__":
    main()
