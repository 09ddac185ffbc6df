"""The ``tieeval`` command-line application before a command loads: exit codes, the error
types that carry them, multi-value option parsing and the click group class that maps every
failure to one ``Error:`` line. Only click and the standard library are imported here, so
that ``tieeval --version`` starts without numpy. (A "group" elsewhere in tieeval is a seed
group of runs; this module is named for the application to keep the two apart.)"""

from __future__ import annotations

import errno
import os
import re
import sys
import warnings

import click

from tieeval.errors import TieevalError

EXIT_CHECK_FAILED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class CliError(click.ClickException):
    """A usage or input error: ``Error: message`` on stderr, exit code 2."""

    exit_code = EXIT_INPUT


class InternalError(click.ClickException):
    exit_code = EXIT_INTERNAL


class Interrupted(click.ClickException):
    """Ctrl-C: one line, exit 130; workers stopped, nothing half-written."""

    exit_code = EXIT_INTERRUPTED


def _numeric_error(exc: Warning) -> CliError:
    return CliError(f"a computation left float64's range ({exc}); the input holds scores or "
                    "labels too large to evaluate")


_MULTI_VALUE = ("--k", "-k", "--gamma")
_NUMBERISH = re.compile(r"^[+-]?\d[\d,]*$")
_DECIMALISH = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?(,\s*[+-]?(\d+\.?\d*|\.\d+)"
                         r"([eE][+-]?\d+)?)*$")


def expand_multi_value(args: list[str]) -> list[str]:
    """Let ``--k 1 5 10`` mean ``--k 1 --k 5 --k 10``: numbers after ``--k`` belong to it
    (and decimals after ``--gamma``: ``--gamma 0 0.5 1``)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        out.append(arg)
        i += 1
        if arg == "--":
            out.extend(args[i:])
            break
        if arg in _MULTI_VALUE:
            if i < len(args):  # the first value, whatever it is (so bad K gets a K error)
                out.append(args[i])
                i += 1
            more = _DECIMALISH if arg == "--gamma" else _NUMBERISH
            while i < len(args) and more.match(args[i]):
                out.extend([arg, args[i]])
                i += 1
    return out


class Command(click.Command):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, expand_multi_value(list(args)))


class Group(click.Group):
    command_class = Command

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        """click's standalone mode, except that Ctrl-C (even while options are parsed)
        is one ``Error: interrupted`` line and exit 130, not "Aborted!" and exit 1."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            try:
                rv = super().main(args, prog_name, complete_var, False, **extra)
            except click.Abort as exc:
                if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
                    raise KeyboardInterrupt from None
                raise
        except KeyboardInterrupt:
            _stop_workers()
            click.echo("Error: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                sys.exit(1)
            raise
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            with warnings.catch_warnings():
                # numpy's RuntimeWarnings (overflow, invalid value) never print: where a
                # value is handled the code silences them itself, anywhere else they mean
                # the input left float64's range and are an input error
                warnings.simplefilter("error", RuntimeWarning)
                return super().invoke(ctx)
        except TieevalError as exc:
            raise CliError(str(exc)) from None
        except KeyboardInterrupt:
            _stop_workers()
            raise Interrupted("interrupted") from None
        except RuntimeWarning as exc:
            raise _numeric_error(exc) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit,
                BrokenPipeError):
            raise
        except Exception as exc:  # a bug: say so, never let it pass as exit 1
            if os.environ.get("TIEEVAL_DEBUG"):
                raise
            raise InternalError(f"internal error ({type(exc).__name__}: {exc}); rerun with "
                                "TIEEVAL_DEBUG=1 for a traceback and please report it") from None


def _stop_workers() -> None:
    import signal
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this
    except ValueError:  # pragma: no cover - not the main thread
        pass
    from tieeval.engine.parallel import stop_workers
    stop_workers()
