"""NPY: a bare ``(instances, candidates)`` score matrix (:mod:`tieeval.io.npy`)."""

from __future__ import annotations

from tieeval.io.readers import Reader, opened_by

READER = Reader("npy", "NPY", opened_by("tieeval.io.npy", "_open_npy"), suffixes=(".npy",),
                magic=(b"\x93NUMPY",), order=0)
