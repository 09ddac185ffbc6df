"""``tieeval audit DUMPS... --claims claims.csv``: do published numbers fit what the score
dumps allow? (Its exit codes: the command's help.)"""

from __future__ import annotations

import click

from tieeval.analysis.audit import (
    audit_groups,
    claimed_metrics,
    read_claims,
    unmatched_message,
)
from tieeval.cli.common import EXIT_CHECK_FAILED, dumps_command, grouped, say
from tieeval.cli.output import render
from tieeval.cli.run_labels import evaluate_labelled, label_options
from tieeval.cli.stdin import file_only
from tieeval.errors import InputError
from tieeval.records.audit import AuditResult
from tieeval.report.format import counted


@dumps_command("audit", "DUMP...", "audit")
@click.option("--claims", "claims_path", required=True, metavar="CLAIMS.csv", callback=file_only,
              help="CSV of published numbers with a header naming method, dataset, task, "
                   "metric, k, value (task and k may be empty; value as printed, e.g. "
                   "0.4123 or 41.23%), and optionally gamma: the --gamma a signed "
                   "metric's value is for (needed when several were evaluated).")
@click.option("--ignore-unmatched", is_flag=True,
              help="Report claims that match no run as 'unmatched' instead of failing with "
                   "exit code 2.")
@label_options
def audit(files, claims_path, fmt, ignore_unmatched, meta, template, quiet, **read_kwargs):
    """Judge published numbers against the dumps: exit 0 consistent, 1 flagged, 2 error.

    Runs are labelled as in 'tieeval compare' (--meta, --template, metadata, file name)
    and averaged over seeds; each claim is matched to the runs with its method, dataset
    and task (case-insensitive; an empty task matches any single task) and placed against
    their Last, Tie-aware, First and Original seed means:

    \b
      impossible      above First (or below Last) beyond the printed rounding
      tie-break only  above Tie-aware by more than max(2 sd, rounding)
      consistent      anything else

    A claim on a signed metric (SHR, SRecall, SDCG, SNDCG) is judged at the gamma its
    'gamma' cell names, or at the one --gamma evaluated.

    \b
    Examples:
      tieeval audit sample_scores/*.parquet --claims sample_scores/claims.csv
      tieeval audit runs/*/*.npz --claims table2.csv \\
        --template '{method}/{dataset}_{task}_seed{seed}.npz'
      tieeval audit ConsRec.npz --meta method=ConsRec --meta dataset=Mafengwo \\
        --claims c.csv
    """
    claims = read_claims(claims_path)
    if not claims:
        raise InputError(f"{claims_path}: no claims (only a header)")
    runs = evaluate_labelled(files, claimed_metrics(claims), meta=meta, template=template,
                             quiet=quiet, **read_kwargs)
    groups = grouped(runs, quiet)
    items = audit_groups(claims, groups, source=claims_path)
    message = unmatched_message(items, groups, claims_path)
    if message is not None:
        if not ignore_unmatched:
            raise InputError(message)
        if not quiet:
            n = sum(i.verdict is None for i in items)
            say(f"Warning: {counted(n, 'claim')} {'matches' if n == 1 else 'match'} no run and "
                f"{'is' if n == 1 else 'are'} not judged")
    result = AuditResult(items, claims_path)
    render("audit", fmt, result)
    return EXIT_CHECK_FAILED if result.flagged else 0
