"""NPY dumps: a bare ``(instances, candidates)`` score matrix, memory-mapped and cut into
parts; pages already read are released after each batch."""


from __future__ import annotations

import mmap
import os
import zipfile
import zlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import PART_BYTES, Batch, Dump, ReadOptions
from tieeval.io.checks import _check_matrix, _positive_for

# ---------------------------------------------------------------------------------------
# NPY and NPZ: arrays located in a file (memory-mapped) or in a compressed zip member

@dataclass(frozen=True)
class ArraySpec:
    """Where an uncompressed .npy array lies in a file: enough to memory-map it anywhere."""

    file: str
    offset: int
    dtype: np.dtype
    shape: tuple
    fortran: bool

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def map(self):
        """(array view, mmap) of the whole array; read-only, nothing read yet."""
        with open(self.file, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if hasattr(mmap, "MADV_SEQUENTIAL"):
            mm.madvise(mmap.MADV_SEQUENTIAL)
        arr = np.ndarray(self.shape, self.dtype, buffer=mm, offset=self.offset,
                         order="F" if self.fortran else "C")
        return arr, mm

    def release(self, mm, lo: int, hi: int) -> None:
        """Drop the pages of rows lo..hi from this process's resident set (C order only).

        The mapping is read-only and file-backed, so the kernel re-reads them from the page
        cache if they are touched again; this only keeps RSS near one batch.
        """
        if self.fortran or not hasattr(mmap, "MADV_DONTNEED"):
            return
        begin = self.offset + lo * self.row_bytes
        end = self.offset + hi * self.row_bytes
        begin -= begin % mmap.PAGESIZE
        if end > begin:
            try:
                mm.madvise(mmap.MADV_DONTNEED, begin, end - begin)
            except (OSError, ValueError):  # pragma: no cover - advisory only
                pass


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
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise _load_error(path, exc) from None
    if dtype.hasobject:
        raise InputError(f"{path}: holds pickled Python objects; tieeval never unpickles "
                         "(save plain numeric arrays)")
    return dtype, tuple(shape), bool(fortran)


def _load_error(path: str, exc: Exception) -> InputError:
    text = str(exc)
    if ("allow_pickle" in text and "Object arrays" not in text
            and not _starts_like_pickle(path)):
        # np.load found no numpy magic and offers to unpickle; a file cut inside its magic
        # (or any other non-pickle bytes) is damaged, not pickled.
        return InputError(f"{path}: corrupted or truncated file (no .npy/.npz header)")
    if "allow_pickle" in text or "Python objects" in text or "Object arrays" in text:
        return InputError(f"{path}: holds pickled Python objects; tieeval never unpickles "
                          "(save plain numeric arrays)")
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

    @property
    def nbytes(self) -> int:
        return self.rows * self.scores.row_bytes

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        scores, mm = self.scores.map()
        positive = self.positive.map()[0] if self.positive is not None else None
        cols = scores.shape[1]
        options = ReadOptions(positive_index=self.positive_index)
        for start in range(self.lo, self.hi, batch_rows):
            stop = min(start + batch_rows, self.hi)
            try:
                block = np.asarray(scores[start:stop])
                stored = None if positive is None else np.array(positive[start:stop])
            except (OSError, ValueError) as exc:  # pragma: no cover - file shrank under us
                raise InputError(f"{self.path}: corrupted or truncated file ({exc})") from None
            lengths = np.full(stop - start, cols, dtype=np.int64)
            yield Batch(block, _positive_for(self.path, options, lengths, start, stored), start,
                        nbytes=(stop - start) * self.scores.row_bytes)
            self.scores.release(mm, start, stop)


def _matrix_parts(path, scores: ArraySpec, positive, options) -> list[MatrixPart]:
    rows = scores.shape[0]
    step = max(1, PART_BYTES // max(1, scores.row_bytes))
    return [MatrixPart(path, scores, positive, options.positive_index, lo, min(lo + step, rows))
            for lo in range(0, rows, step)]


def _check_extent(path: str, spec: ArraySpec, limit: int) -> None:
    need = spec.offset + int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
    if need > limit:
        raise InputError(f"{path}: corrupted or truncated file (the array needs {need} bytes, "
                         f"{limit} are there)")


def _open_npy(path: str, options: ReadOptions) -> Dump:
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
    return Dump(path, "npy", dtype, {}, None, rows=shape[0], nbytes=os.path.getsize(path),
                row_bytes=spec.row_bytes, parts=_matrix_parts(path, spec, None, options))
