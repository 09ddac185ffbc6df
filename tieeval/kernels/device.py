"""The single-positive counts of a torch batch, on the tensor's own device.

For one positive per row, every figure follows from a few counts per row
(:class:`~tieeval.kernels.counts.RowCounts`): candidates strictly above the positive
(``a``), tied with it (``b``), sharing the row's maximum (``top``), and the positive's
Original rank. :func:`row_counts` computes them where the scores are, comparing in the
scores' own dtype: a CPU tensor in place, by the host's own counts
(:func:`~tieeval.kernels.counts.dense_counts` on the tensor's memory: no copy, and the
same counts a dump's rows get); on another device (a GPU during training) with torch
there, bringing only those per-row arrays to the host. The Original rank of numpy's
``argsort`` (the default rule) needs the rows whose positive is tied, which alone are
sorted as :func:`~tieeval.kernels.counts.original_ranks` sorts them (on the host);
``stable`` / ``reverse-stable`` are counted, and ``topk`` calls ``torch.topk`` on the
tensor's device, as the training code does. torch is an optional extra, imported only
here and only for tensors.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from tieeval.errors import InputError
from tieeval.kernels.base import Kernel
from tieeval.kernels.counts import NanScoreError, RowCounts, dense_counts, original_ranks
from tieeval.kernels.original import read_depth

__all__ = ["to_numpy", "numpy_dtype", "counts_on_device", "row_counts", "list_depth"]

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


def list_depth(kernel: Kernel) -> int:
    """The depth ``torch.topk`` lists under ``original='topk'``: the deepest place a
    metric of ``kernel`` reads (as :func:`tieeval.kernels.original.listed_ranking`)."""
    metrics = [e.metric for e in kernel.entries]
    return max([int(cast(int, d)) for d in map(read_depth, metrics) if d is not None] or [1])


def row_counts(scores: Any, positive: np.ndarray, kernel: Kernel,
               rank_depth: int | None = None, k: int | None = None) -> RowCounts | None:
    """The :class:`RowCounts` of a dense ``(rows, candidates)`` tensor whose positive is
    at column ``positive[i]`` (checked), computed where the tensor is; None where a score
    is NaN (the caller reads the batch on the host, whose message names the row; see the
    module doc for where the counts are made). ``rank_depth``: no metric reads the
    Original below this place, so a tied positive whose block starts there is not sorted
    (its rank is left at ``a + 1``, as the sparse table leaves it). ``k``:
    :func:`list_depth` of the kernel, if known."""
    import torch
    s = scores.detach()
    rule = kernel.spec.original
    counts = (_host_counts(s, positive, rule, rank_depth) if s.device.type == "cpu"
              else _torch_counts(torch, s, positive, rule, rank_depth))
    if counts is not None and rule == "topk":
        counts.original = _topk_ranks(torch, s, positive, counts.a,
                                      list_depth(kernel) if k is None else k)
    return counts


def _host_counts(s: Any, positive: np.ndarray, rule: str,
                 rank_depth: int | None) -> RowCounts | None:
    """:func:`row_counts` of a CPU tensor: the host's counts on its memory."""
    values = s.resolve_neg().resolve_conj().numpy()
    try:
        counts = dense_counts(values, positive, "raise", "none")
    except NanScoreError:
        return None
    a, b = counts.a, counts.b  # rows whose block starts at rank_depth are not sorted
    sort = b if rank_depth is None else np.where(a < rank_depth, b, 1)
    counts.original = original_ranks(values, positive, a, sort, rule)  # topk: a + 1
    return counts


def _torch_counts(torch: Any, s: Any, positive: np.ndarray, rule: str,
                  rank_depth: int | None) -> RowCounts | None:
    """:func:`row_counts` with torch on the tensor's device (any device: a GPU's, where
    the host's counts cannot read the tensor)."""
    rows, cols = int(s.shape[0]), int(s.shape[1])
    pos = torch.as_tensor(positive, dtype=torch.int64, device=s.device).view(rows, 1)
    p = s.gather(1, pos)
    row_max = s.amax(dim=1, keepdim=True)
    eq = s == p
    # the fourth: whether the row's maximum is NaN (it holds a NaN; never so for integers)
    stats = [(s > p).sum(dim=1), eq.sum(dim=1), (s == row_max).sum(dim=1),
             (row_max != row_max).view(rows)]
    if rule in ("stable", "reverse-stable"):
        col = torch.arange(cols, device=s.device).view(1, cols)
        side = col < pos if rule == "stable" else col > pos
        stats.append((eq & side).sum(dim=1))
    host = torch.stack([x.to(torch.int64) for x in stats]).cpu().numpy()
    if host[3].any():
        return None
    a, b, top = host[0], host[1], host[2]
    original = a + 1
    if rule == "argsort":
        tied = np.flatnonzero((b > 1) if rank_depth is None else (b > 1) & (a < rank_depth))
        if tied.size:
            index = torch.as_tensor(tied, device=s.device)
            sub = s.index_select(0, index).cpu().numpy()
            original[tied] = original_ranks(sub, positive[tied], a[tied], b[tied], rule)
    elif rule in ("stable", "reverse-stable"):
        before = host[4] if rank_depth is None else np.where(a < rank_depth, host[4], 0)
        original = original + before
    n = np.full(rows, cols, dtype=np.int64)
    return RowCounts(a=a, b=b, n=n, top=top, original=original)


def _topk_ranks(torch: Any, s: Any, positive: np.ndarray, a: np.ndarray,
                k: int) -> np.ndarray:
    """The positive's place in ``torch.topk(s, min(k, candidates)).indices`` of each row
    (on the tensor's device, as the training code calls it), or, left out of the list,
    below it within its tie block (:meth:`tieeval.kernels.original.Listed.positive_ranks`)."""
    cols = int(s.shape[1])
    kk = min(k, cols)
    if not s.is_floating_point() and not s.is_signed() and s.element_size() > 1:
        s = s.to(torch.int64)  # torch.topk has no wide unsigned kernels; the same order
    # the list on the tensor's device; its (rows, K) indices, small, read on the host
    listed = torch.topk(s, kk, dim=1).indices.cpu().numpy()
    hit = listed == positive[:, None]
    place = np.argmax(hit, axis=1) + 1
    ranks: np.ndarray = np.where(hit.any(axis=1), place, np.maximum(a + 1, kk + 1))
    ranks = ranks.astype(np.int64, copy=False)
    return ranks
