"""Every reader accounts for every row: what a file decodes to is what its footer or header
declares (per Parquet row group, NPZ member, NPY file), or the run stops with one
``Error:`` line; a footer pyarrow's C++ code rejects never takes the process down; an NPZ
that names one array twice is refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.errors import InputError
from tieeval.io.parquet_footer import FooterError, parse_footer, read_footer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _one_error(code, stderr, pattern):
    assert code == 2, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    assert re.search(pattern, lines[0]), lines[0]


def _compare(*args):
    r = CliRunner().invoke(cli, ["compare", *map(str, args)])
    return r.exit_code, r.stderr


def _compare_proc(*args):
    """In a process of its own: an abort there must not take the test run down."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "tieeval", "compare", *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stderr


def _wide_table(rows=60, cols=8, seed=0):
    s = np.random.default_rng(seed).random((rows, cols)).astype(np.float32)
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * cols)
    return pa.table({"scores": pa.ListArray.from_arrays(offsets, pa.array(s.reshape(-1)))})


def _long_table(rows=60, cols=8, seed=0):
    s = np.random.default_rng(seed).random((rows, cols))
    return pa.table({"instance": pa.array(np.repeat(np.arange(rows), cols)),
                     "position": pa.array(np.tile(np.arange(cols), rows)),
                     "score": pa.array(s.reshape(-1))})


def _declared_and_decoded(path):
    """pyarrow's own count of each row group's rows, or None where it raises."""
    pf = pq.ParquetFile(path)
    out = []
    for g in range(pf.metadata.num_row_groups):
        declared = pf.metadata.row_group(g).num_rows
        try:
            decoded = sum(b.num_rows for b in pf.iter_batches(row_groups=[g], batch_size=1000))
        except Exception:  # noqa: BLE001 - any refusal is not the case sought
            return None
        out.append((declared, decoded))
    return out


def _short_row_group_mutant(tmp_path, table, name):
    """A file pyarrow decodes to fewer rows than one row group's footer declares, without
    an error: one byte of a data page overwritten, no page checksum (pyarrow's default)."""
    base = tmp_path / "base.parquet"
    pq.write_table(table, base, row_group_size=30, compression="none", data_page_size=400)
    data = base.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    mutant = tmp_path / name
    for offset in range(footer - 1, 3, -1):  # the last pages first: found sooner
        for value in (0xFF, 0x01, 0x00):
            if data[offset] == value:
                continue
            mutant.write_bytes(data[:offset] + bytes([value]) + data[offset + 1:])
            counts = _declared_and_decoded(mutant)
            if counts and any(dec < dec_ for dec_, dec in counts):
                return mutant, counts
    pytest.skip("no byte of a data page makes this pyarrow decode fewer rows silently")


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_a_row_group_decoding_fewer_rows_than_its_footer_declares_is_an_error(tmp_path,
                                                                                layout):
    table = _wide_table() if layout == "wide" else _long_table(rows=8, cols=15)
    mutant, counts = _short_row_group_mutant(tmp_path, table, f"short_{layout}.parquet")
    group = next(g for g, (declared, got) in enumerate(counts) if got < declared)
    code, err = _compare(mutant)
    _one_error(code, err, rf"short_{layout}\.parquet: corrupted Parquet file \(row group "
                          rf"{group}: {counts[group][1]} rows decoded, its footer declares "
                          rf"{counts[group][0]}\)")


def _histogram_mutant(tmp_path):
    """A footer whose level histogram pyarrow's C++ code rejects (read_table raises)."""
    base = tmp_path / "base.parquet"
    pq.write_table(pa.table({**_wide_table(20, 4).to_pydict(),
                             "positive": pa.array(np.arange(20) % 4)}), base,
                   row_group_size=10)
    data = base.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    mutant = tmp_path / "histogram.parquet"
    for offset in range(footer, len(data) - 8):
        for value in (0x00, 0x15, 0x19):
            mutant.write_bytes(data[:offset] + bytes([value]) + data[offset + 1:])
            try:
                pq.read_table(mutant)
            except Exception as exc:  # noqa: BLE001 - looking for one message
                if "histogram size mismatch" in str(exc):
                    return mutant
    pytest.skip("this pyarrow checks no level histogram")


def test_a_footer_that_aborts_pyarrow_metadata_access_is_one_error_line(tmp_path):
    mutant = _histogram_mutant(tmp_path)
    code, err = _compare_proc(mutant)
    _one_error(code, err, r"histogram\.parquet: corrupted or truncated Parquet file")


def test_footer_reader_agrees_with_pyarrow_metadata(tmp_path):
    rng = np.random.default_rng(3)
    tables = [_wide_table(50, 7), _long_table(9, 5),
              pa.table({"scores": pa.FixedSizeListArray.from_arrays(
                  pa.array(rng.random(60)), 6), "positive": pa.array(np.arange(10) % 6),
                  "name": pa.array([f"q{i}" for i in range(10)]).dictionary_encode()})]
    options = [dict(compression="snappy"), dict(compression="zstd", row_group_size=7),
               dict(compression="none", write_page_checksum=True, row_group_size=3)]
    for i, (table, opts) in enumerate(zip(tables, options)):
        path = tmp_path / f"t{i}.parquet"
        table = table.replace_schema_metadata({"model": "x" * 300})
        pq.write_table(table, path, **opts)
        meta = pq.ParquetFile(path).metadata
        groups = read_footer(str(path))
        assert len(groups) == meta.num_row_groups
        for g, info in enumerate(groups):
            rg = meta.row_group(g)
            assert info.num_rows == rg.num_rows
            assert len(info.columns) == rg.num_columns
            for j, chunk in enumerate(info.columns):
                col = rg.column(j)
                assert ".".join(chunk.path) == col.path_in_schema
                assert chunk.num_values == col.num_values
                assert chunk.compressed_size == col.total_compressed_size


@pytest.mark.parametrize("footer", [b"", b"\x19", b"\x1c" * 200, b"\x19\xfc" + b"\xff" * 20,
                                    b"\x49\x0f\xff\xff\xff\xff\x0f"])
def test_footer_reader_refuses_malformed_thrift(footer):
    with pytest.raises(FooterError):
        parse_footer(footer)


def test_npy_holding_more_rows_than_its_header_declares_is_an_error(tmp_path):
    s = np.random.default_rng(1).random((40, 6)).astype(np.float32)
    path = tmp_path / "rows.npy"
    np.save(path, s)
    data = path.read_bytes()
    # the header's row count damaged from 40 to 10: 30 rows would go unevaluated
    damaged = tmp_path / "short_header.npy"
    damaged.write_bytes(data.replace(b"(40, 6)", b"(10, 6)", 1))
    assert np.load(damaged).shape == (10, 6)  # numpy itself reads the 10 rows only
    code, err = _compare(damaged)
    _one_error(code, err, r"short_header\.npy: corrupted file \(the file holds 720 bytes "
                          r"more than its header's shape \(10, 6\) declares\)")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_member_holding_more_rows_than_its_header_declares_is_an_error(tmp_path, save):
    s = np.random.default_rng(2).random((40, 6)).astype(np.float32)
    path = tmp_path / "rows.npz"
    save(path, scores=s)
    with zipfile.ZipFile(path) as z:
        member = z.read("scores.npy")
    damaged = tmp_path / "short_member.npz"
    with zipfile.ZipFile(damaged, "w", compression=zipfile.ZIP_STORED if save is np.savez
                         else zipfile.ZIP_DEFLATED) as z:
        z.writestr("scores.npy", member.replace(b"(40, 6)", b"(10, 6)", 1))
    code, err = _compare(damaged)
    _one_error(code, err, r"short_member\.npz: corrupted (file|or truncated file) \(member "
                          r"scores\.npy (holds 720 bytes more than|is longer than)")


@pytest.mark.parametrize("names", [("scores.npy", "scores.npy"), ("scores", "scores.npy"),
                                   ("positive.npy", "positive")])
def test_npz_with_two_members_for_one_array_is_refused(tmp_path, names):
    rng = np.random.default_rng(4)
    path = tmp_path / "twice.npz"
    arrays = {"scores.npy": rng.random((5, 4)), "positive.npy": np.zeros(5, dtype=np.int64)}
    buf = {}
    for name, arr in arrays.items():
        tmp = tmp_path / "one.npy"
        np.save(tmp, arr)
        buf[name] = tmp.read_bytes()
    with zipfile.ZipFile(path, "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: the case itself
        for name in names:
            z.writestr(name, buf[name if name.endswith(".npy") else name + ".npy"])
        for name in set(arrays) - {n if n.endswith(".npy") else n + ".npy" for n in names}:
            z.writestr(name, buf[name])
    code, err = _compare(path)
    key = names[0].removesuffix(".npy")
    _one_error(code, err, rf"twice\.npz: ambiguous NPZ: members '{re.escape(names[0])}' and "
                          rf"'{re.escape(names[1])}' both hold an array '{key}'")
    with pytest.raises(InputError, match="ambiguous NPZ"):
        from tieeval.engine.local import evaluate_path
        evaluate_path(path)
