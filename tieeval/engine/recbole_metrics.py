"""Tie-aware metrics inside RecBole's evaluation: :func:`register_recbole`.

After ``tieeval.register_recbole()``, a RecBole config may name ``TieHit``, ``TieNDCG``
and ``TieMRR`` in ``metrics`` (beside RecBole's own ``Hit``, ``NDCG``, ``MRR``), and
``valid_metric`` may be one of them (``TieNDCG@10``: early stopping and the best
checkpoint then follow the tie-aware figure). Each is the Tie-aware column of
:class:`~tieeval.engine.stream.TieAware` under RecBole's definitions
(``convention="recbole"``) at every cutoff of ``topk``, over the same score matrix RecBole
ranks (its history items and padding item masked to ``-inf``, as RecBole masks them), one
evaluation batch at a time: nothing per user is kept.

RecBole gathers what its metrics need in a ``DataStruct`` by named needs (``rec.topk``
...): the three metrics declare one more, ``rec.tieaware``, which the collector feeds
batch by batch (RecBole's ``Collector.eval_batch_collect`` is wrapped once, and its
``get_data_struct`` hands the epoch's sums over and starts the next epoch afresh).
Registration adds the three classes to RecBole's metric tables
(``recbole.evaluator.register``), which its config checks and its evaluator read.
This module imports RecBole: ``tieeval.register_recbole`` loads it on first use only.
"""

from __future__ import annotations

from typing import Any

from recbole.evaluator import collector as _collector
from recbole.evaluator import register as _register
from recbole.evaluator.base_metric import AbstractMetric
from recbole.utils import EvaluatorType

from tieeval.engine.stream import TieAware
from tieeval.metrics.metric import Metric

__all__ = ["register_recbole", "TieHit", "TieNDCG", "TieMRR", "NEED"]

NEED = "rec.tieaware"
"""The DataStruct entry the tie-aware metrics read: the epoch's :class:`TieAware`."""


class _Held:
    """The epoch's :class:`TieAware` as a DataStruct value (RecBole moves every value to
    the CPU with ``.cpu()`` before the metrics read it; the sums are there already)."""

    def __init__(self, stream: TieAware):
        self.stream = stream

    def cpu(self) -> "_Held":
        return self


class _TieAwareMetric(AbstractMetric):
    """A tie-aware RecBole metric: ``{name}@K`` for every K of ``topk``."""

    metric_need = [NEED]
    metric_type = EvaluatorType.RANKING
    smaller = False

    def __init__(self, config: Any):
        super().__init__(config)
        topk = config["topk"]
        self.topk = [topk] if isinstance(topk, int) else list(topk)

    def calculate_metric(self, dataobject: Any) -> dict[str, float]:
        result = dataobject.get(NEED).stream.compute()
        name = type(self).__name__.lower()
        return {f"{name}@{k}": round(float(result.metric(str(tieeval_metric(
            type(self), k))).tie_aware), self.decimal_place) for k in self.topk}


class TieHit(_TieAwareMetric):
    """HR@K (RecBole's ``Hit``), its Tie-aware column."""


class TieNDCG(_TieAwareMetric):
    """NDCG@K (RecBole's ``NDCG``, binary gains), its Tie-aware column."""


class TieMRR(_TieAwareMetric):
    """MRR@K (RecBole's ``MRR``), its Tie-aware column."""


METRICS = (TieHit, TieNDCG, TieMRR)


def tieeval_metric(kind: type, k: int) -> Metric:
    """tieeval's metric behind ``kind`` at ``k``: the class is ``Tie`` + RecBole's own
    name (``TieHit`` is RecBole's ``Hit@K``, tieeval's HR@K), read as RecBole spells it."""
    return Metric.parse(f"{kind.__name__.removeprefix('Tie')}@{k}")


def _stream_for(collector: Any) -> TieAware:
    """The collector's TieAware of this epoch, made for its configured metrics."""
    held = collector.data_struct._data_dict.get(NEED)
    if held is not None:
        stream: TieAware = held.stream
        return stream
    kinds = {cls.__name__.lower(): cls for cls in METRICS}
    topk = collector.topk if isinstance(collector.topk, (list, tuple)) else [collector.topk]
    metrics = [str(tieeval_metric(kinds[m], k)) for m in collector.register.metrics
               if m in kinds for k in topk]
    stream = TieAware(metrics=metrics, convention="recbole", path="<recbole>")
    collector.data_struct[NEED] = _Held(stream)
    return stream


def register_recbole() -> None:
    """Make ``TieHit``, ``TieNDCG`` and ``TieMRR`` RecBole metrics (idempotent): call it
    before RecBole reads its config (``Config(...)``, ``run_recbole``)."""
    for cls in METRICS:
        name = cls.__name__.lower()
        _register.metrics_dict[name] = cls
        _register.metric_information[name] = cls.metric_need
        _register.metric_types[name] = cls.metric_type
    kind = _collector.Collector
    if getattr(kind, "_tieeval_wrapped", False):
        return
    collect, hand_over = kind.eval_batch_collect, kind.get_data_struct

    def eval_batch_collect(self: Any, scores_tensor: Any, interaction: Any, positive_u: Any,
                           positive_i: Any) -> None:
        collect(self, scores_tensor, interaction, positive_u, positive_i)
        if self.register.need(NEED):
            import torch
            labels = torch.zeros_like(scores_tensor, dtype=torch.int8)
            labels[positive_u, positive_i] = 1
            _stream_for(self).update(scores_tensor.detach(), labels=labels)

    def get_data_struct(self: Any) -> Any:
        returned = hand_over(self)
        if NEED in self.data_struct:  # the next evaluation starts afresh
            del self.data_struct[NEED]
        return returned

    kind.eval_batch_collect = eval_batch_collect
    kind.get_data_struct = get_data_struct
    kind._tieeval_wrapped = True
