"""A metric is a value: ``Metric.parse("NDCG@10")`` prints back as ``NDCG@10``, compares and
hashes, so it can key a dict. Names come from the one registry
(:mod:`tieeval.metrics.registry`); the default metric lists live here."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tieeval.errors import ParameterError

# The one registry of metric names lives in tieeval.metrics.registry; these names stay importable
# from here because they were public before (``tieeval.REGISTRY``, ``metrics.check_k``):
# __all__ below lists them with this module's own.
from tieeval.metrics.registry import (
    REGISTRY,
    MetricSpec,
    check_cutoff,
    check_k,
    lookup,
    names_text,  # noqa: F401 - public here before (the registry's names, without spellings)
    parameter_text,
    parse_parameter,
)
from tieeval.metrics.spellings import (
    asks_relstring,
    asks_runid,
    choices_text,
    run_option_error,
    translate,
    trec_family,
    unknown_hint,
)

COLUMNS = ("original", "first", "last", "tie_aware")


_METRIC_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(?:@\s*(\S+))?\s*$")


@dataclass(frozen=True, order=True)
class Metric:
    """A metric at a cutoff: ``Metric("NDCG", 10)`` is ``NDCG@10``; ``k`` is None for MRR.

    ``k`` is an int cutoff, or for a level metric (``IPrec``) a float recall level in
    [0, 1]: ``Metric.parse("IPrec@0.1")`` prints back as ``IPrec@0.1``.

    Any name of the registry (:mod:`tieeval.metrics.registry`) is accepted, in any case and with
    ``-``/``_`` ignored, and prints back canonically: ``Metric("vauc")`` is ``V-AUC``,
    ``Metric("ap", 100)`` is ``MAP@100``. Single-positive dumps evaluate HR@K, NDCG@K and
    MRR with sort-free closed forms (:attr:`single_positive`); every other metric, and any
    labelled dump, goes through the general kernel of :mod:`tieeval.kernels.tie_blocks`.
    """

    name: str
    k: int | float | None = None

    def __post_init__(self) -> None:
        spec = lookup(self.name, hint=unknown_hint)
        object.__setattr__(self, "name", spec.name)
        object.__setattr__(self, "k", check_cutoff(spec, self.k))

    @property
    def spec(self) -> MetricSpec:
        return REGISTRY[self.name]

    @property
    def single_positive(self) -> bool:
        """True when the sort-free single-positive closed forms cover this metric."""
        return self.spec.covers_single_positive(self.k)

    @classmethod
    def parse(cls, text: str) -> "Metric":
        """Parse ``"NDCG@10"``, ``"hr@1"``, ``"MRR"`` or ``"V-AUC"`` (case-insensitive), or
        trec_eval's and ir_measures' spelling of one metric (``"ndcg_cut_10"``,
        ``"recip_rank"``, ``"nDCG@10"``; :mod:`tieeval.metrics.spellings`)."""
        metrics = cls.expand(text)
        if not metrics and asks_relstring(text):
            raise ParameterError(f"{text!r} is trec_eval's relstring line, not a metric: "
                                 "'--format trec_eval --per-query' prints it when -m "
                                 "relstring (or relstring.N, all_trec) is given")
        if not metrics and asks_runid(text):
            raise ParameterError(f"{text!r} is trec_eval's runid line, not a metric: "
                                 "'--format trec_eval' prints it when -m runid (or "
                                 "official, all_trec) is given")
        if len(metrics) != 1:
            raise ParameterError(f"{text!r} names {len(metrics)} metrics "
                                 f"({', '.join(map(str, metrics)) or 'none'}); give one here")
        return metrics[0]

    @classmethod
    def expand(cls, text: str) -> list["Metric"]:
        """The metrics ``text`` names: one, or several for trec_eval's lists
        (``"P.5,10"`` is Precision@5 and Precision@10; ``"all_trec"`` every measure of
        trec_eval's list that the registry has).

        Examples
        --------
        >>> [str(m) for m in Metric.expand("ndcg_cut.10,20")]
        ['NDCG@10', 'NDCG@20']
        """
        m = _METRIC_RE.match(text) if isinstance(text, str) else None
        # a bare trec_eval family (P, recall, success) means trec_eval's default parameters,
        # as trec_eval expands it, though the registry knows the name
        if m is None or not REGISTRY.names_measure(m.group(1)) or (m.group(2) is None
                                                        and trec_family(m.group(1))):
            texts = translate(text)
            if texts is not None:
                for t in texts:  # options in parentheses: the run's options here
                    error = run_option_error(text, t)
                    if error is not None:
                        raise error
                return [cls._parse(t) for t in texts]
            error = run_option_error(text, text) if isinstance(text, str) else None
            if error is not None:
                raise error
        return [cls._parse(text)]

    @classmethod
    def _parse(cls, text: str) -> "Metric":
        m = _METRIC_RE.match(text) if isinstance(text, str) else None
        if not m:
            raise ParameterError(f"cannot parse metric {text!r}; expected NAME or NAME@K with "
                                 f"NAME one of {choices_text()}")
        name, k_text = m.group(1), m.group(2)
        spec = lookup(name, text, hint=unknown_hint)
        k = None if k_text is None else parse_parameter(spec, k_text, text)
        return cls(name, k)

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{parameter_text(self.k)}"


def family(text: object) -> MetricSpec | None:
    """The metric a bare name stands for when it takes a cutoff (``HR``, ``HitRatio``,
    ``Recall``, ``NDCG``, ``MRR``), else None: with cutoffs given (``--k 1 5 10``) such a
    name is one metric per K. Without them a name whose cutoff is optional (``NDCG``,
    ``MRR``) means the whole list; ``NDCG@all`` means it with cutoffs given too."""
    m = _METRIC_RE.match(text) if isinstance(text, str) else None
    if m is None or m.group(2) is not None or not REGISTRY.names_measure(m.group(1)):
        return None
    spec = REGISTRY.get(m.group(1))
    return spec if spec is not None and spec.cutoff in ("required", "optional") else None


def parse_metric_list(items: Iterable[Metric | str],
                      ks: Iterable[int] | None = None) -> list[Metric]:
    """Metric values and names, each name expanded (:meth:`Metric.expand`), in order; with
    cutoffs ``ks`` a family name (:func:`family`: ``HR``) is one metric per cutoff."""
    out: list[Metric] = []
    for item in items:
        spec = family(item) if ks is not None else None
        if spec is not None and ks is not None:
            out += [Metric(spec.name, k) for k in ks]
        else:
            out += [item] if isinstance(item, Metric) else Metric.expand(item)
    return out


class DefaultMetrics(list[Metric]):
    """The default metric list for ``ks``, marked as a default (not chosen by the user).

    A labelled dump replaces it with its own default set
    (:func:`tieeval.metrics.options.default_rel_metrics`); a single-positive dump uses it as is.
    """

    def __init__(self, metrics: Iterable[Metric], ks: Iterable[int]) -> None:
        super().__init__(metrics)
        self.ks = list(ks)


def default_metrics(ks: Iterable[object]) -> list[Metric]:
    """HR@K for every K, then NDCG@K for every K, then MRR (the paper's row order)."""
    cutoffs = [check_k(k) for k in ks]
    return DefaultMetrics([Metric("HR", k) for k in cutoffs]
                          + [Metric("NDCG", k) for k in cutoffs] + [Metric("MRR")], cutoffs)

DEFAULT_KS = (1, 5, 10)
