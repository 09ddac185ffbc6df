"""trec_eval ``-J -M N`` on a query whose tie block straddles rank N.

trec_eval cuts each ranking at N in its own order (score descending, docno descending),
then drops the unjudged documents (``form_res_rels.c``). Over the uniform tie orders, the
documents of the block the cut straddles (``n`` of them, ``slots`` of its places above
the cut, ``unjudged`` of them unjudged or judged below 0) that stay are a uniform
``slots``-subset of the block, so the numbers of its judged documents of each grade that
stay, the composition ``c``, follow the multivariate hypergeometric law

    P(c) = prod_l C(n_l, c_l) * C(unjudged, slots - |c|) / C(n, slots),

and given ``c`` the kept judged documents stand below the judged documents above the
block in a uniform order: one tie block of ``c``, ending the ranking. A measure's
expectation is then ``sum_c P(c) E[measure | c]``, each term the exact tie-aware value of
an ordinary row (the judged documents above, with their own ties, then that block): the
*virtual rows* this module builds, one per composition.

First and Last are the largest First and the smallest Last of the virtual rows: for a
measure whose First and Last are the maximum and minimum over the tie orders of every
ordinary row, the maximum and minimum over the tie orders here too (docs/METRICS.md
section 16 says which measures those are). Original is trec_eval's own list and needs no
virtual row.

A block with more than :data:`MAX_COMPOSITIONS` compositions (or virtual rows holding
more than :data:`MAX_ITEMS` documents for one query) gets two virtual rows only, the
extreme compositions (:func:`extremes`: the block's places above the cut filled with its
positive grades first, highest first, then its unjudged documents, then its judged
non-relevant ones; and the reverse): its First and Last are then theirs, and its
tie-aware value null (no estimate is made).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: compositions enumerated for one straddled block, at most
MAX_COMPOSITIONS = 20_000
#: documents held by one query's virtual rows, at most
MAX_ITEMS = 400_000


@dataclass
class Straddle:
    """One query whose block straddles the cut: ``row`` (the query's row),
    ``prefix`` (its kept judged documents above the block: the first ``prefix`` of the
    row), ``score`` (the block's), ``grades`` (the block's judged documents' relevance),
    ``unjudged`` (its other documents), ``slots`` (its places above the cut) and
    ``unranked`` / ``unranked_judged`` (the query's judgements neither above the block
    nor in it)."""

    row: int
    prefix: int
    score: float
    grades: np.ndarray
    unjudged: int
    slots: int
    unranked: np.ndarray
    unranked_judged: np.ndarray


@dataclass
class Mixture:
    """The virtual rows of a batch's straddled queries: ``rows`` (each query's row in
    the batch), ``group`` (offsets of each query's virtual rows), ``weights`` (P(c) of
    each virtual row; NaN where the block is beyond the limits) and the rows themselves
    (``scores``, ``labels``, ``offsets``, ``unranked`` as ``(labels, offsets)``,
    ``unranked_judged``)."""

    rows: np.ndarray
    group: np.ndarray
    weights: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    unranked: tuple
    unranked_judged: np.ndarray


def extremes(values: list, counts: list, unjudged: int, slots: int
             ) -> tuple[tuple, tuple]:
    """The First and the Last composition (see the module docstring); ``values``
    ascending, ``counts`` their documents in the block."""
    def fill(order):
        left, c = slots, [0] * len(values)
        for i in order:
            if i is None:
                left -= min(unjudged, left)
                continue
            c[i] = min(counts[i], left)
            left -= c[i]
        return tuple(c)
    positive = [i for i, v in enumerate(values) if v > 0]
    rest = [i for i, v in enumerate(values) if v <= 0]
    return (fill([*reversed(positive), None, *rest]),
            fill([*rest, None, *positive]))


def compositions(counts: list, unjudged: int, slots: int):
    """Every composition with its probability, or None beyond :data:`MAX_COMPOSITIONS`
    (counted first, over the compositions that fill the block's places: at most
    ``slots`` judged documents, at least ``slots - unjudged``)."""
    least = max(0, slots - unjudged)
    ways = [1] + [0] * slots  # partial compositions by their size
    for k in counts:
        ways = [sum(ways[s - x] for x in range(min(k, s) + 1)) for s in range(slots + 1)]
    if sum(ways[least:]) > MAX_COMPOSITIONS:
        return None
    n = sum(counts) + unjudged
    total = math.comb(n, slots)
    out = []

    def grow(prefix: tuple, left: int, rest: int):
        i = len(prefix)
        if i == len(counts):
            kept = slots - left
            if kept >= least:
                product = math.comb(unjudged, left)
                for k, x in zip(counts, prefix):
                    product *= math.comb(k, x)
                out.append((prefix, product / total))  # exact integers, one rounding
            return
        rest -= counts[i]
        # at least the places the later grades and the unjudged cannot fill
        for x in range(max(0, left - rest - unjudged), min(counts[i], left) + 1):
            grow((*prefix, x), left - x, rest)

    grow((), slots, sum(counts))
    return out


def mixture(straddles: list, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray
            ) -> Mixture:
    """The virtual rows of ``straddles`` (rows of the batch whose ``scores``, ``labels``
    and ``offsets`` are given)."""
    rows, group, weights = [], [0], []
    sc, lab, off, un, un_off, un_j = [], [], [0], [], [0], []
    for s in straddles:
        values, counts = np.unique(s.grades, return_counts=True)
        values, counts = values.tolist(), counts.tolist()
        best, worst = extremes(values, counts, s.unjudged, s.slots)
        combos = compositions(counts, s.unjudged, s.slots)
        if combos is not None and len(combos) * (s.prefix + s.slots) > MAX_ITEMS:
            combos = None
        if combos is None:
            combos = [(best, math.nan), (worst, math.nan)]
        base = group[-1]
        a = offsets[s.row]
        for c, p in combos:
            kept = np.repeat(values[::-1], c[::-1])  # grade descending
            left = np.repeat(values, [k - x for k, x in zip(counts, c)])
            sc += [scores[a:a + s.prefix], np.full(kept.size, s.score)]
            lab += [labels[a:a + s.prefix], kept.astype(np.float64)]
            off.append(off[-1] + s.prefix + kept.size)
            un += [s.unranked, left.astype(np.float64)]
            un_j += [s.unranked_judged, np.ones(left.size, dtype=bool)]
            un_off.append(un_off[-1] + s.unranked.size + left.size)
            weights.append(p)
        rows.append(s.row)
        group.append(base + len(combos))

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)
    return Mixture(np.asarray(rows, dtype=np.int64), np.asarray(group, dtype=np.int64),
                   np.asarray(weights, dtype=np.float64), cat(sc, np.float64),
                   cat(lab, np.float64), np.asarray(off, dtype=np.int64),
                   (cat(un, np.float64), np.asarray(un_off, dtype=np.int64)),
                   cat(un_j, bool))
