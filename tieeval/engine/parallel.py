"""Evaluate a dump's batches in worker processes and merge their accumulators.

Workers run the kernel chosen for the dump (a picklable value), whichever it is. Batches
are independent and an :class:`~tieeval.kernels.accumulator.Accumulator` holds only exact sums
(integer counts, :class:`~tieeval.kernels.summation.ExactSum`), so merging partial accumulators in
any order gives bit-for-bit the result of one process.

Two ways to feed workers:

* a dump with *parts* (matrix row ranges, Parquet row groups, long-layout spill partitions):
  each worker opens the file itself and reads its part, so no scores cross a pipe;
* a dump that can only be read front to back (a compressed NPZ member, a sorted long
  stream): this process reads, workers count; at most ``2 * jobs`` batches are in flight,
  which bounds memory.

Workers start with ``forkserver`` where available (a clean server process forks them; forking
a process that already runs pyarrow threads is unsafe) and ``spawn`` elsewhere. Errors are
raised in dump order, so the message is the one a single process would give.

No worker outlives the process that started its pool, however that process ends (SIGKILL,
SIGTERM left at its default, ``os._exit``): each watches its parent (:func:`_watch_parent`),
and the fork server and the resource tracker end by themselves once the workers are gone.
"""


from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import threading
import warnings
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

from tieeval.engine import heap
from tieeval.io.base import Dump, row_tasks
from tieeval.kernels import fused, threads
from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.base import Kernel

# Below this many input bytes a pool costs more to start than it saves.
MIN_PARALLEL_BYTES = 32 << 20
MIN_JOBS_FOR_SHIPPING = 3

_POOL: dict = {}


def _context():
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["tieeval.engine.local", "tieeval.io.open",
                                   "tieeval.engine.parallel"])
        return ctx
    return multiprocessing.get_context("spawn")


# Ctrl-C, and SIGTERM / SIGHUP sent to the whole process group, are for this process to
# handle: it stops the workers itself (stop_workers).
_STOP_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name)}
# what a worker unblocks: stop_workers ends workers with SIGTERM, and a group's SIGTERM or
# SIGHUP ends them quietly (their default action), whereas Ctrl-C stays ignored
_WORKER_UNBLOCKED = _STOP_SIGNALS - {signal.SIGINT}
# also held back for the threads the pool starts (they inherit the mask): a write of theirs
# to a worker already gone (a group's SIGTERM ends the workers first) must fail with EPIPE,
# which the pool handles, and not end this process by SIGPIPE before its own handler runs
_MASKED = _STOP_SIGNALS | ({signal.SIGPIPE} if hasattr(signal, "SIGPIPE") else set())


@contextmanager
def _sigint_blocked():
    """SIGINT, SIGTERM and SIGHUP (and SIGPIPE, see ``_MASKED``) held back while helper
    processes and the pool's threads start.

    A process started meanwhile (the fork server, the resource tracker, a worker) inherits
    the signal mask, so it never gets a Ctrl-C halfway through its imports, and a signal to
    the whole group cannot kill the resource tracker (it would be restarted and warn of
    leaks). This process's handlers are deferred too: the mask holds only for this thread,
    and a signal another thread takes would still run the handler here, halfway through
    starting a worker the pool does not know yet. The signal is handled right after, with
    every worker started known to the pool (and so stopped by :func:`stop_workers`)."""
    if not (hasattr(signal, "pthread_sigmask")
            and threading.current_thread() is threading.main_thread()):
        yield  # pragma: no cover - not POSIX, or not the main thread
        return
    received: list[int] = []

    def defer(signum, frame):
        received.append(signum)
    handlers = {}
    for sig in _STOP_SIGNALS:
        old = signal.getsignal(sig)
        if callable(old):  # a Python handler: defer it (an ignored signal stays ignored)
            handlers[sig] = signal.signal(sig, defer)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _MASKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if received:
            handler = handlers[received[0]]
            handler(received[0], None)


def _submit(executor, *args):
    with _sigint_blocked():
        return executor.submit(*args)


def pool(jobs: int) -> ProcessPoolExecutor:
    """A process pool of ``jobs`` workers, kept for the next dump of the same run."""
    if jobs not in _POOL:
        for old in _POOL.values():
            old.shutdown(wait=False, cancel_futures=True)
        _POOL.clear()
        with _sigint_blocked():
            _POOL[jobs] = ProcessPoolExecutor(max_workers=jobs, mp_context=_context(),
                                              initializer=_worker_init,
                                              initargs=(_runtime_warnings_raise(),
                                                        heap.kept(), _ignored()))
    return _POOL[jobs]


def _runtime_warnings_raise() -> bool:
    """Whether this process turns RuntimeWarnings into errors (the command line does):
    workers do as their parent does."""
    for action, _, category, _, _ in warnings.filters:
        if issubclass(RuntimeWarning, category):
            return action == "error"
    return False


def _ignored() -> tuple[int, ...]:
    """The stop signals this process ignores (SIGHUP under ``nohup``): its workers ignore
    them too, or a signal to the whole group would end the workers and not the run."""
    return tuple(sorted(sig for sig in _WORKER_UNBLOCKED
                        if signal.getsignal(sig) is signal.SIG_IGN))


def _watch_parent() -> None:
    """End this worker as soon as the process that started its pool ends, however it ends.

    multiprocessing hands each worker a sentinel of its parent: the read end of a pipe
    whose write end only the parent holds (through a fork server too, whose children the
    workers are), so it reaches end-of-file when the parent ends. On Linux the kernel then
    sends this worker SIGKILL itself (the pipe in O_ASYNC mode, with F_SETSIG naming the
    signal): no thread and no lock is needed, so a worker deep inside a long C call ends
    at once too. Elsewhere, and as a second guard, a daemon thread waits for the
    end-of-file and ends the process. (PR_SET_PDEATHSIG would not do: a worker's parent
    is the fork server, which outlives the run while a worker lives, and the signal
    follows the thread that forked, not the process.)"""
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is None:  # pragma: no cover - not started by multiprocessing
        return
    _kill_on_hangup(sentinel)
    watch = threading.Thread(target=_end_with_parent, args=(sentinel,), daemon=True,
                             name="tieeval-parent-watch")
    watch.start()


def _kill_on_hangup(fd: int) -> None:
    """Have the kernel send this process SIGKILL when the pipe ``fd`` reads from has no
    writer left (Linux; nothing elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the watch thread does it
        return
    set_signal = getattr(fcntl, "F_SETSIG", None)  # Linux only
    if set_signal is None or not isinstance(fd, int):  # pragma: no cover
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, set_signal, signal.SIGKILL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    except OSError:  # pragma: no cover - not a pipe after all: the watch thread does it
        pass


def _end_with_parent(sentinel) -> None:
    from multiprocessing.connection import wait
    try:
        wait([sentinel])  # also ready at once if the parent ended meanwhile
    except (OSError, ValueError):  # pragma: no cover - the sentinel is gone: no watch
        return
    os._exit(1)


def _worker_init(runtime_errors: bool = False, keep_heap: bool = False,
                 ignored: tuple[int, ...] = ()) -> None:
    _watch_parent()  # first: a parent gone while this worker started ends it too
    # Ctrl-C reaches the whole process group: the main process stops the workers
    # (stop_workers), and they must not print a KeyboardInterrupt traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # started with them blocked (_sigint_blocked)
        for sig in _WORKER_UNBLOCKED:
            # stop_workers ends a worker with SIGKILL, whatever it ignores
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_UNBLOCKED)
    if runtime_errors:
        warnings.simplefilter("error", RuntimeWarning)
    if keep_heap:  # as the parent keeps its own
        heap.keep_freed_heap()


def stop_workers() -> None:
    """End the worker processes now (on an interrupt) and cancel what is queued: nothing
    waits for work in progress."""
    if hasattr(signal, "SIGPIPE"):
        # the pool's feeder may still write to a worker that is gone: an error there, not
        # a kill of this process
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # the pool's own thread may stumble on futures cancelled meanwhile (Python 3.11 marks
    # them failed): nothing to report while the process ends
    hook, threading.excepthook = threading.excepthook, lambda args: None
    try:
        for executor in list(_POOL.values()):
            processes = list((getattr(executor, "_processes", None) or {}).values())
            for proc in processes:
                try:
                    # SIGKILL: a worker still starting has SIGTERM blocked (_sigint_blocked)
                    proc.kill()
                except (OSError, ValueError, AttributeError):  # pragma: no cover - gone
                    pass
            for proc in processes:  # gone before the pool's queues and locks are released
                try:
                    proc.join(10)
                except (OSError, ValueError, AssertionError):  # pragma: no cover
                    pass
            try:
                executor.shutdown(wait=True, cancel_futures=True)
            except Exception:  # pragma: no cover - a broken pool is what we want here
                pass
    finally:
        threading.excepthook = hook
    _POOL.clear()


@atexit.register
def _shutdown() -> None:
    for executor in _POOL.values():
        executor.shutdown(wait=True, cancel_futures=True)
    _POOL.clear()


def _run_part(part, kernel, batch_rows, fused_on=False):
    """One part's accumulator, in a worker: its batches one after another, read as the
    threads of one process read them (:func:`tieeval.io.base.row_tasks`, together: the
    other workers read at the same time)."""
    fused.use(fused_on)
    threads.set_threads(1)  # the pool's workers already use every core
    tasks = row_tasks([part], batch_rows, together=True)
    acc = kernel.accumulate(part.batches(batch_rows) if tasks is None else
                            (task() for task in tasks))
    return acc, acc.instances, part.nbytes


def _run_batch(batch, kernel, fused_on=False):
    fused.use(fused_on)
    threads.set_threads(1)
    acc = kernel.new()
    kernel.add(acc, batch)
    return acc, batch.rows, batch.nbytes


def accumulate_parallel(dump: Dump, kernel: Kernel, *, jobs: int, batch_rows: int,
                        progress=None) -> Accumulator:
    """The dump's accumulator under ``kernel``, computed by ``jobs`` worker processes (see
    the module doc)."""
    parts = dump.parts
    small = dump.nbytes and dump.nbytes < MIN_PARALLEL_BYTES
    # A front-to-back source keeps this process busy reading (and decompressing): workers
    # pay off only with cores to spare beside it. Measured on 2 cores, shipping batches to
    # one worker was 1.7x slower than counting them here (benchmarks/README.md).
    serial_source = parts is None and jobs < MIN_JOBS_FOR_SHIPPING
    if jobs <= 1 or small or serial_source or (parts is not None and len(parts) < 2):
        return kernel.accumulate(dump.batches(batch_rows), progress)
    executor = pool(jobs)
    total = kernel.new()
    pending: deque = deque()

    def drain(limit):
        while len(pending) > limit:  # in dump order: the first error is the first in it
            acc, rows, nbytes = pending.popleft().result()
            total.merge(acc)
            if progress is not None:
                progress(rows, nbytes)
    try:
        if parts is not None:
            pending.extend(_submit(executor, _run_part, part, kernel, batch_rows,
                                   fused.active()) for part in parts)
        else:
            for batch in dump.batches(batch_rows):
                pending.append(_submit(executor, _run_batch, batch, kernel, fused.active()))
                drain(2 * jobs)
        drain(0)
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise
    if parts is not None:
        dump.finish()  # the workers read the parts: checks due at the end run here
    return total
