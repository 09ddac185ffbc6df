"""Run labels on the command line: ``--meta KEY=VALUE`` and ``--template``, and evaluating
files into labelled runs."""


from __future__ import annotations

import os

import click

from tieeval.cli.common import Parsed, evaluate_request, make_request
from tieeval.records.run_labels import LABEL_KEYS, Template, parse_meta, resolve_labels


def label_options(f):
    """``--meta`` and ``--template``: where run labels come from besides the files."""
    f = click.option("--group-by-tag", "group_by_tag", is_flag=True, default=False,
                     help="TREC runs: name each run's method after its tag (6th column) "
                          "instead of its file name, so that files sharing a tag are "
                          "averaged as seeds. By default every file is its own run.")(f)
    f = click.option("--template", type=Parsed("TEMPLATE", Template.parse), default=None,
                     help="Read labels from the paths, e.g. "
                          "'{method}/{dataset}_{task}_seed{seed}.npz' (matched against the "
                          "end of each path; '*' matches within a folder name).")(f)
    # KEY=VALUE with KEY one of the run labels: a (key, value) pair
    meta = Parsed("KEY=VALUE", lambda text: next(iter(parse_meta([text]).items())))
    f = click.option("--meta", "meta", type=meta, multiple=True,
                     help=f"Set a label on every FILE, repeatable: --meta method=ConsRec "
                          f"(labels: {', '.join(LABEL_KEYS)}). Beats --template, which "
                          "beats the file's own metadata, which beats the file name.")(f)
    return f


def meta_dict(meta) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in meta:
        if key in out and out[key] != value:
            raise click.BadParameter(f"label {key!r} given twice ({out[key]!r} and "
                                     f"{value!r})", param_hint="'--meta'")
        out[key] = value
    return out


def evaluate_labelled(files, metrics, **options):
    """Evaluate every FILE into a labelled run (see :func:`evaluate_outcomes`)."""
    return [outcome.result for outcome in evaluate_outcomes(files, metrics, **options)]


def evaluate_outcomes(files, metrics, *, meta=(), template=None, quiet=False,
                      group_by_tag=False, errors=None, ids_for=None, **read_kwargs):
    """Evaluate every FILE (with the outputs the options ask for, in the same pass) and
    give each run its labels (see :mod:`tieeval.records.run_labels`). ``errors``: a list that
    receives ``(path, message)`` of each dump that cannot be evaluated, the others still
    evaluated (see :func:`tieeval.cli.common.evaluate_request`).

    A TREC run is named after its file like any dump; ``group_by_tag`` names its method
    after the run's tag instead (below --meta and --template, above the file name)."""
    if group_by_tag and read_kwargs.get("qrels") is None:
        raise click.UsageError("--group-by-tag labels TREC runs by their tag (give --qrels "
                               "QRELS)")
    overrides = meta_dict(meta)
    if template is not None:  # a path that does not fit fails before any file is read
        for path in files:
            if os.path.exists(path):  # a missing file gets the reader's "no such file"
                resolve_labels(path, {}, meta=overrides, template=template)
    request = make_request(metrics, quiet=quiet, **read_kwargs)  # checked once, for all
    outcomes = evaluate_request(request, files, quiet=quiet, ids_for=ids_for, errors=errors)
    for outcome in outcomes:
        run = outcome.result
        # the driver put the file's own metadata in run.run_labels
        found = dict(run.run_labels)
        if group_by_tag and found.get("tag") is not None:
            found["method"] = found["tag"]
        run.run_labels = {**resolve_labels(run.path, found, meta=overrides, template=template),
                      **({"tag": found["tag"]} if "tag" in found else {})}
    return outcomes
