"""The single-positive counts of a torch batch, on the tensor's own device.

For one positive per row, every figure follows from a few counts per row
(:class:`~tieeval.kernels.counts.RowCounts`): candidates strictly above the positive
(``a``), tied with it (``b``), sharing the row's maximum (``top``), and the positive's
Original rank. :func:`row_counts` computes them with torch where the scores are (a GPU
during training), comparing in the scores' own dtype, and brings only those per-row
arrays to the host; the Original rank of numpy's ``argsort`` (the default rule) needs the
rows whose positive is tied, which alone are copied and sorted as
:func:`~tieeval.kernels.counts.original_ranks` sorts them. ``stable`` / ``reverse-stable``
are counted on the device, and ``topk`` calls ``torch.topk`` there, as the training code
does. torch is an optional extra, imported only here and only for tensors.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.base import Kernel, nan_score_error
from tieeval.kernels.counts import RowCounts, original_ranks
from tieeval.kernels.original import read_depth
from tieeval.records.batch import Batch

__all__ = ["to_numpy", "numpy_dtype", "counts_on_device", "row_counts"]

DEVICE_RULES = ("argsort", "stable", "reverse-stable", "topk")
"""The Original rules counted from a torch batch without reading it on the host."""


def numpy_dtype(tensor: Any, path: str = "") -> np.dtype[Any]:
    """The numpy dtype of a tensor's scores (ties are judged in it, never cast); a dtype
    numpy has not (bfloat16) is an :class:`InputError`."""
    import torch
    try:
        dtype: np.dtype[Any] = torch.empty(0, dtype=tensor.dtype).numpy().dtype
    except TypeError:
        raise InputError(f"{path}: {str(tensor.dtype).replace('torch.', '')} scores: numpy "
                         "has no such dtype, so the result could not name it; evaluate "
                         "float32 scores (the model's own before the cast), or see "
                         "round_to_bfloat16 for a what-if") from None
    return dtype


def to_numpy(tensor: Any) -> np.ndarray:
    """A tensor on any device as a numpy array of its own dtype (copied to the host)."""
    numpy_dtype(tensor)
    value: np.ndarray = tensor.detach().cpu().numpy()
    return value


def counts_on_device(kernel: Kernel) -> bool:
    """Whether a torch batch's counts can be made on its device for ``kernel``: no
    what-if (a cast or tolerance works on the host), NaN an error (ranking NaN worst is
    the host's), an Original rule of :data:`DEVICE_RULES`."""
    spec = kernel.spec
    return (spec.what_if is None and spec.nan_policy == "raise" and not spec.items
            and spec.original in DEVICE_RULES)


def row_counts(scores: Any, positive: np.ndarray, kernel: Kernel, start: int = 0,
               path: str = "") -> RowCounts:
    """The :class:`RowCounts` of a dense ``(rows, candidates)`` tensor whose positive is
    at column ``positive[i]`` (checked), computed on the tensor's device; ``start``: the
    stream row of the first row (messages)."""
    import torch
    s = scores.detach()
    rows, cols = int(s.shape[0]), int(s.shape[1])
    pos = torch.as_tensor(positive, dtype=torch.int64, device=s.device).view(rows, 1)
    p = s.gather(1, pos)
    row_max = s.amax(dim=1, keepdim=True)
    eq = s == p
    stats = [(s > p).sum(dim=1), eq.sum(dim=1), (s == row_max).sum(dim=1)]
    rule = kernel.spec.original
    if s.is_floating_point():
        stats.append(torch.isnan(row_max.view(rows)).to(torch.int64))
    if rule in ("stable", "reverse-stable"):
        col = torch.arange(cols, device=s.device).view(1, cols)
        side = col < pos if rule == "stable" else col > pos
        stats.append((eq & side).sum(dim=1))
    if rule == "topk":
        metrics = [e.metric for e in kernel.entries]
        k = max([int(cast(int, d)) for d in map(read_depth, metrics) if d is not None] or [1])
        kk = min(k, cols)
        hit = torch.topk(s, kk, dim=1).indices == pos
        place = torch.argmax(hit.to(torch.int8), dim=1) + 1
        stats.append(torch.where(hit.any(dim=1), place, torch.zeros_like(place)))
    host = torch.stack([x.to(torch.int64) for x in stats]).cpu().numpy()
    a, b, top = host[0], host[1], host[2]
    extra = 3
    if s.is_floating_point():
        bad = np.flatnonzero(host[3])
        if bad.size:
            batch = Batch(np.empty((rows, 0)), positive, start)
            raise nan_score_error(path, batch, int(bad[0]))
        extra = 4
    original = a + 1
    if rule == "argsort":
        tied = np.flatnonzero(b > 1)
        if tied.size:
            index = torch.as_tensor(tied, device=s.device)
            sub = s.index_select(0, index).cpu().numpy()
            original[tied] = original_ranks(sub, positive[tied], a[tied], b[tied], rule)
    elif rule in ("stable", "reverse-stable"):
        original = original + host[extra]
    else:  # topk: the place in torch's list, or below the list (within the tie block)
        place = host[extra]
        original = np.where(place > 0, place, np.maximum(a + 1, min(k, cols) + 1))
    n = np.full(rows, cols, dtype=np.int64)
    return RowCounts(a=a, b=b, n=n, top=top, original=original)
