"""NPY dumps: a bare ``(instances, candidates)`` score matrix, cut into parts and read one
batch at a time with positioned reads (``os.pread``-style ``readinto``), never memory-mapped:
a file truncated or rewritten while it is read gives a short read, reported as an input
error, where a memory map would kill the process with SIGBUS."""


from __future__ import annotations

import math
import os
import threading
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Generator

import numpy as np

from tieeval.errors import InputError
from tieeval.io import buffers
from tieeval.io.base import HOW_TO_DUMP, PART_BYTES, Dump, ReadOptions, check_row_length
from tieeval.io.crc32 import combine, crc32
from tieeval.io.validate import _check_matrix, _positive_for
from tieeval.records.batch import Batch

# ---------------------------------------------------------------------------------------
# NPY and NPZ: arrays located in a file (memory-mapped) or in a compressed zip member

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
        if out.nbytes:
            view = memoryview(out.reshape(-1)).cast("B")  # type: ignore[arg-type]
            pos = spec.offset + lo * spec.row_bytes
            if spec.crc is None:
                self._fill(view, pos)
            else:
                spec.crc.feed(pos, view, self._fill(view, pos, 0))
        return out


class Arrival:
    """The rows of a batch read when they are wanted: ``arrival(lo, hi)`` reads the
    batch's rows ``lo..hi`` (batch-relative) into its scores array, so that a kernel can
    count each cache-sized block just after it is read, while it is still in cache
    (:func:`tieeval.kernels.counts.dense_counts`). A stored NPZ member's CRC-32 is chained
    over the pieces read one after another and handed to the member's
    :class:`StreamCrc` by :meth:`close`, which also closes the file; rows never read
    leave the chain incomplete, and the member is then checked on its own at the end of
    the pass, as for any batch."""

    def __init__(self, reader: "RowReader", out: np.ndarray, lo: int):
        self.reader, self.out, self.lo = reader, out, lo
        self.start = self.next = -1  # file offsets of the chained pieces, and their CRC
        self.crc = 0
        self.kept = True  # every row read is still in ``out`` (none read elsewhere)

    def __call__(self, lo: int, hi: int, into: np.ndarray | None = None) -> None:
        """Read the batch's rows ``lo..hi`` into its scores array, or into ``into`` (an
        array of exactly those rows: a kernel's cache-sized work array, reused for the
        next rows, so that only the rows it keeps travel on to memory)."""
        spec = self.reader.spec
        rows = self.out[lo:hi] if into is None else into
        if rows.nbytes != (hi - lo) * spec.row_bytes:
            raise ValueError(f"rows {lo}..{hi} do not fit an array of {rows.nbytes} bytes")
        if not rows.size:
            return
        if into is not None:
            self.kept = False  # the chain's bytes are not all in ``out``
        view = memoryview(rows.reshape(-1)).cast("B")  # type: ignore[arg-type]
        pos = spec.offset + (self.lo + lo) * spec.row_bytes
        if spec.crc is None:
            self.reader._fill(view, pos)
            return
        if pos < spec.crc.next:
            # rows the member has counted already (read before the pass): this piece goes
            # to it now, with its bytes (it counts the rest of them), outside the chain
            self._hand_over()
            spec.crc.feed(pos, view, self.reader._fill(view, pos, 0))
            return
        if pos != self.next:  # not the next piece: the chain so far goes to the member
            self._hand_over()
            self.start, self.crc = pos, 0
        crc = self.reader._fill(view, pos, self.crc)
        assert crc is not None  # a CRC-32 to extend gives one back
        self.crc, self.next = crc, pos + len(view)

    def _hand_over(self) -> None:
        spec = self.reader.spec
        if spec.crc is not None and self.next > self.start >= 0:
            if not self.kept:  # the bytes were read into a work array and are gone
                spec.crc.feed_gone(self.start, self.next - self.start, self.crc)
            else:
                # the bytes go too: the member may have counted some of them already
                # (rows read before the pass), and then computes the CRC-32 of the rest
                first = spec.offset + self.lo * spec.row_bytes
                data = memoryview(self.out.reshape(-1)).cast("B")  # type: ignore[arg-type]
                spec.crc.feed(self.start, data[self.start - first:self.next - first],
                              self.crc)
        self.start = self.next = -1

    def close(self) -> None:
        try:
            self._hand_over()
        finally:
            self.reader.close()


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
        self._add(pos, len(data), own)

    def feed_gone(self, pos: int, size: int, own: int) -> None:
        """``size`` bytes of the member at file offset ``pos`` whose CRC-32 ``own`` the
        reader computed as it read them, the bytes themselves no longer at hand: a piece
        that overlaps what the chain already counted leaves the chain incomplete (and
        :meth:`check` streams the member)."""
        with self._lock:
            if self.next < 0 or self.next - pos >= size:
                return
        self._add(pos, size, own)

    def _add(self, pos: int, size: int, own: int) -> None:
        with self._lock:
            if self.next < 0:
                return
            if pos < self.next or pos in self.waiting:
                self.next = -1  # overlapping pieces: check() streams the member instead
                return
            self.waiting[pos] = (size, own)
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
            while left:
                fh.seek(pos)
                chunk = fh.read(min(left, 4 << 20))
                if not chunk:
                    raise InputError(f"{path}: corrupted or truncated file (member {name} "
                                     "ends early)")
                crc = crc32(chunk, crc)
                left -= len(chunk)
                pos += len(chunk)
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
            TypeError, MemoryError, RecursionError, OverflowError) as exc:
        # numpy parses the header with the tokenizer and literal_eval: a damaged header can
        # raise any of these (tokenize.TokenError is a SyntaxError subclass in recent Pythons)
        raise _load_error(path, exc) from None
    except Exception as exc:
        if type(exc).__name__ == "TokenError":
            raise _load_error(path, exc) from None
        raise
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
    """Rows ``lo..hi`` of a memory-mapped score matrix (and of its positive vector)."""

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
        gen = replace(self, lo=lo, hi=hi).batches(max(1, hi - lo))
        try:
            return next(gen)
        finally:
            gen.close()

    @property
    def nbytes(self) -> int:
        return self.rows * self.scores.row_bytes

    def arriving_rows(self, lo: int, hi: int, cold_at_once: bool = False
                      ) -> tuple[Batch, Arrival | None]:
        """Rows ``lo..hi`` as one batch whose scores are read later, as a kernel counts
        them (:class:`Arrival`, which the caller closes), in the calling thread; a
        Fortran-order matrix is read at once (no arrival). ``cold_at_once`` (other
        threads read other batches at the same time): a batch whose rows are not in the
        page cache is read at once too, one request for the whole batch, which a disk
        serves faster than several threads reading cache-sized blocks from several places
        (``benchmarks/bench_against.py --cold``); alone, block by block is the faster
        from disk too (the kernel's readahead overlaps the disk with the counts)."""
        spec = self.scores
        if spec.fortran:
            return self.read_rows(lo, hi), None
        reader = spec.reader()
        try:
            # the batch's last byte not in the page cache: every row read now
            now = cold_at_once and hi > lo and not reader.cached(
                spec.offset + hi * spec.row_bytes - 1)
            out = (reader.rows(lo, hi) if now else
                   buffers.empty((max(0, hi - lo),) + tuple(int(x) for x in spec.shape[1:]),
                                 spec.dtype))
            positive = self.positive.reader() if self.positive is not None else None
            try:
                batch = self._batch(lo, hi, out, positive)
            finally:
                if positive is not None:
                    positive.close()
        except BaseException:
            reader.close()
            raise
        if now:
            reader.close()
            return batch, None
        return batch, Arrival(reader, out, lo)

    def _batch(self, start: int, stop: int, block: np.ndarray, positive) -> Batch:
        options = ReadOptions(positive_index=self.positive_index)
        stored = None if positive is None else positive.rows(start, stop)
        lengths = np.full(stop - start, int(self.scores.shape[1]), dtype=np.int64)
        return Batch(block, _positive_for(self.path, options, lengths, start, stored), start,
                     nbytes=(stop - start) * self.scores.row_bytes,
                     positive_defaulted=stored is None and options.positive_index is None)

    def batches(self, batch_rows: int) -> Generator[Batch, None, None]:
        with self.scores.reader() as scores:
            positive = self.positive.reader() if self.positive is not None else None
            try:
                for start in range(self.lo, self.hi, batch_rows):
                    stop = min(start + batch_rows, self.hi)
                    yield self._batch(start, stop, scores.rows(start, stop), positive)
            finally:
                if positive is not None:
                    positive.close()


def _matrix_parts(path, scores: ArraySpec, positive, options) -> list[MatrixPart]:
    rows = scores.shape[0]
    step = max(1, PART_BYTES // max(1, scores.row_bytes))
    return [MatrixPart(path, scores, positive, options.positive_index, lo, min(lo + step, rows))
            for lo in range(0, rows, step)]


def _check_extent(path: str, spec: ArraySpec, limit: int) -> None:
    need = spec.offset + math.prod(int(n) for n in spec.shape) * spec.dtype.itemsize
    if need > limit:
        raise InputError(f"{path}: corrupted or truncated file (the array needs {need} bytes, "
                         f"{limit} are there)")


def _check_no_trailing(path: str, spec: ArraySpec, end: int, what: str) -> None:
    """The array must fill ``what`` exactly: bytes past the end of the array mean its
    header declares fewer rows (or a narrower shape) than were written -- a damaged header
    that would otherwise silently evaluate a part of the dump."""
    need = spec.offset + math.prod(int(n) for n in spec.shape) * spec.dtype.itemsize
    if end > need:
        raise InputError(f"{path}: corrupted file ({what} holds {end - need} bytes more than "
                         f"its header's shape {tuple(spec.shape)} declares)")


def _open_npy(path: str, options: ReadOptions) -> Dump:
    try:
        return _open_npy_file(path, options)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _open_npy_file(path: str, options: ReadOptions) -> Dump:
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            fh.seek(0)
            # not an .npy: let np.load say whether it is a pickle or damaged
            try:
                np.load(fh, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise _load_error(path, exc) from None
            raise InputError(f"{path}: not a single .npy array")
        fh.seek(0)
        dtype, shape, fortran = _npy_header(fh, path, "scores")
        offset = fh.tell()
    spec = ArraySpec(path, offset, dtype, shape, fortran)
    _check_matrix(path, spec, "scores")
    _check_extent(path, spec, os.path.getsize(path))
    _check_no_trailing(path, spec, os.path.getsize(path), "the file")
    check_row_length(path, shape[1])
    return Dump(path, "npy", dtype, {}, None, rows=shape[0], nbytes=os.path.getsize(path),
                row_bytes=spec.row_bytes, parts=_matrix_parts(path, spec, None, options))
