"""tieeval: exact tie-aware evaluation of saved ranking score dumps.

Re-evaluates the scores a recommender or IR codebase ranked and reports, side by side, the
number its own ``np.argsort`` gives (original), the optimistic and pessimistic bounds
(first / last) and the exact expectation under uniform random tie-breaking (tie-aware).

The public names below are imported on first use, so ``import tieeval`` (and the command
line's start-up) costs only what a command needs.
"""

from tieeval._version import __version__
from tieeval.records import display as _display

# the records show themselves in notebooks through the rendering layer, which sits above
# them: named here, imported on a notebook's first display
_display.provided_by("tieeval.report.notebook")

_PUBLIC = {
    "evaluate": "tieeval.engine.local",
    "evaluate_path": "tieeval.engine.local",
    "evaluate_labels": "tieeval.engine.local",
    "TieAware": "tieeval.engine.stream",
    "TieAwareMetric": "tieeval.engine.torch_metric",
    "register_recbole": "tieeval.engine.recbole_metrics",
    "open_dump": "tieeval.io.open",
    "ReadOptions": "tieeval.io.base",
    "RelevanceReadOptions": "tieeval.io.base",
    "save_scores": "tieeval.io.writers",
    "Metric": "tieeval.metrics.metric",
    "REGISTRY": "tieeval.metrics.registry",
    "RelOptions": "tieeval.metrics.options",
    "MetricRow": "tieeval.records.results",
    "RunResult": "tieeval.records.results",
    "TieStats": "tieeval.records.results",
    "TieevalError": "tieeval.errors",
    "InputError": "tieeval.errors",
    "ParameterError": "tieeval.errors",
    "OutputError": "tieeval.errors",
    "TieevalWarning": "tieeval.errors",
    "WhatIf": "tieeval.records.whatif",
    "cast_scores": "tieeval.kernels.whatif",
    "round_to_bfloat16": "tieeval.kernels.whatif",
    "group_runs": "tieeval.analysis.groups",
    "GroupResult": "tieeval.records.groups",
    "DiffResult": "tieeval.records.diff",
    "diff_paths": "tieeval.analysis.diff",
    "write_per_instance": "tieeval.analysis.instances",
    "rank_groups": "tieeval.analysis.diff",
    "audit_groups": "tieeval.analysis.audit",
    "judge_claim": "tieeval.analysis.audit",
    "read_claims": "tieeval.analysis.audit",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tieeval' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
