"""Evaluate many mutants in one process: ``python driver.py JOB.json``.

JOB.json holds ``seed``, ``folder``, ``out``, ``start``, ``step``, ``stop`` (or null) and
``deadline`` (a ``time.time()`` value, or null). Case number ``c`` is mutant ``c //
len(FORMATS)`` of format ``FORMATS[c % len(FORMATS)]`` (tests/fuzz/fuzz_mutants.py); the driver
runs ``c = start, start + step, ...`` until ``stop`` or the deadline. Each case:

1. writes the mutant;
2. evaluates it with ``tieeval.evaluate_path`` under a per-case alarm;
3. re-reads it with the independent reader of tests/fuzz/fuzz_oracle.py and, when tieeval
   accepted it, compares its first / last / tie-aware figures and instance counts with the
   oracle's.

One JSON line per case goes to ``out`` (flushed before the next case starts, so a case that
kills the process is the one after the last line). The test runs this script in a
subprocess under a memory limit (tests/fuzz/test_fuzz.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_mutants as mutants  # noqa: E402
import fuzz_oracle as oracle  # noqa: E402

CASE_SECONDS = 5
CLI_EVERY = 4
KS = (1, 3, 10)
METRICS = [f"{m}@{k}" for k in KS for m in ("HR", "NDCG")] + ["MRR"]


class CaseTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def _compare(result, want) -> list[str]:
    """Differences between tieeval's rows and the oracle's figures."""
    bad = []
    for label, (first, last, tie_aware, instances, skipped) in want.items():
        row = result.metric(label)
        for name, mine in (("first", first), ("last", last), ("tie_aware", tie_aware)):
            theirs = getattr(row, name)
            if not oracle.close(theirs, mine):
                bad.append(f"{label} {name}: tieeval {theirs!r}, oracle {mine!r}")
        if row.labelled:
            if (row.instances, row.skipped) != (instances, skipped):
                bad.append(f"{label}: tieeval averages {row.instances} rows and skips "
                           f"{row.skipped}, the file has {instances} and {skipped}")
        elif skipped or result.instances != instances:
            bad.append(f"{label}: tieeval averages {result.instances} rows, the file has "
                       f"{instances} (and {skipped} without a positive)")
    return bad


class _Row:
    """A JSON metric row with the attributes :func:`_compare` reads."""

    def __init__(self, d):
        self.__dict__.update(d)
        self.labelled = "skipped" in d


class _Run:
    def __init__(self, d):
        self.instances = d["instances"]
        self.rows = {(r["metric"] + ("" if r["k"] is None else f"@{r['k']}")).upper(): _Row(r)
                     for r in d["metrics"]}

    def metric(self, label):
        return self.rows[label.upper()]


def run_cli(cli, path: str, qrels: str | None) -> tuple:
    """``tieeval compare PATH --format json`` in process: (exit code, stdout, stderr)."""
    import contextlib
    import io
    args = ["compare", path, "--format", "json", "-q", "--jobs", "1"]
    args += [a for m in METRICS for a in ("-m", m)]
    if qrels:
        args += ["--qrels", qrels]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(args=args, prog_name="tieeval")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
    return code, out.getvalue(), err.getvalue()


def check_cli(code, stdout: str, stderr: str, want) -> str | None:
    """What is wrong with a command-line run's exit code, stderr or JSON figures."""
    if code == 2:
        lines = stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("Error: ") or stdout:
            return f"exit 2 without one 'Error:' line: {stderr[-800:]!r}"
        return None
    if code != 0 or "Traceback" in stderr:
        return f"exit {code}: {stderr[-800:]!r}"
    if want is None:
        return "exit 0, the independent reader refuses"
    runs = json.loads(stdout)["runs"]
    bad = _compare(_Run(runs[0]), want) if len(runs) == 1 else [f"{len(runs)} runs"]
    return ("JSON figures differ: " + "; ".join(bad[:6])) if bad else None


def run_case(tieeval, fmt: str, case: int, seed: int, folder: str, cli=None) -> dict:
    record: dict = {"fmt": fmt, "case": case}
    path, qrels, cls, what = mutants.make(fmt, case, seed, folder)
    record.update(cls=cls, what=what, path=path, qrels=qrels)
    signal.alarm(CASE_SECONDS)
    started = time.perf_counter()
    try:
        try:
            with warnings.catch_warnings():
                # as the command line does: numpy's RuntimeWarnings mean a value left
                # float64's range (labels near 1e308), and the run is refused
                warnings.simplefilter("ignore")
                warnings.simplefilter("error", RuntimeWarning)
                result = tieeval.evaluate_path(path, METRICS, qrels=qrels, jobs=1)
            record["tieeval"] = "accepted"
        except RuntimeWarning as exc:
            record["tieeval"] = "refused"
            record["message"] = f"RuntimeWarning: {exc}"
        except tieeval.TieevalError as exc:
            text = str(exc)
            record["tieeval"] = "refused"
            record["message"] = text
            if not text.strip() or "\n" in text.strip() or "Traceback" in text:
                record["finding"] = f"refusal is not one line: {text!r}"
        except MemoryError:
            record["tieeval"] = "memory"
            record["finding"] = "MemoryError under the memory limit"
        except CaseTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else escaping is a finding
            record["tieeval"] = "escaped"
            record["finding"] = (f"{type(exc).__name__} escaped: "
                                 + traceback.format_exc()[-1500:])
        record["seconds"] = round(time.perf_counter() - started, 4)
        try:
            rows = oracle.read(fmt, path, qrels)
            want = oracle.figures(rows, list(KS))
            record["oracle"] = "valid"
        except oracle.Invalid as exc:
            record["oracle"] = "invalid"
            record["reason"] = str(exc)[:300]
            want = None
        except MemoryError:
            record["oracle"] = "invalid"
            record["reason"] = "MemoryError in the reference reader"
            want = None
        if cli is not None:
            code, stdout, stderr = run_cli(cli, path, qrels)
            record["cli"] = code
            problem = check_cli(code, stdout, stderr, want)
            if problem:
                record["finding"] = "command line: " + problem
            if (code == 0) != (record["tieeval"] == "accepted"):
                record["finding"] = (f"command line exit {code}, Python API "
                                     f"{record['tieeval']}")
        if record["tieeval"] == "accepted":
            if want is None:
                record["finding"] = f"accepted, the independent reader refuses: {record['reason']}"
            else:
                bad = _compare(result, want)
                if bad:
                    record["finding"] = "figures differ: " + "; ".join(bad[:6])
    except CaseTimeout:
        record.setdefault("tieeval", "timeout")
        record["finding"] = f"no answer within {CASE_SECONDS} s ({record['tieeval']})"
    except Exception as exc:  # noqa: BLE001 - the harness itself failed: say so
        record["finding"] = "harness error: " + traceback.format_exc()[-1500:]
        record["harness"] = type(exc).__name__
    finally:
        signal.alarm(0)
    if "finding" not in record:  # keep only the files worth reproducing
        for p in (path, qrels):
            if p:
                os.unlink(p)
    return record


def main() -> None:
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    signal.signal(signal.SIGALRM, _alarm)
    import tieeval
    import tieeval.engine.local  # noqa: F401 - imported before the first alarm
    from tieeval.cli import cli
    fmts = mutants.FORMATS
    c = job["start"]
    with open(job["out"], "a") as out:
        while job["stop"] is None or c < job["stop"]:
            if job["deadline"] is not None and time.time() > job["deadline"]:
                break
            # every CLI_EVERY-th case also goes through the command line (in process)
            record = run_case(tieeval, fmts[c % len(fmts)], c // len(fmts), job["seed"],
                              job["folder"], cli if (c // len(fmts)) % CLI_EVERY == 0
                              else None)
            record["c"] = c
            out.write(json.dumps(record) + "\n")
            out.flush()
            c += job["step"]


if __name__ == "__main__":
    main()
