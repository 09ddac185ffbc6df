"""Whether a wide dump carries its codebase's saved ranking (the ``ranking`` field), and how
much of each row it lists -- read from the NPZ member headers or the Parquet column alone,
before any evaluation, so that ``tieeval check`` can judge the dump by that ranking and ask
only for the metrics it can answer.

A metric needs ``min(depth, candidates)`` listed indices per row, its depth the one its
measure declares (K for a metric with cutoff K), one reading every position (MRR, MAP) the
whole ranking (:mod:`tieeval.kernels.original`).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass

from tieeval.errors import InputError
from tieeval.io.base import require_regular_file
from tieeval.io.readers import detect_format
from tieeval.io.readers.parquet import dataset_files
from tieeval.io.relevance import RANKING_FIELD


@dataclass(frozen=True)
class SavedRanking:
    """``depth``: the fewest candidates a row's ranking lists; ``full``: every row lists
    all its candidates (then every metric can be answered)."""

    depth: int
    full: bool

    def answers(self, metric) -> bool:
        """Whether the ranking answers ``metric`` in every row: the depth its measure
        reads (:meth:`~tieeval.metrics.measures.base.Measure.read_depth`) is within the
        ranking's, or the ranking is whole."""
        if self.full:
            return True
        depth = metric.spec.read_depth(metric.k)
        return depth is not None and depth <= self.depth


def saved_ranking(path: str, scores_field: str = "scores") -> SavedRanking | None:
    """The saved ranking of the NPZ or Parquet dump at ``path``, or None when it has none
    (or cannot be read here: the evaluation then reports what is wrong with it)."""
    path = os.fspath(path)
    try:
        # never open a FIFO, socket or device (it would block): the reader refuses them
        require_regular_file(path)
        if os.path.isdir(path):
            return _parquet(dataset_files(path), scores_field)
        fmt = detect_format(path)
        if fmt == "npz":
            return _npz(path, scores_field)
        if fmt == "parquet":
            return _parquet([path], scores_field)
    except (InputError, OSError, ValueError, KeyError, zipfile.BadZipFile, ImportError):
        return None
    except Exception as exc:  # pyarrow's errors: the reader proper reports them
        if type(exc).__module__.startswith("pyarrow"):
            return None
        raise
    return None


def _npz(path: str, scores_field: str) -> SavedRanking | None:
    # NPZ holds (instances, candidates) scores and an (instances, K) ranking
    from tieeval.io.npz import _NpzMember  # its header only, not its data
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        member = f"{RANKING_FIELD}.npy"
        if member not in names:
            return None
        shape = _NpzMember(path, archive, member).shape
        if len(shape) != 2:
            return None  # not a ranking the reader accepts: it says why
        depth = int(shape[1])
        scores = f"{scores_field}.npy"
        score_shape = _NpzMember(path, archive, scores).shape if scores in names else None
    full = score_shape is not None and len(score_shape) == 2 and depth >= int(score_shape[1])
    return SavedRanking(depth, full)


def _parquet(files: list[str], scores_field: str) -> SavedRanking | None:
    from tieeval.io.arrow import dataset_with
    dataset = dataset_with(files, RANKING_FIELD)
    if dataset is None:
        return None
    import pyarrow.compute as pc

    names = dataset.schema.names
    columns = [RANKING_FIELD] + ([scores_field] if scores_field in names else [])
    depth: int | None = None
    full = scores_field in names
    for batch in dataset.to_batches(columns=columns):
        listed = pc.list_value_length(batch.column(0)).fill_null(0)
        if len(listed):
            low = int(pc.min(listed).as_py())
            depth = low if depth is None else min(depth, low)
        if full and len(listed):
            short = pc.less(listed, pc.list_value_length(batch.column(1)).fill_null(0))
            full = not bool(pc.any(short).as_py())
    if depth is None:
        return None
    return SavedRanking(depth, full)
