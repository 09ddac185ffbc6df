"""Page headers are checked against their column chunk before pyarrow reads a row group:
every page of a file as writers write it passes, a page declared larger than its chunk is
refused (the damaged case is in tests/fuzz/test_regressions.py)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tieeval.io.parquet_footer import FooterError, check_pages, read_footer


def _table(rng) -> pa.Table:
    rows = 3000
    return pa.table({
        "scores": pa.array([list(r) for r in rng.random((rows, 5)).astype(np.float32)],
                           pa.list_(pa.float32())),
        "positive": pa.array(rng.integers(0, 5, rows)),
        # long strings: page statistics longer than the first header window
        "note": pa.array([("x" * 9000) + str(i % 7) for i in range(rows)]),
    })


@pytest.mark.parametrize("compression", ["NONE", "SNAPPY", "ZSTD", "GZIP"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_every_page_of_a_written_file_fits_its_chunk(tmp_path, compression, dictionary):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_table(np.random.default_rng(5)), path, compression=compression,
                   use_dictionary=dictionary, data_page_size=2048, row_group_size=1000)
    groups = read_footer(path)
    assert len(groups) == 3
    for group in groups:
        assert all(c.start > 0 for c in group.columns)
        check_pages(path, group.columns, os.path.getsize(path))  # raises nothing


def test_a_page_larger_than_its_chunk_is_refused(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_table(np.random.default_rng(6)), path, compression="NONE",
                   use_dictionary=False, row_group_size=1000)
    group = read_footer(path)[0]
    chunk = next(c for c in group.columns if c.path[0] == "positive")
    # the chunk declared shorter than its pages: its first page no longer fits
    short = type(chunk)(chunk.path, chunk.num_values, 40, chunk.start)
    with pytest.raises(FooterError, match="declares"):
        check_pages(path, [short], os.path.getsize(path))
