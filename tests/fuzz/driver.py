"""Run ``tieeval`` on many files in one process: ``python driver.py CASES.json OUT.json``.

CASES.json lists ``[case id, [command-line arguments]]``; each case runs the command-line
entry in process (stdout and stderr captured) under a per-case alarm, and OUT.json gets
``[case id, exit code, stderr]``. The test runs this script in a subprocess with a memory
limit and a timeout (tests/fuzz/test_fuzz.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import traceback

CASE_SECONDS = 10


class CaseTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def run_case(cli, args):
    out, err = io.StringIO(), io.StringIO()
    code = None
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main(args=args, prog_name="tieeval")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None
                                                                   else 1)
    except CaseTimeout:
        code = "timeout"
    except MemoryError:
        code = "memory"
    except BaseException:  # noqa: BLE001 - anything escaping the CLI is a finding
        err.write(traceback.format_exc())
        code = "escaped"
    finally:
        signal.alarm(0)
    return code, err.getvalue()


def main() -> None:
    cases_path, out_path = sys.argv[1], sys.argv[2]
    from tieeval.cli import cli
    with open(cases_path) as fh:
        cases = json.load(fh)
    results = []
    for case, args in cases:
        code, err = run_case(cli, args)
        results.append([case, code, err[-2000:]])
        with open(out_path, "w") as fh:  # after each case: a crash still leaves the record
            json.dump(results, fh)


if __name__ == "__main__":
    main()
