"""Readers and writers of score dumps.

:func:`tieeval.io.open.open_dump` is the only entry: one reader per format (NPY, NPZ, Parquet,
long layout, TREC), each yielding the same :class:`~tieeval.io.base.Batch`. Readers never
import kernels, the engine or anything above them."""
