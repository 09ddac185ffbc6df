"""Index arithmetic over ranges laid end to end.

Many steps pick some ranges of an array (the items of chosen tie blocks, the judgements
of chosen queries, the values a hypergeometric count can take) and work on all their
positions at once: range ``i`` covers ``starts[i] .. starts[i] + sizes[i] - 1``, and its
positions follow those of range ``i - 1``. :func:`positions` lists them; :func:`expand`
also says which range each belongs to.

Both work without a Python loop: each range's start, less the number of positions laid
before it, repeated over the range, plus the running position ``0, 1, 2, ...``. This
module imports only numpy, so every layer may use it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike


def positions(starts: ArrayLike, sizes: ArrayLike, dtype: DTypeLike = np.int64) -> np.ndarray:
    """Every position of the ranges ``starts[i] .. starts[i] + sizes[i] - 1``, range
    after range.

    Parameters
    ----------
    starts : integer array, shape (r,)
        The first position of each range (any integers, in any order; ranges may overlap).
    sizes : integer array, shape (r,)
        The length of each range, >= 0; an empty range adds no position.
    dtype : integer dtype, default int64
        The result's dtype. The sum of ``sizes`` and every position must fit it (a
        caller with fewer than 2**31 positions may ask for int32 to halve the memory).

    Returns
    -------
    ndarray of ``dtype``, shape (sizes.sum(),)
        ``starts[0], starts[0] + 1, ..., starts[1], starts[1] + 1, ...``

    Examples
    --------
    >>> positions([5, 9, 2], [2, 0, 3]).tolist()
    [5, 6, 2, 3, 4]
    """
    sizes = np.asarray(sizes)
    # starts - (positions laid before the range) = starts + sizes - cumsum(sizes), in
    # place on one array of the ranges' length; the result is then one repeat plus one
    # running count, as many passes over the positions as the expression written out
    shift = np.cumsum(sizes, dtype=np.int64)
    np.subtract(sizes, shift, out=shift)
    shift += np.asarray(starts)
    out = np.repeat(shift.astype(dtype, copy=False), sizes)
    out += np.arange(out.size, dtype=dtype)
    return out


def expand(starts: ArrayLike, sizes: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """:func:`positions` of the ranges and the range each position belongs to.

    Returns
    -------
    positions : int64 ndarray, shape (sizes.sum(),)
        As :func:`positions` gives them.
    owner : int64 ndarray, shape (sizes.sum(),)
        The index ``i`` of the range each position comes from: ``i`` repeated
        ``sizes[i]`` times, so ``positions - starts[owner]`` is the place inside the range.

    Examples
    --------
    >>> pos, owner = expand([5, 9, 2], [2, 0, 3])
    >>> pos.tolist(), owner.tolist()
    ([5, 6, 2, 3, 4], [0, 0, 2, 2, 2])
    """
    sizes = np.asarray(sizes)
    return positions(starts, sizes), np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
