"""The page-header reader's work is bounded by the bytes it reads.

Every element of a Thrift compact-protocol list, set or map takes a byte at least (a bool
there too: only a struct field carries its bool in its type), so a declared count can make
the reader loop only over bytes that exist. Each case below declares the largest count the
bytes allow, of every container and element type, in a 64 KB header: each is walked in
well under a second (a map of bools that took no byte cost 75 s at 12 KB).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tiers import SLOW

from tieeval.io.parquet_footer import ChunkInfo, FooterError, _Reader, check_pages, read_footer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
ELEMENTS = {"bool": TRUE, "byte": BYTE, "i16": I16, "i32": I32, "i64": I64,
            "double": DOUBLE, "binary": BINARY, "list": LIST, "set": SET, "map": MAP,
            "struct": STRUCT}
SIZE = 64 << 10


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append(n & 0x7F | 0x80)
        n >>= 7


def field(fid: int, kind: int) -> bytes:
    """A field header in the long form (delta 0, then the id as a zigzag varint)."""
    return bytes([kind]) + varint(fid << 1)


def container(kind: int, elem: int, count: int) -> bytes:
    if kind in (LIST, SET):
        return bytes([0xF0 | elem]) + varint(count)
    if kind == MAP:
        return varint(count) + bytes([elem << 4 | elem])
    raise AssertionError(kind)


def headers(kind: int, elem: int) -> dict[str, bytes]:
    """Page headers of SIZE bytes: a field 20 of ``kind`` declaring as many elements of
    ``elem`` as the bytes left can hold, the rest zeros (the cheapest element of each type:
    false, 0, an empty string, container or struct); then the same with containers as
    elements, each declaring all it can."""
    unit = (8 if elem == DOUBLE else 1) * (2 if kind == MAP else 1)
    page_size = field(3, I32) + varint(200)
    out = {}
    start = page_size + field(20, kind)
    count = (SIZE - len(start) - 4) // unit
    out["one"] = (start + container(kind, elem, count) + bytes(SIZE))[:SIZE]
    nested = bytearray(start)
    while len(nested) < SIZE:  # a container holding containers, each declaring all
        nested += container(kind, elem, max(0, SIZE - len(nested) - 4) // unit)
    out["nested"] = bytes(nested[:SIZE])
    return out


def structs() -> dict[str, bytes]:
    """Structs: fields of every type, and structs nested as deep as the bytes allow."""
    fields = bytearray(field(3, I32) + varint(200))
    kinds = list(ELEMENTS.values())
    while len(fields) < SIZE:
        kind = kinds[len(fields) % len(kinds)]
        fields += field(20 + len(fields) % 7, kind)
    deep = field(3, I32) + varint(200) + field(20, STRUCT) * (SIZE // 2)
    return {"fields": bytes(fields[:SIZE]), "deep": deep[:SIZE]}


CASES = [(f"{c}-{e}-{shape}", data)
         for c, ck in (("list", LIST), ("set", SET), ("map", MAP))
         for e, ek in ELEMENTS.items()
         for shape, data in headers(ck, ek).items()]
CASES += [(f"struct-{shape}", data) for shape, data in structs().items()]
# the map of bools that took no byte: 3 KB cost 5 s, 12 KB 75 s
CASES.append(("map-of-bools-free", (field(3, I32) + varint(200) + (
    field(20, MAP) + varint(4000) + bytes([TRUE << 4 | TRUE])) * (SIZE // 5))[:SIZE]))


def _walk(data: bytes) -> None:
    r = _Reader(data)
    try:
        for _ in r.fields():
            pass
    except FooterError:
        pass


# every run walks the regression case and one header of each container kind nested; the
# slow tier every element type of every kind
QUICK = {"map-of-bools-free", "struct-deep", "struct-fields",
         *(f"{c}-{next(iter(ELEMENTS))}-nested" for c in ("list", "set", "map"))}


@pytest.mark.parametrize("name, data", [
    pytest.param(name, data, id=name, marks=() if name in QUICK else SLOW)
    for name, data in CASES])
def test_a_crafted_header_is_walked_in_time_linear_in_its_bytes(tmp_path, name, data):
    assert len(data) == SIZE
    start = time.perf_counter()
    _walk(data)
    took = time.perf_counter() - start
    assert took < 1.0, f"{name}: {took:.2f} s"
    # the whole page reader on a chunk of that header and a page's bytes (a header cut
    # by its window is read again, four times as long: a few walks at most)
    path = tmp_path / "chunk"
    path.write_bytes(data + bytes(SIZE))
    start = time.perf_counter()
    try:
        check_pages(str(path), [ChunkInfo(("x",), 1, 2 * SIZE, 0)], 2 * SIZE)
    except FooterError:  # a page declared longer than the chunk: refused, as it may be
        pass
    took = time.perf_counter() - start
    assert took < 3.0, f"{name}: {took:.2f} s"


def test_a_bool_in_a_map_takes_a_byte():
    """{true: false, false: true} then a field 3 (i32 7): read as its bytes say."""
    data = field(20, MAP) + varint(2) + bytes([TRUE << 4 | TRUE, 1, 2, 2, 1]) + \
        field(3, I32) + varint(14) + b"\x00"
    r = _Reader(data)
    got = []
    for fid, kind in r.fields():
        if fid == 3:
            got.append(r.integer(kind))
    assert got == [7] and r.pos == len(data)


def test_a_map_declaring_more_entries_than_bytes_is_refused():
    data = field(20, MAP) + varint(3) + bytes([BYTE << 4 | BYTE]) + b"\x01\x02\x03\x04\x05"
    with pytest.raises(FooterError):
        for _ in _Reader(data).fields():
            pass


@pytest.mark.parametrize("repeat", [1, 4])
def test_a_crafted_page_header_in_a_parquet_dump_is_an_input_error(tmp_path, repeat):
    """The crafted header in place of a real one: refused with one line naming the file,
    exit 2, in time linear in its size (the header 4 times longer: 4 times the work)."""
    rng = np.random.default_rng(3)
    path = tmp_path / "dump.parquet"
    pq.write_table(pa.table({"scores": pa.array(list(rng.random((4000, 20)).astype(np.float32)),
                                                pa.list_(pa.float32())),
                             "positive": pa.array(rng.integers(0, 20, 4000))}),
                   path, compression="NONE", use_dictionary=False, write_statistics=False)
    chunk = next(c for c in read_footer(str(path))[0].columns if c.path[0] == "scores")
    size = (16 << 10) * repeat
    crafted = (field(3, I32) + varint(200) + (field(20, MAP) + varint(size)
               + bytes([TRUE << 4 | TRUE])) * size)[:size]
    assert chunk.compressed_size > size
    data = bytearray(path.read_bytes())
    data[chunk.start:chunk.start + size] = crafted
    path.write_bytes(bytes(data))
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = ("import sys, time\nfrom tieeval.cli import program\n"
            "sys.argv = ['tieeval', 'compare', sys.argv[1], '-q']\nprogram()\n")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and str(path) in lines[0]
    assert took < 30, took  # the interpreter's start-up and the file; not minutes
