"""Per-instance output: one Parquet row per instance with every metric's four columns.

:func:`write_per_instance` opens a dump, finds its instance ids (the long layout's and TREC
runs' come with the batches; a wide dump's ``instance`` field is read beside the scores)
and streams the rows with :func:`tieeval.engine.local.per_instance`.
"""

from __future__ import annotations

from tieeval.analysis.diff import INSTANCE_FIELD
from tieeval.engine.local import per_instance
from tieeval.io.base import Dump, ReadOptions
from tieeval.io.open import open_dump
from tieeval.sink import check_output_path


def check_output(out, inputs=()) -> str:
    """``out`` is a place the output sink can write the per-instance file to, and none of
    ``inputs`` (checked before any evaluation; see :mod:`tieeval.sink`)."""
    return check_output_path(out, inputs=inputs, what="the per-instance file")


def write_per_instance(path: str, out: str, metrics=None, *,
                       options: ReadOptions | None = None,
                       instance_field: str = INSTANCE_FIELD, **kwargs) -> int:
    """Evaluate the dump at ``path`` per instance into the Parquet file ``out`` (see
    :func:`tieeval.engine.local.per_instance` for the columns and ``kwargs``: ``nan_policy``,
    ``batch_rows``, ``relevance``, ``what_if``, ``original``, ``progress``); returns the
    number of rows written.

    >>> import numpy as np, tempfile, os, pyarrow.parquet as pq
    >>> from tieeval import save_scores
    >>> d = tempfile.mkdtemp()
    >>> path = save_scores(os.path.join(d, "run.npz"), np.array([[1., 1.], [1., 0.]]))
    >>> write_per_instance(os.path.join(d, "run.npz"), os.path.join(d, "rows.parquet"),
    ...                    ["HR@1"])
    2
    >>> pq.read_table(os.path.join(d, "rows.parquet")).column("HR@1_tie_aware").to_pylist()
    [0.5, 1.0]
    """
    inputs = [path, getattr(options, "qrels", None)]  # a TREC run's qrels too
    out = check_output(out, inputs)
    dump = open_dump(path, options)
    return per_instance(dump, out, metrics, ids=stored_ids(dump, instance_field),
                        inputs=inputs, **kwargs)


def stored_ids(dump: Dump, instance_field: str | None = None):
    """The instance ids stored beside a wide NPZ or Parquet dump's scores (field
    ``instance_field``, default ``instance``), read by the reader that opened it, else
    None (the long layout's and TREC runs' come with the batches)."""
    return dump.instance_ids(instance_field or INSTANCE_FIELD)
