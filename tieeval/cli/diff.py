"""``tieeval diff A B``: is B better than A once ties are broken fairly? And ``tieeval rank
FILE...``: methods ranked by tie-aware value beside their original ranking."""

from __future__ import annotations

import click

from tieeval.analysis.diff import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PERMUTATIONS,
    INSTANCE_FIELD,
    diff_dumps,
    rank_groups,
)
from tieeval.cli.common import (
    Command,
    chosen_metrics,
    guide,
    make_request,
    metric_options,
    quiet_option,
    read_options,
    stdout_console,
    write,
)
from tieeval.cli.run_labels import label_options
from tieeval.cli.tables import grouped
from tieeval.cli.whatif import evaluate_runs, make_what_if, whatif_options
from tieeval.engine.local import open_request
from tieeval.report import diff as diff_report


def _format_option(f):
    return click.option("--format", "-f", "fmt", type=click.Choice(diff_report.DIFF_FORMATS),
                        default="table", show_default=True,
                        help="Output: a rich table for the terminal, json, csv or "
                             "markdown.")(f)


@click.command(cls=Command, epilog=guide("diff"))
@click.argument("files", nargs=-1, required=True, metavar="A B")
@metric_options
@_format_option
@click.option("--permutations", type=click.IntRange(min=1), default=DEFAULT_PERMUTATIONS,
              show_default=True,
              help="Monte Carlo sign vectors of the randomization test (above 20 instances; "
                   "up to 20 the test is exact).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the randomization test's sign vectors.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=DEFAULT_CONFIDENCE, show_default=True,
              help="Level of the confidence interval of the mean difference.")
@whatif_options
@read_options
@quiet_option
def diff(files, k_values, metrics, fmt, permutations, seed, confidence, cast, tolerance,
         quiet, **read_kwargs):
    """Paired comparison of run B against run A on the same instances.

    Per metric: the tie-aware difference B − A with its standard deviation under random
    tie-breaking, a paired t-test and a paired sign-flip randomization test across
    instances, the confidence interval of the mean difference, and the same under the
    original column (np.argsort), with a verdict when the winner changes ("B wins under
    original, loses under tie-aware").

    Rows are matched by an 'instance' id field when both dumps have one, else by position
    (the dumps must then have the same number of instances and of candidates per row).

    \b
    Examples:
      tieeval diff baseline.parquet new.parquet --k 1 5 10
      tieeval diff A.npz B.npz -m NDCG@10 --permutations 100000 --seed 7 --format json
      tieeval diff A.npz B.npz --cast float32
    """
    if len(files) != 2:
        raise click.UsageError(f"diff compares exactly two dumps (A B), got {len(files)}; "
                               "use 'tieeval rank FILE...' to rank several runs")
    chosen = chosen_metrics(k_values, metrics)
    request = make_request(chosen, quiet=quiet, what_if=make_what_if(cast, tolerance),
                           paired=True, **read_kwargs)
    warn = None if quiet else (lambda text: click.echo(f"Warning: {text}", err=True))
    dumps = [open_request(request, path) for path in files]
    options = request.read
    result = diff_dumps(*dumps, request.metrics, what_if=request.what_if,
                        permutations=permutations, seed=seed, confidence=confidence,
                        nan_policy=request.nan_policy, batch_rows=request.batch_rows,
                        instance_field=getattr(options, "instance", None) or INSTANCE_FIELD,
                        warn=warn, relevance=request.relevance, original=request.original)
    if fmt == "json":
        write(diff_report.diff_json(result))
    elif fmt == "csv":
        write(diff_report.diff_csv(result))
    elif fmt == "markdown":
        write(diff_report.diff_markdown(result))
    else:
        diff_report.render_diff(result, stdout_console())


@click.command(cls=Command, epilog=guide("rank"))
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@metric_options
@_format_option
@label_options
@whatif_options
@read_options
@quiet_option
def rank(files, k_values, metrics, fmt, meta, template, cast, tolerance, quiet,
         **read_kwargs):
    """Rank methods by tie-aware value, with the original ranking beside it.

    Runs are labelled as in 'tieeval compare' (--meta, --template, the files' metadata,
    else the file name as method) and averaged over seeds; within each dataset and task,
    every metric ranks the methods by tie-aware seed mean and shows each method's original
    value and rank and how many places it moved (the paper's Table 5 reading). A signed
    metric ranks them once per --gamma, each ranking titled with its gamma.

    \b
    Examples:
      tieeval rank runs/*/*.npz --template '{method}/{dataset}_{task}_seed{seed}.npz'
      tieeval rank sample_scores/*.parquet -m HR@1 -m NDCG@10 --format markdown
    """
    what_if = make_what_if(cast, tolerance)
    runs = evaluate_runs(files, chosen_metrics(k_values, metrics), what_if=what_if, meta=meta,
                         template=template, quiet=quiet, **read_kwargs)
    rankings = rank_groups(grouped(runs, quiet))
    if fmt == "json":
        write(diff_report.rank_json(rankings, what_if))
    elif fmt == "csv":
        write(diff_report.rank_csv(rankings, what_if))
    elif fmt == "markdown":
        write(diff_report.rank_markdown(rankings, what_if))
    else:
        diff_report.render_rankings(rankings, stdout_console(), what_if)
