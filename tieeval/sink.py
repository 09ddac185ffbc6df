"""The output sink: every file tieeval writes goes through :func:`atomic_output`.

Usage::

    from tieeval.sink import atomic_output

    with atomic_output("rows.parquet", inputs=[dump_path], what="the per-instance file") as out:
        out.write(b"...")          # or pq.ParquetWriter(out, schema), fig.savefig(out, ...)

Rules, checked by :func:`check_output_path` when the block is entered (call it earlier too,
to refuse a bad target before a long evaluation) and again just before the rename:

* the target is a regular file or does not exist yet: a directory, FIFO, socket or device
  node (``/dev/null``, ``/dev/full``, any ``mknod`` node) is refused, never replaced;
* the target is none of ``inputs`` (compared by ``(st_dev, st_ino)``, so a hard link or a
  symbolic link to an input is caught) and not inside an input folder (a Parquet dataset);
  inside :func:`run_files` (a command of the command line) neither is it any input of the
  run, the regular file behind standard input included (:func:`protect_descriptor`:
  ``-o /dev/stdin``, ``/dev/fd/0``, ``/proc/self/fd/0``), nor a file another output of
  the run names (``-o x --per-instance x``), nor where stdout goes when stdout carries
  another output (:func:`claim_stdout`);
* ``-`` is stdout: the data is gathered in a temporary file and copied to stdout whole
  when complete (so an error leaves nothing half-written there either);
* a symbolic link is written through (its destination is the target, as with a shell's
  ``>``), never replaced: ``/dev/stdout`` or a link into ``/dev`` stays what it was;
* its folder exists (and was not deleted while tieeval runs in it) and is writable, an
  existing target is writable too (a rename would get past a read-only file's
  permissions), and its name fits the file system (``NAME_MAX``).

The data goes to a temporary file ``.NAME.XXXXXXXX.tmp`` in the target's folder (the rename
is atomic only within one file system). ``out`` is a binary, seekable file object whose
every ``write`` is complete or raises: a short write is retried and a write that makes no
progress (a full disk, a file size limit) raises; Python's own buffered files can drop the
rest of a short write without a word. When the block ends without an exception the data is
flushed, ``fsync``-ed, given the target's permissions (an existing target's mode, else
``0o666`` minus the umask) and renamed over the target. On any exception -- an error, or a
signal the command line turns into one (Ctrl-C, SIGTERM, SIGHUP) -- the temporary file is
removed and the target is left as it was.

Every refusal and every failed write raises :class:`~tieeval.errors.OutputError` naming the
target (not the temporary file), which the command line prints as one ``Error:`` line with
exit code 2. ``what`` names the output in those messages (``"the plot"``).

``out.name`` is the temporary file's path, for a writer that only takes a file name; such a
writer must check its own writes, and nothing may be written through both.

A writer that starts, takes batches and finishes in separate calls (a pass's consumer)
uses the same sink without a ``with`` block::

    pending = open_output(path, inputs=[...], what="the per-instance file")
    pending.file.write(...)        # as ``out`` above
    pending.commit()               # or pending.discard() on any error or interrupt
"""

from __future__ import annotations

import atexit
import errno
import io
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tieeval.errors import OutputError

# Small writes (Parquet page headers, zip member headers) are gathered up to this size, so
# that a writer making many small calls does not make as many system calls.
_BUFFER_BYTES = 1 << 20
_DEFAULT_NAME_MAX = 255
# the temporary name is ".NAME.XXXXXXXX.tmp": NAME is cut so that it fits NAME_MAX too
_TEMP_EXTRA = len(".") + len(".") + 8 + len(".tmp")

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def _reason(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)


def _name_max(folder: str) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # pragma: no cover - not POSIX
        return _DEFAULT_NAME_MAX


def _kind(mode: int) -> str:
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"  # pragma: no cover - a door, a whiteout


def _local_inputs(inputs: Iterable) -> Iterator[str]:
    for item in inputs or ():
        if item is None:
            continue
        path = os.fspath(item)
        if path.lower().startswith("file://"):
            from urllib.parse import unquote, urlparse
            path = unquote(urlparse(path).path)
        elif "://" in path:  # an object store: not a file of this machine
            continue
        yield path


STDOUT = "-"  # an output named "-" goes to standard output (see PendingOutput)


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _absolute(path: str) -> str:
    """``path`` made absolute for a message; as given when the working folder is gone."""
    try:
        return os.path.abspath(path)
    except OSError:
        return path


def _follow(path: str) -> str:
    """``path`` with its symbolic links followed (a link's destination is where a write
    through it lands). Without a working folder (deleted while tieeval runs, where a path
    through ``..`` still leads somewhere) the links of the last part are followed by hand."""
    try:
        return os.path.realpath(path)
    except OSError:
        pass
    for _ in range(40):  # the kernel's own limit on links followed
        try:
            target = os.readlink(path)
        except OSError:
            return path
        path = target if os.path.isabs(target) else os.path.join(os.path.dirname(path),
                                                                  target)
    return path


def _inside(folder: str, ancestor: os.stat_result) -> bool:
    """Whether ``folder`` (an existing folder) is ``ancestor`` or lies below it: compared
    by device and inode up to the root (no working folder needed, a bind mount or a link
    on the way cannot hide it)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    for _ in range(4096):
        if _identity(st) == _identity(ancestor):
            return True
        folder = os.path.join(folder, os.pardir)
        try:
            parent = os.stat(folder)
        except OSError:
            return False
        if _identity(parent) == _identity(st):  # the root: its parent is itself
            return False
        st = parent
    return False  # pragma: no cover - deeper than any path


# ---------------------------------------------------------------------------------------
# the run under way: the files it reads, and the outputs it names

@dataclass
class _Run:
    """The files of one run (one command): every input, which no output may be, and every
    output named so far, no two of which may be one file (see :func:`run_files`)."""

    inputs: list[tuple[str, os.stat_result]] = field(default_factory=list)  # (shown, stat)
    # (what, where: the folder's identity and the name, or "stdout", identity or None,
    # the name shown)
    outputs: list[tuple[str, tuple, tuple[int, int] | None, str]] = field(default_factory=list)


_RUN: _Run | None = None


@contextmanager
def run_files() -> Iterator[None]:
    """A run (a command of the command line): the block in which its outputs are checked
    against its inputs and each other (see the module doc)."""
    global _RUN
    outer, _RUN = _RUN, _Run()
    try:
        yield
    finally:
        _RUN = outer


def protect_input(path, *, shown: str | None = None) -> None:
    """Remember ``path`` (a file or a dataset folder) as an input of the run under way;
    ``shown`` names it in messages. Nothing outside :func:`run_files`."""
    if _RUN is None:
        return
    for local in _local_inputs([path]):
        try:
            _RUN.inputs.append((shown or local, os.stat(local)))
        except OSError:
            pass  # not there: its reader says so


def protect_descriptor(fd: int, shown: str) -> None:
    """Remember the regular file open as descriptor ``fd`` (standard input redirected from
    a file) as an input of the run under way: no output may land on it, whatever name
    reaches it (``/dev/stdin``, ``/dev/fd/0``, ``/proc/self/fd/0``, a link, its own)."""
    if _RUN is None:
        return
    try:
        st = os.fstat(fd)
    except OSError:
        return  # closed
    if stat.S_ISREG(st.st_mode):
        _RUN.inputs.append((shown, st))


def _claim(path: str, what: str, where: tuple, ident: tuple[int, int] | None) -> None:
    """Record ``what`` as written to ``where`` (and the file ``ident``, if it exists) in the
    run under way; refused when another output of the run is already there."""
    if _RUN is None:
        return
    for other, other_where, other_ident, other_shown in _RUN.outputs:
        if other == what:
            continue
        if other_where == where or (ident is not None and ident == other_ident):
            if where == ("stdout",):
                raise OutputError(f"{path}: stdout already carries {other}; one output "
                                  f"can go to stdout: write {what} or {other} to a file")
            if other_where == ("stdout",):
                raise OutputError(f"{path}: is the file stdout is redirected to, which "
                                  f"carries {other}; name another file for {what}")
            raise OutputError(f"{path}: is also {other} of this run ({other_shown}); "
                              f"each output needs a file of its own")
    if not any(o[0] == what and o[1] == where for o in _RUN.outputs):
        _RUN.outputs.append((what, where, ident, path))


def claim_stdout(what: str = "the output") -> None:
    """Record that ``what`` goes to stdout in the run under way: no other output may go
    there, nor to the file stdout is redirected to; refused when that file is an input
    (``>> input``)."""
    try:
        st: os.stat_result | None = os.fstat(1)
    except OSError:
        st = None
    ident = _identity(st) if st is not None and stat.S_ISREG(st.st_mode) else None
    if _RUN is not None and ident is not None:
        for source, src in _RUN.inputs:
            if _identity(src) == ident:
                raise OutputError(f"stdout: is the input {source}; tieeval never "
                                  f"overwrites its inputs: redirect {what} elsewhere")
    _claim(STDOUT, what, ("stdout",), ident)


def check_output_path(path, *, inputs: Iterable = (), what: str = "the output") -> str:
    """Refuse ``path`` as a place to write ``what`` by the module doc's rules (``inputs``:
    the files and folders it may not be); returns it as a string (``"-"``: stdout)."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise OutputError(f"an empty file name for {what}")
    if path == STDOUT:
        try:
            os.fstat(1)
        except OSError as exc:
            reason = "it is closed" if exc.errno == errno.EBADF else _reason(exc)
            raise OutputError(f"stdout: cannot write {what}: {reason}") from None
        claim_stdout(what)
        return STDOUT
    base = os.path.basename(path)
    if not base or base in (".", ".."):
        raise OutputError(f"{path}: names a folder; {what} needs a file name")
    given = path
    through: os.stat_result | None = None
    if os.path.islink(path):
        # written through the link, as a shell's redirection does: the rename would
        # otherwise replace the link itself (/dev/stdout, a link into /dev or /proc)
        try:
            through = os.stat(path)  # what the link leads to (/proc/self/fd/N: the file
        except OSError:              # open there, even one deleted or renamed since)
            through = None
        path = _follow(path)
        base = os.path.basename(path)
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise OutputError(f"{path}: a part of the path is not a folder") from None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write {what}: {_reason(exc)}") from None
    if through is not None and (st is None or _identity(st) != _identity(through)):
        if not stat.S_ISREG(through.st_mode):
            raise OutputError(f"{given}: is {_kind(through.st_mode)}, not a regular file; "
                              f"tieeval writes {what} to regular files only")
        # a descriptor's link (/dev/fd/N) to a file deleted or renamed since it was opened
        for source, src in _all_inputs(inputs):
            if not stat.S_ISDIR(src.st_mode) and _identity(src) == _identity(through):
                raise OutputError(f"{given}: is the input {source}; tieeval never "
                                  f"overwrites its inputs: choose another file name for "
                                  f"{what}")
        raise OutputError(f"{given}: leads to a file that no longer has the name {path}; "
                          f"name the file to write {what} to")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: is {_kind(st.st_mode)}, not a regular file; tieeval "
                          f"writes {what} to regular files only")
    if st is not None and not os.access(path, os.W_OK):
        # a rename would get past the file's own permissions: honour them as a write would
        raise OutputError(f"{path}: cannot write {what}: the file is read-only "
                          "(Permission denied)")
    # checks through the path as given (a parent of an absolute path may be closed to the
    # user while the working folder is open); messages name the absolute folder
    folder = os.path.dirname(path) or os.curdir
    shown = os.path.dirname(_absolute(path)) or folder
    try:
        folder_st: os.stat_result | None = os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):
        folder_st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write {what}: {_reason(exc)}") from None
    if folder_st is None or not stat.S_ISDIR(folder_st.st_mode):
        raise OutputError(f"{path}: folder {shown} does not exist")
    if folder_st.st_nlink == 0:  # removed while tieeval runs in it: nothing can be made
        there = "the working folder" if folder == os.curdir else f"the folder {shown}"
        raise OutputError(f"{path}: cannot write {what}: {there} was deleted; name a file "
                          "in a folder that exists")
    limit = _name_max(folder)
    size = len(os.fsencode(base))
    if size > limit:
        raise OutputError(f"{path}: file name too long ({size} bytes; the file system "
                          f"allows {limit})")
    for source, src in _all_inputs(inputs):
        if stat.S_ISDIR(src.st_mode):
            if _inside(folder, src):
                raise OutputError(f"{path}: is inside the input folder {source}; write "
                                  f"{what} elsewhere")
            if st is not None and st.st_nlink > 1 and _linked_inside(st, source):
                raise OutputError(f"{path}: is a file of the input folder {source} (a hard "
                                  f"link to it); tieeval never overwrites its inputs: "
                                  f"choose another file name for {what}")
        elif st is not None and _identity(st) == _identity(src):
            raise OutputError(f"{path}: is the input {source}; tieeval never overwrites "
                              f"its inputs: choose another file name for {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write {what}: the folder {shown} is not "
                          "writable")
    _claim(path, what, (*_identity(folder_st), base),
           None if st is None else _identity(st))
    return path


def _linked_inside(st: os.stat_result, folder: str) -> bool:
    """Whether a file under ``folder`` is the file ``st`` (another name of it: looked for
    only when the file has several)."""
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                if _identity(os.stat(os.path.join(root, name))) == _identity(st):
                    return True
            except OSError:
                continue
    return False


def _all_inputs(inputs: Iterable) -> Iterator[tuple[str, os.stat_result]]:
    """``inputs`` (paths) and the run's (see :func:`run_files`), each with its stat."""
    for source in _local_inputs(inputs):
        try:
            yield source, os.stat(source)
        except OSError:
            continue  # not there: the reader says so, this is not about the output
    if _RUN is not None:
        yield from _RUN.inputs


def write_all(fd: int, data) -> None:
    """Write every byte of ``data`` (bytes or a byte view) to ``fd``: Python's buffered files
    can drop the rest of a short write without a word. A write that makes no progress and
    gives no errno raises ENOSPC, the full disk it is."""
    view = memoryview(data).cast("B")
    done = 0
    while done < view.nbytes:
        n = os.write(fd, view[done:])
        if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done += n


class SinkFile(io.RawIOBase):
    """A binary, seekable file object over a temporary file whose every write is complete
    or raises :class:`~tieeval.errors.OutputError` (see :mod:`tieeval.sink`).
    ``close()`` only flushes: the descriptor belongs to :func:`atomic_output`."""

    def __init__(self, fd: int, name: str, target: str, what: str):
        super().__init__()
        self._fd = fd
        self.name = name
        self._target = target
        self._what = what
        self._buffer = bytearray()
        self.written = 0  # bytes handed to write(), for callers that report a size

    # -- io interface ------------------------------------------------------------------
    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("write to a closed file")
        view = memoryview(data).cast("B")
        size = view.nbytes
        if self._buffer and len(self._buffer) + size > _BUFFER_BYTES:
            self._drain()
        if size >= _BUFFER_BYTES:
            self._write_all(view)
        else:
            self._buffer += view
        self.written += size
        return size

    def flush(self) -> None:
        if not self.closed:
            self._drain()

    def tell(self) -> int:
        return self._seek(0, os.SEEK_CUR) + len(self._buffer)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._drain()
        return self._seek(offset, whence)

    # -- the checked writes ------------------------------------------------------------
    def _failed(self, exc: OSError) -> OutputError:
        return OutputError(f"{self._target}: cannot write {self._what}: {_reason(exc)}")

    def _seek(self, offset: int, whence: int) -> int:
        try:
            return os.lseek(self._fd, offset, whence)
        except OSError as exc:
            raise self._failed(exc) from None

    def _drain(self) -> None:
        if self._buffer:
            data, self._buffer = self._buffer, bytearray()
            self._write_all(memoryview(data))

    def _write_all(self, view: memoryview) -> None:
        try:
            write_all(self._fd, view)
        except OSError as exc:
            raise self._failed(exc) from None

    def _finish(self) -> None:
        """Everything on disk (``fsync``), the descriptor closed; errors raise."""
        self._drain()
        super().close()
        try:
            os.fsync(self._fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EROFS):  # no fsync here: nothing to lose
                raise self._failed(exc) from None
        fd, self._fd = self._fd, -1
        try:
            os.close(fd)
        except OSError as exc:
            raise self._failed(exc) from None

    def _discard(self) -> None:
        self._buffer = bytearray()
        try:
            super().close()
        except Exception:  # pragma: no cover - closing after a failure
            pass
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.close(fd)
            except OSError:  # pragma: no cover - already gone
                pass


# Every temporary file not yet renamed or removed, by name: the name is recorded before the
# file exists, so a signal at any point between creating it and handing it to the caller
# still leaves it known, and whatever is left at exit (an interrupt that came too early for
# the caller's clean-up) is removed then.
_LIVE_TEMPS: set[str] = set()


def create_temp(folder: str, prefix: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A new private file ``folder/PREFIX<8 hex digits>SUFFIX``, open for writing: its
    descriptor and name. The name is known from before the file exists until
    :func:`remove_temp` (or a rename) forgets it, and whatever is left is removed at exit."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(1000):
        name = os.path.join(folder, f"{prefix}{os.urandom(4).hex()}{suffix}")
        _LIVE_TEMPS.add(name)
        try:
            fd = os.open(name, flags, 0o600)
        except FileExistsError:  # another file's name: not ours to remove
            _LIVE_TEMPS.discard(name)
            continue
        except OSError:  # nothing was created
            _LIVE_TEMPS.discard(name)
            raise
        # anything else (a signal's exception, which may come right after the file was
        # created, before this frame returns) leaves the name known: removed at exit
        return fd, name
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)  # pragma: no cover


def remove_temp(name: str) -> None:
    """Remove a file made by :func:`create_temp` (if it is still there) and forget it."""
    try:
        os.unlink(name)
    except OSError:  # already gone, or the folder went away
        pass
    _LIVE_TEMPS.discard(name)


@atexit.register
def _remove_leftovers() -> None:
    for name in list(_LIVE_TEMPS):
        remove_temp(name)


def _target_mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _temp_prefix(base: str, limit: int) -> str:
    room = max(1, limit - _TEMP_EXTRA)
    raw = os.fsencode(base)
    if len(raw) > room:
        raw = raw[:room]
        base = raw.decode("utf-8", "ignore") or "out"
    return f".{base}."


class PendingOutput:
    """An output being written without a ``with`` block (see the module doc); its
    :meth:`discard` is safe to call twice, or after :meth:`commit`."""

    def __init__(self, path, *, inputs: Iterable = (), what: str = "the output"):
        self.inputs = list(_local_inputs(inputs))
        self.what = what
        self.target = check_output_path(path, inputs=self.inputs, what=what)
        if self.target == STDOUT:  # gathered in the temporary folder, copied at the end
            import tempfile
            folder, prefix = tempfile.gettempdir(), ".tieeval-stdout."
        else:
            folder = os.path.dirname(self.target) or os.curdir
            prefix = _temp_prefix(os.path.basename(self.target), _name_max(folder))
        try:
            fd, self._tmp = create_temp(folder, prefix)
        except OSError as exc:
            raise OutputError(f"{self.target}: cannot write {what}: {_reason(exc)}") from None
        self.file = SinkFile(fd, self._tmp, self.target, what)
        self._done = False

    def commit(self) -> None:
        """Flush, ``fsync`` and rename over the target (checked again: it may have become
        something else meanwhile); on any error the temporary file is removed."""
        if self._done:
            raise ValueError(f"{self.target}: the output was already committed or discarded")
        try:
            self.file._finish()
            check_output_path(self.target, inputs=self.inputs, what=self.what)
            if self.target == STDOUT:
                self._copy_to_stdout()
            else:
                try:
                    os.chmod(self._tmp, _target_mode(self.target))  # a temporary file is private
                    os.replace(self._tmp, self.target)
                    _LIVE_TEMPS.discard(self._tmp)
                except OSError as exc:
                    raise OutputError(f"{self.target}: cannot write {self.what}: "
                                      f"{_reason(exc)}") from None
            self._done = True
        except BaseException:
            self.discard()
            raise

    def _copy_to_stdout(self) -> None:
        """The whole temporary file to stdout, every write checked. The file is removed
        before the first byte goes out: a closed pipe ends the process (SIGPIPE) with
        nothing left behind."""
        try:
            source = os.open(self._tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise OutputError(f"stdout: cannot write {self.what}: {_reason(exc)}") from None
        remove_temp(self._tmp)
        try:
            import sys
            if sys.stdout is not None:
                sys.stdout.flush()  # what was printed before goes first
            while data := os.read(source, _BUFFER_BYTES):
                try:
                    write_all(1, data)
                except BrokenPipeError:
                    raise
                except OSError as exc:
                    raise OutputError(f"stdout: cannot write {self.what}: "
                                      f"{_reason(exc)}") from None
        finally:
            os.close(source)

    def discard(self) -> None:
        """Remove the temporary file and leave the target as it was."""
        if self._done:
            return
        self._done = True
        self.file._discard()
        remove_temp(self._tmp)


def open_output(path, *, inputs: Iterable = (), what: str = "the output") -> PendingOutput:
    """Check ``path`` and open a temporary file beside it: see :class:`PendingOutput`."""
    return PendingOutput(path, inputs=inputs, what=what)


@contextmanager
def atomic_output(path, *, inputs: Iterable = (), what: str = "the output"
                  ) -> Iterator[SinkFile]:
    """Write ``path`` safely: :class:`PendingOutput` in a ``with`` block, whose
    :class:`SinkFile` it yields (see :mod:`tieeval.sink`)."""
    pending = open_output(path, inputs=inputs, what=what)
    try:
        yield pending.file
    except BaseException:
        pending.discard()
        raise
    pending.commit()


__all__ = ["atomic_output", "open_output", "PendingOutput", "check_output_path", "SinkFile",
           "run_files", "protect_input", "protect_descriptor", "claim_stdout", "STDOUT",
           "write_all"]
