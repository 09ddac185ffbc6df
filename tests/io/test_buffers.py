"""Batch buffers are reused only once nothing refers to them or to a view of them."""

from __future__ import annotations

import numpy as np

from tieeval.io import buffers


def _owner(arr: np.ndarray) -> np.ndarray:
    return arr if arr.base is None else arr.base


def test_a_buffer_in_use_is_never_handed_out_again():
    buffers.release()
    shape = (1024, 300)  # 1.2 MB of float32: pooled
    first = buffers.empty(shape, np.float32)
    first[:] = 1.0
    second = buffers.empty(shape, np.float32)
    assert not np.shares_memory(first, second)
    view = first[10:20]  # a batch's rows, still being evaluated
    del first
    third = buffers.empty(shape, np.float32)
    assert not np.shares_memory(view, third) and not np.shares_memory(second, third)
    assert (view == 1.0).all()  # the rows in use were not overwritten
    owner = id(_owner(view))  # its id: a reference would keep it in use
    del view, third
    again = buffers.empty(shape, np.float32)  # now free: reused
    assert id(_owner(again)) == owner
    buffers.release()


def test_small_arrays_and_other_sizes_are_fresh():
    buffers.release()
    small = buffers.empty((10, 10), np.float64)
    assert small.base is None and small.shape == (10, 10)
    big = buffers.empty((1 << 18,), np.float64)
    owner = id(_owner(big))
    del big
    other = buffers.empty((1 << 16,), np.float64)  # a quarter of it: not that buffer
    assert id(_owner(other)) != owner
    assert other.dtype == np.float64 and other.flags.c_contiguous
    shorter = buffers.empty((3 << 16,), np.float64)  # a last, shorter batch: reused
    assert id(_owner(shorter)) == owner and shorter.shape == (3 << 16,)
    buffers.release()
