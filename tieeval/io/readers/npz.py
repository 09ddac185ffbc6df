"""NPZ: array ``scores`` and optional ``positive``, relevance fields, ids, ranking and
metadata, stored or compressed members (:mod:`tieeval.io.npz`)."""

from __future__ import annotations

from tieeval.io.readers import Reader, opened_by

READER = Reader("npz", "NPZ", opened_by("tieeval.io.npz", "_open_npz"), suffixes=(".npz",),
                magic=(b"PK\x03\x04",),
                carries=frozenset({"positive", "labels", "items", "ranking", "ids", "metadata"}),
                order=1)
