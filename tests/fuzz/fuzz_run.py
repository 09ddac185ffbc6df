"""The fuzzing run behind tests/fuzz/test_fuzz.py, and its summary for pytest's report.

:func:`run_fuzz` runs the mutants (once, through test_fuzz's fixture) in
``TIEEVAL_FUZZ_JOBS`` driver processes (default 2), each under ``RLIMIT_AS`` (3 GB); a
driver that dies or stops answering (no case finished for :data:`STALL_SECONDS`) is
recorded as a finding on the case it was running and restarted after it. Environment:

* ``TIEEVAL_FUZZ_CASES``: mutants per format of the slow tier's run (default 250: 2,000
  in all; every run of the suite makes :data:`QUICK_CASES` per format);
* ``TIEEVAL_FUZZ_SECONDS``: the slow tier's run lasts this long instead (with no case count
  unless ``TIEEVAL_FUZZ_CASES`` is also set), e.g. ``TIEEVAL_FUZZ_SECONDS=900``;
* ``TIEEVAL_FUZZ_SEED``: the seed of both (default 20240611).

The mutants per format, what tieeval did with them and the findings are printed in the
pytest summary (section "fuzzing").
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz_mutants import SEED  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DRIVER = os.path.join(HERE, "driver.py")
SECONDS = float(os.environ["TIEEVAL_FUZZ_SECONDS"]) if os.environ.get(
    "TIEEVAL_FUZZ_SECONDS") else None
CASES = int(os.environ["TIEEVAL_FUZZ_CASES"]) if os.environ.get("TIEEVAL_FUZZ_CASES") else (
    None if SECONDS else 250)
QUICK_CASES = 15  # mutants per format in every run (the first 15 of the slow tier's)
JOBS = int(os.environ.get("TIEEVAL_FUZZ_JOBS", "2"))
MEMORY_LIMIT = 3 << 30  # bytes of address space per driver process
STALL_SECONDS = 30  # a driver that finishes no case for this long is hung in C code

def _limit_memory():  # pragma: no cover - runs in the child
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _records(path):
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.endswith("\n")]


def run_fuzz(folder: str, quick: bool = False) -> list[dict]:
    """Every mutant's record: :data:`QUICK_CASES` per format with ``quick``, else as the
    environment says (:data:`CASES`, :data:`SECONDS`)."""
    sys.path.insert(0, HERE)
    from fuzz_mutants import FORMATS
    cases, seconds = (QUICK_CASES, None) if quick else (CASES, SECONDS)
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "ARROW_DEFAULT_MEMORY_POOL": "system"}
    env.pop("TIEEVAL_DEBUG", None)
    deadline = None if seconds is None else time.time() + seconds
    stop = None if cases is None else cases * len(FORMATS)
    extra: list[dict] = []

    def start(worker, first):
        out = os.path.join(folder, f"out{worker}.jsonl")
        job = os.path.join(folder, f"job{worker}.json")
        with open(job, "w") as fh:
            json.dump({"seed": SEED, "folder": folder, "out": out, "start": first,
                       "step": JOBS, "stop": stop, "deadline": deadline}, fh)
        proc = subprocess.Popen([sys.executable, DRIVER, job], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, preexec_fn=_limit_memory)
        return {"proc": proc, "out": out, "first": first, "seen": len(_records(out)),
                "since": time.time()}

    running = {w: start(w, w) for w in range(JOBS)}
    while running:
        time.sleep(0.2)
        for worker, state in list(running.items()):
            proc = state["proc"]
            done = _records(state["out"])
            if len(done) != state["seen"]:
                state["seen"], state["since"] = len(done), time.time()
            hung = time.time() - state["since"] > STALL_SECONDS
            if proc.poll() is None and not hung:
                continue
            if hung:
                proc.kill()
            err = proc.communicate()[1].decode(errors="replace")
            if proc.returncode == 0:
                del running[worker]
                continue
            last = max((r["c"] for r in done), default=worker - JOBS)
            c = max(last + JOBS, state["first"])
            if stop is not None and c >= stop:
                del running[worker]
                continue
            fmt = FORMATS[c % len(FORMATS)]
            extra.append({"c": c, "fmt": fmt, "case": c // len(FORMATS), "cls": "?",
                          "what": "", "tieeval": "died",
                          "finding": (f"hung (no answer in {STALL_SECONDS} s)" if hung else
                                      f"the process died (exit {proc.returncode}): ")
                          + err[-1500:]})
            running[worker] = start(worker, c + JOBS)
    records = extra
    for worker in range(JOBS):
        records += _records(os.path.join(folder, f"out{worker}.jsonl"))
    return sorted(records, key=lambda r: r["c"])


def summarise(records, seconds: float, known) -> list[str]:
    from fuzz_mutants import FORMATS
    lines = [f"seed {SEED}: {len(records)} mutants in {seconds:.1f} s ({JOBS} processes); "
             "figures compared for every accepted mutant"]
    for fmt in FORMATS:
        mine = [r for r in records if r["fmt"] == fmt]
        count = collections.Counter(r.get("tieeval") for r in mine)
        findings = [r for r in mine if "finding" in r]
        known_n = sum(1 for r in findings if known(r))
        lines.append(f"{fmt:>13}: {len(mine):5d} mutants, {count['accepted']:5d} accepted "
                     f"(figures = oracle's), {count['refused']:5d} refused, "
                     f"{sum(1 for r in mine if 'cli' in r):4d} also via the command line; "
                     f"findings {len(findings) - known_n} new, {known_n} known")
    return lines


class Summary:
    """A pytest plugin that prints the run's lines in the terminal summary ("fuzzing")."""

    def __init__(self, lines):
        self.lines = lines

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_sep("-", "fuzzing")
        for line in self.lines:
            terminalreporter.write_line(line)
