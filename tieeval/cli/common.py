"""Shared command-line machinery: the frame of the commands that read dumps, option types,
shared options, and evaluating dumps into runs."""

from __future__ import annotations

import os

import click

from tieeval.analysis.groups import group_runs
from tieeval.cli.app import (  # noqa: F401 - the command modules import them from here
    EXIT_CHECK_FAILED,
    CliError,
    Command,
    NumberList,
    _numeric_error,
    environment_error,
    say,
)
from tieeval.cli.output import format_option
from tieeval.cli.progress import progress_option
from tieeval.cli.stdin import stdin_files
from tieeval.engine.arguments import ENGINES
from tieeval.errors import ParameterError, TieevalError
from tieeval.io.base import DEFAULT_BATCH_ROWS, LAYOUTS, SCORE_DTYPES
from tieeval.kernels.counts import NAN_POLICIES
from tieeval.metrics.metric import (
    DEFAULT_KS,
    Metric,
    default_metrics,
    family,
    parse_metric_list,
)
from tieeval.metrics.registry import check_k
from tieeval.metrics.spellings import (
    RELSTRING,
    asks_relstring,
    asks_runid,
    trec_printed_name,
)
from tieeval.records.results import ORIGINAL_RULES
from tieeval.records.runs import RunTables
from tieeval.records.whatif import CASTS, check_tolerance
from tieeval.report.registry import renderer


class Parsed(click.ParamType):
    """An option's text parsed by ``parse``, a library function whose TieevalError becomes
    click's message, less the library's own ``prefix`` (``--option: ``: click names the
    option already). A value that is not text is taken as parsed."""

    def __init__(self, name: str, parse, prefix: str = ""):
        self.name, self._parse, self._prefix = name, parse, prefix

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return self._parse(value)
        except TieevalError as exc:
            self.fail(str(exc).removeprefix(self._prefix), param, ctx)


# one or more cutoffs: ``10`` or ``1,5,10``; each a whole number >= 1
KLIST = NumberList("K", int, "K must be a whole number >= 1", lambda k, _: check_k(k))


class MetricType(click.ParamType):
    """A metric name: a tuple of one :class:`Metric`, or several for trec_eval's lists
    (``P.5,10``, ``all_trec``); :func:`chosen_metrics` flattens them."""

    name = "METRIC"

    def convert(self, value, param, ctx):
        if isinstance(value, Metric):
            return (value,)
        if isinstance(value, (tuple, MetricFamily)):
            return value
        try:
            expanded = tuple(Metric.expand(value))
        except TieevalError as exc:
            if family(value) is not None:  # HR: one metric per --k, if --k is given
                return MetricFamily(value, str(exc))
            self.fail(str(exc), param, ctx)
        if family(value) is not None:  # P: one metric per --k, else trec_eval's cutoffs
            return MetricFamily(value, "", expanded)
        return Named(expanded, asks_runid(value), trec_printed_name(value),
                     asks_relstring(value))


class Named(tuple):
    """The metrics one ``-m`` value names; ``runid``: it asks for trec_eval's runid line
    (``-m runid``, ``official``, ``all_trec``); ``printed``: the name trec_eval prints for
    it when that is not the metric's own (``rbp.p=0.9`` prints ``rbp_p=0.9``);
    ``relstring``: it asks for trec_eval's relstring lines, ``(printed name, N)``."""

    runid: bool
    printed: str | None
    relstring: tuple[str, int] | None

    def __new__(cls, metrics, runid: bool = False, printed: str | None = None,
                relstring: tuple[str, int] | None = None):
        self = super().__new__(cls, metrics)
        self.runid = runid
        self.printed = printed
        self.relstring = relstring
        return self


class MetricFamily(str):
    """``-m HR``: a name that takes a cutoff, one metric per ``--k`` (:func:`chosen_metrics`
    expands it). Without ``--k`` it is trec_eval's expansion where trec_eval has the name
    (``-m P``: its nine cutoffs, in ``expanded``), else the error it always was, kept in
    ``error``."""

    error: str
    expanded: tuple
    runid = False

    def __new__(cls, name: str, error: str, expanded: tuple = ()):
        self = super().__new__(cls, name)
        self.error = error
        self.expanded = expanded
        return self


def _flatten_ks(k_values) -> list[int]:
    return list(dict.fromkeys(k for group in k_values for k in group)) or list(DEFAULT_KS)


def read_options(f):
    """Options shared by every command that reads dumps."""
    f = click.option("--positive-index", type=int, default=None, metavar="N",
                     help="Column of the positive when the dump has no positive field "
                          "(default 0; negative N counts from the end).")(f)
    f = click.option("--positive-column", default="positive", show_default=True,
                     metavar="NAME", help="Name of the per-row positive index field.")(f)
    f = click.option("--scores-column", default="scores", show_default=True, metavar="NAME",
                     help="Name of the score field (NPZ array or Parquet column).")(f)
    f = click.option("--nan-policy", type=click.Choice(NAN_POLICIES), default="raise",
                     show_default=True,
                     help="'raise': a NaN score is an input error; 'worst': NaN ranks below "
                          "every score and NaNs tie with each other.")(f)
    f = click.option("--batch-rows", type=click.IntRange(min=1), default=None,
                     help="Rows per batch (default: about 16 MB of scores, at most "
                          f"{DEFAULT_BATCH_ROWS}); results do not depend on it.")(f)
    f = click.option("--layout", type=click.Choice(LAYOUTS), default="auto", show_default=True,
                     help="'wide': one row per instance (list column or matrix); 'long': one "
                          "row per (instance, candidate), Parquet or CSV; 'auto': long when a "
                          "Parquet file has instance and score columns and no scores column, "
                          "and for .csv.")(f)
    for key, what in (("instance", "the instance id"),
                      ("position", "the candidate's place in the codebase's list"),
                      ("score", "the score"),
                      ("label", "1 for the positive, else 0, or relevance labels")):
        f = click.option(f"--{key}-column", default=None, metavar="NAME",
                         help=f"Long layout: column with {what} (default '{key}').")(f)
    f = click.option("--score-dtype", type=click.Choice(SCORE_DTYPES), default=None,
                     help="Long-layout CSV: parse scores as this dtype (text has none; "
                          "default float64). Use the dtype the model scored in.")(f)
    f = click.option("--original", "original", type=click.Choice(ORIGINAL_RULES),
                     default=None, metavar="RULE",
                     help="The codebase's own ranking rule behind the Original column: "
                          "argsort (default: np.argsort(scores * -1)), stable (ties by "
                          "ascending position), reverse-stable (ties by descending "
                          "position), trec (trec_eval's docno rule; the default for TREC "
                          "runs), topk (torch.topk(scores, K) on the CPU; "
                          "pip install 'tieeval[torch]'), topk-each (torch.topk at each metric's "
                          "own K, as torchmetrics ranks), given (the dump's 'ranking' "
                          "field: per row, candidate indices top first).")(f)
    f = click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Worker processes; 0 = automatic: this process, on every core, "
                          "or one worker per core for NPY/NPZ matrices of 1 GB or more (any "
                          "dump of 256 MB or more with 5 cores or more). Results do not "
                          "depend on it.")(f)
    f = click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                     help="'local': this machine; 'spark': the same kernel inside Spark "
                          "(pip install 'tieeval[spark]'; Parquet, CSV or TREC paths).")(f)
    f = click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
                     help="--engine spark: a Spark setting, repeatable, over "
                          "spark-defaults.conf (SPARK_CONF_DIR) and the environment, e.g. "
                          "--spark-conf spark.master=yarn --spark-conf "
                          "spark.sql.shuffle.partitions=200; see docs/scale.md.")(f)
    from tieeval.cli.relevance import (
        relevance_options,  # labels, positives/negatives, items, TREC
    )
    f = relevance_options(f)
    return f


def dumps_command(name: str, metavar: str, kind: str):
    """The command ``tieeval name`` of the dumps its ``files`` argument names (``-``:
    standard input): ``--format`` and ``--output`` for results of ``kind``, then the options
    the decorated function declares, the reading options (:func:`read_options`), ``--quiet``
    (nothing on stderr but errors) and ``--progress/--no-progress`` (see
    :func:`tieeval.cli.progress.wanted`); its help ends with the user guide's section on it."""
    def decorate(f):
        own = getattr(f, "__click_params__", [])  # click's: the options declared so far
        f.__click_params__ = []
        f = click.option("--quiet", "-q", is_flag=True,
                         help="No warnings or progress on stderr.")(progress_option(f))
        f = read_options(f)
        f.__click_params__ += own
        f = format_option(kind)(f)
        f = click.argument("files", nargs=-1, required=True, metavar=metavar,
                           callback=stdin_files)(f)
        return click.command(cls=Command, epilog=(
            "A dump named - is read from standard input (NPY, NPZ, Parquet, or a TREC run "
            f"with --qrels).\n\nEvery option, with examples: see "
            f"docs/commands.md#tieeval-{name}"))(f)
    return decorate


def metric_options(f):
    f = click.option("--metric", "-m", "metrics", type=MetricType(), multiple=True,
                     help="Metric to report, repeatable, case-insensitive, e.g. -m NDCG@10 "
                          "-m MRR -m V-AUC, or in trec_eval's (ndcg_cut_10) or ir_measures' "
                          "(nDCG@10) names; every name is in docs/metric-names.md. A name "
                          "without @K is one metric per --k (NDCG@all: untruncated). Default: "
                          "HR@K, NDCG@K per --k and MRR (labelled dumps and TREC runs: also "
                          "Recall@K and MAP).")(f)
    f = click.option("--k", "-k", "k_values", type=KLIST, multiple=True,
                     help="Cutoffs: --k 1 5 10, --k 1,5,10 or --k 1 --k 5. Default: 1 5 10.")(f)
    return f


# --tolerance ATOL: checked as WhatIf checks it
TOLERANCE = Parsed("ATOL", lambda text: check_tolerance(text.strip()))


def whatif_options(f):
    """``--cast`` and ``--tolerance``: the precision what-ifs of ``compare``, ``diff`` and
    ``rank``, whose results every format labels as what-if analyses."""
    f = click.option("--tolerance", type=TOLERANCE, default=None,
                     help="What-if: count scores within ATOL of the positive (and of the row "
                          "maximum, for the tie statistics) as tied, e.g. --tolerance 1e-6. "
                          "Output is labelled as a what-if analysis.")(f)
    f = click.option("--cast", type=click.Choice(CASTS), default=None,
                     help="What-if: round the scores to this precision (nearest, ties to "
                          "even) before judging ties; bfloat16 is emulated in float32. "
                          "Output is labelled as a what-if analysis.")(f)
    return f


def seed_std_option(f):
    return click.option("--seed-std/--no-seed-std", "seed_std", default=True,
                        show_default=True,
                        help="Show '± across-seed sd' next to seed means in Tables 1, 3 "
                             "and 4.")(f)


def chosen_metrics(k_values, metrics) -> list[Metric]:
    """The --metric values, flattened (one name may name several) without repeats, or
    the defaults for --k."""
    if metrics:
        flat: list[Metric] = []
        for item in metrics:
            if isinstance(item, MetricFamily):
                if k_values:
                    flat += parse_metric_list([str(item)], _flatten_ks(k_values))
                elif item.expanded:
                    flat += item.expanded
                else:
                    raise click.BadParameter(item.error, param_hint="'--metric' / '-m'")
            else:
                flat += item if isinstance(item, tuple) else [item]
        if not flat:  # -m runid (or relstring) alone
            raise click.BadParameter("runid and relstring name no metric (they ask for "
                                     "trec_eval's runid and relstring lines under --format "
                                     "trec_eval); add a metric",
                                     param_hint="'--metric' / '-m'")
        return list(dict.fromkeys(flat))
    return default_metrics(_flatten_ks(k_values))


def runid_asked(metrics) -> bool:
    """True when trec_eval would print the ``runid`` line: no ``-m`` (trec_eval's default
    list holds it) or a ``-m`` that asks for it (:func:`tieeval.metrics.spellings.asks_runid`)."""
    return not metrics or any(getattr(item, "runid", False) for item in metrics)


def relstring_asked(metrics) -> tuple[str, int] | None:
    """``(the name trec_eval prints, N)`` when a ``-m`` asks for trec_eval's relstring
    lines (:func:`tieeval.metrics.spellings.asks_relstring`), else None: the first
    ``relstring.N`` decides, else ``relstring`` or ``all_trec`` (N = 10), as trec_eval takes
    a measure's parameters wherever ``-m`` gives them."""
    asked = [item.relstring for item in metrics or ()
             if getattr(item, "relstring", None) is not None]
    return next((a for a in asked if a[0] != RELSTRING), asked[0] if asked else None)


def printed_names(metrics) -> dict:
    """``{(metric name, k): name}``: the names trec_eval prints for metrics given with
    their parameters spelled out (``-m rbp.p=0.9``: ``rbp_p=0.9``), the first ``-m``
    naming a metric deciding, as trec_eval takes a measure's first parameters."""
    out: dict = {}
    for item in metrics or ():
        printed = getattr(item, "printed", None)
        if printed is not None and len(item) == 1:
            out.setdefault((item[0].name, item[0].k), printed)
    return out


def reading(*, scores_column="scores", positive_column="positive", positive_index=None,
            layout="auto", instance_column=None, position_column=None, score_column=None,
            label_column=None, score_dtype=None, quiet=False, metrics=None, **relevance):
    """The reading options and labelled-metric options the shared command-line options ask
    for: ``(RelevanceReadOptions, RelOptions or None)``. Unknown keys are an error."""
    from tieeval.cli.relevance import gamma_warning, split_relevance
    from tieeval.io.base import RelevanceReadOptions
    fields, rel_options, gamma_given = split_relevance(relevance)
    if relevance:
        raise TypeError(f"unexpected options: {', '.join(relevance)}")
    if positive_index is not None and not -(1 << 62) <= positive_index < (1 << 62):
        raise ParameterError(f"--positive-index {positive_index} is out of range (a column "
                             "index of a row)")
    options = RelevanceReadOptions(scores=scores_column, positive=positive_column,
                                   positive_index=positive_index, layout=layout,
                                   instance=instance_column, position=position_column,
                                   score=score_column, label=label_column,
                                   score_dtype=score_dtype, **fields)
    if gamma_given and not quiet:
        gamma_warning(metrics)
    return options, rel_options


#: The shared options (:func:`read_options`) that are the run's rather than the reader's:
#: the :class:`~tieeval.engine.request.EvalOptions` fields of their names, here at the
#: command line's defaults (``--jobs 0``: automatic)
RUN_OPTIONS = {"nan_policy": "raise", "batch_rows": None, "jobs": 0, "engine": "local",
               "original": None, "spark_conf": ()}


def make_request(metrics, *, quiet=False, what_if=None, per_instance=None, per_query=False,
                 paired=False, **options):
    """The :class:`~tieeval.engine.request.EvalOptions` of the shared command-line options
    (``options``: those of :func:`read_options`, see :func:`reading`), with the outputs
    asked for besides the totals: checked once, the engine chosen there; an option the
    engine cannot honour is a usage error."""
    from tieeval.engine.request import EngineRefusal, EvalOptions
    run = {name: options.pop(name, default) for name, default in RUN_OPTIONS.items()}
    run["spark_conf"] = tuple(run["spark_conf"] or ())
    read, relevance = reading(quiet=quiet, metrics=metrics, **options)
    try:
        return EvalOptions(metrics, read, relevance, what_if=what_if,
                           per_instance=per_instance, per_query=per_query, paired=paired,
                           cli=True, **run)
    except EngineRefusal as exc:
        raise click.UsageError(str(exc)) from None


def dump_error(exc: BaseException, path: str) -> str | None:
    """The one-line error of a dump that cannot be evaluated (damaged, cut short, holding
    NaN or no instances, unreadable), naming it, when ``exc`` is about the dump at ``path``;
    None for anything else (a usage error, a bad --qrels, a bug), which ends the command.
    An error that does not begin with the dump's path (one naming the qrels, or no file)
    is never taken for the dump's own."""
    from tieeval.cli.stdin import shown
    from tieeval.errors import InputError, one_line
    text: str | None = None
    if isinstance(exc, InputError):
        text = str(exc)  # one line: a line break of the path is written \n
        # a dataset folder's error names its file: the folder's path, then a separator
        if not text.startswith(tuple(f"{name}{end}" for name in (path, one_line(path))
                                     for end in (": ", os.sep, "/"))):
            return None
    elif isinstance(exc, OSError):
        name = exc.filename
        name = os.fsdecode(name) if isinstance(name, bytes) else name
        mapped = environment_error(exc) if name == path and exc.filename2 is None else None
        text = None if mapped is None else mapped.format_message()
    elif isinstance(exc, RuntimeWarning):  # a figure left float64's range: the scores'
        text = f"{path}: {_numeric_error(exc).format_message()}"
    return None if text is None else one_line(shown(text))


def evaluate_request(request, paths, *, quiet=False, ids_for=None, errors=None):
    """Run ``request`` on every path (one run each): :class:`~tieeval.engine.local.RunOutcome`
    records; warnings go to stderr unless ``quiet``, and a progress bar while a terminal
    is watching. ``ids_for(dump)``: instance ids of per-instance rows (see
    :func:`tieeval.engine.local.evaluate_request`). ``errors``: a list that receives
    ``(path, message)`` for each dump that cannot be evaluated (see :func:`dump_error`),
    the others still evaluated; None: the first such dump ends the command."""
    from tieeval.cli.progress import ProgressBar, wanted
    from tieeval.cli.stdin import show_run, shown
    from tieeval.engine.local import evaluate_request as run
    outcomes = []
    with ProgressBar(wanted(quiet) and request.engine == "local") as bar:
        for path in paths:
            try:
                outcomes.append(run(request, path, progress_for=bar.task, ids_for=ids_for))
            except (TieevalError, OSError, RuntimeWarning) as exc:
                text = None if errors is None else dump_error(exc, path)
                if text is None:
                    raise
                errors.append((shown(path), text))
                continue
            show_run(outcomes[-1].result)  # a dump read from '-' is named <stdin>
    warn([w for outcome in outcomes for w in outcome.result.warnings], quiet)
    return outcomes


# ---------------------------------------------------------------------------------------
# runs as the table chosen (each run in detail, or the paper's Tables 1, 3, 4)

TABLE_CHOICES = ("runs", "1", "3", "4")


def default_table(table: str | None, n_files: int, kind: str, fmt: str) -> str:
    """``runs`` (each run in detail) for one file; for several, Table 3 in the formats
    people read (table, markdown, latex) and the per-run rows in the machine-readable ones
    (csv: pipelines keep one line per run and metric, with its path; JSON always has runs
    and groups)."""
    if table is not None:
        return table
    return "runs" if n_files == 1 or renderer(kind, fmt).machine_readable else "3"


def warn(lines, quiet: bool) -> None:
    if not quiet:
        for line in lines:
            say(f"Warning: {line}")


def run_tables(runs, groups, table: str, *, seed_std: bool = True, what_if=None,
               trec_lines=None) -> RunTables:
    """The runs and their groups as ``table`` shows them: the paper's tables and Figure 1
    are assembled only when a renderer asks for them (JSON never does), and their module
    is imported only then (a run's own lines, as trec_eval's, never need it)."""
    def paper_table(number):
        from tieeval.analysis.paper import paper_table
        return paper_table(number, groups)

    def figure():
        from tieeval.analysis.paper import figure1
        return figure1(groups)
    paper = None if table == "runs" else (lambda: paper_table(int(table)))
    return RunTables(runs, groups, table, seed_std, what_if, paper, trec_lines,
                     tables=paper_table, figure=figure)


def grouped(runs, quiet: bool):
    groups, warnings = group_runs(runs)
    warn(warnings, quiet)
    return groups
