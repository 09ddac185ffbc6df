"""The ``tieeval`` command-line application before a command loads: exit codes, the error
types that carry them, multi-value option parsing and the click group class that maps every
failure to one ``Error:`` line. Only click and the standard library are imported here, so
that ``tieeval --version`` starts without numpy. (A "group" elsewhere in tieeval is a seed
group of runs; this module is named for the application to keep the two apart.)"""

from __future__ import annotations

import errno
import logging
import os
import re
import signal
import sys
import threading
import warnings
from contextlib import contextmanager

import click

from tieeval.errors import TieevalError, TieevalWarning
from tieeval.util.escaping import escape

EXIT_CHECK_FAILED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_HANGUP = 129  # 128 + SIGHUP
EXIT_TERMINATED = 143  # 128 + SIGTERM


def say(text: str) -> None:
    """One line on stderr (a warning, a note, what was written where): whatever user text
    it quotes (a file name, a label) is written in its one-line form
    (:func:`tieeval.util.escaping.escape`), so that none of it starts a line of its own."""
    click.echo(escape(text), err=True)


class CliError(click.ClickException):
    """A usage or input error: ``Error: message`` on stderr, exit code 2."""

    exit_code = EXIT_INPUT


class InternalError(click.ClickException):
    exit_code = EXIT_INTERNAL


class Interrupted(click.ClickException):
    """Ctrl-C: one line, exit 130; workers stopped, nothing half-written. SIGTERM and
    SIGHUP end the same way with exit 143 and 129 (``exit_code``)."""

    def __init__(self, message: str, exit_code: int = EXIT_INTERRUPTED):
        super().__init__(message)
        setattr(self, "exit_code", exit_code)  # noqa: B010 - a ClassVar to click's stubs


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread where the signal found it, so that it
    unwinds as Ctrl-C does: every ``finally`` and ``except BaseException`` runs (the output
    sink removes its temporary file, a long-layout spill its folder), workers are stopped
    and the process exits with 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _ended(exc: KeyboardInterrupt) -> Interrupted:
    """The one line and exit code for Ctrl-C, SIGTERM or SIGHUP."""
    if isinstance(exc, Terminated):
        name = signal.Signals(exc.signum).name
        code = EXIT_HANGUP if name == "SIGHUP" else EXIT_TERMINATED
        return Interrupted(f"terminated by {name}", code)
    return Interrupted("interrupted")


# SIGTERM (kill, timeout, a job scheduler) and SIGHUP (a closed terminal): ended like Ctrl-C
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                      if hasattr(signal, name))


# The stop signals received while a command runs: an error raised while the interrupt
# unwinds (a reader's generator closed from another thread, say) is still reported as the
# interrupt, never as an internal error.
_RECEIVED: list[int] = []


def _importing(frame) -> bool:
    """Whether the main thread is inside Python's import machinery (``frame`` and the
    frames it was called from). An exception raised there, between a module lock's
    acquiring and its owner being recorded say, can leave that lock held: a batch thread
    importing the same module lazily then waits forever, and so does the main thread,
    joining it."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


_REDELIVER_SECONDS = 0.02


def _raise_terminated(signum, frame):
    """SIGTERM and SIGHUP as :class:`Terminated`, Ctrl-C as Python's own handler does it
    (KeyboardInterrupt); remembered, and outside Python's import machinery (see
    :func:`_importing`)."""
    if _importing(frame):  # sent again in a moment, when the import is over (or again)
        timer = threading.Timer(_REDELIVER_SECONDS, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    _RECEIVED.append(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    _ignore_stop_signals()  # a second signal must not cut the clean-up short
    raise Terminated(signum)


def _ignore_stop_signals() -> None:
    for sig in (signal.SIGINT, *_STOP_SIGNALS):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass


@contextmanager
def _stop_signals_raise():
    """SIGTERM and SIGHUP raise :class:`Terminated` while a command runs (a signal the
    process ignores, as under ``nohup``, stays ignored), Ctrl-C raises KeyboardInterrupt as
    always; each is remembered (:data:`_RECEIVED`). The old handlers come back after."""
    old = {}
    del _RECEIVED[:]
    for sig in (*_STOP_SIGNALS, signal.SIGINT):
        try:
            handler = signal.getsignal(sig)
            if handler is signal.SIG_IGN or (sig == signal.SIGINT
                                             and handler is not signal.default_int_handler):
                continue
            old[sig] = signal.signal(sig, _raise_terminated)
        except (ValueError, OSError):  # not the main thread: leave the signals alone
            pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):  # pragma: no cover
                pass


def stdout_error(exc: OSError) -> CliError:
    """Writing stdout failed (a full disk, a closed pipe or descriptor): one line, exit 2.
    The descriptor is pointed at /dev/null so that the interpreter's final flush of what is
    still buffered cannot fail a second time."""
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass
    reason = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
    return CliError(f"cannot write the output to stdout: {reason}")


def _flush_stdout() -> None:
    """The data written is all out: a buffered rest that cannot be written is an error."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise stdout_error(exc) from None


# An OSError from the environment, not from tieeval: the file named and the system's words
# for it, exit 2. With a file name these say which file; without one, only the errors that
# cannot be about anything but the machine (a full disk, an I/O error) are mapped.
_ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "EACCES", "EPERM", "ENOENT", "ENOTDIR", "EISDIR", "ENAMETOOLONG", "ELOOP", "ENOSPC",
    "EDQUOT", "EROFS", "EFBIG", "EIO", "EMFILE", "ENFILE", "ETXTBSY", "EEXIST", "ENXIO",
    "ENODEV", "EBUSY", "ESTALE", "EXDEV", "ENOTEMPTY", "EAGAIN", "ESPIPE", "EINVAL",
    "EOVERFLOW") if hasattr(errno, name))
_MACHINE_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EFBIG", "EIO", "EMFILE", "ENFILE", "EROFS") if hasattr(errno, name))


def environment_error(exc: OSError) -> CliError | None:
    """The one-line error for an OSError the environment caused, or None for anything
    else (a bug: the caller reports it as an internal error)."""
    code = exc.errno
    reason = exc.strerror or (errno.errorcode.get(code) if code else None)
    if code is None or reason is None:
        return None
    if exc.filename is not None and code in _ENVIRONMENT_ERRNOS:
        names = [os.fsdecode(n) if isinstance(n, bytes) else str(n)
                 for n in (exc.filename, exc.filename2) if n is not None]
        return CliError(f"{' -> '.join(names)}: {reason}")
    if code in _MACHINE_ERRNOS:
        return CliError(reason)
    return None


def _numeric_error(exc: Warning) -> CliError:
    return CliError(f"a computation left float64's range ({exc}); the input holds scores or "
                    "labels too large to evaluate")


class NumberList(click.ParamType):
    """One or more numbers, comma-separated (``1,5,10``): each ``cast`` (if it cannot be,
    the message is ``what``, got the text) and then ``check(number, text)``, whose
    ValueError is the message."""

    def __init__(self, name: str, cast, what: str, check):
        self.name, self._cast, self._what, self._check = name, cast, what, check

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        out = []
        for part in str(value).split(","):
            part = part.strip()
            try:
                number = self._cast(part)
            except ValueError:
                self.fail(f"{self._what}, got {part!r}", param, ctx)
            try:
                out.append(self._check(number, part))
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        return out


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


# trec_eval's short options and tieeval's for them (-q is tieeval's --quiet: --per-query);
# -n (trec_eval's --nosummary) only where the command has --no-summary
_TREC_FLAGS = {"-c": ["--missing-queries", "zero"], "-J": ["--judged-only"],
               "-n": ["--no-summary"], "--nosummary": ["--no-summary"]}
_TREC_VALUED = {"-M": "--depth", "-l": "--relevance-level"}
_TREC_CONVENTIONS = ("trec_eval", "trec_eval9")


def _trec_option(arg: str) -> list[str] | None:
    """tieeval's options for one of trec_eval's short options (``-c``, ``-J``, ``-M100``,
    ``-l2``; ``-M`` / ``-l`` alone take the next argument), or None."""
    if arg in _TREC_FLAGS:
        return list(_TREC_FLAGS[arg])
    head, rest = arg[:2], arg[2:]
    if head in _TREC_VALUED:
        return [_TREC_VALUED[head]] + ([rest] if rest else [])
    return None


def trec_eval_options(args: list[str], takes_value: set[str],
                      options: set[str] | None = None) -> list[str]:
    """trec_eval's short options (:data:`_TREC_FLAGS`, :data:`_TREC_VALUED`) as tieeval's
    under ``--convention trec_eval`` (or ``trec_eval9``); without the convention, one is a
    usage error naming tieeval's option. ``takes_value``: the command's
    options that take a value, whose values are never read as options; ``options``: every
    option of the command (None: any), so that one maps only to an option it has (``-n``
    to ``compare``'s ``--no-summary``; elsewhere click calls ``-n`` unknown)."""
    convention = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--convention" and i + 1 < len(args):
            convention = args[i + 1]
        elif arg.startswith("--convention="):
            convention = arg.split("=", 1)[1]
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        mapped = _trec_option(arg)
        if mapped is not None and options is not None and mapped[0] not in options:
            mapped = None
        if mapped is None:
            out.append(arg)
            if arg in takes_value and i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
            i += 1
            continue
        if convention not in _TREC_CONVENTIONS:
            ours = " ".join(mapped) if arg in _TREC_FLAGS else f"{mapped[0]} N"
            raise click.UsageError(f"{arg} is trec_eval's option: write {ours}, or give "
                                   "--convention trec_eval, under which trec_eval's -c, -J, "
                                   "-M, -l and -n are accepted")
        out.extend(mapped)
        i += 1
    return out


# checks a command's options asked for before it runs (click's shared per-invocation
# ``ctx.meta``): ``--output FILE`` puts its check there (see tieeval.cli.output)
BEFORE_RUN = "tieeval.before_run"
# where ``--output FILE`` is kept between parsing and rendering (``ctx.meta`` too)
OUTPUT_KEY = "tieeval.output"
# the options whose values are the run's inputs, never to be overwritten
_INPUT_PARAMS = ("files", "qrels", "claims_path")


def run_inputs(ctx) -> list:
    """The paths a command reads (its dumps, ``--qrels``, ``--claims``; a dump read from
    ``-`` as its spool), which no output may overwrite."""
    found: list = []
    for name in _INPUT_PARAMS:
        value = ctx.params.get(name)
        if isinstance(value, (list, tuple)):
            found += [v for v in value if isinstance(v, str)]
        elif isinstance(value, str):
            found.append(value)
    return found


def report_on_stdout(ctx) -> bool:
    """Whether the command's data goes to stdout (no ``--output FILE``)."""
    return ctx.meta.get(OUTPUT_KEY) is None


def _guard_files(ctx) -> None:
    """Before a command runs (inside :func:`tieeval.sink.run_files`): its inputs and the
    regular file behind standard input, which no output may be, and stdout taken by the
    data unless ``--output FILE`` sends it elsewhere."""
    from tieeval.cli.stdin import STDIN_NAME, shown
    from tieeval.sink import claim_stdout, protect_descriptor, protect_input
    for path in run_inputs(ctx):
        protect_input(path, shown=shown(path))
    protect_descriptor(0, f"{STDIN_NAME} (the file behind standard input)")
    if any(p.name == "output" for p in ctx.command.params) and report_on_stdout(ctx):
        claim_stdout("the output")


class _WithoutPy4J(logging.StreamHandler):
    """What Python prints for a log record when nothing is configured (the message, on
    stderr, WARNING and above), except the records of Py4J and pyspark: Py4J reports a
    Ctrl-C, or a gateway that went away, with ``logging.exception`` on the root logger,
    which would print its tracebacks before the command's one ``Error:`` line."""

    def __init__(self):
        super().__init__()
        self.setLevel(logging.WARNING)

    def emit(self, record):
        self.stream = sys.stderr  # today's stderr, as Python's own last resort writes to
        super().emit(record)

    def filter(self, record):
        path = record.pathname.replace(os.sep, "/")
        return "/py4j/" not in path and "/pyspark/" not in path and super().filter(record)


class Command(click.Command):
    def parse_args(self, ctx, args):
        args = list(args)
        if any(getattr(p, "name", None) == "convention" for p in self.params):
            takes_value = {opt for p in self.params if isinstance(p, click.Option)
                           and not p.is_flag and p.nargs != 0
                           for opt in (*p.opts, *p.secondary_opts)}
            options = {opt for p in self.params if isinstance(p, click.Option)
                       for opt in (*p.opts, *p.secondary_opts)}
            args = trec_eval_options(args, takes_value, options)
        return super().parse_args(ctx, expand_multi_value(args))

    def invoke(self, ctx):
        from tieeval.sink import run_files
        with run_files():  # no output of the run may be an input, or another output
            _guard_files(ctx)
            for check in ctx.meta.get(BEFORE_RUN, ()):  # a bad --output: before the run
                check(ctx)
            from tieeval.engine.heap import keep_freed_heap
            keep_freed_heap()  # batch temporaries reuse freed heap pages, not new ones
            return super().invoke(ctx)

    def format_options(self, ctx, formatter):
        """The options under the headings of ``cli/help_sections.py`` (input, relevance,
        ranking rule, metrics, output, performance, what-ifs ...), not in one long list."""
        from tieeval.cli.help_sections import SECTIONS, section_of

        records: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):  # arguments are in the usage line
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                records.setdefault(section_of(long_name(param)), []).append(record)
        for title, _ in SECTIONS:
            if records.get(title):
                with formatter.section(title):
                    formatter.write_dl(records[title])


def _show(exc: click.ClickException) -> None:
    """``exc``'s ``Error:`` line (and a usage error's usage lines), whatever user text its
    message quotes (a file name, an option's value) in its one-line form
    (:func:`tieeval.util.escaping.escape`): a name holding a line break cannot start a line."""
    if sys.stderr is None:  # descriptor 2 closed: click would write the line to stdout
        return
    setattr(exc, "message", escape(exc.message))  # noqa: B010 - typed Final by click
    exc.show()


def long_name(param: click.Parameter) -> str:
    """An option's long name (``--k`` for ``-k/--k``), by which help sections list it."""
    names = [*param.opts, *param.secondary_opts]
    return next((name for name in names if name.startswith("--")), names[0] if names else "")


class Group(click.Group):
    command_class = Command

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        """click's standalone mode, except that Ctrl-C (even while options are parsed)
        is one ``Error: interrupted`` line and exit 130, not "Aborted!" and exit 1."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        # logging as Python would configure it (see _WithoutPy4J), unless something else
        # did; TIEEVAL_DEBUG=1 leaves it alone
        root = logging.getLogger()
        if not root.handlers and not os.environ.get("TIEEVAL_DEBUG"):
            root.addHandler(_WithoutPy4J())
        failure: click.ClickException
        try:
            with _stop_signals_raise():
                rv = super().main(args, prog_name, complete_var, False, **extra)
                _flush_stdout()
        except (KeyboardInterrupt, click.Abort) as exc:
            cause = exc if isinstance(exc, KeyboardInterrupt) else exc.__cause__ or exc.__context__
            if not isinstance(cause, KeyboardInterrupt):
                click.echo("Aborted!", err=True)
                sys.exit(1)
            _stop_workers()
            failure = _ended(cause)
        except click.ClickException as exc:
            failure = exc
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                sys.exit(1)
            mapped = environment_error(exc)
            if mapped is None:
                raise
            failure = mapped
        else:
            sys.exit(rv if isinstance(rv, int) else 0)
        _show(failure)
        sys.exit(failure.exit_code)

    def invoke(self, ctx):
        try:
            return self._invoke(ctx)
        except (click.exceptions.Exit, SystemExit):
            raise
        except BaseException:
            if _RECEIVED:  # whatever the interrupt left behind, it was the interrupt
                _stop_workers()
                signum = _RECEIVED[0]
                raise _ended(KeyboardInterrupt() if signum == signal.SIGINT
                             else Terminated(signum)) from None
            raise

    def _invoke(self, ctx):
        try:
            with warnings.catch_warnings():
                # numpy's RuntimeWarnings (overflow, invalid value) never print: where a
                # value is handled the code silences them itself, anywhere else they mean
                # the input left float64's range and are an input error
                warnings.simplefilter("error", RuntimeWarning)
                # a TieevalWarning's text is also in the result's warnings, which the
                # commands print (or --quiet hides): never a second copy on stderr
                warnings.simplefilter("ignore", TieevalWarning)
                return super().invoke(ctx)
        except TieevalError as exc:
            from tieeval.cli.stdin import shown  # a dump read from '-' is named <stdin>
            raise CliError(shown(str(exc))) from None
        except KeyboardInterrupt as exc:
            _stop_workers()
            raise _ended(exc) from None
        except RuntimeWarning as exc:
            raise _numeric_error(exc) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit,
                BrokenPipeError):
            raise
        except Exception as exc:  # a bug (say so, never let it pass as exit 1), unless
            # an unreadable input or a full disk (the environment's) or out of memory
            mapped = environment_error(exc) if isinstance(exc, OSError) else None
            if mapped is not None:
                raise mapped from None
            if os.environ.get("TIEEVAL_DEBUG"):
                raise
            if isinstance(exc, MemoryError):
                raise CliError(memory_message()) from None
            spark = None  # Py4J's or pyspark's, from a call no engine function wrapped
            if not isinstance(exc, OSError) and (type(exc).__module__ or "").startswith(
                    ("py4j", "pyspark")):
                from tieeval.engine.spark_errors import describe, jvm_output
                spark = describe(exc, log=jvm_output())
            if spark is not None:
                raise CliError(spark) from None
            raise InternalError(f"internal error ({type(exc).__name__}: {exc}); rerun with "
                                "TIEEVAL_DEBUG=1 for a traceback and please report it") from None


def _bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def memory_limit() -> str:
    """The memory limit this process runs under, in words: an ``RLIMIT_AS`` or
    ``RLIMIT_DATA`` (ulimit -v / -d), a container's cgroup limit, else the machine's
    memory."""
    try:
        import resource
        for name, shown in (("RLIMIT_AS", "ulimit -v"), ("RLIMIT_DATA", "ulimit -d")):
            soft, _ = resource.getrlimit(getattr(resource, name))
            if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
                return f"the process's limit of {_bytes(soft)} ({name}, {shown})"
    except (ImportError, AttributeError, ValueError, OSError):  # pragma: no cover
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return f"the container's limit of {_bytes(int(text))} ({path})"
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return f"this machine's {_bytes(total)}"
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return "the memory available"


def memory_message() -> str:
    """A MemoryError, as the input error it is: what ran out, and what to lower."""
    return (f"out of memory: the evaluation needed more than {memory_limit()}; lower "
            "--batch-rows (and --jobs), or TIEEVAL_MAX_ROW_CANDIDATES for very long rows")


def _stop_workers() -> None:
    # a second Ctrl-C, SIGTERM or SIGHUP must not cut this short
    _ignore_stop_signals()
    from tieeval.engine.parallel import stop_workers
    stop_workers()
    _adopt_stray_threads()


def _adopt_stray_threads() -> None:
    """Finish the registration an interrupt cut short. A thread pool (the sort threads, the
    read-ahead) starts a worker thread and then records it for the pool's stop at exit; an
    interrupt between the two leaves a thread the exit never tells to stop, and the
    interpreter waits for it forever. Recorded now, it stops with the others."""
    module = sys.modules.get("concurrent.futures.thread")
    if module is None:
        return
    worker = getattr(module, "_worker", None)
    known = getattr(module, "_threads_queues", None)
    if worker is None or known is None:  # pragma: no cover - another Python's internals
        return
    for thread in threading.enumerate():
        args = getattr(thread, "_args", None)
        if getattr(thread, "_target", None) is not worker or thread in known or not args:
            continue
        executor = args[0]() if callable(args[0]) else None
        if executor is not None:
            executor._threads.add(thread)
        known[thread] = args[1]
