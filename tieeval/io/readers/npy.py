"""NPY: a bare ``(instances, candidates)`` score matrix (:mod:`tieeval.io.npy`)."""

from __future__ import annotations

from tieeval.io.readers import Reader


def open_npy(path, options):
    from tieeval.io.npy import _open_npy
    return _open_npy(path, options)


READER = Reader("npy", "NPY", open_npy, suffixes=(".npy",), magic=(b"\x93NUMPY",), order=0)
