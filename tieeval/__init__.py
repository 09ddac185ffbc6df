"""tieeval: exact tie-aware evaluation of saved ranking score dumps.

Re-evaluates the scores a recommender or IR codebase ranked and reports, side by side, the
number its own ``np.argsort`` gives (original), the optimistic and pessimistic bounds
(first / last) and the exact expectation under uniform random tie-breaking (tie-aware).
"""

__version__ = "0.1.0"

from tieeval.analysis.audit import audit_groups, judge_claim, read_claims
from tieeval.analysis.diff import DiffResult, diff_paths, rank_groups
from tieeval.analysis.groups import GroupResult, group_runs
from tieeval.engine.local import evaluate, evaluate_labels, evaluate_path
from tieeval.errors import InputError, ParameterError, TieevalError
from tieeval.io.base import ReadOptions, RelevanceReadOptions
from tieeval.io.open import open_dump
from tieeval.io.writers import save_scores
from tieeval.kernels.whatif import WhatIf, cast_scores, round_to_bfloat16
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelOptions
from tieeval.metrics.registry import REGISTRY
from tieeval.results import MetricRow, RunResult, TieStats

__all__ = ["__version__", "evaluate", "evaluate_path", "open_dump", "ReadOptions", "Metric",
           "REGISTRY", "MetricRow", "RunResult", "TieStats", "TieevalError", "InputError",
           "ParameterError", "save_scores", "group_runs", "GroupResult", "WhatIf",
           "cast_scores", "round_to_bfloat16", "DiffResult", "diff_paths", "rank_groups",
           "audit_groups", "judge_claim", "read_claims", "evaluate_labels", "RelOptions",
           "RelevanceReadOptions"]
