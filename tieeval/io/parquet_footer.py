"""The column-chunk sizes of a Parquet file's row groups, read from its footer here.

pyarrow (26) gives them through ``RowGroupMetaData.column(i)``, which builds the C++
``ColumnChunkMetaData`` without turning its exceptions into Python ones: a footer whose
column metadata the C++ code rejects (a level histogram of the wrong size, say) aborts the
whole process there, while ``read_table`` and the batch reader report the same damage as
a catchable error. So the few numbers tieeval needs before reading (values per column
chunk, bytes per row group) come from the footer's Thrift, decoded by the small
compact-protocol reader below, which never builds anything it does not need and raises
:class:`FooterError` on anything malformed.
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass

# Thrift compact protocol types
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, \
    _STRUCT = range(13)
_FIXED = {_TRUE: 1, _FALSE: 1, _BYTE: 1, _DOUBLE: 8}  # bytes of an element of these types
_MAX_DEPTH = 64  # nesting deeper than any Parquet footer: a hostile one must not recurse


class FooterError(ValueError):
    """The footer is not the Thrift a Parquet writer writes."""


@dataclass(frozen=True)
class ChunkInfo:
    """One column chunk of a row group: its leaf path, stored values and bytes."""

    path: tuple
    num_values: int
    compressed_size: int
    start: int = -1  # the file offset of its first page (-1: not declared)


@dataclass(frozen=True)
class GroupInfo:
    """One row group: its declared rows and its column chunks."""

    num_rows: int
    columns: tuple

    @property
    def compressed_size(self) -> int:
        return sum(c.compressed_size for c in self.columns)

    def values(self, name: str) -> int:
        """The most values any leaf column chunk of top-level column ``name`` stores."""
        return max((c.num_values for c in self.columns if c.path and c.path[0] == name),
                   default=0)


class _Short(FooterError):
    """The bytes end inside the structure (more of them may complete it)."""


class _Reader:
    """A compact-protocol reader whose work is bounded by the bytes it reads: every value,
    every element of a list, set or map (a bool too), every field of a struct takes one
    byte at least, so no declared count loops without reading, and a count larger than
    the bytes left is refused before anything is read."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise _Short("the footer ends early")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise FooterError("a varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if n > len(self.data) - self.pos:
            raise _Short("a string runs past the footer")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def list_header(self) -> tuple[int, int]:
        b = self.byte()
        size, kind = b >> 4, b & 0x0F
        if size == 15:
            size = self.varint()
        if size > len(self.data) - self.pos:  # every element takes a byte at least
            raise _Short("a list longer than the footer")
        return size, kind

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise FooterError("nesting too deep")
        if kind in (_TRUE, _FALSE):
            return
        if kind == _BYTE:
            self.byte()
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            if self.pos + 8 > len(self.data):
                raise _Short("the footer ends early")
            self.pos += 8
        elif kind == _BINARY:
            self.binary()
        elif kind in (_LIST, _SET):
            size, elem = self.list_header()
            width = _FIXED.get(elem)
            if width is not None:  # elements of one size: stepped over at once
                if width * size > len(self.data) - self.pos:
                    raise _Short("a list longer than the footer")
                self.pos += width * size
                return
            for _ in range(size):
                self.element(elem, depth + 1)
        elif kind == _MAP:
            size = self.varint()
            if 2 * size > len(self.data) - self.pos:  # a key and a value: 2 bytes at least
                raise _Short("a map longer than the footer")
            if size:
                types = self.byte()
                for _ in range(size):
                    self.element(types >> 4, depth + 1)
                    self.element(types & 0x0F, depth + 1)
        elif kind == _STRUCT:
            for _ in self.fields(depth + 1):
                pass
        else:
            raise FooterError(f"unknown Thrift type {kind}")

    def element(self, kind: int, depth: int) -> None:
        """Skip an element of a list, set or map: a bool there is a byte of its own (only
        a struct field carries its bool in its type)."""
        if kind in (_TRUE, _FALSE):
            self.byte()
        else:
            self.skip(kind, depth)

    def fields(self, depth: int = 0):
        """``(field id, type)`` of a struct's fields; the caller reads or skips each value."""
        if depth > _MAX_DEPTH:
            raise FooterError("nesting too deep")
        last = 0
        while True:
            b = self.byte()
            kind = b & 0x0F
            if kind == _STOP:
                return
            delta = b >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            start = self.pos
            yield fid, kind
            if self.pos == start:  # the caller did not read it
                self.skip(kind, depth)

    def integer(self, kind: int) -> int:
        if kind not in (_I16, _I32, _I64):
            raise FooterError(f"an integer field of Thrift type {kind}")
        return self.zigzag()


def _column_meta(r: _Reader, depth: int) -> tuple[tuple, int, int, int]:
    path: tuple = ()
    num_values = compressed = data_page = -1
    dictionary_page = 0
    for fid, kind in r.fields(depth):
        if fid == 3 and kind == _LIST:
            size, elem = r.list_header()
            if elem != _BINARY:
                raise FooterError("path_in_schema is not a list of strings")
            path = tuple(r.binary().decode("utf-8", "backslashreplace") for _ in range(size))
        elif fid == 5:
            num_values = r.integer(kind)
        elif fid == 7:
            compressed = r.integer(kind)
        elif fid == 9:
            data_page = r.integer(kind)
        elif fid == 11:
            dictionary_page = r.integer(kind)
    if num_values < 0 or compressed < 0:
        raise FooterError("column metadata without its value count or size")
    # a chunk starts at its dictionary page when it has one; writers that have none write
    # 0 there (or nothing), and some wrote an offset past the data page: then the data page
    start = dictionary_page if 0 < dictionary_page < data_page else data_page
    return path, num_values, compressed, start


def _column_chunk(r: _Reader, depth: int) -> ChunkInfo:
    meta = None
    for fid, kind in r.fields(depth):
        if fid == 3 and kind == _STRUCT:
            meta = _column_meta(r, depth + 1)
    if meta is None:  # encrypted column metadata, or none at all
        raise FooterError("a column chunk without readable metadata")
    return ChunkInfo(*meta)


def _row_group(r: _Reader, depth: int) -> GroupInfo:
    columns: list = []
    num_rows = -1
    for fid, kind in r.fields(depth):
        if fid == 1 and kind == _LIST:
            size, elem = r.list_header()
            if elem != _STRUCT:
                raise FooterError("row group columns are not structs")
            columns = [_column_chunk(r, depth + 1) for _ in range(size)]
        elif fid == 3:
            num_rows = r.integer(kind)
    if num_rows < 0:
        raise FooterError("a row group without its row count")
    return GroupInfo(num_rows, tuple(columns))


def parse_footer(footer: bytes) -> list[GroupInfo]:
    """The row groups of a serialised ``FileMetaData``."""
    r = _Reader(footer)
    groups: list = []
    for fid, kind in r.fields():
        if fid == 4 and kind == _LIST:
            size, elem = r.list_header()
            if elem != _STRUCT:
                raise FooterError("row groups are not structs")
            groups = [_row_group(r, 1) for _ in range(size)]
    return groups


def read_footer(path: str) -> list[GroupInfo]:
    """The row groups of the Parquet file at ``path`` (cached per file version)."""
    st = os.stat(path)
    return _read_footer(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _read_footer(path: str, mtime_ns: int, size: int) -> list[GroupInfo]:
    with open(path, "rb") as fh:
        if size < 12:
            raise FooterError("too short for a Parquet file")
        fh.seek(size - 8)
        tail = fh.read(8)
        if tail[4:] != b"PAR1":
            raise FooterError("no Parquet footer (an encrypted footer is not read)")
        length = struct.unpack("<I", tail[:4])[0]
        if length > size - 12:
            raise FooterError(f"a footer of {length} bytes in a file of {size}")
        fh.seek(size - 8 - length)
        footer = fh.read(length)
    if len(footer) != length:
        raise FooterError("the file changed while its footer was read")
    return parse_footer(footer)


# Some writers (parquet-mr before 1.2.9) counted a column chunk's bytes without its dictionary
# page header: pages may run this many bytes past the declared end (pyarrow allows as much).
CHUNK_SLACK = 100
_HEADER_READ = 1 << 16  # page headers are read in windows of this size ...
_MAX_HEADER = 16 << 20  # ... a longer one up to this size (page statistics can be long)


def check_pages(path: str, chunks, file_size: int) -> None:
    """Walk the page headers of ``chunks`` (:class:`ChunkInfo` of one row group) and raise
    :class:`FooterError` at the first page whose declared size runs past its column chunk.

    pyarrow's buffered page reader allocates a page's declared size before it finds that
    the chunk cannot hold it: a damaged header declaring gigabytes costs that memory and
    seconds of reading before the refusal. A chunk's pages follow each other from its first
    byte to its declared size, so each header's ``compressed_page_size`` is bounded by what
    is left of the chunk (plus :data:`CHUNK_SLACK`). A header that cannot be parsed ends
    the walk of its chunk: the damage is pyarrow's to report, within the chunk's bytes.
    """
    with open(path, "rb") as fh:
        for chunk in chunks:
            if chunk.start < 0:
                continue
            end = min(chunk.start + chunk.compressed_size, file_size)
            pos = chunk.start
            window = _Window(fh, end + CHUNK_SLACK)
            while pos < end:
                got = _page_sizes(window, pos)
                if got is None:
                    break
                header, compressed = got
                room = end + CHUNK_SLACK - (pos + header)
                if compressed > room:
                    column = ".".join(chunk.path) or "?"
                    raise FooterError(f"column {column}: a page header at byte {pos} declares "
                                      f"{compressed} bytes, and its column chunk has "
                                      f"{max(0, end - pos - header)} left")
                pos += header + compressed


class _Window:
    """The bytes of one column chunk (up to ``limit``), read a window at a time: each
    page header is parsed from the window that holds it, not read again on its own, so a
    chunk of many small pages costs its own bytes, read once."""

    def __init__(self, fh, limit: int):
        self.fh, self.limit = fh, limit
        self.data, self.at = b"", 0

    def read(self, pos: int, size: int) -> tuple[bytes, int]:
        """A buffer holding the bytes from ``pos`` on (``size`` of them at least, where
        the chunk has them) and the offset of ``pos`` in it."""
        stop = min(pos + size, self.limit)
        if not (self.at <= pos and stop <= self.at + len(self.data)):
            self.fh.seek(pos)
            self.data = self.fh.read(max(0, stop - pos))
            self.at = pos
            if len(self.data) < stop - pos:  # the file ends first
                self.limit = pos + len(self.data)
        return self.data, pos - self.at

    def reaches_end(self) -> bool:
        return self.at + len(self.data) >= self.limit


def _page_sizes(window: _Window, pos: int) -> tuple[int, int] | None:
    """``(header bytes, compressed_page_size)`` of the page header at ``pos``; None when it
    is not a readable header (the damage is then pyarrow's to report). The work is bounded
    by the bytes parsed (see :class:`_Reader`): a window that ends inside the header is
    read again four times as long, up to :data:`_MAX_HEADER`."""
    size = _HEADER_READ
    while True:
        data, offset = window.read(pos, size)
        r = _Reader(data, offset)
        compressed = -1
        try:
            for fid, kind in r.fields():
                if fid == 3:
                    compressed = r.integer(kind)
        except _Short:
            if window.reaches_end() or size >= _MAX_HEADER:
                return None  # a header cut by the chunk's end, or longer than any
            size *= 4  # a long header (statistics): read more of it
            continue
        except FooterError:
            return None  # not a header
        return (r.pos - offset, compressed) if compressed >= 0 else None
