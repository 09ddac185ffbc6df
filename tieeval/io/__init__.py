"""Readers and writers of score dumps: a dump on disk -> batches of rows ready for the
kernels, in bounded memory.

:func:`tieeval.io.open.open_dump` is the only entry: one reader per format, each yielding
the same :class:`~tieeval.io.base.Batch` (scores plus whatever relevance the dump carries).
Readers never import kernels, the engine or anything above them.

Supported layouts (one path = one run):

* NPY: a bare ``(instances, candidates)`` score matrix, memory-mapped; pages already read are
  released after each batch, so the resident set stays near one batch.
* NPZ: array ``scores`` (same shape) and optional integer array ``positive`` (one column
  index per row); 0-d string entries become run metadata. Never unpickled. Members stored
  uncompressed (``np.savez``) are memory-mapped in place like NPY; compressed members
  (``np.savez_compressed``) are decompressed in row chunks through the zip member, never
  whole, and their CRC is checked at the end.
* Parquet, a file or a directory of files (a multi-file dataset as Spark writes it): column
  ``scores`` of list / large_list / fixed_size_list of numbers (rows may differ in length)
  and optional integer column ``positive``; key-value metadata becomes run metadata. Read
  row group by row group, page by page (``pre_buffer`` off), so memory follows the batch,
  not the file or the row group.
* Long (tidy) layout, Parquet or CSV: one row per (instance, candidate); see
  :mod:`tieeval.io.long`.
* TREC runs with their qrels (:mod:`tieeval.io.trec`); relevance fields beside the scores
  (:mod:`tieeval.io.relevance`); :mod:`tieeval.io.writers` writes dumps (``save_scores``).

Without a ``positive`` field the positive is column ``positive_index`` (default 0).
Nothing here casts the scores: they reach the kernels in their stored dtype.

A dump is cut into *parts* (row ranges of a matrix, Parquet row groups, spill partitions)
that can be read independently, in another process; :mod:`tieeval.engine.parallel` hands them to
workers. Sources that can only be read front to back (a compressed NPZ member, a sorted
long-format stream) have no parts and are read by one process.
"""
