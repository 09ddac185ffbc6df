"""Wide Parquet dumps, a file or a dataset directory (as Spark writes it): column ``scores``
of list / large_list / fixed_size_list of numbers (rows may differ in length) and an
optional integer column ``positive``; key-value metadata becomes run metadata. Read row
group by row group, page by page (``pre_buffer`` off), so memory follows the batch, not the
file or the row group; each row group is a part a worker can read on its own.
"""


from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from tieeval.errors import InputError, ParameterError
from tieeval.io.arrow import (
    _parquet_error,
    _pyarrow,
    arrow_metadata,
    check_rows_decoded,
    check_same_columns,
    check_same_fields,
    iter_row_group,
    list_to_numpy,
    numpy_dtype,
    parquet_file,
    row_groups,
    to_numpy,
)
from tieeval.io.base import (
    LARGE_ROW_GROUP_BYTES,
    Dump,
    ReadOptions,
    check_row_length,
    max_row_candidates,
)
from tieeval.io.relevance import field_names
from tieeval.io.validate import (
    _positive_for,
    check_named_field,
    check_score_dtype,
    positive_index_conflict,
    require_scores_column,
)
from tieeval.records.batch import Batch


def open_wide_parquet(path: str, opened: list, options: ReadOptions) -> Dump:
    """A wide Parquet dump from its opened files (``[(file, ParquetFile, schema)]``)."""
    pa, pq = _pyarrow()
    files = [file for file, _, _ in opened]
    schema = opened[0][2]
    names = schema.names
    given = options.long_options_given
    if given:
        raise ParameterError(f"{', '.join(given)} only apply to long-layout Parquet or CSV "
                             f"dumps; {path} has a '{options.scores}' list column")
    where = path if len(files) == 1 else files[0]
    require_scores_column(where, options, names)
    stype = schema.field(options.scores).type
    if not (pa.types.is_list(stype) or pa.types.is_large_list(stype)
            or pa.types.is_fixed_size_list(stype)):
        raise InputError(f"{where}: column '{options.scores}' must be a list of numbers per "
                         f"row, got {stype}")
    vtype = stype.value_type
    if not (pa.types.is_floating(vtype) or pa.types.is_integer(vtype)):
        raise InputError(f"{where}: column '{options.scores}' must hold numbers, got {vtype}")
    dtype = check_score_dtype(where, numpy_dtype(vtype), f"'{options.scores}'")
    check_named_field(where, options.positive, "positive", names, "column", options)
    check_same_fields(opened, [options.positive, *field_names(options).values()])
    has_positive = options.positive in names
    if has_positive:
        ptype = schema.field(options.positive).type
        if not pa.types.is_integer(ptype):
            raise InputError(f"{where}: column '{options.positive}' must hold integer column "
                             f"indices, got {ptype}")
        if options.positive_index is not None:
            raise positive_index_conflict(where, options.positive, "column")
    wanted = [options.scores] + ([options.positive] if has_positive else [])
    check_same_columns(files[0], schema, [(file, other) for file, _, other in opened[1:]],
                       wanted)
    metadata = arrow_metadata(schema)
    read = ReadOptions(options.scores, options.positive, options.positive_index)
    parts, warnings, total_rows, total_bytes = [], [], 0, 0
    limit = max_row_candidates()
    for file, pf, _ in opened:
        meta = pf.metadata
        start = 0
        big = []
        for g, info in enumerate(row_groups(file, pf)):
            rg = meta.row_group(g)
            if rg.num_rows == 0:
                continue
            values = info.values(options.scores)
            if values > limit * rg.num_rows:
                # more values than rows times the bound: some row is over it
                check_row_length(file, -(-values // rg.num_rows),
                                 f"row group {g}: a row")
            size = info.compressed_size
            parts.append(RowGroupPart(file, g, start, rg.num_rows, wanted, has_positive, read,
                                      int(size)))
            if rg.total_byte_size > LARGE_ROW_GROUP_BYTES:
                big.append(rg.total_byte_size)
            start += rg.num_rows
            total_bytes += int(size)
        total_rows += start
        if big:
            warnings.append(
                f"{file}: {len(big)} row group(s) of up to {max(big) / 2**20:.0f} MB; they are "
                "streamed page by page, but a row group is the unit of parallel work (--jobs, "
                "Spark tasks), so large ones serialise the run. Rewrite with smaller row groups, "
                "e.g. pyarrow.parquet.write_table(table, path, row_group_size=N) with N rows "
                "of about 64 MB, or Spark's parquet.block.size")
    if total_rows == 0:
        raise InputError(f"{path}: no instances (empty dump)")
    row_bytes = dtype.itemsize * (stype.list_size if pa.types.is_fixed_size_list(stype) else 0)
    if not row_bytes:  # variable-length lists: estimate from the uncompressed size
        unc = sum(pf.metadata.row_group(g).total_byte_size for _, pf, _ in opened
                  for g in range(pf.metadata.num_row_groups))
        row_bytes = max(1, unc // max(1, total_rows))
    from tieeval.io.ids import parquet_ids
    return Dump(path, "parquet", dtype, metadata, None, rows=total_rows, nbytes=total_bytes,
                row_bytes=int(row_bytes), warnings=warnings, parts=parts,
                _ids=lambda name: parquet_ids(path, files, name))


@dataclass(frozen=True)
class RowGroupPart:
    """One row group of one Parquet file: rows ``start..start+rows`` of that file."""

    path: str
    group: int
    start: int
    rows: int
    columns: list
    has_positive: bool
    options: ReadOptions  # the fields' names and --positive-index
    nbytes: int

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        pa, _ = _pyarrow()
        start = self.start
        try:
            pf = parquet_file(self.path)
            it = iter_row_group(self.path, pf, self.group, batch_rows, self.columns)
            for record in it:
                if record.num_rows == 0:
                    continue
                share = self.nbytes * record.num_rows // max(1, self.rows)
                batch = parquet_batch(self.path, self.options, record, self.has_positive, start)
                batch.nbytes = share
                yield batch
                start += record.num_rows
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _parquet_error(self.path, exc, f"row group {self.group}: ") from None
        check_rows_decoded(self.path, self.group, start - self.start, self.rows)


def parquet_batch(path, options, table, has_positive, start) -> Batch:
    """An Arrow table or record batch of the wide layout -> a :class:`Batch`."""
    scores, offsets = list_to_numpy(path, table.column(options.scores), start, options.scores)
    lengths = (np.full(scores.shape[0], scores.shape[1], dtype=np.int64) if offsets is None
               else np.diff(offsets).astype(np.int64))
    stored = None
    if has_positive:
        col = table.column(options.positive)
        if col.null_count:
            i = int(np.flatnonzero(to_numpy(col.is_null()))[0])
            raise InputError(f"{path}: row {start + i}: '{options.positive}' is null")
        stored = to_numpy(col)
    positive = _positive_for(path, options.positive_index, lengths, start, stored)
    return Batch(scores, positive, start, offsets,
                 positive_defaulted=stored is None and options.positive_index is None)
