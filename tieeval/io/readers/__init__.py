"""The readers, registered: one module here per dump format.

Each module of this package declares its format as a module-level ``READER``
(:class:`Reader`): the suffixes and magic bytes that name it, the layouts and fields it can
carry, and the function that opens it. The modules are found by listing the package (a
new format is one new module; a module without ``READER`` is an error at the first
look-up), and they import nothing heavy at module level: the reader proper is imported by
its ``open`` when a dump of its format is opened, so a run loads only the reader it uses.

:func:`tieeval.io.open.open_dump` asks :func:`detect` which reader a path needs; the
"unknown format" message (:func:`expected`), the layout checks and standard input's sniff
(:func:`sniff`) read the same declarations.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from tieeval.errors import InputError
from tieeval.io.base import HOW_TO_DUMP, not_a_dump

if TYPE_CHECKING:
    from tieeval.io.base import Dump, ReadOptions

#: What a dump of a format may carry beside its scores (:attr:`Reader.carries`).
CARRIES = {
    "positive": "the positive's column per row (or --positive-index)",
    "labels": "relevance fields: labels, or positives / negatives",
    "items": "candidate ids, for the duplicate check",
    "ranking": "the codebase's own ranking (--original given)",
    "ids": "instance ids",
    "metadata": "run metadata (method, dataset, seed ...)",
}


@dataclass(frozen=True)
class Reader:
    """One dump format.

    ``name`` is the dump's ``format``; ``title`` names it in messages; ``open(path,
    options)`` returns its :class:`~tieeval.io.base.Dump` (the path is a regular file, or a
    folder when ``folder``). ``suffixes`` are matched at the end of a lower-cased path
    (``.csv.gz`` included), ``magic`` against its first bytes; ``looks_like(first_line)``
    recognises a text format without magic bytes on standard input, which has no name.
    ``layouts``: the wide layout (a row of scores per instance), the long one (a row per
    candidate), or both. ``carries``: the keys of :data:`CARRIES` it may hold. ``folder``:
    a directory of its files is one dump. ``chosen_by``: an option that selects this
    reader whatever the file (a TREC run is read with ``--qrels``). ``order`` places it in
    the lists of messages.
    """

    name: str
    title: str
    open: Callable[[str, ReadOptions], Dump]
    suffixes: tuple[str, ...] = ()
    magic: tuple[bytes, ...] = ()
    layouts: tuple[str, ...] = ("wide",)
    carries: frozenset[str] = frozenset()
    folder: bool = False
    looks_like: Callable[[bytes], bool] | None = None
    chosen_by: str | None = None
    order: int = 100

    @property
    def shown(self) -> str:
        """How the "unknown format" message names it: ``.parquet/.pq``, ``long-layout
        .csv/.csv.gz``, ``a TREC run with --qrels``."""
        if self.chosen_by is not None:
            return f"a {self.title} with --{self.chosen_by}"
        long_only = "long-layout " if self.layouts == ("long",) else ""
        return long_only + "/".join(self.suffixes)


def opened_by(module: str, name: str) -> Callable[[str, ReadOptions], Dump]:
    """A reader's ``open``: ``module.name(path, options)``, imported at the first call."""
    def open_(path: str, options: ReadOptions) -> Dump:
        return getattr(importlib.import_module(module), name)(path, options)
    return open_


@functools.cache
def readers() -> tuple[Reader, ...]:
    """Every registered reader, in :attr:`Reader.order` (then name); no two may declare one
    name, suffix or magic."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        declared = getattr(importlib.import_module(f"{__name__}.{module.name}"), "READER", None)
        if not isinstance(declared, Reader):
            raise RuntimeError(f"{__name__}.{module.name} declares no READER (a Reader): "
                               "every module of this package is a dump format")
        found.append(declared)
    found.sort(key=lambda r: (r.order, r.name))
    for what in ("name", "suffixes", "magic"):
        seen: dict[object, str] = {}
        for reader in found:
            values = getattr(reader, what)
            for value in (values,) if isinstance(values, str) else values:
                if value in seen:
                    raise RuntimeError(f"readers {seen[value]} and {reader.name} both declare "
                                       f"{what} {value!r}")
                seen[value] = reader.name
    return tuple(found)


def reader(name: str) -> Reader:
    """The reader of format ``name`` (a dump's ``format``)."""
    for found in readers():
        if found.name == name:
            return found
    raise KeyError(name)


def chosen_by(options: ReadOptions) -> Reader | None:
    """The reader an option selects whatever the file (``qrels``: a TREC run), if set."""
    return next((r for r in readers()
                 if r.chosen_by is not None and getattr(options, r.chosen_by, None) is not None),
                None)


def titles(readers_: list[Reader]) -> str:
    """``Parquet or CSV``: the readers' titles joined for a message."""
    names = [r.title for r in readers_]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def with_layout(layout: str) -> list[Reader]:
    """The readers (of files) that read ``layout``."""
    return [r for r in readers() if layout in r.layouts and r.chosen_by is None]


def expected() -> str:
    """What a dump may be, for the "unknown format" message."""
    shown = [r.shown for r in readers()]
    return f"{', '.join(shown[:-1])} or {shown[-1]}"


def by_magic(head: bytes) -> Reader | None:
    """The reader whose magic bytes start ``head``, if any."""
    return next((r for r in readers() for m in r.magic if head.startswith(m)), None)


def sniff(head: bytes) -> Reader | None:
    """The reader of a nameless stream (standard input) from its first bytes: the magic
    bytes, else (``head`` then holding its first line) a text format that recognises it."""
    found = by_magic(head)
    if found is not None:
        return found
    line = head.split(b"\n", 1)[0]
    return next((r for r in readers() if r.looks_like is not None and r.looks_like(line)),
                None)


# Not read, but worth a precise message rather than "unknown format".
_PICKLE_SUFFIXES = {".pt": "a torch.save file", ".pth": "a torch.save file",
                    ".pkl": "a pickle", ".pickle": "a pickle", ".joblib": "a joblib pickle"}
_OTHER_COMPRESSION = {".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd",
                      ".lz4": "lz4", ".zip": "zip", ".br": "brotli", ".snappy": "snappy"}


def detect(path: str) -> Reader:
    """The reader of the file at ``path``: by its suffix, else by its first bytes."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix in _PICKLE_SUFFIXES:
        raise not_a_dump(path, _PICKLE_SUFFIXES[suffix])
    if suffix in _OTHER_COMPRESSION and ".csv" in path.lower():
        raise InputError(f"{path}: {_OTHER_COMPRESSION[suffix]}-compressed CSV is not read; "
                         "decompress it, or compress it with gzip (.csv.gz)")
    # the reader whose longest suffix ends the path (case-insensitively)
    lower = path.lower()
    best = max(((len(s), r) for r in readers() for s in r.suffixes if lower.endswith(s)),
               key=lambda pair: pair[0], default=None)
    if best is not None:
        return best[1]
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    found = by_magic(head)
    if found is not None:
        return found
    if head.startswith(b"\x1f\x8b"):
        raise InputError(f"{path}: gzip-compressed; a gzip-compressed long-layout CSV is read "
                         "when its name ends in .csv.gz")
    if head.startswith(b"\x80"):  # pickle protocol 2 and later (torch, joblib, pickle)
        raise not_a_dump(path, "a pickle")
    raise InputError(f"{path}: unknown format (expected {expected()}); {HOW_TO_DUMP}")


def detect_format(path: str) -> str:
    """The dump format (a reader's name) of the file at ``path``."""
    return detect(path).name
