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

__all__ = ["__version__", "evaluate", "evaluate_path", "open_dump", "ReadOptions", "Metric",
           "REGISTRY", "MetricRow", "RunResult", "TieStats", "TieevalError", "InputError",
           "ParameterError", "save_scores", "group_runs", "GroupResult"]
