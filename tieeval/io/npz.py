"""NPZ dumps: array ``scores`` and optional ``positive``, never unpickled. Stored members
are read by rows like NPY, their CRC-32 computed on the rows as they are read and checked
at the end of the pass (:class:`tieeval.io.npy.StreamCrc`); compressed members are
decompressed in row chunks and their CRC-32 is checked at the member's end. Either way
the check comes before any result is reported."""


from __future__ import annotations

import math
import os
import zipfile
import zlib

import numpy as np

from tieeval.errors import InputError
from tieeval.io.base import (
    HOW_TO_DUMP,
    PART_BYTES,
    Dump,
    ReadOptions,
    check_row_length,
    error_text,
    not_a_dump,
)
from tieeval.io.ids import npz_ids
from tieeval.io.npy import (
    ArraySpec,
    StreamCrc,
    _check_fills,
    _load_error,
    _matrix_parts,
    _npy_header,
    _stream_crc,
)
from tieeval.io.validate import (
    _check_matrix,
    _check_positive_field,
    _positive_for,
    check_named_field,
)
from tieeval.records.batch import Batch

# what reading a damaged archive or member raises (zipfile, zlib and numpy's header parser)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
               NotImplementedError, RuntimeError)


class _NpzMember:
    """One ``.npy`` member of an NPZ archive: its header, and where or how to read it."""

    def __init__(self, path: str, archive: zipfile.ZipFile, name: str):
        self.path, self.archive, self.name = path, archive, name
        self.info = archive.getinfo(name)
        try:
            with archive.open(self.info) as fh:
                self.dtype, self.shape, self.fortran = _npy_header(fh, path, name)
                self.header_bytes = fh.tell()
        except _ZIP_ERRORS as exc:
            raise _load_error(path, exc) from None

    @property
    def stored(self) -> bool:
        return self.info.compress_type == zipfile.ZIP_STORED and not self.info.flag_bits & 1

    def spec(self) -> ArraySpec:
        """Where the array's bytes lie in the archive file (stored members only)."""
        with open(self.path, "rb") as fh:
            fh.seek(self.info.header_offset)
            local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise InputError(f"{self.path}: corrupted or truncated file (bad local header of "
                             f"member {self.name})")
        name_len = int.from_bytes(local[26:28], "little")
        extra_len = int.from_bytes(local[28:30], "little")
        data = self.info.header_offset + 30 + name_len + extra_len
        spec = ArraySpec(self.path, data + self.header_bytes, self.dtype, self.shape,
                         self.fortran)
        end = data + self.info.file_size
        _check_fills(self.path, spec, end, f"member {self.name}",
                     min(os.path.getsize(self.path), end))
        # zipfile checks the CRC only of members read through it; a stored member is read
        # in place: its CRC runs on the rows as the pass reads them (the header now)
        crc = StreamCrc(self.path, self.name, data, self.info.file_size, self.info.CRC)
        crc.crc = _stream_crc(self.path, self.name, data, spec.offset - data)
        crc.next = spec.offset
        return ArraySpec(spec.file, spec.offset, spec.dtype, spec.shape, spec.fortran, crc)

    @property
    def nbytes(self) -> int:
        """The array's bytes as its header declares them (Python ints: never wraps)."""
        return math.prod(int(n) for n in self.shape) * self.dtype.itemsize

    def load(self) -> np.ndarray:
        """The whole array (for small members: metadata, or a small Fortran-order matrix);
        read to the member's end, so its CRC is checked."""
        if self.nbytes > PART_BYTES:
            raise InputError(f"{self.path}: member {self.name} would be read whole and holds "
                             f"{self.nbytes} bytes, more than {PART_BYTES}")
        try:
            with self.archive.open(self.info) as fh:
                arr = np.lib.format.read_array(fh, allow_pickle=False)
                if fh.read(1 << 16):
                    raise InputError(f"{self.path}: corrupted or truncated file (member "
                                     f"{self.name} is longer than its header says)")
                return arr
        except _ZIP_ERRORS as exc:
            raise _load_error(self.path, exc) from None


class _RowStream:
    """Row chunks of a compressed ``.npy`` member, decompressed as they are read."""

    def __init__(self, member: _NpzMember):
        self.member = member
        try:
            self.fh = member.archive.open(member.info)
            self.fh.read(member.header_bytes)
        except _ZIP_ERRORS as exc:
            raise _load_error(member.path, exc) from None
        self.row_bytes = math.prod(int(n) for n in member.shape[1:]) * member.dtype.itemsize
        self.done = 0  # rows read

    def read(self, rows: int) -> np.ndarray:
        m = self.member
        want = rows * self.row_bytes
        try:
            data = self.fh.read(want)
        except _ZIP_ERRORS as exc:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name}: "
                             f"{error_text(exc)})") from None
        if len(data) != want:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name} is "
                             "shorter than its header says)")
        self.done += rows
        return np.frombuffer(data, dtype=m.dtype).reshape((rows,) + tuple(m.shape[1:]))

    def check_all(self) -> None:
        """Read the whole member from here (decompressing, never holding it) and check its
        length against its header and its CRC-32."""
        m = self.member
        want = m.nbytes - self.done * self.row_bytes
        got = 0
        try:
            while True:
                chunk = self.fh.read(1 << 22)
                if not chunk:
                    break
                got += len(chunk)
        except _ZIP_ERRORS as exc:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name}: "
                             f"{error_text(exc)})") from None
        finally:
            self.fh.close()
        if got != want:
            raise InputError(f"{m.path}: corrupted or truncated file (member {m.name} is "
                             f"{'shorter' if got < want else 'longer'} than its header says)")


def with_crcs(dump: Dump, specs) -> Dump:
    """``dump`` whose end-of-pass and damage checks also cover the CRC-32 of the stored
    members of ``specs`` (:class:`tieeval.io.npy.StreamCrc`, computed on their rows as they
    are read), in member order."""
    crcs = [s.crc for s in specs if s is not None and s.crc is not None]
    if not crcs:
        return dump
    finish, verify = dump._finish, dump._verify

    def check(first):
        first()
        for crc in crcs:
            crc.check()
    dump._finish = lambda: check(finish)
    dump._verify = lambda: check(verify)
    return dump


def check_unambiguous(path: str, members: list[str]) -> None:
    """Each array name must come from one member. A zip may hold two members of one name,
    and ``np.load`` reads array ``x`` from member ``x`` or ``x.npy``: with two candidates,
    which array is meant depends on the reader (zipfile keeps the last of a name, np.load
    prefers the name without ``.npy``)."""
    seen: dict[str, str] = {}
    for name in members:
        key = name[:-4] if name.endswith(".npy") else name
        if key in seen:
            raise InputError(f"{path}: ambiguous NPZ: members {seen[key]!r} and {name!r} both "
                             f"hold an array '{key}'; save each array once (np.savez("
                             f"path, {key}=...))")
        seen[key] = name


def _open_npz(path: str, options: ReadOptions) -> Dump:
    try:
        archive = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        # not a zip at all: np.load says whether it is a pickle or damaged
        try:
            np.load(path, allow_pickle=False)
        except _ZIP_ERRORS as exc2:
            raise _load_error(path, exc2) from None
        raise _load_error(path, exc) from None
    names = {n[:-4]: n for n in archive.namelist() if n.endswith(".npy")}
    check_unambiguous(path, archive.namelist())
    if options.scores not in names:
        if not names and any(n.endswith("data.pkl") for n in archive.namelist()):
            raise not_a_dump(path, "a torch.save archive (a zip of pickled tensors)")
        hint = (f"; rename with --scores-column, or {HOW_TO_DUMP}" if names
                else f"; {HOW_TO_DUMP}")
        raise InputError(f"{path}: no array '{options.scores}' (found: "
                         f"{', '.join(sorted(names)) or 'nothing'}){hint}")
    scores = _NpzMember(path, archive, names[options.scores])
    positive = (_NpzMember(path, archive, names[options.positive])
                if options.positive in names else None)
    metadata = {}
    for name in sorted(set(names) - {options.scores, options.positive}):
        member = _NpzMember(path, archive, names[name])  # refuses object arrays
        if member.dtype.kind == "U" and tuple(member.shape) == ():  # 0-d: run metadata
            metadata[name] = str(member.load().reshape(()))
    # Every member's own header must carry the name the archive's directory gives it. A
    # damaged directory can rename a member (positive.npy to positive.npq), and the dump
    # would then be read without it: opening a member compares the two names (zipfile
    # reads only the member's local header here).
    for info in archive.infolist():
        try:
            archive.open(info).close()
        except _ZIP_ERRORS as exc:
            raise InputError(f"{path}: corrupted file (member {info.filename!r}: "
                             f"{error_text(exc)})") from None
    check_named_field(path, options.positive, "positive", names, "array", options)
    _check_matrix(path, scores, f"'{options.scores}'")
    _check_positive_field(path, options, positive, scores.shape[0])
    check_row_length(path, int(scores.shape[1]))
    rows = scores.shape[0]
    row_bytes = math.prod(int(n) for n in scores.shape[1:]) * scores.dtype.itemsize
    common: dict = dict(rows=rows, nbytes=os.path.getsize(path), row_bytes=row_bytes,
                        _ids=lambda name: npz_ids(path, name))
    if scores.stored and (positive is None or positive.stored):
        spec = scores.spec()
        pspec = positive.spec() if positive is not None else None
        archive.close()
        return with_crcs(Dump(path, "npz", scores.dtype, metadata, None,
                              parts=_matrix_parts(path, spec, pspec, options), **common),
                         (spec, pspec))

    warnings = []
    if scores.fortran and not scores.stored:
        if scores.nbytes > PART_BYTES:
            raise InputError(f"{path}: '{options.scores}' is a compressed Fortran-order array "
                             f"of {scores.nbytes} bytes, which cannot be read by rows and is "
                             f"too big to load whole (the limit is {PART_BYTES}); save it in C "
                             "order (np.ascontiguousarray) or uncompressed (np.savez)")
        warnings.append(f"{path}: '{options.scores}' is a compressed Fortran-order array, "
                        "which cannot be read by rows: it is loaded whole (save it in C order "
                        "with np.ascontiguousarray to stream it)")

    def gen(batch_rows):
        if scores.fortran and not scores.stored:
            whole = scores.load()
            stream = None
        else:
            stream = _RowStream(scores)
        pstream = _RowStream(positive) if positive is not None else None
        cols = scores.shape[1]
        for start in range(0, rows, batch_rows):
            n = min(batch_rows, rows - start)
            block = whole[start:start + n] if stream is None else stream.read(n)
            stored = None if pstream is None else pstream.read(n)
            lengths = np.full(n, cols, dtype=np.int64)
            chosen = _positive_for(path, options.positive_index, lengths, start, stored)
            yield Batch(block, chosen, start, nbytes=n * row_bytes,
                        positive_defaulted=stored is None and options.positive_index is None)
        # the end of each member: its length and CRC-32, before any result is reported
        for s in (stream, pstream):
            if s is not None:
                s.check_all()

    def verify():
        for member in (scores, positive):
            if member is not None and not member.stored:
                _RowStream(member).check_all()
    return Dump(path, "npz", scores.dtype, metadata, gen, warnings=warnings, _verify=verify,
                **common)
