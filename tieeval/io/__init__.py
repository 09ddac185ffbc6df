"""Readers and writers of score dumps: a dump on disk -> batches of rows ready for the
kernels, in bounded memory.

:func:`tieeval.io.open.open_dump` is the only entry: one reader per format
(:mod:`tieeval.io.readers`: NPY, NPZ, Parquet, the long layout's Parquet or CSV, TREC runs
with their qrels), each yielding the same :class:`~tieeval.io.base.Batch` (scores plus
whatever relevance the dump carries, :mod:`tieeval.io.relevance`). Readers never import
kernels, the engine or anything above them; :mod:`tieeval.io.writers` writes dumps
(``save_scores``). Nothing here casts the scores: they reach the kernels in their stored
dtype.

A dump is cut into *parts* (row ranges of a matrix, Parquet row groups, spill partitions)
that can be read independently, in another process; :mod:`tieeval.engine.parallel` hands them to
workers. Sources that can only be read front to back (a compressed NPZ member, a sorted
long-format stream) have no parts and are read by one process.
"""
