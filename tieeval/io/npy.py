"""NPY dumps: a bare ``(instances, candidates)`` score matrix, cut into parts and read one
batch at a time with positioned reads (``os.pread``-style ``readinto``), never memory-mapped:
a file truncated or rewritten while it is read gives a short read, reported as an input
error, where a memory map would kill the process with SIGBUS."""


from __future__ import annotations

import math
import os
import threading
import tokenize
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

import numpy as np

from tieeval.errors import InputError
from tieeval.io import buffers
from tieeval.io.base import HOW_TO_DUMP, PART_BYTES, Dump, ReadOptions, check_row_length
from tieeval.io.crc32 import combine, crc32
from tieeval.io.validate import _check_matrix, _positive_for
from tieeval.records.batch import Batch

# ---------------------------------------------------------------------------------------
# NPY and NPZ: arrays located in a file or in a compressed zip member

@dataclass(frozen=True)
class ArraySpec:
    """Where an uncompressed .npy array lies in a file: enough to read its rows anywhere."""

    file: str
    offset: int
    dtype: np.dtype
    shape: tuple
    fortran: bool
    # a stored NPZ member's CRC-32, fed with the rows as they are read (StreamCrc)
    crc: Any = field(default=None, compare=False, repr=False)

    @property
    def row_bytes(self) -> int:
        # Python ints: a hostile header's extents must not wrap around in int64
        return math.prod(int(n) for n in self.shape[1:]) * self.dtype.itemsize

    def reader(self) -> "RowReader":
        return RowReader(self)


CRC_PIECE = 1 << 20  # bytes read at a time where their CRC-32 is computed as they arrive


class RowReader:
    """Rows of an :class:`ArraySpec` read into fresh arrays by positioned reads.

    Reading cannot fault: a file that shrank under us gives a short read, an
    :class:`InputError` ("the file changed while it was read").
    """

    def __init__(self, spec: ArraySpec):
        self.spec = spec
        try:
            self.fh = open(spec.file, "rb", buffering=0)
        except OSError as exc:
            raise InputError(f"{spec.file}: cannot open: {exc.strerror or exc}") from None

    def close(self) -> None:
        self.fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fill(self, view: memoryview, pos: int, crc: int | None = None) -> int | None:
        """Fill ``view`` from file offset ``pos``; with ``crc`` (a CRC-32 to extend), the
        bytes' CRC-32 is computed as they arrive, a cache-sized piece at a time (while
        the piece is still in cache), and returned."""
        if crc is not None:
            for lo in range(0, len(view), CRC_PIECE):
                piece = view[lo:lo + CRC_PIECE]
                self._fill(piece, pos + lo)
                crc = crc32(piece, crc)
            return crc
        done = 0
        want = len(view)
        while done < want:
            self.fh.seek(pos + done)
            try:
                got = self.fh.readinto(view[done:])
            except OSError as exc:
                raise InputError(f"{self.spec.file}: cannot read: {exc.strerror or exc}"
                                 ) from None
            if not got:
                raise InputError(f"{self.spec.file}: the file changed while it was read (it "
                                 "ends before the array does)")
            done += got
        return None

    def cached(self, pos: int) -> bool:
        """Whether the byte at file offset ``pos`` is in the page cache: a read of it
        that may not wait for the disk (``RWF_NOWAIT``; Linux). True where that cannot be
        asked (another system, a file system that does not say): then nothing changes."""
        flag = getattr(os, "RWF_NOWAIT", None)
        if flag is None:
            return True
        try:
            os.preadv(self.fh.fileno(), [bytearray(1)], pos, flag)
        except BlockingIOError:  # EAGAIN: the read would wait for the disk
            return False
        except OSError:  # EOPNOTSUPP, EINVAL (an older kernel): cannot tell
            return True
        return True

    def rows(self, lo: int, hi: int) -> np.ndarray:
        spec = self.spec
        n = max(0, hi - lo)
        rest = tuple(int(x) for x in spec.shape[1:])
        if spec.fortran and len(spec.shape) == 2 and n:
            out = np.empty((n,) + rest, dtype=spec.dtype, order="F")
            rows = int(spec.shape[0])
            size = spec.dtype.itemsize
            for j in range(rest[0]):
                col = out[:, j]
                # ndarray has the buffer protocol (numpy's stubs declare it for Python 3.12+)
                self._fill(memoryview(col).cast("B"),  # type: ignore[arg-type]
                           spec.offset + (j * rows + lo) * size)
            return out
        out = buffers.empty((n,) + rest, spec.dtype)
        self.read(out, lo)
        return out

    def read(self, out: np.ndarray, row: int) -> None:
        """Fill ``out`` (whole rows, C order) with the rows from ``row`` on; a stored NPZ
        member's CRC-32 is computed as they arrive and handed to its :class:`StreamCrc`."""
        if not out.nbytes:
            return
        spec = self.spec
        view = memoryview(out.reshape(-1)).cast("B")  # type: ignore[arg-type]
        pos = spec.offset + row * spec.row_bytes
        if spec.crc is None:
            self._fill(view, pos)
        else:
            spec.crc.feed(pos, view, self._fill(view, pos, 0))


class LazyBatch(Batch):
    """Rows of a matrix whose scores are read only when they are used: whole at the first
    look at :attr:`scores`, or a block at a time as :meth:`blocks` yields them, each read
    just before it is used, while it is still in the cache (one trip through memory
    instead of a write and a read). Rows that ``kept`` leaves out are read into a work
    array reused from block to block, and never reach memory; after a block whose rows
    were mostly kept, the next is read into the batch itself. A stored NPZ member's
    CRC-32 is fed each block as it is read (:class:`StreamCrc`). ``together``: other
    threads read other batches at the same time, and :meth:`blocks` reads a batch whose
    rows are not in the page cache whole first, one request, which a disk serves faster
    than several threads reading blocks from several places
    (``benchmarks/bench_against.py --cold``); alone, block by block is the faster from
    disk too (the system's readahead overlaps the disk with the counts). A copy made by
    :func:`dataclasses.replace` is an ordinary batch."""

    spec: ArraySpec
    together: bool

    @classmethod
    def of(cls, spec: ArraySpec, together: bool, positive: np.ndarray, start: int,
           **fields: Any) -> "LazyBatch":
        batch = cls(np.empty((0, 0), spec.dtype), positive, start, **fields)
        del batch.scores  # read when first used (__getattr__) or block by block (blocks)
        batch.spec, batch.together = spec, together
        return batch

    def __getattr__(self, name: str) -> Any:
        if name != "scores" or "spec" not in vars(self):
            raise AttributeError(name)
        with self.spec.reader() as reader:
            self.scores = reader.rows(self.start, self.start + self.rows)
        return self.scores

    @property
    def lazy(self) -> bool:
        return "scores" not in vars(self)

    def blocks(self, scores: int, kept: Callable[[int, int], np.ndarray] | None = None
               ) -> Generator[tuple[int, np.ndarray], None, None]:
        if not self.lazy:
            yield from super().blocks(scores, kept)
            return
        spec, rows, first = self.spec, self.rows, self.start
        cols = int(spec.shape[1])
        out = buffers.empty((rows, cols), spec.dtype)
        with spec.reader() as reader:
            # the batch's last byte not in the page cache: every row read now
            whole = self.together and rows > 0 and not reader.cached(
                spec.offset + (first + rows) * spec.row_bytes - 1)
            if whole:
                reader.read(out, first)
            direct = whole or kept is None  # the next block read into the batch itself
            step = max(1, scores // max(1, cols))
            for lo in range(0, rows, step):
                hi = min(lo + step, rows)
                block = out[lo:hi] if direct else buffers.work((hi - lo, cols), spec.dtype)
                if not whole:
                    reader.read(block, first + lo)
                yield lo, block
                if kept is not None and not whole:
                    wanted = kept(lo, hi)
                    if not direct and wanted.size:
                        out[lo + wanted] = block[wanted]
                    direct = 2 * wanted.size > hi - lo
        self.scores = out


class StreamCrc:
    """The CRC-32 of a stored NPZ member, computed on the rows as the pass reads them.

    A stored member is read in place, so zipfile never checks its CRC. Rows read in a
    pass (by the reading thread, or by several threads each reading its own rows) extend
    the CRC at no extra read, outside the GIL: a piece read ahead of the chain waits as
    its own CRC-32 and is joined on when the chain reaches it
    (:func:`tieeval.io.crc32.combine`). :meth:`check` compares it at the end of the pass,
    before any result is made. Rows read in worker processes (each has its own copy of
    this record), skipped, or overlapping a piece that waits leave the chain incomplete,
    and :meth:`check` then streams the whole member once, as the reader did before
    evaluating.
    """

    def __init__(self, path: str, name: str, start: int, size: int, expected: int):
        self.path, self.name = path, name
        self.start, self.end, self.expected = start, start + size, expected
        self.crc, self.next = 0, start
        self.waiting: dict[int, tuple[int, int]] = {}  # offset -> (length, CRC-32)
        self.verified = False
        self._lock = threading.Lock()

    def __getstate__(self):
        return {**self.__dict__, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.Lock())

    def feed(self, pos: int, data, own: int | None = None) -> None:
        """Bytes of the member at file offset ``pos``, as read (by any thread); ``own``:
        their CRC-32, when the reader computed it as it read them."""
        with self._lock:
            skip = self.next - pos
        if self.next < 0 or skip >= len(data):
            return  # bytes already counted (a sample read before the pass) or no chain
        if skip > 0:
            data, pos, own = data[skip:], pos + skip, None
        if own is None:
            # outside the lock (the CRC releases the GIL): threads that read different
            # rows compute theirs at once, and the chain joins them in order
            own = crc32(data)
        with self._lock:
            if self.next < 0:
                return
            if pos < self.next or pos in self.waiting:
                self.next = -1  # overlapping pieces: check() streams the member instead
                return
            self.waiting[pos] = (len(data), own)
            self._join()

    def _join(self) -> None:
        """Join the waiting pieces that now follow the chain (under the lock)."""
        while self.next in self.waiting:
            size, own = self.waiting.pop(self.next)
            self.crc = combine(self.crc, own, size)
            self.next += size
        if any(pos < self.next for pos in self.waiting):
            self.next = -1  # a waiting piece overlaps the chain: no CRC from the pieces

    def check(self) -> None:
        """Raise the member's bad-CRC error, if its bytes are not the ones written."""
        if self.verified:
            return
        with self._lock:
            if self.next == self.end:
                crc = self.crc
            else:
                crc = _stream_crc(self.path, self.name, self.start, self.end - self.start)
            if crc != self.expected:
                raise InputError(f"{self.path}: corrupted file (member {self.name}: bad "
                                 "CRC-32, its bytes are not the ones written)")
            self.verified = True


def _stream_crc(path: str, name: str, pos: int, left: int, crc: int = 0) -> int:
    """The CRC-32 of ``left`` bytes of ``path`` from ``pos``, streamed."""
    try:
        with open(path, "rb", buffering=0) as fh:
            fh.seek(pos)
            while left:
                chunk = fh.read(min(left, 4 << 20))
                if not chunk:
                    raise InputError(f"{path}: corrupted or truncated file (member {name} "
                                     "ends early)")
                crc = crc32(chunk, crc)
                left -= len(chunk)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return crc


def _npy_header(fh, path: str, what: str):
    """Read an .npy header from ``fh``: (dtype, shape, fortran). Never unpickles."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:  # pragma: no cover - numpy raises first
            raise ValueError(f"unknown .npy version {version}")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, SyntaxError,
            tokenize.TokenError, TypeError, MemoryError, RecursionError, OverflowError) as exc:
        # numpy parses the header with the tokenizer and literal_eval: a damaged header can
        # raise any of these (tokenize.TokenError is a SyntaxError subclass in recent Pythons)
        raise _load_error(path, exc) from None
    # type() rather than isinstance(): a damaged header's True / False are no extents
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise InputError(f"{path}: corrupted or truncated file (bad shape {shape!r} in the "
                         f"header of {what})")
    if dtype.hasobject:
        raise InputError(f"{path}: holds pickled Python objects; tieeval never unpickles "
                         "(save plain numeric arrays)")
    return dtype, tuple(shape), bool(fortran)


def _load_error(path: str, exc: Exception) -> InputError:
    if isinstance(exc, OSError) and exc.errno:  # the system refused: not the file's damage
        return InputError(f"{path}: cannot read: {os.strerror(exc.errno)}")
    text = str(exc)
    if ("allow_pickle" in text and "Object arrays" not in text
            and not _starts_like_pickle(path)):
        # np.load found no numpy magic and offers to unpickle; a file cut inside its magic
        # (or any other non-pickle bytes) is damaged, not pickled.
        return InputError(f"{path}: corrupted or truncated file (no .npy/.npz header)")
    if "allow_pickle" in text or "Python objects" in text or "Object arrays" in text:
        return InputError(f"{path}: holds pickled Python objects; tieeval never unpickles: "
                          f"{HOW_TO_DUMP}")
    return InputError(f"{path}: corrupted or truncated file ({type(exc).__name__}: "
                      f"{text.splitlines()[0] if text else 'unreadable'})")


def _starts_like_pickle(path: str) -> bool:
    # pickle protocols 2 and later (numpy, torch and joblib all use them) open with PROTO
    try:
        with open(path, "rb") as fh:
            return fh.read(1) == b"\x80"
    except OSError:
        return False


@dataclass(frozen=True)
class MatrixPart:
    """Rows ``lo..hi`` of a score matrix (and of its positive vector)."""

    path: str
    scores: ArraySpec
    positive: ArraySpec | None
    positive_index: int | None
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo

    # any range of its rows can be read on its own, in any thread (Dump.batch_tasks)
    reads_rows = True

    def read_rows(self, lo: int, hi: int) -> Batch:
        """Rows ``lo..hi`` of the matrix as one batch, read in the calling thread."""
        with self.scores.reader() as scores:
            return self._batch(lo, hi, scores.rows(lo, hi))

    @property
    def nbytes(self) -> int:
        return self.rows * self.scores.row_bytes

    def lazy_rows(self, lo: int, hi: int, together: bool = False) -> Batch:
        """Rows ``lo..hi`` as one batch whose scores are read only when they are used
        (:class:`LazyBatch`); a Fortran-order matrix is read at once."""
        if self.scores.fortran:
            return self.read_rows(lo, hi)
        return self._batch(lo, hi, None, together)

    def _batch(self, start: int, stop: int, block: np.ndarray | None,
               together: bool = False) -> Batch:
        """Rows ``start..stop`` with the scores ``block`` (None: read when used)."""
        stored = None
        if self.positive is not None:
            with self.positive.reader() as positive:
                stored = positive.rows(start, stop)
        lengths = np.full(stop - start, int(self.scores.shape[1]), dtype=np.int64)
        nbytes = (stop - start) * self.scores.row_bytes
        defaulted = stored is None and self.positive_index is None
        rows = _positive_for(self.path, self.positive_index, lengths, start, stored)
        if block is None:
            return LazyBatch.of(self.scores, together, rows, start, nbytes=nbytes,
                                positive_defaulted=defaulted)
        return Batch(block, rows, start, nbytes=nbytes, positive_defaulted=defaulted)

    def batches(self, batch_rows: int) -> Generator[Batch, None, None]:
        for start in range(self.lo, self.hi, batch_rows):
            yield self.read_rows(start, min(start + batch_rows, self.hi))


def _matrix_parts(path, scores: ArraySpec, positive, options) -> list[MatrixPart]:
    rows = scores.shape[0]
    step = max(1, PART_BYTES // max(1, scores.row_bytes))
    return [MatrixPart(path, scores, positive, options.positive_index, lo, min(lo + step, rows))
            for lo in range(0, rows, step)]


def _check_fills(path: str, spec: ArraySpec, end: int, what: str,
                 limit: int | None = None) -> None:
    """The array must fill ``what`` (the bytes up to ``end``; ``limit``: those of them
    there are, by default all) exactly: bytes past the end of the array mean its header
    declares fewer rows (or a narrower shape) than were written -- a damaged header that
    would otherwise silently evaluate a part of the dump."""
    need = spec.offset + math.prod(int(n) for n in spec.shape) * spec.dtype.itemsize
    limit = end if limit is None else limit
    if need > limit:
        raise InputError(f"{path}: corrupted or truncated file (the array needs {need} bytes, "
                         f"{limit} are there)")
    if end > need:
        raise InputError(f"{path}: corrupted file ({what} holds {end - need} bytes more than "
                         f"its header's shape {tuple(spec.shape)} declares)")


def read_npy_header(path: str, what: str, not_npy: str) -> ArraySpec:
    """The :class:`ArraySpec` of the ``.npy`` file at ``path`` from its header (``what``
    names the array in messages); a file that is not an ``.npy`` is refused with
    np.load's own reason (a pickle, a damaged file) or ``not_npy``."""
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            fh.seek(0)
            # not an .npy: let np.load say whether it is a pickle or damaged
            try:
                np.load(fh, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise _load_error(path, exc) from None
            raise InputError(f"{path}: {not_npy}")
        fh.seek(0)
        dtype, shape, fortran = _npy_header(fh, path, what)
        return ArraySpec(path, fh.tell(), dtype, shape, fortran)


def check_fills_file(path: str, spec: ArraySpec) -> None:
    """The array of ``spec`` is the whole file: neither cut short nor followed by bytes."""
    _check_fills(path, spec, os.path.getsize(path), "the file")


def _open_npy(path: str, options: ReadOptions) -> Dump:
    try:
        spec = read_npy_header(path, "scores", "not a single .npy array")
        _check_matrix(path, spec, "scores")
        check_fills_file(path, spec)
        check_row_length(path, spec.shape[1])
        size = os.path.getsize(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return Dump(path, "npy", spec.dtype, {}, None, rows=spec.shape[0], nbytes=size,
                row_bytes=spec.row_bytes, parts=_matrix_parts(path, spec, None, options))
