"""``tieeval compare``: original / first / last / tie-aware metrics of score dumps, per run
or as the paper's Tables 1, 3 and 4 over seed-averaged run groups, and Figure 1."""

from __future__ import annotations

import os
from functools import partial

import click

from tieeval.cli.app import report_on_stdout
from tieeval.cli.common import (
    TABLE_CHOICES,
    chosen_metrics,
    default_table,
    dumps_command,
    grouped,
    metric_options,
    printed_names,
    relstring_asked,
    run_tables,
    runid_asked,
    say,
    seed_std_option,
    warn,
    whatif_options,
)
from tieeval.cli.output import render
from tieeval.cli.run_labels import evaluate_outcomes as evaluate_run_outcomes
from tieeval.cli.run_labels import label_options
from tieeval.engine.arguments import what_if_of
from tieeval.errors import OutputError
from tieeval.metrics.metric import COLUMNS
from tieeval.report.format import counted
from tieeval.report.registry import renderer, taking
from tieeval.sink import STDOUT


@dumps_command("compare", "FILE...", "runs")
@metric_options
@click.option("--column", type=click.Choice(COLUMNS), default=None,
              help="--format trec_eval: the column to print: original (the default; for a "
                   "TREC run trec_eval's own numbers), tie_aware, first or last.")
@click.option("--per-query", "per_query", is_flag=True,
              help="--format trec_eval: each query's lines before the 'all' lines, as "
                   "trec_eval -q prints them (-q here is --quiet).")
@click.option("--no-summary", "no_summary", is_flag=True,
              help="--format trec_eval: no 'all' lines and no runid line, as trec_eval -n "
                   "(--nosummary) prints: with --per-query, each query's lines only.")
@click.option("--table", "-t", "table", type=click.Choice(TABLE_CHOICES), default=None,
              help="What to show. runs: each run in detail (the default for one FILE); "
                   "1: First | Last | % Change per method; 3: Original | Tie-aware | "
                   "% Change per method (the default for several FILEs, except in csv and "
                   "json); 4: top-score tie "
                   "statistics per method (as 'tieeval ties'). Tables 1, 3 and 4 average "
                   "runs whose run labels differ only in seed.")
@click.option("--plot", type=click.Path(), default=None, metavar="FILE.png",
              help="Also draw the paper's Figure 1 (inflation vs. average top-score tie "
                   "size, log axis, Pearson r) to FILE.png / .pdf / .svg. Needs "
                   "'pip install tieeval[plot]'.")
@click.option("--per-instance", "per_instance", type=click.Path(), default=None,
              metavar="FILE.parquet",
              help="Also write one row per instance of the (one) FILE: its id, a and b "
                   "(single-positive dumps), the original rank, and every metric's "
                   "<metric>_original / _first / _last / _tie_aware value (null where "
                   "undefined), streamed in one pass.")
@label_options
@seed_std_option
@whatif_options
def compare(files, k_values, metrics, fmt, column, per_query, no_summary, table, plot,
            per_instance, meta, template, seed_std, cast, tolerance, quiet, **read_kwargs):
    """Original / first / last / tie-aware HR@K, NDCG@K and MRR of score dumps.

    Each FILE is one run: an .npz (array 'scores', optional 'positive'), an .npy score
    matrix, or a .parquet file (list column 'scores', optional 'positive'), one row per
    test instance. Without a positive field the positive is column 0.

    Runs are labelled method / dataset / task / seed from --meta, then --template, then
    the file's own metadata, then the file name (as method). With one FILE the default
    output is that run in detail; with several it is Table 3, one column group per
    method and rows by task, dataset and metric, averaged over seeds.

    \b
    Examples:
      tieeval compare scores.parquet --k 1 5 10
      tieeval compare runs/*/*.npz \\
        --template '{method}/{dataset}_{task}_seed{seed}.npz'
      tieeval compare runs/*/*.npz --table 1 -m HR@1 -m NDCG@5 --format latex
      tieeval compare run1.npz run2.npz --format json | jq '.groups[].metrics[0]'
      tieeval compare runs/*/*.npz --plot figure1.png
      tieeval compare scores.npz --cast bfloat16   (what-if: lower precision)
      tieeval compare scores.npz --original stable --per-instance rows.parquet
      tieeval compare --qrels qrels.txt run.txt -m P.5,10 -m ndcg_cut_10 \\
        --format trec_eval
    """
    inputs = [*files, read_kwargs.get("qrels")]  # never overwritten by an output
    if plot == STDOUT:
        raise OutputError("--plot -: a plot is written to a file, whose suffix (.png, .pdf, "
                          ".svg) chooses its format, not to stdout: name the file")
    if per_instance == STDOUT:  # only where -o FILE takes the report off stdout, and
        # never to a terminal (the rows are a binary Parquet file)
        if report_on_stdout(click.get_current_context()):
            raise OutputError("--per-instance -: stdout already carries the report; send the "
                              "report to a file with -o FILE, or name a file for the "
                              "per-instance rows")
        if os.isatty(1):
            raise OutputError("--per-instance -: stdout is a terminal, and the rows are a "
                              "binary Parquet file; redirect stdout or name a file")
    if plot is not None:
        from tieeval.report.plot import check_plot_path, require_matplotlib
        check_plot_path(plot, inputs)
        require_matplotlib()  # fail before the (possibly long) evaluation
    if (column is not None or per_query or no_summary) \
            and "column" not in renderer("runs", fmt).takes:
        raise click.UsageError("--column, --per-query and --no-summary apply to --format "
                               + " or ".join(taking("runs", "column")))
    what_if = what_if_of(None, cast, tolerance)
    ids_for = None
    if per_instance is not None:
        if len(files) != 1:
            raise click.UsageError(f"--per-instance writes the instances of one FILE, got "
                                   f"{len(files)}")
        from tieeval.analysis.instances import check_output, stored_ids
        check_output(per_instance, inputs)  # before the (possibly long) evaluation
        ids_for = partial(stored_ids, instance_field=read_kwargs.get("instance_column"))
    # one pass per FILE: the totals, and the per-query values and per-instance rows asked
    outcomes = evaluate_run_outcomes(files, chosen_metrics(k_values, metrics), what_if=what_if,
                                     meta=meta, template=template, quiet=quiet,
                                     per_instance=per_instance,
                                     # trec_eval's 'all' lines are added up from the queries
                                     per_query=per_query or "per_query" in renderer(
                                         "runs", fmt).takes,
                                     ids_for=ids_for, **read_kwargs)
    runs = [outcome.result for outcome in outcomes]
    groups = grouped(runs, quiet)

    names = printed_names(metrics)

    def trec_lines():  # trec_eval's lines, made when its format asks for them
        from tieeval.analysis.trec_eval import bogus_values_kept, query_table, runs_lines
        kept = sorted({name for run in runs for name in bogus_values_kept(run, names)})
        if kept:
            raise click.UsageError(
                f"under -c (--missing-queries zero) trec_eval scores a query the run misses "
                f"on a bogus one-document ranking for {', '.join(kept)} (it resets only the "
                "measures named without parameters), which tieeval does not reproduce: give "
                "the measure without its parameters")
        queries = [query_table(o.values) for o in outcomes]
        relstring = relstring_asked(metrics) if per_query else None
        # relstring is the Original ranking's judgements, read from the run's own file
        why = ("it is the Original ranking's judgements" if (column or "original")
               != "original" else "it reads each TREC run's file, not its tags"
               if read_kwargs.get("group_by_tag") else "it needs a TREC run (--qrels)"
               if read_kwargs.get("qrels") is None else None)
        if relstring is not None and why is not None:
            warn([f"relstring's lines are left out: {why}"], quiet)
            relstring = None
        # an 'all' value the column does not have (GMAP's tie-aware) has no line: say so
        # rather than drop it silently
        warn([f"{run.path}: {row.metric}{'' if row.k is None else f'@{row.k}'} has no "
              f"{column} value, so its 'all' line is left out ({row.tie_aware_reason})"
              for run in runs for row in run.metrics
              if column == "tie_aware" and not no_summary and row.tie_aware is None
              and row.tie_aware_reason is not None], quiet)
        return runs_lines(runs, column or "original", queries, runid=runid_asked(metrics),
                          print_queries=per_query, qrels_path=read_kwargs.get("qrels"),
                          summary=not no_summary, names=names,
                          relstring=None if relstring is None else (*relstring, list(files)))

    render("runs", fmt, run_tables(runs, groups, default_table(table, len(files), "runs", fmt),
                                   seed_std=seed_std, what_if=what_if, trec_lines=trec_lines))
    if per_instance is not None and not quiet:
        where = "stdout" if per_instance == STDOUT else per_instance
        say(f"Wrote {counted(outcomes[0].instance_rows, 'instance row')} to {where}")
    if plot is not None:
        from tieeval.analysis.paper import figure1
        from tieeval.report.plot import draw_figure1
        draw_figure1(figure1(groups), plot, inputs)
        if not quiet:
            say(f"Wrote Figure 1 to {plot}")
