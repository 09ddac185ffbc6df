"""The Original column's ranking rule: how the evaluated codebase ordered tied scores.

The First, Last and Tie-aware columns do not depend on any ordering of ties; the Original
column is the metric under one particular ordering, the codebase's own. The rules
(:data:`~tieeval.records.results.ORIGINAL_RULES`, ``--original RULE``, ``original=`` in the API):

* ``argsort`` (default): ``np.argsort(scores * -1, axis=1)``, numpy's default kind on the
  stored dtype, as the released codebases call it (:mod:`tieeval.kernels.counts`);
* ``stable``: a stable descending sort, ties by ascending position
  (``np.argsort(-scores, kind="stable")``); ``reverse-stable``: ties by descending position.
  Both negate without overflow (``~x`` where ``* -1`` would overflow an integer dtype) and
  rank NaN last (``nan_policy='worst'``);
* ``trec``: trec_eval's order (score, then docno, descending), the default and only rule of
  TREC runs (:mod:`tieeval.io.trec` lists their rows in that order);
* ``topk``: ``torch.topk(scores, K)`` on the CPU, K the largest cutoff asked (torch is an
  optional extra, ``pip install 'tieeval[torch]'``); GPU kernels may order ties differently;
  ``topk-each``: ``torch.topk(scores, K)`` for each metric at its own K (torchmetrics ranks
  so: a tie block cut by K may keep other items at another K);
* ``given``: the ranking the dump carries in its ``ranking`` field (per row, candidate
  indices top first, at least K of them), exact whatever the codebase used.

``topk`` and ``given`` rank only the listed top of a row: a metric needs at least
``min(depth, candidates)`` listed indices per row, its depth the one its measure declares
(:meth:`~tieeval.metrics.measures.base.Measure.read_depth`: K for a metric with cutoff K,
2K for a measure reading the top 2K), and a metric reading every position (MRR, MAP) the
whole ranking; ``topk`` asks torch for the deepest of them. Under ``given`` a metric whose
depth some row's list does not cover has no Original value (it is left empty, with a note;
its First, Last and Tie-aware need no ranking). A listed ranking must rank the
scores: non-increasing along the list, every unlisted candidate scored no higher than the
last listed one; then the Original value lies between Last and First, as for every
rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from tieeval.errors import InputError, ParameterError, plain
from tieeval.metrics.measures.protocol import Depth
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import RelMetric
from tieeval.records.batch import Batch, RankLists
from tieeval.records.results import ORIGINAL_RULES

# rules read from a (possibly partial) list per row; ``topk-each``: one list per metric
LISTED_RULES = ("topk", "topk-each", "given")
TORCH_HINT = "pip install 'tieeval[torch]'"


def check_rule(rule: Any) -> str:
    if rule not in ORIGINAL_RULES:
        raise ParameterError(f"original must be one of {', '.join(ORIGINAL_RULES)}, "
                             f"got {rule!r}")
    return cast(str, rule)  # one of ORIGINAL_RULES


def default_rule(trec: bool) -> str:
    """The Original rule of a dump that names none: trec_eval's for TREC runs."""
    return "trec" if trec else "argsort"


def check_rule_for(rule: str, *, trec: bool, metrics: Iterable[Metric | RelMetric],
                   path: str = "") -> str:
    """``rule`` (one of :data:`~tieeval.records.results.ORIGINAL_RULES`, checked where the request
    was made) checked against the dump kind and the metrics (one-line errors)."""
    where = f"{path}: " if path else ""
    if trec and rule != "trec":
        raise ParameterError(f"{where}a TREC run's Original is trec_eval's order "
                             f"(--original trec); --original {rule} does not apply to it")
    if not trec and rule == "trec":
        raise ParameterError(f"{where}--original trec is trec_eval's docno rule and applies "
                             "to TREC runs (--qrels) only")
    if rule in ("topk", "topk-each"):
        uncut = [m for m in metrics if read_depth(m) is None]
        if uncut:
            m = uncut[0]
            head = (f"--original {rule} ranks the top K of each row (torch.topk(scores, K), K "
                    + ("the largest cutoff asked); " if rule == "topk"
                       else "each metric's own cutoff); "))
            if m.k is None:
                raise ParameterError(
                    f"{head}{m} has no cutoff: ask for {m.name}@K instead (e.g. -m "
                    f"{m.name}@{max([x.k for x in metrics if x.k] or [10])})")
            raise ParameterError(f"{head}{m} reads every position of a row, below any K")
        require_torch(rule)
    return rule


def read_depth(metric: Metric | RelMetric, n: np.ndarray | None = None) -> Depth:
    """How many places of each row ``metric`` reads (its measure's
    :meth:`~tieeval.metrics.measures.base.Measure.read_depth`, R unknown), or None: every
    position."""
    return metric.spec.read_depth(metric.k, None, n)


def require_torch(rule: str = "topk") -> Any:
    try:
        import torch
    except ImportError:
        raise ParameterError(f"--original {rule} needs torch ({TORCH_HINT})") from None
    return torch


# ---------------------------------------------------------------------------------------
# Listed rankings (given, topk)


def _greater(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x`` ranks strictly above ``y`` (NaN below every number, NaN ties NaN)."""
    out = x > y
    if x.dtype.kind == "f":
        out |= np.isnan(y) & ~np.isnan(x)
    return out


@dataclass(frozen=True)
class Short:
    """A metric a saved ranking does not answer in some rows of a batch: ``rows`` marks
    them, ``text`` says so of the first, ``listed`` is the fewest candidates listed in
    any of them."""

    rows: np.ndarray
    text: str
    listed: int


class Listed:
    """A batch's listed ranking, checked against its scores (see the module doc).

    ``row``: the row of each listed entry; ``flat``: its index into the flat scores;
    ``place``: its 1-based place in the row's list; ``length``: entries per row.
    """

    def __init__(self, scores: np.ndarray, offsets: np.ndarray, ranking: RankLists,
                 where: Callable[[int], str],
                 name: str = "ranking"):
        n = np.diff(offsets)
        rows = n.size
        if ranking.rows != rows:
            raise InputError(f"'{name}' has {ranking.rows} rows, the scores {rows}")
        values = np.asarray(ranking.values)
        if values.size and values.dtype.kind not in "iu":
            raise InputError(f"'{name}' must hold integer candidate indices, got "
                             f"{values.dtype}")
        values = values.astype(np.int64, copy=False)
        length = ranking.lengths().astype(np.int64)
        row = np.repeat(np.arange(rows, dtype=np.int64), length)
        bad = np.flatnonzero((values < 0) | (values >= n[row]))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{where(int(row[i]))}: '{name}' index {int(values[i])} is out "
                             f"of range for {int(n[row[i]])} candidate(s)")
        flat = offsets[:-1][row] + values
        seen = np.bincount(flat, minlength=scores.size)
        if (seen > 1).any():
            i = int(np.flatnonzero(seen[flat] > 1)[0])
            raise InputError(f"{where(int(row[i]))}: '{name}' lists candidate "
                             f"{int(values[i])} twice")
        s = scores[flat]
        if s.size > 1:
            up = np.flatnonzero((row[1:] == row[:-1]) & _greater(s[1:], s[:-1]))
            if up.size:
                i = int(up[0])
                raise InputError(
                    f"{where(int(row[i]))}: '{name}' lists candidate {int(values[i + 1])} "
                    f"(score {plain(s[i + 1])!r}) below candidate {int(values[i])} "
                    f"(score {plain(s[i])!r}); it is not a ranking of these scores (were they "
                    "saved from another dtype or run?)")
        short = np.flatnonzero((length < n) & (length > 0))
        if short.size:
            listed = np.zeros(scores.size, dtype=bool)
            listed[flat] = True
            starts = offsets[:-1]
            if scores.dtype.kind == "f":
                rest = np.where(listed, np.nan, scores)
                best = np.fmax.reduceat(rest, starts)
            else:
                rest = np.where(listed, np.iinfo(scores.dtype).min, scores)
                best = np.maximum.reduceat(rest, starts)
            last = scores[flat[ranking.offsets[1:][short] - 1]]
            above = np.flatnonzero(_greater(best[short], last))
            if above.size:
                r = int(short[above[0]])
                raise InputError(
                    f"{where(r)}: '{name}' leaves out a candidate scored "
                    f"{plain(best[r])!r}, above its last listed score "
                    f"{plain(scores[flat[ranking.offsets[r + 1] - 1]])!r}; it is not a "
                    "ranking of these scores")
        self.row, self.flat, self.length, self.n = row, flat, length, n
        self.values = values
        self.place = np.arange(values.size, dtype=np.int64) - ranking.offsets[:-1][row] + 1

    def check_cutoffs(self, metrics: Iterable[Metric | RelMetric], where: Callable[[int], str],
                      rule: str) -> None:
        """The depth each metric reads is covered by every row's list (see the module
        doc); under ``given``, a metric some row's list does not cover is recorded in
        :attr:`short` (its Original is left empty), under ``topk`` it is an error."""
        self.short: list[Short | None] = []
        for m in metrics:
            depth = read_depth(m, self.n)
            need = self.n if depth is None else np.minimum(self.n, depth)
            bad = np.flatnonzero(self.length < need)
            if not bad.size:
                self.short.append(None)
                continue
            i = int(bad[0])
            what = ("'ranking' lists" if rule == "given"
                    else "torch.topk(scores, K) ranks")
            text = (f"{where(i)}: {what} {int(self.length[i])} of {int(self.n[i])} "
                    f"candidates, but {m} needs the top {int(need[i])}")
            if rule == "given":
                self.short.append(Short(self.length < need, text,
                                        int(self.length[bad].min())))
                continue
            hint = (f"; a metric without a cutoff needs the whole ranking (ask for "
                    f"{m.name}@K with K <= {int(self.length[i])}, or save every "
                    "candidate)" if m.k is None
                    else "; it reads every position: save every candidate"
                    if depth is None else "; save a longer ranking")
            raise InputError(text + hint)

    def positive_ranks(self, positive: np.ndarray, a: np.ndarray) -> np.ndarray:
        """The positive's 1-based place in each row's list; a positive left out of a
        shorter list ranks below it: ``max(a + 1, length + 1)``, beyond every cutoff
        the list covers, and within the positive's tie block."""
        out = np.maximum(a + 1, self.length + 1)
        hit = np.flatnonzero(self.values == positive[self.row])
        out[self.row[hit]] = self.place[hit]
        value: np.ndarray = out
        return value

    def order(self, order: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The flat positions of every row in list order, then the unlisted candidates in
        the order ``order`` (a full descending sort) gives them."""
        size = order.size
        n = np.diff(offsets)
        rw = np.repeat(np.arange(n.size, dtype=np.int64), n)
        key = np.empty(size, dtype=np.int64)
        key[order] = self.length[rw] + np.arange(size, dtype=np.int64) - offsets[:-1][rw]
        key[self.flat] = self.place - 1
        return np.lexsort((key, rw))


def batch_offsets(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Flat scores and row offsets of a dense or ragged batch."""
    if batch.offsets is None:
        rows, cols = batch.scores.shape
        return batch.scores.reshape(-1), np.arange(rows + 1, dtype=np.int64) * cols
    return batch.scores, np.asarray(batch.offsets, dtype=np.int64)


def topk_ranking(scores: np.ndarray, offsets: np.ndarray, k: int) -> RankLists:
    """Each row's ``torch.topk(row, min(K, candidates)).indices`` on the CPU."""
    torch = require_torch()
    n = np.diff(offsets)
    if scores.dtype.kind == "f" and np.isnan(scores).any():
        raise InputError("--original topk: torch.topk ranks NaN above every number, tieeval "
                         "below (--nan-policy worst); no exact Original for NaN scores")
    if scores.dtype.kind == "u" and scores.dtype.itemsize > 1:
        # torch has no unsigned dtypes wider than 8 bits: widen, which keeps every order
        scores = scores.astype(np.int64)
    if n.size and n.min() == n.max():
        kk = int(min(k, n[0]))
        dense = torch.from_numpy(np.ascontiguousarray(scores.reshape(n.size, int(n[0]))))
        idx = torch.topk(dense, kk, dim=1).indices.numpy()
        return RankLists.from_rows(idx, None)
    parts = []
    for i in range(n.size):
        row = torch.from_numpy(np.ascontiguousarray(scores[offsets[i]:offsets[i + 1]]))
        parts.append(torch.topk(row, int(min(k, n[i]))).indices.numpy())
    lengths = np.array([p.size for p in parts], dtype=np.int64)
    return RankLists(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64),
                     np.concatenate(([0], np.cumsum(lengths))))


def listed_each(batch: Batch, metrics: Iterable[Metric | RelMetric],
                path: str = "") -> list[Listed]:
    """``--original topk-each``: per metric, the checked list ``torch.topk(scores, K)``
    gives at the depth it reads (one topk per distinct depth)."""
    metrics = list(metrics)
    by_depth: dict[int, Listed] = {}
    out = []
    for m in metrics:
        depth = int(cast(int, read_depth(m)))  # every one has a depth: check_rule_for
        if depth not in by_depth:
            by_depth[depth] = listed_ranking(batch, "topk", [m], path)
        out.append(by_depth[depth])
    return out


def listed_ranking(batch: Batch, rule: str, metrics: Iterable[Metric | RelMetric],
                   path: str = "") -> Listed:
    """The checked list of a ``given`` or ``topk`` batch (its cutoffs covered)."""
    prefix = f"{path}: " if path else ""

    def where(i: int) -> str:
        return f"{prefix}{batch.where(i)}"

    scores, offsets = batch_offsets(batch)
    if rule == "given":
        if batch.ranking is None:
            raise InputError(f"{prefix}--original given needs a 'ranking' field: per row, "
                             "the candidate indices the codebase ranked, top first "
                             "(save_scores(..., ranking=...))")
        ranking, name = batch.ranking, "ranking"
    else:
        # the deepest place a metric reads (every one has a depth: check_rule_for)
        k = max([int(cast(int, d)) for d in map(read_depth, metrics) if d is not None] or [1])
        ranking, name = topk_ranking(scores, offsets, k), "torch.topk"
    try:
        listed = Listed(scores, offsets, ranking, where, name)
    except InputError as exc:
        text = str(exc)
        raise InputError(text if text.startswith(prefix) else f"{prefix}{text}") from None
    listed.check_cutoffs(metrics, where, rule)
    return listed
