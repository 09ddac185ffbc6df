"""tieeval: exact tie-aware evaluation of saved ranking score dumps.

Re-evaluates the scores a recommender or IR codebase ranked and reports, side by side, the
number its own ``np.argsort`` gives (original), the optimistic and pessimistic bounds
(first / last) and the exact expectation under uniform random tie-breaking (tie-aware).
"""

__version__ = "0.1.0"

from .errors import InputError, ParameterError, TieevalError  # noqa: E402
from .metrics import Metric, REGISTRY  # noqa: E402
from .results import MetricRow, RunResult, TieStats  # noqa: E402
from .engine import evaluate, evaluate_path  # noqa: E402
from .io import ReadOptions, open_dump  # noqa: E402
from .dumps import save_scores  # noqa: E402
from .groups import GroupResult, group_runs  # noqa: E402
from .whatif import WhatIf, cast_scores, round_to_bfloat16  # noqa: E402
from .diff import DiffResult, diff_paths, rank_groups  # noqa: E402
from .audit import audit_groups, judge_claim, read_claims  # noqa: E402
from .labelled import RelOptions, evaluate_labels  # noqa: E402
from .labelled_io import RelevanceReadOptions  # noqa: E402

__all__ = ["__version__", "evaluate", "evaluate_path", "open_dump", "ReadOptions", "Metric",
           "REGISTRY", "MetricRow", "RunResult", "TieStats", "TieevalError", "InputError",
           "ParameterError", "save_scores", "group_runs", "GroupResult", "WhatIf",
           "cast_scores", "round_to_bfloat16", "DiffResult", "diff_paths", "rank_groups",
           "audit_groups", "judge_claim", "read_claims", "evaluate_labels", "RelOptions",
           "RelevanceReadOptions"]
