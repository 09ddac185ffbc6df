"""Seed averaging: runs whose labels are equal except ``seed`` become one group.

Every figure of a group is the plain mean over its runs (one run per seed): the metrics in
all four columns and the tie statistics. Alongside each mean the group keeps the
across-seed sample standard deviation (``<column>_seed_std``, ``ddof=1``; None for a single
seed) and the number of seeds. Relative changes are computed from the means, as the paper
does ("the relative percentage change computed from these mean values").

``tie_aware_std`` keeps its single-run meaning, the standard deviation of the reported
figure under uniform random tie-breaking: the seeds' tie-breaks are independent, so for the
mean of S seeds it is ``sqrt(sum of the seeds' tie_aware_std**2) / S``.
"""

from __future__ import annotations

import math
from typing import Any

from tieeval.errors import ParameterError
from tieeval.metrics.metric import COLUMNS
from tieeval.records.groups import (  # noqa: F401 - the group records, where they were
    TIE_FIELDS,
    GroupMetricRow,
    GroupResult,
    GroupTies,
)
from tieeval.records.results import RunResult
from tieeval.records.run_labels import GROUP_KEYS


def mean(values: list) -> float | None:
    """The mean; None when a value is None (a column not computed, e.g. GMAP's tie-aware)."""
    if any(v is None for v in values):
        return None
    return math.fsum(values) / len(values)


def seed_std(values: list[float]) -> float | None:
    """Sample standard deviation across seeds (``ddof=1``); None for fewer than two."""
    n = len(values)
    m = mean(values)
    if n < 2 or m is None:
        return None
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def average(runs: list[RunResult]) -> GroupResult:
    """Average runs of one group (same metrics in the same order) over their seeds."""
    if not runs:
        raise ParameterError("cannot average an empty list of runs")
    # gamma: signed metrics of labelled runs come once per gamma (tieeval.kernels.general)
    layout = [(m.metric, m.k, getattr(m, "gamma", None)) for m in runs[0].metrics]
    for run in runs[1:]:
        if [(m.metric, m.k, getattr(m, "gamma", None)) for m in run.metrics] != layout:
            raise ParameterError(f"{run.path}: evaluated other metrics than {runs[0].path}; "
                                 "runs of one group need the same metrics")
        if [m.labelled for m in run.metrics] != [m.labelled for m in runs[0].metrics]:
            # rows of labelled runs carry skipped counts (and gamma), the others do not
            kinds = [("labelled" if r.metrics and r.metrics[0].labelled else "single-positive")
                     for r in (run, runs[0])]
            raise ParameterError(f"{run.path}: evaluated as a {kinds[0]} run but "
                                 f"{runs[0].path} as a {kinds[1]} one; runs of one group "
                                 "need the same kind of evaluation")
    rows = []
    for i, (name, k, _) in enumerate(layout):
        per_seed = [run.metrics[i] for run in runs]
        # the kernels fill every column's mean of a run (getattr: typed Any)
        values: dict[str, list[float]] = {c: [getattr(r, c) for r in per_seed]
                                          for c in COLUMNS}
        # ERR, IPrec and GMAP have no exact tie-break sd (None)
        stds = [r.tie_aware_std for r in per_seed]
        known = [s for s in stds if s is not None]
        std = (None if len(known) < len(stds) else
               math.sqrt(math.fsum(s ** 2 for s in known)) / len(per_seed))
        # each column's seed mean and its seed std
        columns: dict[str, Any] = {c: mean(values[c]) for c in COLUMNS}
        columns.update((f"{c}_seed_std", seed_std(values[c])) for c in COLUMNS)
        row = GroupMetricRow(name, k, tie_aware_std=std,
                             instances=sum(r.instances for r in per_seed),
                             aggregate=per_seed[0].aggregate,
                             tie_aware_reason=per_seed[0].tie_aware_reason, **columns)
        if per_seed[0].labelled:  # gamma, and the skipped instances summed over seeds
            row.gamma = per_seed[0].gamma
            row.skipped = sum(r.skipped for r in per_seed if r.skipped is not None)  # all set
        rows.append(row)
    stats = {f: [getattr(run.ties, f) for run in runs] for f in TIE_FIELDS}
    # the cutoffs every run has a tie-decided share for
    decided = {k: [run.ties.tie_decided[k] for run in runs] for k in runs[0].ties.tie_decided
               if all(k in run.ties.tie_decided for run in runs)}
    ties = GroupTies({f: math.fsum(v) / len(v) for f, v in stats.items()},
                     {f: seed_std(v) for f, v in stats.items()},
                     {k: math.fsum(v) / len(v) for k, v in decided.items()},
                     {k: seed_std(v) for k, v in decided.items()})
    labels = {k: runs[0].run_labels.get(k) for k in GROUP_KEYS}
    return GroupResult(labels, list(runs), rows, ties)


def group_runs(runs: list[RunResult]) -> tuple[list[GroupResult], list[str]]:
    """Group runs whose labels are equal except ``seed`` and average each group.

    Groups come in the order their first run appears. Also returns warnings for groups
    whose runs repeat a seed (or have none while there are several runs): those are still
    averaged, but their seed count is probably not what was meant.
    """
    order: dict[tuple, list[RunResult]] = {}
    for run in runs:
        order.setdefault(tuple(run.run_labels.get(k) for k in GROUP_KEYS), []).append(run)
    groups, warnings = [], []
    for key, members in order.items():
        groups.append(average(members))
        seeds = [m.run_labels.get("seed") for m in members]
        name = "/".join(v for v in key if v is not None) or "(unlabelled)"
        if len(members) > 1 and None in seeds:
            warnings.append(f"{name}: {len(members)} runs averaged but "
                            f"{seeds.count(None)} have no seed label "
                            f"({', '.join(m.path for m in members)})")
        else:
            repeated = sorted({s for s in seeds if s is not None and seeds.count(s) > 1})
            for s in repeated:
                paths = [m.path for m in members if m.run_labels.get("seed") == s]
                warnings.append(f"{name}: seed {s} appears in {len(paths)} runs "
                                f"({', '.join(paths)}); all are averaged as separate seeds")
    return groups, warnings
