"""One evaluation request, built by the command line or the Python API and checked once.

A :class:`Request` holds everything a run is asked for: the metrics, the reading options,
the labelled options, the NaN policy, the Original column's rule, a what-if, the engine and
its workers, and the outputs wanted besides the totals (per-instance rows, per-query
values). It is checked when it is made (as scikit-learn checks parameters once, at the
boundary), and the engine is chosen there too: an option the chosen engine cannot honour
is refused with one message, whichever front end asked. Nothing below (the driver, the
engines, the kernels) checks these options again.

The Python API builds requests with :func:`make_request`, which turns loose arguments
(names, ``k``, ``gamma`` ...) into checked values with the messages of
:mod:`tieeval.engine.arguments`; the command line builds them from the values its option
types already parsed. Messages name options as the front end spells them (``--original``
or ``original=``), see :class:`Request.cli`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tieeval.engine.arguments import (
    check_engine,
    check_flag,
    check_path,
    metric_list,
    rel_options,
    run_labels_of,
    what_if_of,
)
from tieeval.errors import ParameterError
from tieeval.io.base import (
    ReadOptions,
    RelevanceReadOptions,
    check_batch_rows,
    check_missing_queries,
)
from tieeval.kernels.counts import check_nan_policy
from tieeval.kernels.original import check_rule
from tieeval.kernels.whatif import WhatIf
from tieeval.metrics.metric import DEFAULT_KS
from tieeval.metrics.options import RelOptions

__all__ = ["Request", "EngineRefusal", "make_request", "check_jobs", "read_options_of",
           "refuse_spark", "spark_refusal"]


class EngineRefusal(ParameterError):
    """An option the chosen engine cannot honour (the command line shows its usage)."""


def spark_refusal(why: str) -> str:
    """The message of what ``--engine spark`` leaves to the local engine."""
    return f"--engine spark reads Parquet and CSV dumps; {why}: run with --engine local"


def refuse_spark(options) -> None:
    """Refuse what ``--engine spark`` leaves to the local engine and can tell from the
    options alone: nothing now (TREC runs are read on the driver and evaluated by the
    executors). NPY/NPZ dumps are refused by :func:`tieeval.engine.spark.open_for_spark`
    from their format, before Spark starts."""


def check_trec_options(judged_only: bool, relevance: RelOptions | None,
                       judged_depth: int | None = None) -> None:
    """``judged_only`` with ``depth`` needs a run read with that depth as its
    ``judged_depth``: trec_eval cuts the ranking at ``-M`` before it drops the unjudged
    documents, which only the reader can do (a :class:`Request` asks it to); a dump read
    otherwise is refused."""
    depth = getattr(relevance, "depth", None)
    if judged_only and depth is not None and judged_depth != depth:
        raise ParameterError("--judged-only with --depth needs the run read with that depth "
                             "(trec_eval -J -M cuts the ranking at depth before dropping "
                             "unjudged documents): open it with judged_depth=depth in its "
                             "read options, or give both to evaluate_path")


def check_jobs(jobs) -> int:
    """``jobs``: worker processes, a whole number >= 0; 0 or None means automatic (this
    process on every core, or one worker per core for big dumps: ``--jobs 0``)."""
    if jobs is None:
        return 0
    if isinstance(jobs, bool) or not isinstance(jobs, int) and not _is_numpy_int(jobs) \
            or jobs < 0:
        raise ParameterError(f"jobs must be a whole number >= 0 (0: every core), got {jobs!r}")
    return int(jobs)


def _is_numpy_int(value) -> bool:
    import numpy as np
    return isinstance(value, np.integer)


@dataclass(frozen=True)
class Request:
    """What one run is asked for; checked when made (see the module doc).

    ``metrics``: :class:`~tieeval.metrics.metric.Metric` values, or a default set that the
    dump's kind settles (None: the defaults); ``read``: field names and layout (None: the defaults);
    ``relevance``: labelled options (None: the defaults); ``original``: the Original
    column's rule (None: the dump's default); ``jobs``: worker processes (0: automatic);
    ``per_instance``: a Parquet file to stream one row per instance to; ``per_query``:
    keep every instance's values (trec_eval ``-q`` lines); ``paired``: every instance's
    values for a paired comparison (``diff``); ``cli``: messages name the
    command line's options (``--original``) rather than the API's (``original=``);
    ``spark_conf``: Spark's settings for a session the Spark engine starts
    (:mod:`tieeval.engine.spark_session`).
    """

    metrics: Any = None
    read: ReadOptions | None = None
    relevance: RelOptions | None = None
    nan_policy: str = "raise"
    original: str | None = None
    what_if: WhatIf | None = None
    engine: str = "local"
    jobs: int = 1
    batch_rows: int | None = None
    run_labels: dict = field(default_factory=dict)
    per_instance: str | None = None
    per_query: bool = False
    paired: bool = False
    cli: bool = False
    spark_conf: tuple = ()

    def __post_init__(self) -> None:
        check_nan_policy(self.nan_policy)
        check_engine(self.engine)
        self._check_spark_conf()
        if self.original is not None:
            check_rule(self.original)
        if self.what_if is not None and not self.what_if.active:
            object.__setattr__(self, "what_if", None)
        self._check_trec_options()
        self._choose_engine()

    # --- the engine, chosen here once ------------------------------------------------

    def _spell(self, name: str, value=None) -> str:
        """An option as the front end spells it: ``--original stable`` or
        ``original='stable'``."""
        if self.cli:
            flag = "--" + name.replace("_", "-")
            return flag if value is None else f"{flag} {value}"
        return name if value is None else f"{name}={value!r}"

    def _choose_engine(self) -> None:
        """Refuse what the chosen engine cannot honour: nothing that the command line or
        the API can ask for. Spark runs every option of the local engine (the totals,
        per-instance rows, per-query values, ``diff``, what-ifs, every ranking rule, TREC
        runs) with the same figures; only a dump's format may leave it to the local
        engine (NPY/NPZ, float16: :func:`tieeval.engine.spark.open_for_spark`)."""
        if self.engine != "local":
            refuse_spark(self.read)

    def _check_spark_conf(self) -> None:
        """``spark_conf``: Spark's settings (``KEY=VALUE`` items, pairs or a dict), kept as
        ``((key, value), ...)``; they configure the Spark engine only."""
        given = self.spark_conf
        if not given:
            object.__setattr__(self, "spark_conf", ())
            return
        # the Spark modules load only when Spark is asked for (start-up of every run)
        from tieeval.engine.spark_session import parse_conf
        name = self._spell("spark_conf")
        conf = parse_conf(given.items() if isinstance(given, dict) else given, name)
        if self.engine != "spark":
            raise EngineRefusal(f"{name} configures the Spark engine: give "
                                f"{self._spell('engine', 'spark')} too")
        object.__setattr__(self, "spark_conf", tuple(conf.items()))

    def _check_trec_options(self) -> None:
        """trec_eval ``-J -M N``: the reader cuts each ranking at N before the unjudged
        documents leave (``judged_depth``), so that the depth is applied where trec_eval
        applies it."""
        depth = getattr(self.relevance, "depth", None)
        if isinstance(self.read, RelevanceReadOptions) and self.read.judged_only \
                and depth is not None:
            object.__setattr__(self, "read", dataclasses.replace(self.read,
                                                                 judged_depth=depth))
        check_trec_options(getattr(self.read, "judged_only", False), self.relevance,
                           getattr(self.read, "judged_depth", None))

    @property
    def wants_values(self) -> bool:
        """Whether the pass gathers per-instance values besides the totals."""
        return self.per_instance is not None or self.per_query

    def replace(self, **changes) -> "Request":
        return dataclasses.replace(self, **changes)


def read_options_of(options, qrels=None, missing_queries=None, judged_only=False
                    ) -> ReadOptions | None:
    """``options`` with ``qrels`` (and a TREC run's ``missing_queries`` and
    ``judged_only``) set (a :class:`RelevanceReadOptions` then)."""
    if options is not None and not isinstance(options, ReadOptions):
        raise ParameterError(f"options must be a tieeval.ReadOptions, got {options!r}")
    check_missing_queries(missing_queries)
    judged_only = check_flag("judged_only", judged_only)
    trec = {k: v for k, v in (("missing_queries", missing_queries),
                              ("judged_only", judged_only)) if v not in (None, False)}
    if qrels is None:
        if not trec:
            return options
        if options is None or getattr(options, "qrels", None) is None:
            raise ParameterError(f"{' and '.join(trec)} only "
                                 f"{'applies' if len(trec) == 1 else 'apply'} to TREC runs "
                                 "(give qrels=)")
        return dataclasses.replace(options, **trec)
    qrels = check_path(qrels)
    if isinstance(options, RelevanceReadOptions):
        if options.qrels is not None and options.qrels != qrels:
            raise ParameterError("give qrels= or options.qrels, not both")
        return dataclasses.replace(options, qrels=qrels, **trec)
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(ReadOptions)
             } if options is not None else {}
    return RelevanceReadOptions(**given, qrels=qrels, **trec)


def make_request(metrics=None, *, k=DEFAULT_KS, jobs=1, engine: str = "local",
                 options: ReadOptions | None = None, nan_policy: str = "raise",
                 batch_rows=None, gamma=1.0, gain=None, discount=None, alpha=1.0,
                 log_base=2.0, short_list=None, ap_norm=None, both=False, no_relevant=None,
                 recall_norm=None,
                 convention=None, qrels=None, missing_queries=None, judged_only=False,
                 relevance_level=None, depth=None, what_if=None, cast=None, tolerance=None,
                 run_labels=None, original=None, relevance=None, labels=None,
                 per_instance=None, per_query=False, spark_conf=None) -> Request:
    """The :class:`Request` of the Python API's arguments (those of
    :func:`tieeval.engine.local.evaluate_path`), each checked with the command line's
    message, in the order the API has always checked them."""
    chosen = metric_list(metrics, k)
    check_nan_policy(nan_policy)
    jobs = check_jobs(jobs)
    batch_rows = check_batch_rows(batch_rows)
    rel = rel_options(relevance, gamma=gamma, gain=gain, discount=discount, alpha=alpha,
                      log_base=log_base, short_list=short_list, ap_norm=ap_norm, both=both,
                      recall_norm=recall_norm, no_relevant=no_relevant, convention=convention,
                      relevance_level=relevance_level, depth=depth)
    what_if = what_if_of(what_if, cast, tolerance)
    names = run_labels_of(run_labels, labels)
    engine = check_engine(engine)
    read = read_options_of(options, qrels, missing_queries, judged_only)
    return Request(chosen, read, rel, nan_policy, original, what_if, engine, jobs,
                   batch_rows, names, per_instance=per_instance,
                   per_query=check_flag("per_query", per_query),
                   spark_conf=() if spark_conf is None else spark_conf)

