"""``tieeval compare``: original / first / last / tie-aware metrics of score dumps."""

from __future__ import annotations

import click

from ..report import TABLE_FORMATS
from .common import (Command, chosen_metrics, emit, evaluate_files, metric_options,
                     read_options)


@click.command(cls=Command)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@metric_options
@click.option("--format", "-f", "fmt", type=click.Choice(TABLE_FORMATS), default="table",
              show_default=True, help="Output: rich table, or data for pipelines.")
@read_options
@click.option("--quiet", "-q", is_flag=True, help="No warnings or progress on stderr.")
def compare(files, k_values, metrics, fmt, positive_index, positive_column, scores_column,
            nan_policy, batch_rows, quiet):
    """Original / first / last / tie-aware HR@K, NDCG@K and MRR of score dumps.

    Each FILE is one run: an .npz (array 'scores', optional 'positive'), an .npy score
    matrix, or a .parquet file (list column 'scores', optional 'positive'), one row per
    test instance. Without a positive field the positive is column 0.

    \b
    Examples:
      tieeval compare scores.parquet --k 1 5 10
      tieeval compare run1.npz run2.npz --format json | jq '.runs[].metrics[0]'
      tieeval compare scores.npy --positive-index -1 --format csv
    """
    results = evaluate_files(files, chosen_metrics(k_values, metrics),
                             scores_column=scores_column, positive_column=positive_column,
                             positive_index=positive_index, nan_policy=nan_policy,
                             batch_rows=batch_rows, quiet=quiet)
    emit(results, fmt)


