"""``tieeval ties``: the paper's Table 4 (top-score tie statistics per method), the same as
``tieeval compare --table 4``."""

from __future__ import annotations

from tieeval.cli.common import (
    chosen_metrics,
    dumps_command,
    grouped,
    metric_options,
    run_tables,
    seed_std_option,
)
from tieeval.cli.output import render
from tieeval.cli.run_labels import evaluate_labelled, label_options


@dumps_command("ties", "FILE...", "ties")
@label_options
@seed_std_option
@metric_options
def ties(files, fmt, meta, template, seed_std, k_values, metrics, quiet, **read_kwargs):
    """Top-score tie statistics per method: the paper's Table 4.

    Per task and dataset, per method (averaged over seeds): average top-score tie size,
    average top-score tie ratio, top-score tie frequency, and the positive's own average
    tie size and tie frequency. Same as 'tieeval compare --table 4'; --k and --metric
    only matter for --format json, which also holds the metrics.

    \b
    Examples:
      tieeval ties runs/*/*.npz \\
        --template '{method}/{dataset}_{task}_seed{seed}.npz'
      tieeval ties sample_scores/*.parquet --format markdown
    """
    runs = evaluate_labelled(files, chosen_metrics(k_values, metrics), meta=meta,
                             template=template, quiet=quiet, **read_kwargs)
    render("ties", fmt, run_tables(runs, grouped(runs, quiet), "4", seed_std=seed_std))
