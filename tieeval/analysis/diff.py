"""Is B better than A once ties are treated fairly? Paired comparisons and rankings of runs.

:func:`diff_dumps` compares two runs of the same test instances, metric by metric:

1. **Alignment.** When both dumps carry instance ids (an NPZ array / Parquet column
   ``instance`` beside a wide dump's scores, or the long layout's instance column;
   integers or strings, one per row, unique), B's rows are matched to A's by id and both
   must hold exactly the same ids. Otherwise rows are matched by position,
   after checking that the dumps have the same number of instances and that every row has
   the same number of candidates in both. Any mismatch is an :class:`InputError` with one
   line naming the first offending row or id.
2. **Per-instance values** under the tie-aware column (expectation and tie-break variance)
   and the original column (the codebases' ``np.argsort``), from the exact counts
   ``(a, b)`` -- optionally under a what-if (:mod:`tieeval.kernels.whatif`).
3. **Paired tests** of each column (:func:`tieeval.analysis.stats.paired_comparison`, the
   Monte Carlo sign flips drawn per distinct difference by
   :func:`tieeval.analysis.stats.sign_flip_p_value`); ``difference_std`` is 0 for the
   deterministic original column.
4. **Winner** under each column from the sign of the mean difference, and a verdict
   sentence such as ``B wins under original, loses under tie-aware`` when they disagree.
   The sign alone says nothing about chance: only a **significant** difference
   (``ColumnComparison.significant``: both paired tests reject "no difference") names a
   winner in the rendered tables, and :func:`significantly_worse` is the
   ``--fail-if-worse`` gate.

:func:`rank_groups` ranks methods (seed-averaged run groups) by tie-aware value within each
dataset and task, with the original ranking beside it and each method's move: the reading of
the paper's Table 5.
"""


from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from tieeval.analysis.stats import check_permutations, paired_comparison, ranking_changes
from tieeval.engine.consumers import InstanceCollector, take_instances
from tieeval.engine.local import drive
from tieeval.engine.request import EvalOptions
from tieeval.errors import InputError, ParameterError
from tieeval.io.base import Dump, ReadOptions
from tieeval.io.ids import INSTANCE_FIELD as IDS_FIELD
from tieeval.io.ids import npz_ids, parquet_ids
from tieeval.io.open import open_dump
from tieeval.io.readers import detect_format
from tieeval.metrics.metric import Metric, parse_metric_list
from tieeval.records.diff import (  # noqa: F401 - the diff records, where they were
    ColumnComparison,
    DiffResult,
    DiffRow,
    DiffSide,
    RankEntry,
    Ranking,
    verdict_text,
    winner_of,
)
from tieeval.records.results import label_rows, original_rule_of
from tieeval.records.run_labels import RunLabelled, resolve_labels
from tieeval.records.whatif import NO_WHAT_IF, WhatIf

INSTANCE_FIELD = IDS_FIELD  # the id field a wide dump may store beside its scores
ALIGNMENTS = ("instance", "row order")
DEFAULT_PERMUTATIONS = 10000
DEFAULT_CONFIDENCE = 0.95


# ---------------------------------------------------------------------------------------
# reading: counts and instance ids

@dataclass
class RunValues(RunLabelled):
    """Every instance's values for one dump, concatenated over batches: one
    :class:`~tieeval.records.values.InstanceValues` per kernel entry (a metric, once per
    gamma for signed metrics), and per instance what identifies its candidates (``n``
    candidates; for labelled rows also R and the label sum; with item ids a hash of the
    sorted ids) so that two runs are never paired on different candidate sets."""

    path: str
    dtype: str
    run_labels: dict[str, str]
    entries: list
    values: list
    n: np.ndarray
    keys: dict
    labelled: bool = False
    original_rule: str = "argsort"  # the rule of the Original values (trec, given, ...)

    @property
    def instances(self) -> int:
        return int(self.n.size)

    def take(self, order: np.ndarray) -> "RunValues":
        return RunValues(self.path, self.dtype, self.run_labels, self.entries,
                         [take_instances(v, order) for v in self.values], self.n[order],
                         {k: v[order] for k, v in self.keys.items()}, self.labelled,
                         self.original_rule)


def _row_keys(batch, source: str | None) -> dict:
    """Per row, what must agree between two runs of the same instance (see
    :class:`RunValues`)."""
    keys = {}
    lengths = batch.lengths()
    if source != "trec":  # retrieved lists differ between TREC runs by design
        keys["candidates"] = lengths
    if batch.labels is not None:  # counted per row over its candidates and, for a TREC
        # run, the judged documents it did not retrieve
        lab = np.asarray(batch.labels, dtype=np.float64).reshape(-1)
        row = np.repeat(np.arange(batch.rows), lengths)
        unranked = getattr(batch, "unranked", None)
        if unranked is not None:
            ulab, uoff = unranked
            lab = np.concatenate((lab, np.asarray(ulab, dtype=np.float64)))
            row = np.concatenate((row, np.repeat(np.arange(batch.rows), np.diff(uoff))))
        keys["relevant"] = np.bincount(row[lab > 0], minlength=batch.rows)
        keys["relevance sum"] = np.bincount(row, weights=np.where(lab > 0, lab, 0.0),
                                            minlength=batch.rows)
    if batch.items is not None and source != "trec":
        keys["candidate ids"] = _id_multiset_hash(np.asarray(batch.items).reshape(-1), lengths)
    return keys


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """A 64-bit mixing function (SplitMix64's finaliser), wrapping in uint64."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _id_multiset_hash(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per row, a hash of its candidate ids as a multiset (order does not matter): the
    wrapping sum of each id's mixed 64-bit code, in one vectorised pass. String ids are
    coded through their distinct values, so both runs of a diff code them alike."""
    if flat.dtype.kind in "iu":
        codes = flat.astype(np.int64).view(np.uint64) if flat.dtype.kind == "i" \
            else flat.astype(np.uint64)
    else:
        distinct, inverse = np.unique(flat.astype(str), return_inverse=True)
        per_value = np.array([hash(v) for v in distinct.tolist()], dtype=np.int64)
        codes = per_value.view(np.uint64)[inverse.reshape(-1)]
    mixed = _splitmix64(codes)
    starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
    sums = np.add.reduceat(mixed, starts) if mixed.size else np.zeros(lengths.size, np.uint64)
    return np.where(lengths > 0, sums, np.uint64(0)).view(np.int64)


def collect_values(dump: Dump, request: EvalOptions) -> tuple[RunValues, np.ndarray | None]:
    """Read a whole dump into per-instance values of every metric ``request`` asks for,
    plus the instance ids the reader attached to its batches (the long layout, TREC query
    ids), else None. ``request.engine == 'spark'``: Spark reads the dump's files and the
    executors evaluate them (the values in the local engine's order, bit for bit)."""
    # per batch, what identifies each row's candidates (see RunValues), and its length
    collector = InstanceCollector(note=lambda batch, kernel: (
        _row_keys(batch, kernel.spec.source), batch.lengths()))
    if request.engine == "spark":
        from tieeval.engine import spark
        spark.drive(request, dump.path, [collector], totals=False, dump=dump)
    else:
        drive(dump, request, [collector], totals=False)
    got = collector.collected
    assert got is not None
    keys = [k for k, _ in got.notes]
    labels = resolve_labels(dump.path, dump.metadata)
    n = np.concatenate([n for _, n in got.notes]).astype(np.int64, copy=False)
    merged = {k: np.concatenate([d[k] for d in keys]) for k in (keys[0] if keys else {})}
    run = RunValues(dump.path, str(np.dtype(dump.dtype)), labels, list(got.kernel.entries),
                    got.values, n, merged, labelled=got.kernel.name == "general",
                    original_rule=got.kernel.spec.original)
    return run, got.ids


def read_instance_ids(path: str, name: str = INSTANCE_FIELD) -> np.ndarray | None:
    """The instance ids stored beside a wide dump's scores (NPZ array / Parquet column
    ``name``, a Parquet file or dataset folder), or None if absent.

    Ids must be integers or strings, one per row, without nulls; NPY dumps have none. An
    opened dump gives the same ids (:meth:`tieeval.io.base.Dump.instance_ids`).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        from tieeval.io.readers.parquet import dataset_files
        return parquet_ids(path, dataset_files(path), name)
    try:
        fmt = detect_format(path)
    except InputError:
        return None
    if fmt == "npz":
        return npz_ids(path, name)
    if fmt == "parquet":
        return parquet_ids(path, [path], name)
    return None


def _id_text(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def _sorted_unique(path: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    dup = np.flatnonzero(ordered[1:] == ordered[:-1])
    if dup.size:
        value = ordered[dup[0]]
        rows = np.flatnonzero(ids == value)[:2]
        raise InputError(f"{path}: instance id {_id_text(value)} appears more than once "
                         f"(rows {rows[0]} and {rows[1]})")
    return order, ordered


def align_by_ids(a: RunValues, b: RunValues, a_ids: np.ndarray,
                 b_ids: np.ndarray) -> np.ndarray:
    """For each row of A, the row of B with the same instance id."""
    for run, ids in ((a, a_ids), (b, b_ids)):
        if ids.size != run.instances:
            raise InputError(f"{run.path}: {ids.size} instance ids for {run.instances} "
                             "instances")
    numeric = [ids.dtype.kind in "iu" for ids in (a_ids, b_ids)]
    if numeric[0] != numeric[1]:
        kinds = ["integers" if x else "strings" for x in numeric]
        raise InputError(f"{a.path} and {b.path}: instance ids are {kinds[0]} in one and "
                         f"{kinds[1]} in the other; they cannot be matched")
    order_a, sorted_a = _sorted_unique(a.path, a_ids)
    order_b, sorted_b = _sorted_unique(b.path, b_ids)
    if sorted_a.size != sorted_b.size or not np.array_equal(sorted_a, sorted_b):
        for one, other, ids, other_ids in ((a, b, a_ids, sorted_b), (b, a, b_ids, sorted_a)):
            missing = ~np.isin(ids, other_ids)
            if missing.any():
                first = int(np.flatnonzero(missing)[0])
                raise InputError(f"{one.path}: instance id {_id_text(ids[first])} (row "
                                 f"{first}) is not in {other.path}; {int(missing.sum())} "
                                 f"id(s) of {one.path} are missing there (diff needs the "
                                 "same instances)")
    perm = np.empty(a.instances, dtype=np.int64)
    perm[order_a] = order_b
    return perm


def check_same_rows(a: RunValues, b: RunValues, how: str) -> None:
    """Same instance count and, row by row, the same candidates: the same number of them
    (not for TREC runs, whose retrieved lists differ by design), for labelled rows the same
    relevant items, and with item ids on both sides the same ids."""
    if a.instances != b.instances:
        raise InputError(f"{a.path} has {a.instances} instances but {b.path} has "
                         f"{b.instances}; diff needs the same instances (give both dumps an "
                         f"'{INSTANCE_FIELD}' id field to align them by id)")
    for key in a.keys:
        if key not in b.keys:
            continue
        bad = np.flatnonzero(a.keys[key] != b.keys[key])
        if not bad.size:
            continue
        i = int(bad[0])
        where = f"row {i}" if how == "row order" else f"row {i} (matched by instance id)"
        if key == "candidates":
            raise InputError(f"{where} has {int(a.n[i])} candidates in {a.path} but "
                             f"{int(b.n[i])} in {b.path}; the dumps do not rank the same "
                             f"candidates ({bad.size} row(s) differ)")
        if key == "candidate ids":
            raise InputError(f"{where} lists other candidate ids in {a.path} than in "
                             f"{b.path} (different sampled negatives?); diff pairs only runs "
                             f"that rank the same candidates ({bad.size} row(s) differ)")
        raise InputError(f"{where} has other relevance labels in {a.path} than in {b.path} "
                         f"({key}: {a.keys[key][i]:g} vs {b.keys[key][i]:g}); the dumps do "
                         f"not describe the same instances ({bad.size} row(s) differ)")


# ---------------------------------------------------------------------------------------
# the comparison

def significantly_worse(result: DiffResult, metric: Metric | str,
                        gamma: float | None = None) -> list[DiffRow]:
    """The rows of ``metric`` (every gamma row of a signed metric, or only ``gamma``'s)
    where B is significantly worse than A under the tie-aware column: the ``--fail-if-worse``
    gate. Raises ParameterError when ``metric`` (at ``gamma``) was not compared."""
    label = str(metric)
    rows = label_rows(result.rows, label, gamma)
    if not rows:
        have = ", ".join(dict.fromkeys(r.label for r in result.rows))
        at = "" if gamma is None else f"[gamma={gamma!r}]"
        raise ParameterError(f"--fail-if-worse {label}{at}: not among the metrics compared "
                             f"({have}); add it with -m {label}")
    return [r for r in rows if r.tie_aware.significant and r.tie_aware.difference < 0]


def compare_values(a: RunValues, b: RunValues, *,
                   alignment: str = "row order", permutations: int = DEFAULT_PERMUTATIONS,
                   seed: int | None = 0, confidence: float = DEFAULT_CONFIDENCE,
                   what_if: WhatIf | None = None) -> DiffResult:
    """Paired comparison of two already aligned runs (row i of ``a`` and ``b`` is one
    instance), entry by entry; on labelled runs only the instances where the metric is
    defined in both are paired."""
    if alignment not in ALIGNMENTS:
        raise ParameterError(f"alignment must be one of {', '.join(ALIGNMENTS)}, "
                             f"got {alignment!r}")
    if a.instances != b.instances:
        raise ParameterError(f"aligned runs need the same instances, got {a.instances} and "
                             f"{b.instances}")
    if [(e.metric, e.gamma) for e in a.entries] != [(e.metric, e.gamma) for e in b.entries]:
        raise InputError(f"{a.path} and {b.path} evaluate other metrics (one has relevance "
                         "labels, the other one positive per row?); diff needs runs of one kind")
    if not a.entries:
        raise ParameterError("no metrics to compare")
    # Above the exact test's 20 instances, draw sign flips per distinct difference.
    test: dict[str, Any] = dict(permutations=permutations, seed=seed, confidence=confidence,
                                grouped_signs=True)
    labelled = a.labelled or b.labelled
    rows = []
    for entry, va, vb in zip(a.entries, a.values, b.values):
        keep = None
        defined = [v.defined for v in (va, vb) if v.defined is not None]
        if defined:
            keep = np.logical_and.reduce(defined)
            if not keep.any():
                raise InputError(f"{entry.label} is undefined for every instance of "
                                 f"{a.path} and {b.path} (no relevant item)")

        def pick(x, *, keep=keep):
            return x if keep is None or x is None else x[keep]
        both = va.variance is not None and vb.variance is not None
        paired = int(keep.sum()) if keep is not None else a.instances
        zeros = np.zeros(paired)
        tie = paired_comparison(pick(va.tie_aware), pick(vb.tie_aware),
                                a_variance=pick(va.variance) if both else None,
                                b_variance=pick(vb.variance) if both else None, **test)
        for side, v in ((a, va), (b, vb)):
            if np.isnan(pick(v.original)).any():  # a saved ranking too short for it
                raise InputError(f"{side.path}: its saved ranking lists too few candidates "
                                 f"of some rows for {entry.label}'s Original, which diff "
                                 f"compares: ask for {entry.metric.name}@K with K within "
                                 "the ranking, or pass another --original")
        orig = paired_comparison(pick(va.original), pick(vb.original), a_variance=zeros,
                                 b_variance=zeros, **test)
        m = entry.metric
        rows.append(DiffRow(m.name, m.k, ColumnComparison.from_paired(tie),
                            ColumnComparison.from_paired(orig), gamma=entry.gamma,
                            instances=paired, labelled=labelled))
    a_side, b_side = (DiffSide(r.path, r.run_labels, r.dtype, r.instances, r.original_rule)
                      for r in (a, b))
    return DiffResult(a_side, b_side, alignment, a.instances, rows, int(permutations), seed,
                      float(confidence), what_if or NO_WHAT_IF)


def diff_dumps(a_dump: Dump, b_dump: Dump, request: EvalOptions | None = None, *,
               permutations: int = DEFAULT_PERMUTATIONS, seed: int | None = 0,
               confidence: float = DEFAULT_CONFIDENCE, instance_field: str = INSTANCE_FIELD,
               labels: tuple = (None, None), warn=None) -> DiffResult:
    """Compare run B with run A on the same instances (see the module docstring).

    Parameters
    ----------
    a_dump, b_dump : Dump
        Opened dumps (:func:`tieeval.io.open.open_dump`).
    request : EvalOptions, optional
        What both runs are evaluated with, checked (:mod:`tieeval.engine.request`): the
        metrics (default: those of the dumps' kind, HR@1/5/10, NDCG@1/5/10, MRR for one
        positive per row, also Recall@K and MAP for relevance labels), the labelled
        options, a precision what-if, the NaN policy, the Original column's rule, and the
        engine (Spark: opened by :func:`tieeval.engine.spark.open_for_spark`; the result
        is the same).
    permutations, seed, confidence
        Passed to :func:`tieeval.analysis.stats.paired_comparison`.
    instance_field : str
        Name of the instance id field used for alignment when both dumps have it.
    labels : pair of dict or None
        Labels of A and B overriding their metadata / file names.
    warn : callable, optional
        Called with a message when only one dump has instance ids (rows are then matched
        by position).
    """
    check_permutations(permutations)  # before any dump is read
    if request is None:
        request = EvalOptions()
    runs = []
    ids = []
    for dump, override in zip((a_dump, b_dump), labels):
        run, batch_ids = collect_values(dump, request)
        if batch_ids is None and getattr(dump, "layout", "wide") == "wide":
            batch_ids = dump.instance_ids(instance_field)  # from the reader that opened it
        ids.append(batch_ids)
        if override:
            run.run_labels = dict(override)
        runs.append(run)
    a, b = runs
    if ids[0] is not None and ids[1] is not None:
        b = b.take(align_by_ids(a, b, ids[0], ids[1]))
        alignment = "instance"
    else:
        alignment = "row order"
    check_same_rows(a, b, alignment)
    if warn is not None and alignment == "row order" and any(i is not None for i in ids):
        has, lacks = (a, b) if ids[0] is not None else (b, a)
        warn(f"{has.path} has instance ids ('{instance_field}') but {lacks.path} has none; "
             "rows are matched by position")
    return compare_values(a, b, alignment=alignment, permutations=permutations,
                          seed=seed, confidence=confidence, what_if=request.what_if)


#: diff_dumps()'s own keywords; :func:`diff_paths` hands the others to the evaluation
COMPARISON_KEYWORDS = ("permutations", "seed", "confidence", "instance_field", "labels", "warn")


def diff_paths(a_path: str, b_path: str, metrics: list[Metric] | None = None, *,
               options: ReadOptions | None = None, **kwargs) -> DiffResult:
    """Open two dump files and :func:`diff_dumps` them. ``kwargs``: the comparison's own
    (``permutations``, ``seed``, ``confidence``, ``instance_field``, ``labels``, ``warn``)
    and the evaluation's options (``relevance``, ``what_if``, ``nan_policy``,
    ``batch_rows``, ``original``, ``engine``), as :class:`EvalOptions` fields.

    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.savez(os.path.join(d, "A.npz"), scores=np.array([[1., 1.], [1., 0.]]))
    >>> np.savez(os.path.join(d, "B.npz"), scores=np.array([[1., 0.], [1., 0.]]))
    >>> r = diff_paths(os.path.join(d, "A.npz"), os.path.join(d, "B.npz"), ["HR@1"])
    >>> row = r.row("HR@1")
    >>> row.tie_aware.a, row.tie_aware.b, row.tie_aware.difference, row.tie_aware.winner
    (0.75, 1.0, 0.25, 'B')
    """
    metrics = None if metrics is None else parse_metric_list(metrics)
    a, b = open_dump(a_path, options), open_dump(b_path, options)
    comparison = {name: kwargs.pop(name) for name in COMPARISON_KEYWORDS if name in kwargs}
    check_permutations(comparison.get("permutations", DEFAULT_PERMUTATIONS))  # before the options
    return diff_dumps(a, b, EvalOptions(metrics, **kwargs), **comparison)


# ---------------------------------------------------------------------------------------
# rankings of several methods (Table 5 reading)


def _method_name(group) -> str:
    return str(group.run_labels.get("method") or os.path.basename(group.runs[0].path))


def rank_groups(groups) -> list[Ranking]:
    """Rank methods by tie-aware value within each (dataset, task), metric by metric.

    Parameters
    ----------
    groups : list of GroupResult
        Seed-averaged runs (:func:`tieeval.analysis.groups.group_runs`); a group's method is its
        ``method`` label (the file name when it has none).

    Returns
    -------
    list of Ranking
        Settings in order of first appearance, metrics in the groups' order (a signed
        metric of labelled runs once per gamma). Ranks are competition ranks (1, 2, 2, 4);
        equal values share a rank.
    """
    settings: dict[tuple, list] = {}
    for g in groups:
        settings.setdefault((g.run_labels.get("dataset"), g.run_labels.get("task")), []).append(g)
    out = []
    for g in groups[1:]:
        if [(m.metric, m.k, m.gamma) for m in g.metrics] != [
                (m.metric, m.k, m.gamma) for m in groups[0].metrics]:
            raise ParameterError(f"{g.runs[0].path}: evaluated other metrics than the other "
                                 "runs; a ranking needs the same metrics for every run")
    for (dataset, task), members in settings.items():
        names = [_method_name(g) for g in members]
        if len(set(names)) != len(names):  # same method name, labels differing otherwise
            names = [f"{n} ({g.runs[0].path})" for n, g in zip(names, members)]
        by_name = dict(zip(names, members))
        for i, row in enumerate(members[0].metrics):
            rows = {name: g.metrics[i] for name, g in by_name.items()}
            for name, r in rows.items():
                if r.original is None:  # a saved ranking too short for it
                    label = r.metric if r.k is None else f"{r.metric}@{r.k}"
                    raise InputError(f"{by_name[name].runs[0].path}: {label} has no "
                                     "Original (its saved ranking lists too few candidates), "
                                     f"which rank orders: ask for {r.metric}@K with K within "
                                     "the ranking, or pass another --original")
            changes = ranking_changes({n: r.original for n, r in rows.items()},
                                      {n: r.tie_aware for n, r in rows.items()})
            entries = tuple(RankEntry(c.method, c.tie_aware, rows[c.method].tie_aware_std,
                                      c.original, c.tie_aware_rank, c.original_rank,
                                      c.change, by_name[c.method].seeds,
                                      original_rule_of(by_name[c.method].runs))
                            for c in changes)
            out.append(Ranking(dataset, task, row.metric, row.k, entries,
                               row.gamma, row.labelled))
    return out
