"""``tieeval check``: a CI gate on how much ties decide a dump's metrics.

Exit 0 when every check passes, 1 when any fails, 2 for usage or input errors, 3 for an
internal error: a crash never looks like a failed check.
"""

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
    Command,
    chosen_metrics,
    guide,
    metric_options,
    quiet_option,
    read_options,
)
from tieeval.cli.output import format_option, render
from tieeval.cli.run_labels import evaluate_labelled, label_options
from tieeval.errors import TieevalError
from tieeval.records.check import CheckResult


class ThresholdType(click.ParamType):
    name = "THRESHOLD"

    def __init__(self, kind: str):
        self.kind = kind

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return parse_threshold(self.kind, value)
        except TieevalError as exc:
            # click already names the option; drop the library's own "--option: " prefix
            text = str(exc)
            prefix = OPTION_NAMES[self.kind] + ": "
            self.fail(text[len(prefix):] if text.startswith(prefix) else text, param, ctx)


def _metric_threshold(kind, help_text):
    return click.option(OPTION_NAMES[kind], kind, type=ThresholdType(kind), multiple=True,
                        metavar="[METRIC=]BOUND", help=help_text)


def _frequency_threshold(kind, help_text):
    return click.option(OPTION_NAMES[kind], kind, type=ThresholdType(kind), default=None,
                        metavar="BOUND", help=help_text)


@click.command(cls=Command, epilog=guide("check"))
@click.argument("files", nargs=-1, required=True, metavar="DUMP...")
@_metric_threshold("max_change",
                   "Fail when the change original -> tie-aware, |tie-aware - original| / "
                   "original, exceeds BOUND, e.g. NDCG@10=5% (printed signed). Without "
                   "METRIC= it applies to every --k/--metric metric; a signed metric "
                   "evaluated at several --gamma is checked per gamma row, or at one with "
                   "METRIC[gamma=G]= (e.g. 'SNDCG@10[gamma=0.5]=5%'). Repeatable.")
@_metric_threshold("max_inflation", "The older name of --max-change (same check).")
@_metric_threshold("max_change_sigma",
                   "Fail when |original - tie-aware| exceeds BOUND tie-break standard "
                   "deviations (tie_aware_std) and 1% of the original, e.g. 3 or "
                   "NDCG@10=3; a metric without an exact spread (Bpref, ERR, IPrec, "
                   "GMAP) is not checked. Repeatable.")
@_metric_threshold("max_spread",
                   "Fail when (first - last) / tie-aware exceeds BOUND, e.g. 10% or "
                   "HR@10=10%. Repeatable.")
@_frequency_threshold("max_tie_decided",
                      "Fail when more than BOUND of the instances have their HR@K decided "
                      "by the tie-break (first and last differ), for each K, e.g. 5%.")
@_metric_threshold("max_gap",
                   "Fail when |original - tie-aware| exceeds BOUND, e.g. HR@1=0.01 "
                   "(METRIC[gamma=G]= as for --max-inflation). Repeatable.")
@_metric_threshold("min", "Fail when the tie-aware value is below BOUND, e.g. NDCG@10=0.30 "
                          "(METRIC[gamma=G]= as for --max-inflation). Repeatable.")
@_frequency_threshold("max_tie_frequency",
                      "Fail when more than BOUND of the instances have a tied top score, "
                      "e.g. 10%.")
@_frequency_threshold("max_positive_tie_frequency",
                      "Fail when more than BOUND of the instances have their positive tied, "
                      "e.g. 5%.")
@metric_options
@format_option("check")
@label_options
@read_options
@quiet_option
@click.pass_context
def check(ctx, files, max_change, max_inflation, max_change_sigma, max_spread, max_tie_decided,
          max_gap, min, max_tie_frequency, max_positive_tie_frequency, k_values, metrics, fmt,
          meta, template, quiet, **read_kwargs):
    """Fail CI when ties decide a dump's metrics: exit 0 pass, 1 fail, 2 error.

    Checks every DUMP against every threshold and prints one line per check with the
    measured value and the bound. BOUND is a fraction (0.05) or a percentage (5%); each
    bound is inclusive. Without any threshold, the default gate is --max-tie-decided 5%
    --max-spread 10% --max-change-sigma 3 on every metric of --k (default 1 5 10): it
    fails a dump whose figures the tie-break decides and passes a tie-free one. A failed
    threshold is named with a way to relax it.

    With several --gamma values a signed metric (SHR, SRecall, SDCG, SNDCG) has one row
    per gamma: METRIC= checks each of them, METRIC[gamma=G]= only the row of gamma G
    (quote it for the shell).

    \b
    Examples:
      tieeval check scores.npz --max-change NDCG@10=5% --min NDCG@10=0.30
      tieeval check scores.npz --max-gap HR@1=0.01 --max-tie-frequency 10%
      tieeval check runs/*.parquet --max-positive-tie-frequency 5% --format github
      tieeval check signed.npz -m SNDCG@10 --gamma 0 0.5 1 --min 'SNDCG@10[gamma=0.5]=0.2'

    Exit codes: 0 every check passed; 1 a check failed; 2 usage or input error;
    3 internal error.
    """
    thresholds = [*max_change, *max_inflation, *max_change_sigma, *max_spread, *max_gap, *min]
    thresholds += [t for t in (max_tie_decided, max_tie_frequency, max_positive_tie_frequency)
                   if t is not None]
    if not thresholds:
        thresholds = default_thresholds()
        if not quiet:
            click.echo(f"No thresholds given: using the default gate {DEFAULT_GATE}", err=True)
    default = chosen_metrics(k_values, metrics)
    runs = evaluate_labelled(files, metrics_needed(thresholds, default), meta=meta,
                             template=template, quiet=quiet, **read_kwargs)
    result = CheckResult(run_checks(runs, thresholds, default), runs)
    render("check", fmt, result)
    if not result.passed:
        ctx.exit(EXIT_CHECK_FAILED)
