"""``-`` as a dump's name: the dump read from standard input.

Readers need a file they can seek in (Parquet's footer is at the end, NPZ's directory
too), so standard input is spooled to one temporary file, bounded by the disk as any
dump is, and that file is evaluated as the dump. The format is sniffed from its first
bytes by the registered readers (:func:`tieeval.io.readers.sniff`: magic bytes, or a text
format's first line, a long-layout CSV's header) and given as the file's suffix; other
text is named ``.txt`` (a TREC run, read with ``--qrels``). The file is removed
when the command ends, however it ends (the application turns SIGTERM and SIGHUP into an
unwinding exception, so the context's close runs; the exit is the last resort, through
:func:`tieeval.sink.create_temp`, which knows the name from before the file exists).
Results, warnings and errors name it ``<stdin>``.
"""

from __future__ import annotations

import os
import sys

import click

from tieeval.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
_FIRST_LINE = 1 << 16  # the most bytes of a text dump's first line sniffed
_CHUNK = 1 << 20
_SPOOLED: dict[str, str] = {}  # the spool's path -> the name the user reads


def stdin_files(ctx: click.Context, param, files):
    """A click callback for DUMP arguments: ``-`` becomes the path of standard input's
    spool (once: standard input can be read only once)."""
    if STDIN not in files:
        return files
    if files.count(STDIN) > 1:
        raise click.UsageError("'-' (standard input) can be given once")
    if sys.stdin is None:  # descriptor 0 closed (<&-): Python has no stream for it
        raise InputError(f"{STDIN_NAME}: standard input is closed; pipe or redirect the "
                         "dump into tieeval")
    path = spool(sys.stdin.buffer)
    ctx.call_on_close(lambda: _remove(path))
    return tuple(path if f == STDIN else f for f in files)


def file_only(ctx: click.Context, param, value):
    """A click callback for an input option read from a file only (``--qrels``,
    ``--claims``): ``-`` there is refused for what it is, not looked for as a file named
    ``-`` (``./-`` names such a file)."""
    if value == STDIN:
        option = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        raise InputError(f"{option} -: standard input is read only as a dump ('-' among "
                         "the dumps); name the file")
    return value


def spool(stream) -> str:
    """Copy ``stream`` to a new temporary file named by its format; the file's path."""
    if stream.isatty():
        raise click.UsageError("'-' reads a dump from standard input, which is a terminal; "
                               "pipe or redirect the dump into tieeval")
    head = stream.read(8)
    if not head:
        raise InputError(f"{STDIN_NAME}: empty (nothing was piped or redirected in)")
    from tieeval.io.readers import by_magic, sniff
    if by_magic(head) is None and b"\n" not in head:
        head += stream.readline(_FIRST_LINE)  # a text format is known by its first line
    reader = sniff(head)
    suffix = reader.suffixes[0] if reader is not None and reader.suffixes else ".txt"
    import tempfile  # only here: a command that reads no '-' does not load it

    from tieeval.sink import create_temp
    folder = tempfile.gettempdir()
    try:
        # hidden (a dot first): a dataset folder that is also $TMPDIR never reads it as a part
        fd, path = create_temp(folder, ".tieeval-stdin-", suffix)
    except OSError as exc:
        raise _spool_error(exc, folder) from None
    _SPOOLED[path] = STDIN_NAME
    out = os.fdopen(fd, "wb")
    try:
        chunk = head
        while chunk:
            try:
                out.write(chunk)
            except OSError as exc:  # the spool's disk, not standard input
                raise _spool_error(exc, folder) from None
            chunk = stream.read(_CHUNK)
        try:
            out.close()  # the last buffered bytes land here
        except OSError as exc:
            raise _spool_error(exc, folder) from None
    except BaseException:
        try:
            out.close()
        except OSError:  # its buffer could not be written either: the error above says so
            pass
        _remove(path)
        raise
    return path


def _spool_error(exc: OSError, folder: str) -> InputError:
    """A spool that cannot be written (a full disk, a quota, a folder not writable): the
    error names standard input and the folder, which TMPDIR chooses."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return InputError(f"{STDIN_NAME}: {reason[:1].lower() + reason[1:]} while spooling it "
                      f"to {folder} (standard input is copied to a temporary file there; "
                      "TMPDIR names another folder)")


def _remove(path: str) -> None:
    # the name stays in _SPOOLED: an error raised inside the command is shown after
    # the command's context (and this) has closed
    from tieeval.sink import remove_temp
    remove_temp(path)


def shown(text: str) -> str:
    """``text`` (a path, a message) with any spool's path written ``<stdin>``."""
    for path, name in _SPOOLED.items():
        text = text.replace(path, name)
    return text


def show_run(run) -> None:
    """Name a run read from standard input ``<stdin>``: its path and its warnings."""
    if run.path in _SPOOLED:
        run.path = shown(run.path)
        run.warnings = [shown(w) for w in run.warnings]
        if run.data_warnings:
            run.data_warnings = [{k: shown(v) if isinstance(v, str) else v
                                  for k, v in w.items()} if isinstance(w, dict) else w
                                 for w in run.data_warnings]
