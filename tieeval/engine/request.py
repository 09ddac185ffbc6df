"""The options of one evaluation, as one checked value: :class:`EvalOptions`.

An :class:`EvalOptions` holds everything a run is asked for (its fields). It is checked when
it is made (as scikit-learn checks parameters once, at the boundary), and the engine is
chosen there too: an option the chosen engine cannot honour is refused with one message,
whichever front end asked. It is then passed whole: nothing below (the driver, the engines,
the kernels) checks these options again. The engine calls it the run's ``request``.

The Python API's keywords (``k``, ``gamma``, ``cast``, ``qrels`` ...) are declared once,
in :data:`KEYWORDS`: each with its default and the field it builds.
:meth:`EvalOptions.from_keywords` turns them into checked values with the messages of
:mod:`tieeval.engine.arguments`; the signatures of :func:`~tieeval.evaluate`,
:func:`~tieeval.evaluate_path` and :func:`~tieeval.evaluate_labels`, and the command
line's options, are checked against that declaration (tests/engine/test_options.py), so a
new option is its declaration and its use. The command line builds the value from what
its option types already parsed. Messages name options as the front end spells them
(``--original`` or ``original=``), see :attr:`EvalOptions.cli`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tieeval.engine.arguments import (
    REL_KEYWORDS,
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
from tieeval.metrics.conventions import atol_grades
from tieeval.metrics.metric import DEFAULT_KS
from tieeval.metrics.options import RelOptions

if TYPE_CHECKING:
    from tieeval.kernels.base import Kernel
    from tieeval.records.results import RunResult

__all__ = ["EvalOptions", "EngineRefusal", "KEYWORDS", "Keyword", "check_jobs",
           "read_options_of"]


class EngineRefusal(ParameterError):
    """An option the chosen engine cannot honour (the command line shows its usage)."""


def check_trec_options(judged_only: bool, relevance: RelOptions | None,
                       judged_depth: int | None = None) -> None:
    """``judged_only`` with ``depth`` needs a run read with that depth as its
    ``judged_depth``: trec_eval cuts the ranking at ``-M`` before it drops the unjudged
    documents, which only the reader can do (an :class:`EvalOptions` asks it to); a dump read
    otherwise is refused."""
    depth = getattr(relevance, "depth", None)
    if judged_only and depth is not None and judged_depth != depth:
        raise ParameterError("--judged-only with --depth needs the run read with that depth "
                             "(trec_eval -J -M cuts the ranking at depth before dropping "
                             "unjudged documents): open it with judged_depth=depth in its "
                             "read options, or give both to evaluate_path")


class NamedRows:
    """Rows read by no local dump, as a kernel's choice and a consumer read them: their
    name (``path``) and the relevance they carry (a stream's batches, a Spark DataFrame)."""

    def __init__(self, path: str, relevance: Any = None):
        self.path, self.relevance = path, relevance


def request_kernel(dump: Any, request: EvalOptions) -> Kernel:
    """The kernel of ``request`` for ``dump`` (an opened dump, or :class:`NamedRows`) as it
    reads now (:func:`tieeval.kernels.choose.spec_for`)."""
    from tieeval.kernels.choose import choose_kernel, spec_for
    return choose_kernel(spec_for(getattr(dump, "relevance", None), request.metrics,
                                  options=request.relevance, nan_policy=request.nan_policy,
                                  what_if=request.what_if, path=dump.path,
                                  original=request.original))


def request_result(request: EvalOptions, kernel: Kernel, acc: Any, dump: Any, path: str,
                   dtype: Any, metadata: dict, warnings: Any) -> RunResult:
    """The result of a pass's totals ``acc`` (both engines), the run labels over the dump's
    ``metadata``; a TREC run's query set in it: which judged queries were evaluated, skipped
    or counted as 0 (trec_eval ``-c``), as ``relevance.queries`` (the counts) and, when a
    query is left out or counted as 0 without results, a ``trec_queries`` data warning and a
    warning line."""
    result: RunResult = kernel.result(acc, path, dtype, {**metadata, **request.run_labels},
                                      warnings)
    query_set = getattr(dump, "query_set", None)
    if query_set is None or result.relevance is None:
        return result
    level = getattr(request.relevance, "relevance_level", None)
    summary, warning = query_set.report(level, getattr(request.relevance, "no_relevant",
                                                       "skip"))
    result.relevance["queries"] = summary
    result.zero_division = query_set.zero_division(level)
    if warning is not None:
        result.data_warnings = [*(result.data_warnings or []), warning]
        result.warnings.append(warning["message"])
    return result


def check_jobs(jobs) -> int:
    """``jobs``: worker processes, a whole number >= 0; 0 or None means automatic (this
    process on every core, or one worker per core for big dumps: ``--jobs 0``)."""
    if jobs is None:
        return 0
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 0:
        raise ParameterError(f"jobs must be a whole number >= 0 (0: every core), got {jobs!r}")
    return int(jobs)


@dataclass(frozen=True)
class EvalOptions:
    """What one run is asked for: the options of one evaluation, checked when made (see
    the module doc) and passed whole.

    ``metrics``: :class:`~tieeval.metrics.metric.Metric` values, or a default set that the
    dump's kind settles (None: the defaults); ``read``: field names and layout (None: the
    defaults); ``relevance``: labelled options, the measures' own value (None: the
    defaults); ``original``: the Original column's rule (None: the dump's default);
    ``jobs``: worker processes (0: automatic);
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
        if self.engine == "spark" and getattr(self.read, "labels_file", None) is not None:
            raise EngineRefusal(f"{self._spell('labels_file') if not self.cli else '--labels'}"
                                " is read by the local engine only: drop "
                                f"{self._spell('engine', 'spark')}")
        if self.original is not None:
            check_rule(self.original)
        if self.what_if is not None and not self.what_if.active:
            object.__setattr__(self, "what_if", None)
        self._check_trec_options()

    def _spell(self, name: str, value=None) -> str:
        """An option as the front end spells it: ``--original stable`` or
        ``original='stable'``."""
        if self.cli:
            flag = "--" + name.replace("_", "-")
            return flag if value is None else f"{flag} {value}"
        return name if value is None else f"{name}={value!r}"

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
        conf = parse_conf(given, name)
        if self.engine != "spark":
            raise EngineRefusal(f"{name} configures the Spark engine: give "
                                f"{self._spell('engine', 'spark')} too")
        object.__setattr__(self, "spark_conf", tuple(conf.items()))

    def _check_trec_options(self) -> None:
        """trec_eval ``-J -M N``: the reader cuts each ranking at N before the unjudged
        documents leave (``judged_depth``), so that the depth is applied where trec_eval
        applies it. Under a trec_eval convention the qrels grades are read as trec_eval
        reads them (``trec_grades``)."""
        depth = getattr(self.relevance, "depth", None)
        grades = atol_grades(self.relevance)
        if isinstance(self.read, RelevanceReadOptions):
            read = self.read
            if grades is not None and read.trec_grades is None:
                read = dataclasses.replace(read, trec_grades=grades)
            if read.judged_only and depth is not None:
                read = dataclasses.replace(read, judged_depth=depth)
            object.__setattr__(self, "read", read)
        check_trec_options(getattr(self.read, "judged_only", False), self.relevance,
                           getattr(self.read, "judged_depth", None))

    @classmethod
    def from_keywords(cls, **given: Any) -> "EvalOptions":
        """The options of the Python API's keywords (:data:`KEYWORDS`: ``k=``, ``gamma=``,
        ``cast=`` ...; those not given take their defaults), each checked with the command
        line's message, in the order the API has always checked them. An unknown keyword
        is a TypeError, as a function's own."""
        unknown = [name for name in given if name not in KEYWORDS]
        if unknown:
            raise TypeError(f"EvalOptions.from_keywords() got an unexpected keyword argument "
                            f"{unknown[0]!r}")
        kw = {name: given.get(name, keyword.default) for name, keyword in KEYWORDS.items()}
        chosen = metric_list(kw["metrics"], kw["k"])
        check_nan_policy(kw["nan_policy"])
        jobs = check_jobs(kw["jobs"])
        batch_rows = check_batch_rows(kw["batch_rows"])
        rel = rel_options(kw["relevance"], {name: kw[name] for name in REL_KEYWORDS})
        what_if = what_if_of(kw["what_if"], kw["cast"], kw["tolerance"])
        names = run_labels_of(kw["run_labels"], kw["labels"])
        engine = check_engine(kw["engine"])
        read = read_options_of(kw["options"], kw["qrels"], kw["missing_queries"],
                               kw["judged_only"])
        return cls(chosen, read, rel, kw["nan_policy"], kw["original"], what_if, engine,
                   jobs, batch_rows, names,
                   spark_conf=() if kw["spark_conf"] is None else kw["spark_conf"])


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


@dataclass(frozen=True)
class Keyword:
    """One keyword of the Python API: its default, and the :class:`EvalOptions` field it
    builds (several keywords may build one field: ``k`` and ``metrics`` the metrics)."""

    default: Any
    field: str


#: The Python API's option keywords, in the order they are checked (see the module doc).
#: The labelled ones (``gamma=``, ``gain=`` ...) are
#: :data:`tieeval.engine.arguments.REL_KEYWORDS`; ``labels`` is the older name of
#: ``run_labels``, ``options`` the reading options (``qrels`` and the TREC options join them).
KEYWORDS: dict[str, Keyword] = {
    "metrics": Keyword(None, "metrics"),
    "k": Keyword(DEFAULT_KS, "metrics"),
    "nan_policy": Keyword("raise", "nan_policy"),
    "jobs": Keyword(1, "jobs"),
    "batch_rows": Keyword(None, "batch_rows"),
    "relevance": Keyword(None, "relevance"),
    **{name: Keyword(default, "relevance") for name, default in REL_KEYWORDS.items()},
    "what_if": Keyword(None, "what_if"),
    "cast": Keyword(None, "what_if"),
    "tolerance": Keyword(None, "what_if"),
    "run_labels": Keyword(None, "run_labels"),
    "labels": Keyword(None, "run_labels"),
    "engine": Keyword("local", "engine"),
    "options": Keyword(None, "read"),
    "qrels": Keyword(None, "read"),
    "missing_queries": Keyword(None, "read"),
    "judged_only": Keyword(False, "read"),
    "original": Keyword(None, "original"),
    "spark_conf": Keyword(None, "spark_conf"),
}
