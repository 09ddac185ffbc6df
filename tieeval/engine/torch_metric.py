"""A torchmetrics ``Metric`` around :class:`~tieeval.engine.stream.TieAware`:
:class:`TieAwareMetric` (``pip install 'tieeval[torch]' torchmetrics``).

It evaluates as a :class:`TieAware` does (the same options, the same result), and keeps
torchmetrics' contract: ``update`` / ``compute`` / ``reset`` / ``forward``, ``merge_state``,
and a state that data-parallel training synchronises. The sums are exact and not tensors
(integer counts of any size, exact float sums), so the synchronised state is each
process's sums as bytes: one ``uint8`` tensor per process in a list state reduced by
concatenation (``dist_reduce_fx="cat"``, which gathers tensors of different lengths); on
``compute`` every process's sums are merged, which gives the figures of all the processes'
rows exactly, whatever the number of processes.

``compute()`` returns a flat dict of scalar tensors, ready for ``self.log_dict`` in
Lightning: per metric ``"<metric>"`` (the tie-aware value), ``"<metric>/original"``,
``"<metric>/first"``, ``"<metric>/last"`` and ``"<metric>/tie_aware_std"``, and per
cutoff ``"tie_decided@K"`` (the share of rows whose HR@K the tie-break decides);
:meth:`TieAwareMetric.result` gives the whole :class:`~tieeval.records.results.RunResult`.
This module imports torch and torchmetrics: ``tieeval.TieAwareMetric`` loads it on first
use only.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import torch
from torchmetrics import Metric

from tieeval.engine.stream import TieAware
from tieeval.kernels.accumulator import Accumulator
from tieeval.metrics.metric import DEFAULT_KS

__all__ = ["TieAwareMetric", "pack", "unpack"]

#: torchmetrics' own keywords (the rest are tieeval's options)
_METRIC_KEYWORDS = ("compute_on_cpu", "dist_sync_on_step", "process_group", "dist_sync_fn",
                    "distributed_available_fn", "sync_on_compute", "compute_with_cache")


def pack(stream: TieAware) -> torch.Tensor:
    """A :class:`TieAware`'s sums as one ``uint8`` tensor: an 8-byte length, then JSON
    (frames concatenated by a synchronisation stay readable)."""
    stream._flush()
    state = {"rows": stream.rows, "kind": stream._kind,
             "dtype": None if stream._dtype is None else str(stream._dtype),
             "acc": None if stream._acc is None else stream._acc.to_state()}
    data = json.dumps(state).encode()
    frame = struct.pack("<Q", len(data)) + data
    return torch.frombuffer(bytearray(frame), dtype=torch.uint8)


def unpack(blob: torch.Tensor, like: TieAware) -> list[TieAware]:
    """The :class:`TieAware` of every frame in ``blob``, with the options of ``like``."""
    import numpy as np
    data = bytes(blob.detach().cpu().to(torch.uint8).numpy().tobytes())
    out, at = [], 0
    while at < len(data):
        (size,) = struct.unpack_from("<Q", data, at)
        state = json.loads(data[at + 8:at + 8 + size])
        at += 8 + size
        part = like._like()
        if state["acc"] is not None:
            kind = state["kind"]
            part._start(None if kind is None else (kind[0], kind[1], tuple(kind[2])),
                        np.dtype(state["dtype"]), "")
            part._acc = Accumulator.from_state(state["acc"])
            part.rows = int(state["rows"])
        out.append(part)
    return out


class TieAwareMetric(Metric):
    """Tie-aware ranking figures as a torchmetrics ``Metric``.

    ``k`` and the keyword options are :func:`tieeval.evaluate`'s (``metrics``,
    ``original``, ``convention`` ...); torchmetrics' own keywords (``sync_on_compute``,
    ``process_group`` ...) go to ``Metric``. ``update`` takes what
    :meth:`TieAware.update` takes (scores, then ``positive=`` / ``positives`` /
    ``labels``), tensors on any device.
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = True

    def __init__(self, k: Any = DEFAULT_KS, **options: Any):
        own = {name: options.pop(name) for name in list(options) if name in _METRIC_KEYWORDS}
        super().__init__(**own)
        self.stream = TieAware(k, path=options.pop("path", "<torchmetrics>"), **options)
        self.add_state("sums", default=[], dist_reduce_fx="cat")

    def update(self, scores: Any, positives: Any = None, labels: Any = None,
               **arrays: Any) -> None:
        self.stream.update(scores, positives, labels, **arrays)

    def sync(self, *args: Any, **kwargs: Any) -> None:
        # the sums go into the state torchmetrics synchronises, as bytes
        self.sums = [pack(self.stream)]
        super().sync(*args, **kwargs)

    def _merged(self) -> TieAware:
        """This process's sums, with every other process's after a synchronisation."""
        parts = [p for blob in (self.sums if isinstance(self.sums, list) else [self.sums])
                 for p in unpack(blob, self.stream)] if len(self.sums) else []
        if len(parts) <= 1:
            return self.stream
        total = self.stream._like()
        for part in parts:
            total.merge(part)
        return total

    def result(self) -> Any:
        """The :class:`~tieeval.records.results.RunResult` of every row seen (of every
        process, after a synchronisation)."""
        return self._merged().compute()

    def compute(self) -> dict[str, torch.Tensor]:
        return figures(self._merged().compute())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The batch's own figures; the batch is added to the metric too."""
        batch = self.stream._like()
        batch.update(*args, **kwargs)
        self.stream.merge(batch)
        self._update_count += 1  # as torchmetrics' own update wrapper counts it
        self._computed = None
        return figures(batch.compute())

    def merge_state(self, incoming: Any) -> None:
        if isinstance(incoming, TieAwareMetric):
            self.stream.merge(incoming.stream)
            return
        super().merge_state(incoming)

    def reset(self) -> None:
        super().reset()
        self.stream.reset()


def figures(result: Any) -> dict[str, torch.Tensor]:
    """A result's figures as the flat dict of scalars :meth:`TieAwareMetric.compute` gives."""
    out: dict[str, torch.Tensor] = {}
    for row in result.metrics:
        for column in ("tie_aware", "original", "first", "last", "tie_aware_std"):
            key = row.display if column == "tie_aware" else f"{row.display}/{column}"
            out[key] = torch.tensor(_number(getattr(row, column)), dtype=torch.float64)
    for k, share in result.ties.tie_decided.items():
        out[f"tie_decided@{k}"] = torch.tensor(float(share), dtype=torch.float64)
    return out


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)
