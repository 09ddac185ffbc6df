"""The one place that decides which kernel evaluates a dump.

:func:`spec_for` turns what a dump carries (its :class:`~tieeval.io.base.RelevanceInfo`)
and what was asked (metrics, labelled options, nan policy, a what-if) into an
:class:`~tieeval.kernels.base.EvalSpec`; :func:`choose_kernel` asks each kernel, fastest
first, whether it :meth:`~tieeval.kernels.base.Kernel.supports` the spec. Nothing
downstream looks at the dump's kind again: the engines, ``diff`` and the what-ifs run
whichever kernel they are handed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tieeval.kernels.base import EvalSpec, Kernel
from tieeval.kernels.original import check_rule_for, default_rule
from tieeval.kernels.single import SinglePositiveKernel
from tieeval.metrics.conventions import convention_metrics
from tieeval.metrics.metric import (
    DEFAULT_KS,
    DefaultMetrics,
    Metric,
    default_metrics,
    parse_metric_list,
)
from tieeval.metrics.options import DEFAULT_OPTIONS, RelOptions, default_rel_metrics
from tieeval.records.whatif import WhatIf


def resolve_metrics(metrics: Iterable[Metric | str] | None, source: str | None,
                    options: RelOptions | None = None) -> list[Metric]:
    """The user's metrics (Metric values or names), or the default set: the convention's
    (:mod:`tieeval.metrics.conventions`) when ``options`` name one, else the dump kind's:
    HR@K, NDCG@K and MRR for one positive per row; HR@K, Recall@K, NDCG@K, MRR and MAP
    for relevance labels."""
    if metrics is None:
        metrics = default_metrics(DEFAULT_KS)
    if isinstance(metrics, DefaultMetrics):
        preset = convention_metrics(options, metrics.ks)
        if preset is not None:
            return preset
    if isinstance(metrics, DefaultMetrics) and source is not None:
        return default_rel_metrics(metrics.ks)
    return parse_metric_list(metrics)


def spec_for(relevance: Any, metrics: Iterable[Metric | str] | None = None, *,
             options: RelOptions | None = None,
             nan_policy: str = "raise", what_if: WhatIf | None = None, path: str = "",
             original: str | None = None) -> EvalSpec:
    """The :class:`EvalSpec` of a dump whose relevance is ``relevance`` (a
    :class:`~tieeval.io.base.RelevanceInfo`, or None for a plain single-positive dump).

    ``original``: the Original column's rule (:mod:`tieeval.kernels.original`); None is
    the dump's default, ``argsort`` (``trec`` for TREC runs, whose rows are listed in
    trec_eval's order)."""
    source = relevance.source if relevance is not None else None
    if what_if is not None and not what_if.active:
        what_if = None
    trec = relevance is not None and relevance.original == "given"
    chosen = tuple(resolve_metrics(metrics, source, options))
    rule = default_rule(trec) if original is None else check_rule_for(
        original, trec=trec, metrics=chosen, path=path)
    return EvalSpec(chosen, options or DEFAULT_OPTIONS,
                    nan_policy, source, bool(relevance is not None and relevance.items),
                    rule, what_if, path)


def choose_kernel(spec: EvalSpec) -> Kernel:
    """The first kernel, fastest first, that supports ``spec``: the sort-free
    single-positive kernel when it can, else the general kernel, which supports every
    spec (imported only then, so that a single-positive run does not load it)."""
    if SinglePositiveKernel.supports(spec):
        return SinglePositiveKernel(spec)
    from tieeval.kernels.general import GeneralKernel
    return GeneralKernel(spec)
