"""``tieeval diff A B``: is B better than A once ties are broken fairly? And ``tieeval rank
FILE...``: methods ranked by tie-aware value beside their original ranking."""

from __future__ import annotations

import click

from tieeval.analysis.check import parse_metric_key
from tieeval.analysis.diff import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PERMUTATIONS,
    INSTANCE_FIELD,
    diff_dumps,
    rank_groups,
    significantly_worse,
)
from tieeval.cli.common import (
    EXIT_CHECK_FAILED,
    Parsed,
    chosen_metrics,
    dumps_command,
    grouped,
    make_request,
    metric_options,
    say,
    whatif_options,
)
from tieeval.cli.output import render
from tieeval.cli.run_labels import evaluate_labelled, label_options
from tieeval.engine.arguments import what_if_of
from tieeval.engine.local import open_request
from tieeval.records.diff import RankResult
from tieeval.report import diff as diff_report

# NDCG@10 or SNDCG@10[gamma=0.5]: a metric whose significant loss fails
WORSE_METRIC = Parsed("METRIC", lambda text: parse_metric_key(text, "--fail-if-worse"),
                      "--fail-if-worse: ")


@dumps_command("diff", "A B", "diff")
@metric_options
@click.option("--permutations", type=click.IntRange(min=1), default=DEFAULT_PERMUTATIONS,
              show_default=True,
              help="Monte Carlo sign vectors of the randomization test (above 20 instances; "
                   "up to 20 the test is exact).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the randomization test's sign vectors.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=DEFAULT_CONFIDENCE, show_default=True,
              help="Confidence level: of the interval of the mean difference, and of the "
                   "tests that name a winner (both p < 1 - confidence, two-sided).")
@click.option("--fail-if-worse", "fail_if_worse", type=WORSE_METRIC, multiple=True,
              metavar="METRIC",
              help="Exit 1 when B is significantly worse than A on METRIC under the "
                   "tie-aware column (B − A < 0, both p < 1 - confidence), with one line on "
                   "stderr; for CI. Repeatable; METRIC is added to the metrics compared. "
                   "A signed metric fails on any of its --gamma rows, or on one with "
                   "'METRIC[gamma=G]'.")
@whatif_options
def diff(files, k_values, metrics, fmt, permutations, seed, confidence, fail_if_worse,
         cast, tolerance, quiet, **read_kwargs):
    """Paired comparison of run B against run A on the same instances.

    Per metric: the tie-aware difference B − A with its standard deviation under random
    tie-breaking, a paired t-test and a paired sign-flip randomization test across
    instances, the confidence interval of the mean difference, and the same under the
    original column, with a verdict when the winner changes ("B wins under original, loses
    under tie-aware"). A winner is named only when the difference is significant at
    --confidence (default 0.95): both tests give p < 0.05; otherwise "n.s.", no
    significant difference.

    Rows are matched by an 'instance' id field when both dumps have one, else by position
    (the dumps must then have the same number of instances and of candidates per row).

    \b
    Examples:
      tieeval diff baseline.parquet new.parquet --k 1 5 10
      tieeval diff A.npz B.npz -m NDCG@10 --permutations 100000 --seed 7 \\
        --format json
      tieeval diff A.npz B.npz --cast float32
      tieeval diff baseline.parquet new.parquet \\
        --fail-if-worse NDCG@10 --fail-if-worse HR@1

    Exit codes: 0 compared (and no --fail-if-worse metric significantly worse); 1 B is
    significantly worse on a --fail-if-worse metric; 2 usage or input error; 3 internal
    error.
    """
    if len(files) != 2:
        raise click.UsageError(f"diff compares exactly two dumps (A B), got {len(files)}; "
                               "use 'tieeval rank FILE...' to rank several runs")
    chosen = chosen_metrics(k_values, metrics)
    if metrics:  # explicit metrics: the gated ones are compared too (defaults: see below)
        chosen = list(dict.fromkeys(chosen + [m for m, _ in fail_if_worse]))
    request = make_request(chosen, quiet=quiet, what_if=what_if_of(None, cast, tolerance),
                           paired=True, **read_kwargs)
    warn = None if quiet else (lambda text: say(f"Warning: {text}"))
    dumps = [open_request(request, path) for path in files]
    result = diff_dumps(*dumps, request, permutations=permutations, seed=seed,
                        confidence=confidence,
                        instance_field=getattr(request.read, "instance", None) or INSTANCE_FIELD,
                        warn=warn)
    # before any output: a gated metric the dump's default set left out is a usage error
    worse = [row for metric, gamma in fail_if_worse
             for row in significantly_worse(result, metric, gamma)]
    render("diff", fmt, result)
    if worse:
        for row in dict.fromkeys(worse):
            say(diff_report.worse_line(result, row))
        return EXIT_CHECK_FAILED


@dumps_command("rank", "FILE...", "rank")
@metric_options
@label_options
@whatif_options
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
      tieeval rank runs/*/*.npz \\
        --template '{method}/{dataset}_{task}_seed{seed}.npz'
      tieeval rank sample_scores/*.parquet -m HR@1 -m NDCG@10 --format markdown
    """
    what_if = what_if_of(None, cast, tolerance)
    runs = evaluate_labelled(files, chosen_metrics(k_values, metrics), what_if=what_if, meta=meta,
                         template=template, quiet=quiet, **read_kwargs)
    render("rank", fmt, RankResult(rank_groups(grouped(runs, quiet)), what_if))
