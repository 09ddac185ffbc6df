"""Checking the Python API's arguments: the same rules, and the same messages, as the
command line's options.

Every refusal is a :class:`~tieeval.errors.ParameterError`: ``K`` as ``--k`` checks it
(:func:`tieeval.metrics.registry.check_k`), metric names as ``--metric`` parses them, the
labelled options as :class:`~tieeval.metrics.options.RelOptions` validates ``--gain``,
``--gamma`` ..., the what-ifs as ``--cast`` / ``--tolerance``, ``jobs`` as ``--jobs``, run
labels as ``--meta``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tieeval.errors import ParameterError
from tieeval.io.base import check_batch_rows
from tieeval.kernels.counts import check_nan_policy
from tieeval.metrics.conventions import preset_options
from tieeval.metrics.metric import (
    DEFAULT_KS,
    DefaultMetrics,
    Metric,
    default_metrics,
    parse_metric_list,
)
from tieeval.metrics.options import RelOptions
from tieeval.metrics.registry import check_k
from tieeval.records.run_labels import check_label
from tieeval.records.whatif import WhatIf

ENGINES = ("local", "spark")

__all__ = ["ENGINES", "REL_KEYWORDS", "check_ks", "metric_list", "rel_options", "what_if_of",
           "check_engine", "run_labels_of", "check_batch_rows", "check_path", "check_nan_policy",
           "check_flag"]


def check_ks(k) -> list[int]:
    """``k``: one cutoff or several (None: 1, 5, 10); each a whole number >= 1, as
    ``--k`` takes them (repeats dropped)."""
    if k is None:
        return list(DEFAULT_KS)
    if isinstance(k, (str, bytes)):
        raise ParameterError(f"K must be a whole number >= 1, got {k!r}")
    if isinstance(k, np.ndarray) and k.ndim == 0:
        k = k.item()
    if not isinstance(k, Iterable):
        return [check_k(k)]
    ks: list[int] = []
    for value in list(k):
        if isinstance(value, (str, bytes)) or not isinstance(value, (int, np.integer)):
            raise ParameterError(f"K must be a whole number >= 1, got {value!r}")
        value = check_k(value)
        if value not in ks:
            ks.append(value)
    if not ks:
        raise ParameterError("k is empty; give at least one cutoff, e.g. k=10 or k=[1, 5, 10]")
    return ks


def metric_list(metrics, k=None) -> list[Metric]:
    """The metrics asked for: names (``"NDCG@10"``, ``"MRR"``, or trec_eval's and
    ir_measures' spellings, ``"ndcg_cut.10,20"`` naming two) or :class:`Metric` values,
    one or a list (repeats dropped); None gives the defaults for ``k``, which the dump's
    kind then settles (HR@K, NDCG@K, MRR; labelled rows also Recall@K and MAP). ``k`` is
    checked either way, as ``--k`` is."""
    ks = check_ks(k)
    if metrics is None:
        return default_metrics(ks)
    if isinstance(metrics, DefaultMetrics):  # stays a default set: the dump's kind settles it
        return metrics
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    elif isinstance(metrics, Mapping) or not isinstance(metrics, Iterable):
        raise ParameterError(f"metrics must be a metric name such as 'NDCG@10', or a list of "
                             f"them, got {metrics!r}")
    # a family name (HR) expands over k when k was given: the default cutoffs are not a
    # choice, and HR alone stays the error it always was (HR needs a cutoff)
    given = None if k is None or k is DEFAULT_KS else ks
    chosen = parse_metric_list(list(metrics), given)
    if not chosen:
        raise ParameterError("metrics is empty; give at least one metric name, e.g. "
                             "metrics=['NDCG@10', 'MRR'] (or None for the defaults)")
    return list(dict.fromkeys(chosen))


def check_flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: The labelled options as the Python API spells them (``gamma=``, ``gain=`` ...) and the
#: command line (``--gamma``, ``--gain`` ...), with their defaults; each sets the
#: :class:`RelOptions` field of its name but ``gamma`` (``gammas``) and ``log_base``
#: (``base``). None leaves an option to the ``convention``'s preset, else its default.
REL_KEYWORDS: dict[str, Any] = {
    "gamma": 1.0, "gain": None, "discount": None, "alpha": 1.0, "log_base": 2.0,
    "short_list": None, "ap_norm": None, "both": False, "no_relevant": None,
    "convention": None, "recall_norm": None, "relevance_level": None, "depth": None,
    "precision_norm": None, "relevant_scores": None,
}
_PRESET = ("gain", "discount", "short_list", "ap_norm", "recall_norm", "precision_norm",
           "relevant_scores", "no_relevant",
           "relevance_level", "depth")


def rel_options(relevance: RelOptions | None = None,
                given: Mapping[str, Any] | None = None) -> RelOptions | None:
    """The labelled options (``given``: :data:`REL_KEYWORDS` by name, those left out at
    their defaults) as a :class:`RelOptions`, or None when they are all defaults.
    ``convention`` (``--convention``) presets ``gain``, ``discount``, ``short_list``,
    ``ap_norm``, ``recall_norm`` and ``no_relevant``; those given (not None) override it
    (:mod:`tieeval.metrics.conventions`). ``relevance_level`` (trec_eval ``-l``) and
    ``depth`` (trec_eval ``-M``): whole numbers >= 1, or None. ``relevance`` (a ready
    RelOptions) and the separate options are two spellings: give one."""
    kw = {**REL_KEYWORDS, **(given or {})}
    gamma: Any = 1.0 if kw["gamma"] is None else kw["gamma"]  # one or several
    preset = preset_options(kw["convention"], **{name: kw[name] for name in _PRESET})
    options = RelOptions(**preset, alpha=kw["alpha"], gammas=gamma,
                         both=check_flag("both", kw["both"]), base=kw["log_base"])
    if relevance is not None:
        if not isinstance(relevance, RelOptions):
            raise ParameterError(f"relevance must be a tieeval.RelOptions, got {relevance!r}")
        if options != RelOptions():
            raise ParameterError("give relevance=RelOptions(...) or the separate options "
                                 "(gamma=, gain=, discount=, convention=, ...), not both")
        options = relevance
    return None if options == RelOptions() else options


def what_if_of(what_if=None, cast=None, tolerance=None) -> WhatIf | None:
    """``cast`` / ``tolerance`` (as ``--cast`` / ``--tolerance``) or a ready ``what_if``;
    None when no what-if is asked for."""
    if what_if is not None:
        if not isinstance(what_if, WhatIf):
            raise ParameterError(f"what_if must be a tieeval.WhatIf, got {what_if!r}")
        if cast is not None or tolerance is not None:
            raise ParameterError("give what_if=WhatIf(...) or cast= / tolerance=, not both")
    else:
        what_if = WhatIf(cast, tolerance)
    return what_if if what_if.active else None


def check_engine(engine) -> str:
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


def run_labels_of(run_labels=None, labels=None) -> dict[str, str]:
    """Run labels (method, dataset, task, seed) checked as ``--meta`` checks them; ``labels``
    is their older keyword (kept for compatibility). None values are left out."""
    if labels is not None:
        if run_labels is not None:
            raise ParameterError("give run_labels= (labels= is its older name), not both")
        if not isinstance(labels, Mapping):
            raise ParameterError(
                f"labels= here means run labels, a dict such as {{'method': 'ConsRec'}} (the "
                f"clearer name is run_labels=), got {type(labels).__name__}; relevance labels "
                "are read from a file's 'labels' field")
        run_labels = labels
    if run_labels is None:
        return {}
    if not isinstance(run_labels, Mapping):
        raise ParameterError(f"run_labels must be a dict such as {{'method': 'ConsRec', "
                             f"'seed': 1}}, got {run_labels!r}")
    out = {}
    for key, value in run_labels.items():
        if value is None:
            continue
        if not isinstance(key, str):
            raise ParameterError(f"unknown label {key!r}; labels are method, dataset, task, "
                                 "seed")
        out[key] = check_label(key, value)
    return out


def check_path(path) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise ParameterError(f"path must be a file path (str or os.PathLike), got {path!r}")
    return path
