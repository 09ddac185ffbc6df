"""Time the TREC drop-in: ``tieeval compare -m official`` (or ``-m all_trec``) against
trec_eval, pytrec_eval, ranx and ir_measures on one 2,000,000-line run.

    python benchmarks/bench_trec.py [--queries 2000] [--docs 1000] [--rounds 3]
                                    [--measures official|all_trec] [--also NAME=PATH ...]

Writes a seeded run and its qrels to benchmarks/data/ (``--queries`` x ``--docs`` lines:
scores rounded to two decimals, so most queries hold ties; graded qrels 0-3 on about 200
documents per query, a quarter of them not retrieved), then runs every contestant in a
fresh process, in interleaved rounds (each round runs each contestant once, in an order
rotated from round to round), and prints per contestant the median wall time and the
median of its per-round ratios to pytrec_eval and to trec_eval, the same for its CPU time
(user + system of every thread: steadier than wall time on a busy machine, but it counts
tieeval's second thread, which wall time does not), and its peak resident memory
(``ru_maxrss`` of that process, through GNU time; the largest over the rounds):

* **tieeval**: ``tieeval compare --qrels QRELS RUN -m official --convention trec_eval
  --format trec_eval`` (read, trec_eval's order, the original / first / last / tie-aware
  columns of every measure, tie statistics, trec_eval's lines on stdout);
* **trec_eval**: ``trec_eval -m official QRELS RUN`` (``/work/bin/trec_eval`` or
  ``$TREC_EVAL`` or ``trec_eval`` on the PATH; skipped when absent);
* **pytrec_eval**: ``parse_qrel`` and ``parse_run`` of the files, then
  ``RelevanceEvaluator(qrels, OFFICIAL).evaluate(run)`` and the mean of each measure
  (trec_eval's code; the same measures as ``-m official``; with ``--measures all_trec``
  every measure pytrec_eval supports, trec_eval's ``all_trec``);
* **ranx**: ``Qrels.from_file`` / ``Run.from_file`` (its input building, timed apart and
  printed), then ``evaluate`` of the official measures ranx has (MAP, MRR, R-precision,
  bpref, P at trec_eval's nine cut-offs: it has no interpolated precision, GMAP or counts);
* **ir_measures**: ``read_trec_qrels`` / ``read_trec_run``, then ``calc_aggregate`` of the
  official measures it names (it has no GMAP).

ranx and ir_measures name few of ``all_trec``'s measures (no infAP, binG, G, gm_bpref,
Rndcg, ...): under ``--measures all_trec`` they are left out, and say so.

Times include starting the interpreter and the imports, as a user's command does; Python's
bytecode cache is on (after a warm-up run). ``--also NAME=PATH`` adds ``tieeval`` imported
from another checkout (``PYTHONPATH=PATH``), for before/after figures in the same rounds.
tieeval's lines are compared with trec_eval's, and any that differ are printed. The
machine is small and shared: read the ratios and medians, not single runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from _common import DATA, warm_up

#: trec_eval's ``-m official`` measures, as pytrec_eval names them
OFFICIAL = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
            "bpref", "recip_rank", "iprec_at_recall", "P"]
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RANX = (["map", "mrr", "r-precision", "bpref"]
        + [f"precision@{k}" for k in CUTOFFS])
IR_MEASURES = (["NumQ", "NumRet", "NumRel", "NumRet(rel=1)", "AP", "Rprec", "Bpref", "RR"]
               + [f"IPrec@{x / 10:.1f}" for x in range(11)] + [f"P@{k}" for k in CUTOFFS])


def make_files(queries: int, docs: int, seed: int = 0) -> tuple[str, str]:
    """The seeded run and qrels (written once, then reused)."""
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


def task(tool: str, run_path: str, qrels_path: str, measures: str = "official") -> dict:
    """One Python library's evaluation, in this (fresh) process: its seconds inside the
    process, split into reading the files and evaluating, and a few means."""
    t0 = time.perf_counter()
    if tool == "pytrec_eval":
        import pytrec_eval
        with open(qrels_path) as fh:
            qrels = pytrec_eval.parse_qrel(fh)
        with open(run_path) as fh:
            run = pytrec_eval.parse_run(fh)
        t1 = time.perf_counter()
        wanted = (set(pytrec_eval.supported_measures) if measures == "all_trec"
                  else set(OFFICIAL))
        per_query = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
        names = next(iter(per_query.values()))
        value = {m: statistics.fmean(q[m] for q in per_query.values()) for m in names}
    elif tool == "ranx":
        from ranx import Qrels, Run, evaluate
        qrels = Qrels.from_file(qrels_path, kind="trec")
        run = Run.from_file(run_path, kind="trec")
        t1 = time.perf_counter()
        value = evaluate(qrels, run, RANX)
    elif tool == "ir_measures":
        import ir_measures
        measures = [ir_measures.parse_measure(m) for m in IR_MEASURES]
        qrels = list(ir_measures.read_trec_qrels(qrels_path))
        run = list(ir_measures.read_trec_run(run_path))
        t1 = time.perf_counter()
        value = {str(k): v for k, v in ir_measures.calc_aggregate(measures, qrels, run).items()}
    else:
        raise SystemExit(f"unknown tool {tool}")
    t2 = time.perf_counter()
    check = {k: float(v) for k, v in dict(value).items()
             if k in ("map", "P_10", "recip_rank", "AP", "P@10", "RR", "precision@10", "mrr")}
    return {"read": t1 - t0, "evaluate": t2 - t1, "check": check}


def trec_eval_binary() -> str | None:
    for candidate in (os.environ.get("TREC_EVAL"), "/work/bin/trec_eval",
                      shutil.which("trec_eval")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def installed(module: str) -> bool:
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return found.returncode == 0


def contestants(run_path: str, qrels_path: str, also: list[str],
                measures: str = "official") -> dict:
    """name -> (command, extra environment)."""
    tie = ["compare", "--qrels", qrels_path, run_path, "-m", measures, "--convention",
           "trec_eval", "--format", "trec_eval", "--quiet"]
    # PYTHONPATH names the checkout; every command runs from DATA, so that ``python -m``
    # does not import a tieeval from the working directory instead
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out: dict = {"tieeval": ([sys.executable, "-m", "tieeval", *tie], {"PYTHONPATH": root})}
    for spec in also:
        name, _, path = spec.partition("=")
        out[name] = ([sys.executable, "-m", "tieeval", *tie], {"PYTHONPATH": path})
    binary = trec_eval_binary()
    if binary:
        out["trec_eval"] = ([binary, "-m", measures, qrels_path, run_path], {})
    else:
        print("trec_eval: not found, skipped", file=sys.stderr)
    for tool in ("pytrec_eval", "ranx", "ir_measures"):
        if measures == "all_trec" and tool != "pytrec_eval":
            print(f"{tool}: has few of all_trec's measures, skipped", file=sys.stderr)
        elif installed(tool):
            out[tool] = ([sys.executable, os.path.abspath(__file__), "--task", tool,
                          run_path, qrels_path, measures], {})
        else:
            print(f"{tool}: not installed, skipped", file=sys.stderr)
    return out


GNU_TIME = "/usr/bin/time"


def run_once(command: list[str], env: dict) -> tuple[float, float, str, float]:
    """Wall seconds, peak resident MB, stdout and CPU seconds (user + system, every thread
    of the process).

    The peak is the process's ``ru_maxrss``, taken by GNU time when it is installed: a
    process started from this one directly would report at least this interpreter's
    resident size, which the kernel carries over the ``exec`` (ours ``os.wait4`` otherwise).
    """
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as usage_file:
        timed = os.access(GNU_TIME, os.X_OK)
        if timed:
            command = [GNU_TIME, "-f", "%M %U %S", "-o", usage_file.name, *command]
        t0 = time.perf_counter()
        # the bytecode cache on, as the docstring says, even where the shell turns it off
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, cwd=DATA,
                                env={**environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {err}")
        out.seek(0)
        if timed:
            kb, user, system = usage_file.read().split()[-3:]
            return seconds, int(kb) / 1024, out.read().decode(), float(user) + float(system)
        return (seconds, usage.ru_maxrss / 1024, out.read().decode(),
                usage.ru_utime + usage.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measures", choices=("official", "all_trec"), default="official",
                        help="trec_eval's measure set every tool computes")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="time tieeval imported from PATH too, as NAME")
    parser.add_argument("--task", nargs=4, metavar=("TOOL", "RUN", "QRELS", "MEASURES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        print(json.dumps(task(*args.task)))
        return
    warm_up()
    run_path, qrels_path = make_files(args.queries, args.docs)
    run_mb = os.path.getsize(run_path) / 1e6
    with open(qrels_path, "rb") as fh:
        judgements = sum(1 for _ in fh)
    tools = contestants(run_path, qrels_path, args.also, args.measures)
    load_before = os.getloadavg()[0]
    for command, env in tools.values():  # warm page cache and bytecode, checked once
        run_once(command, env)
    times: dict = {name: [] for name in tools}
    peaks: dict = {name: [] for name in tools}
    cpu: dict = {name: [] for name in tools}
    outputs: dict = {}
    names = list(tools)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            seconds, peak, out, used = run_once(*tools[name])
            times[name].append(seconds)
            cpu[name].append(used)
            peaks[name].append(peak)
            outputs[name] = out
        print(f"round {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.2f} s ({cpu[n][-1]:.2f} s CPU)"
                                             for n in names), file=sys.stderr)

    def ratio(name: str, base: str, of: dict) -> str:
        ratios = [a / b for a, b in zip(of[name], of.get(base, [])) if b > 0]
        return f"{statistics.median(ratios):.2f}x" if ratios else "-"

    print(f"{args.queries * args.docs:,} run lines ({run_mb:.0f} MB), {judgements:,} "
          f"judgements; trec_eval's {args.measures} measures; median of {args.rounds} "
          f"interleaved rounds, fresh processes; {os.cpu_count()} cores, load average "
          f"{load_before:.1f} "
          f"before and {os.getloadavg()[0]:.1f} after\n")
    print("| tool | wall s | / pytrec_eval | / trec_eval | CPU s | / pytrec_eval | / trec_eval "
          "| peak RSS (MB) | / trec_eval | / run file |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base_peak = max(peaks["trec_eval"]) if "trec_eval" in peaks else None
    for name in names:
        peak = max(peaks[name])
        print(f"| {name} | {statistics.median(times[name]):.2f} "
              f"| {ratio(name, 'pytrec_eval', times)} | {ratio(name, 'trec_eval', times)} "
              f"| {statistics.median(cpu[name]):.2f} | {ratio(name, 'pytrec_eval', cpu)} "
              f"| {ratio(name, 'trec_eval', cpu)} | {peak:.0f} | "
              f"{f'{peak / base_peak:.2f}x' if base_peak else '-'} | {peak / run_mb:.2f}x |")
    print()
    for name in ("pytrec_eval", "ranx", "ir_measures"):
        if name in outputs:
            inner = json.loads(outputs[name].strip().splitlines()[-1])
            print(f"{name}, inside its last process: reading the files {inner['read']:.2f} s, "
                  f"evaluating {inner['evaluate']:.2f} s; {inner['check']}")
    if args.queries >= 8:  # memory against the run's length: a quarter of it
        small_run, small_qrels = make_files(args.queries // 4, args.docs)
        small = contestants(small_run, small_qrels, [], args.measures)
        for name in ("tieeval", "trec_eval"):
            if name in small:
                peak = run_once(*small[name])[1]
                full = max(peaks[name])
                lines = args.queries * args.docs - args.queries // 4 * args.docs
                print(f"{name} peak on a quarter of the run ({args.queries // 4:,} queries): "
                      f"{peak:.0f} MB; {full - peak:.0f} MB more for the whole run, "
                      f"{(full - peak) * 2 ** 20 / lines:.1f} bytes per line")
    if "trec_eval" in outputs:
        ours = [" ".join(line.split()) for line in outputs["tieeval"].splitlines()]
        theirs = [" ".join(line.split()) for line in outputs["trec_eval"].splitlines()]
        differ = [(a, b) for a, b in zip(ours, theirs) if a != b]
        print(f"tieeval's lines against trec_eval's: {len(ours)} and {len(theirs)} lines, "
              f"{len(differ)} differ" + "".join(f"\n  tieeval '{a}' / trec_eval '{b}'"
                                                for a, b in differ))


if __name__ == "__main__":
    main()
