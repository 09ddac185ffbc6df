"""The duplicate-candidate data check: rows that list one item id twice."""


from __future__ import annotations

from typing import Any

import numpy as np

_FIELDS = ("rows", "instances", "copies", "relevant_rows", "mismatch_rows")


class DuplicateCheck:
    """Counts rows that list the same item twice (docs/METRICS.md 13).

    A deterministic model scores both copies alike, which manufactures a tie, and the copy
    counts as a negative: sampled negatives drawn with replacement, or a sampled negative
    equal to the held-out positive, lower the tie-aware figures. Reported, never fixed.
    """

    def __init__(self) -> None:
        self.rows = 0
        self.instances = 0
        self.copies = 0
        self.relevant_rows = 0
        self.mismatch_rows = 0

    def add(self, scores: np.ndarray, items: np.ndarray, offsets: np.ndarray | None,
            relevant: np.ndarray) -> None:
        """``scores``/``items``/``relevant`` flat (with ``offsets``) or 2-D alike."""
        if offsets is None:
            rows, cols = items.shape
            offsets = np.arange(rows + 1, dtype=np.int64) * cols
        items, scores = np.asarray(items).reshape(-1), np.asarray(scores).reshape(-1)
        relevant = np.asarray(relevant).reshape(-1)
        n = np.diff(offsets)
        rows = n.size
        self.instances += rows
        if items.size == 0:
            return
        codes = (items.astype(np.int64) if items.dtype.kind in "iu" and items.dtype != np.uint64
                 else np.unique(items.astype(str) if items.dtype == object else items,
                                return_inverse=True)[1].reshape(-1))
        rw = np.repeat(np.arange(rows, dtype=np.int64), n)
        order = np.lexsort((codes, rw))
        c, r = codes[order], rw[order]
        same = np.zeros(items.size, dtype=bool)
        same[1:] = (c[1:] == c[:-1]) & (r[1:] == r[:-1])  # a copy of the previous one
        if not same.any():
            return
        copies = np.bincount(r[same], minlength=rows)
        self.rows += int(np.count_nonzero(copies))
        self.copies += int(copies.sum())
        gid = np.cumsum(~same) - 1
        size = np.bincount(gid)
        rel = np.bincount(gid, weights=relevant[order].astype(np.float64))
        dup_group = size > 1
        start = np.flatnonzero(~same)
        self.relevant_rows += np.unique(r[start[dup_group & (rel > 0)]]).size
        s = scores[order]
        differ = np.zeros(items.size, dtype=bool)
        with np.errstate(invalid="ignore"):
            differ[1:] = same[1:] & (s[1:] != s[:-1])
        self.mismatch_rows += np.unique(r[differ]).size

    def merge(self, other: "DuplicateCheck") -> None:
        """Add another part's counts (every field is a per-row count)."""
        for name in _FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "DuplicateCheck":
        check = cls()
        for name in _FIELDS:
            setattr(check, name, int(state[name]))
        return check

    def report(self, path: str) -> tuple[list[dict[str, Any]], list[str]]:
        """``(data_warnings, stderr lines)``; empty when no row holds a duplicate."""
        if self.rows == 0:
            return [], []
        freq = self.rows / max(1, self.instances)
        message = (f"{path}: {self.rows} of {self.instances} instance(s) ({freq:.2%}) list the "
                   f"same item twice ({self.copies} extra candidate(s)); in "
                   f"{self.relevant_rows} of them a relevant item (e.g. the positive) is "
                   "repeated as a candidate. A copy ties with its original and counts as a "
                   "negative, which lowers every column (original, first, last and tie-aware): "
                   "drop duplicates before scoring")
        if self.mismatch_rows:
            message += (f"; in {self.mismatch_rows} instance(s) the copies have different "
                        "scores (non-deterministic inference?)")
        entry = {"kind": "duplicate_items", "instances": self.rows, "frequency": freq,
                 "copies": self.copies, "relevant_instances": self.relevant_rows,
                 "score_mismatch_instances": self.mismatch_rows, "message": message}
        return [entry], [message]
