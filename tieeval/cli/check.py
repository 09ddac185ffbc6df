"""``tieeval check``: a CI gate on how much ties decide a dump's metrics. Exit 3 is kept
for an internal error: a crash never looks like a failed check (exit 1)."""

from __future__ import annotations

import click

from tieeval.analysis.check import (
    DEFAULT_GATE,
    OPTION_NAMES,
    default_thresholds,
    metrics_needed,
    parse_threshold,
    run_checks,
)
from tieeval.cli.common import (
    EXIT_CHECK_FAILED,
    CliError,
    Parsed,
    chosen_metrics,
    dump_error,
    dumps_command,
    metric_options,
    reading,
    say,
)
from tieeval.cli.output import render
from tieeval.cli.run_labels import evaluate_labelled, label_options
from tieeval.cli.stdin import shown
from tieeval.errors import InputError, TieevalError
from tieeval.io.open import open_dump
from tieeval.io.saved_ranking import SavedRanking, saved_ranking
from tieeval.kernels.choose import resolve_metrics
from tieeval.metrics.metric import Metric
from tieeval.records.check import ORIGINAL_KINDS, CheckResult, DumpError

# the options of an evaluation that are not about reading the dump's fields
_NOT_READING = ("nan_policy", "batch_rows", "jobs", "engine", "spark_conf", "original", "qrels",
                "group_by_tag", "what_if")


def _saved_rankings(files, read_kwargs) -> dict:
    """Per file, the codebase's ranking it carries (:class:`SavedRanking`), or None. Only
    when no --original was given, or --original given: another explicit rule wins, and
    TREC runs have their own. A URI only Spark can open is not looked at here (it is
    judged by np.argsort)."""
    if (read_kwargs.get("original") not in (None, "given")
            or read_kwargs.get("qrels") is not None):
        return dict.fromkeys(files)
    scores = read_kwargs.get("scores_column") or "scores"
    return {path: saved_ranking(path, scores) for path in files}


def _answerable(path, saved: SavedRanking, default, metrics, thresholds, read_kwargs, quiet):
    """The default metrics of ``path`` that its saved ranking answers, with a note on
    stderr saying the dump is judged by that ranking and which defaults are left out.

    A default metric the ranking cannot answer (MRR when only the top 20 are listed) is
    left out rather than cut to the ranking's depth: MRR@20 is another measure than MRR,
    and the gate must not report it under MRR's name. Metrics asked for by name (-m, or a
    threshold's METRIC=) are kept, with their Original empty (null) where the ranking
    cannot answer it; a threshold that reads the Original of one (--max-change,
    --max-change-sigma, --max-gap) is an input error."""
    if not quiet and read_kwargs.get("original") is None:
        say(f"Note: {path} carries its codebase's ranking (its 'ranking' field): "
            "its Original column is that ranking (--original given); pass --original "
            "argsort to judge np.argsort(scores * -1) instead")
    if metrics:  # chosen by name: kept as asked
        _original_read(path, saved, default, thresholds)
        return default
    kw = {k: v for k, v in read_kwargs.items() if k not in _NOT_READING}
    options, relevance = reading(quiet=True, metrics=default, **kw)
    info = getattr(open_dump(path, options), "relevance", None)
    resolved = resolve_metrics(default, info.source if info is not None else None, relevance)
    kept = [m for m in resolved if saved.answers(m)]
    left = [m for m in resolved if not saved.answers(m)]
    if left and not quiet:
        say(f"Note: {path}: its saved ranking lists only the top {saved.depth} "
            f"candidates of some rows, which cannot answer "
            f"{', '.join(map(str, left))}: left out of the checks (to check one at "
            f"the ranking's depth name it, e.g. -m {Metric(left[0].name, saved.depth)}"
            ", or pass --original argsort)")
    if not kept:
        raise InputError(f"{path}: its saved ranking lists only the top {saved.depth} "
                         "candidates of some rows, which answers none of the metrics; ask "
                         "for metrics with a cutoff up to that depth (-m)")
    _original_read(path, saved, kept, thresholds)
    return kept


def _original_read(path, saved: SavedRanking, default, thresholds) -> None:
    """Refuse a threshold that reads the Original of a metric ``saved`` cannot answer
    (its Original is null: there is nothing to bound)."""
    for t in thresholds:
        if t.kind not in ORIGINAL_KINDS:
            continue
        for m in [t.metric] if t.metric is not None else default:
            if not saved.answers(m):
                raise InputError(
                    f"{path}: its saved ranking lists only the top {saved.depth} candidates "
                    f"of some rows, too few for {m}'s Original, which {OPTION_NAMES[t.kind]} "
                    f"reads: ask for {m.name}@K with K <= {saved.depth}, or pass --original "
                    "argsort")


def _threshold(kind, help_text, per_metric=True):
    """A threshold's option: repeatable, one per metric, or given once for the run."""
    return click.option(OPTION_NAMES[kind], kind, multiple=per_metric,
                        type=Parsed("THRESHOLD", lambda text: parse_threshold(kind, text),
                                    OPTION_NAMES[kind] + ": "),
                        metavar="[METRIC=]BOUND" if per_metric else "BOUND", help=help_text)


@dumps_command("check", "DUMP...", "check")
@_threshold("max_change",
            "Fail when the change original -> tie-aware, |tie-aware - original| / original, "
            "exceeds BOUND, e.g. NDCG@10=5% (printed signed). Without METRIC= it applies to "
            "every --k/--metric metric; a signed metric evaluated at several --gamma is "
            "checked per gamma row, or at one with METRIC[gamma=G]= (e.g. "
            "'SNDCG@10[gamma=0.5]=5%'). Repeatable.")
@_threshold("max_inflation", "The older name of --max-change (same check).")
@_threshold("max_change_sigma",
            "Fail when |original - tie-aware| exceeds BOUND tie-break standard deviations "
            "(tie_aware_std) and 1% of the original, e.g. 3 or NDCG@10=3; a metric without "
            "an exact spread (ERR, IPrec, GMAP) is not checked. Repeatable.")
@_threshold("max_spread",
            "Fail when (first - last) / tie-aware exceeds BOUND, e.g. 10% or HR@10=10%. "
            "Repeatable.")
@_threshold("max_tie_decided",
            "Fail when more than BOUND of the instances have their HR@K decided "
            "by the tie-break (first and last differ), for each K, e.g. 5%.", per_metric=False)
@_threshold("max_gap",
            "Fail when |original - tie-aware| exceeds BOUND, e.g. HR@1=0.01 "
            "(METRIC[gamma=G]= as for --max-inflation). Repeatable.")
@_threshold("min", "Fail when the tie-aware value is below BOUND, e.g. NDCG@10=0.30 "
                   "(METRIC[gamma=G]= as for --max-inflation). Repeatable.")
@_threshold("max_tie_frequency",
            "Fail when more than BOUND of the instances have a tied top score, "
            "e.g. 10%.", per_metric=False)
@_threshold("max_positive_tie_frequency",
            "Fail when more than BOUND of the instances have their positive tied, "
            "e.g. 5%.", per_metric=False)
@metric_options
@label_options
def check(files, max_change, max_inflation, max_change_sigma, max_spread, max_tie_decided,
          max_gap, min, max_tie_frequency, max_positive_tie_frequency, k_values, metrics, fmt,
          meta, template, quiet, **read_kwargs):
    """Fail CI when ties decide a dump's metrics: exit 0 pass, 1 fail, 2 error.

    Checks every DUMP against every threshold and prints one line per check with the
    measured value and the bound. BOUND is a fraction (0.05) or a percentage (5%); each
    bound is inclusive. Without any threshold, the default gate is --max-tie-decided 5%
    --max-spread 10% --max-change-sigma 3 on every metric of --k (default 1 5 10): it
    fails a dump whose figures the tie-break decides and passes a tie-free one. A failed
    threshold is named with a way to relax it.

    A dump that carries its codebase's ranking (a 'ranking' field) is judged by that
    ranking (as --original given) unless --original says otherwise; default metrics the
    ranking cannot answer (MRR when it lists the top 20) are left out, with a note.

    With several --gamma values a signed metric (SHR, SRecall, SDCG, SNDCG) has one row
    per gamma: METRIC= checks each of them, METRIC[gamma=G]= only the row of gamma G
    (quote it for the shell).

    \b
    Examples:
      tieeval check scores.npz --max-change NDCG@10=5% --min NDCG@10=0.30
      tieeval check scores.npz --max-gap HR@1=0.01 --max-tie-frequency 10%
      tieeval check runs/*.parquet --max-positive-tie-frequency 5% --format github
      tieeval check signed.npz -m SNDCG@10 --gamma 0 0.5 1 \\
        --min 'SNDCG@10[gamma=0.5]=0.2'

    Exit codes: 0 every check passed; 1 a check failed; 2 usage or input error;
    3 internal error.
    """
    thresholds = [*max_change, *max_inflation, *max_change_sigma, *max_spread, *max_gap, *min]
    thresholds += [t for t in (max_tie_decided, max_tie_frequency, max_positive_tie_frequency)
                   if t is not None]
    if not thresholds:
        thresholds = default_thresholds()
        if not quiet:
            say(f"No thresholds given: using the default gate {DEFAULT_GATE}")
    default = chosen_metrics(k_values, metrics)
    saved = _saved_rankings(files, read_kwargs)
    found: list[tuple[str, str]] = []  # (path, error) of each dump that cannot be checked
    if not any(saved.values()):
        runs = evaluate_labelled(files, metrics_needed(thresholds, default), meta=meta,
                                 template=template, quiet=quiet, errors=found, **read_kwargs)
        outcomes = run_checks(runs, thresholds, default)
    else:  # each dump by its own rule, and its default metrics what its ranking answers
        runs, outcomes = [], []
        for path in files:
            own, options = default, read_kwargs
            if saved[path] is not None:
                options = {**read_kwargs, "original": "given"}
                try:
                    own = _answerable(path, saved[path], default, metrics, thresholds,
                                      read_kwargs, quiet)
                except (TieevalError, OSError, RuntimeWarning) as exc:
                    text = dump_error(exc, path)
                    if text is None:
                        raise
                    found.append((shown(path), text))
                    continue
            run = evaluate_labelled([path], metrics_needed(thresholds, own), meta=meta,
                                    template=template, quiet=quiet, errors=found, **options)
            runs += run
            outcomes += run_checks(run, thresholds, own)
    first = dict(reversed(found))  # a dump named twice is one error (its runs, one suite)
    errors = [DumpError(path, first[path]) for path in dict.fromkeys(p for p, _ in found)]
    if errors and not runs:  # nothing checked, nothing to report: the error alone
        raise CliError(error_line(errors, reported=False))
    result = CheckResult(outcomes, runs, errors, [shown(path) for path in files])
    render("check", fmt, result)
    if errors:  # the others are in the report; exit 2 (an error wins over a failed check)
        raise CliError(error_line(errors))
    return 0 if result.passed else EXIT_CHECK_FAILED


def error_line(errors: list[DumpError], reported: bool = True) -> str:
    """The one ``Error:`` line of dumps that could not be checked: the dump's own error,
    or how many and each one's."""
    if len(errors) == 1:
        return errors[0].message
    others = " (the others are in the report)" if reported else ""
    return (f"{len(errors)} dumps could not be checked{others}: "
            + "; ".join(e.message for e in errors))
