"""trec_eval's set measures: the retrieved list judged as a set, not as a ranking.

With X = |relevant retrieved| (num_rel_ret), N = |retrieved| = min(n, depth) (num_ret) and
R = |relevant| (num_rel)::

    set_P          = X / N                        (0 when N = 0)
    set_relative_P = X / min(N, R)                (0 when N = 0)
    set_recall     = X / R
    set_map        = X^2 / (N R)                  (0 when N = 0)
    set_F          = 2 P R' / (P + R') = 2 X / (N + R)   (P = X / N, R' = X / R; beta = 1)
    utility        = X - (N - X) = 2 X - N        (trec_eval's default coefficients 1, -1, 0, 0)

The set does not depend on the order inside it, so without a depth cut every tie order gives
the same value: first = last = tie-aware. Only a depth cut (``--depth``, trec_eval ``-M``)
through a tie block makes the retrieved set random: X is then hypergeometric in that one
block (docs/METRICS.md 6), and E and Var are exact (set_map's from the first four moments of
that block's hypergeometric count). Every measure but utility is defined where R >= 1 (a
row without a relevant item counts 0 under trec_eval's convention, as trec_eval prints);
utility is defined on every row (-N without a relevant item).

Reference: trec_eval m_set_P.c, m_set_rel_P.c, m_set_recall.c, m_set_map.c, m_set_F.c,
m_utility.c; the names SetP, SetRelP, SetR, SetAP, SetF are ir_measures' (which computes
them with trec_eval).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tieeval.metrics.measures.base import Measure
from tieeval.metrics.measures.protocol import Bools, Closed, Floats, Numbers, TableEvaluation
from tieeval.metrics.measures.series import shifted_square_moments

_LINEAR = ("set_P", "set_relative_P", "set_recall", "set_F", "utility")


@dataclass(frozen=True)
class SetMeasure(Measure):
    """A function of X = |relevant retrieved| given N and R; ``form`` is the trec_eval
    measure (``set_P``, ``set_relative_P``, ``set_recall``, ``set_map``, ``set_F``,
    ``utility``)."""

    form: str = "set_P"

    def defined(self, ev: TableEvaluation) -> Bools:
        if self.form == "utility":
            return np.ones(ev.b.rows, dtype=bool)  # its value exists without a relevant item
        return ev.b.n_pos >= 1

    def _linear(self, ev: TableEvaluation) -> tuple[np.ndarray, np.ndarray]:
        """``(a, c)`` with value = a X + c, for the forms linear in X."""
        n_ret = ev.kc.astype(np.float64)
        r = ev.R
        zero = np.zeros(ev.b.rows)
        if self.form == "set_P":
            return np.where(n_ret > 0, 1.0 / np.maximum(n_ret, 1.0), 0.0), zero
        if self.form == "set_relative_P":
            return np.where(n_ret > 0, 1.0 / np.maximum(np.minimum(n_ret, r), 1.0), 0.0), zero
        if self.form == "set_recall":
            return 1.0 / r, zero
        if self.form == "set_F":
            return 2.0 / np.maximum(n_ret + r, 1.0), zero
        return np.full(ev.b.rows, 2.0), -n_ret  # utility

    def _map_denominator(self, ev: TableEvaluation) -> Floats:
        return ev.kc.astype(np.float64) * ev.R

    def closed(self, ev: TableEvaluation) -> Closed:
        e, var, decided = ev.hits_moments(ev.b.p_t)
        if self.form in _LINEAR:
            a, c = self._linear(ev)
            return a * e + c, a * a * var, decided
        # set_map: E[X^2] / (N R), Var[X^2] / (N R)^2
        d = self._map_denominator(ev)
        e2, var2 = shifted_square_moments(ev.b, ev.m_t, ev.b.p_t)
        safe = np.where(d > 0, d, 1.0)
        return (np.where(d > 0, e2 / safe, 0.0), np.where(d > 0, var2 / safe ** 2, 0.0),
                decided)

    def realise(self, ev: TableEvaluation, lab: Floats, judged: Bools | None
                ) -> Numbers:
        """The value of one ordering in trec_eval's floating-point order (m_set_*.c): one
        division of the counts, and set_F as ``(b + 1) P R / (b P + R)`` with b = 1 from
        the rounded P and R, so that the digits trec_eval prints are the same (set_F 5/32
        is 0.15625000000000003 there: 0.1563)."""
        x = ev.hits(lab, +1)
        n_ret = ev.kc.astype(np.float64)
        if self.form in ("set_P", "set_relative_P", "set_F"):
            div = n_ret if self.form != "set_relative_P" else np.minimum(n_ret, ev.R)
            p = np.where(div > 0, x / np.where(div > 0, div, 1.0), 0.0)
            if self.form != "set_F":
                return p
            r = x / ev.R
            beta = 1.0  # trec_eval's default parameter (set_F.1)
            return np.where(x > 0, (beta + 1.0) * p * r / np.where(x > 0, beta * p + r, 1.0),
                            0.0)
        if self.form == "set_recall":
            return x / ev.R
        if self.form == "utility":
            value: Numbers = 2.0 * x - n_ret
            return value
        d = self._map_denominator(ev)
        return np.where(d > 0, x * x / np.where(d > 0, d, 1.0), 0.0)


def _set(name: str, form: str, description: str, trec: str, ir: str | None = None,
         **kwargs: Any) -> SetMeasure:
    names = {"tieeval": (name,), "trec_eval": (trec,)}
    if ir is not None:
        names["ir_measures"] = (ir,)
    return SetMeasure(name, "none", description, names=names,
                      needs=frozenset({"labels"}), form=form, **kwargs)


SET_P = _set("SetP", "set_P", "set precision: relevant retrieved over retrieved (trec_eval "
             "set_P)", "set_P", "SetP")
SET_REL_P = _set("SetRelP", "set_relative_P", "relative set precision: relevant retrieved "
                 "over min(retrieved, R) (trec_eval set_relative_P)", "set_relative_P",
                 "SetRelP")
SET_R = _set("SetR", "set_recall", "set recall: relevant retrieved over R (trec_eval "
             "set_recall)", "set_recall", "SetR")
SET_AP = _set("SetAP", "set_map", "unranked set AP: (relevant retrieved)^2 over retrieved "
              "times R (trec_eval set_map)", "set_map", "SetAP")
SET_F = _set("SetF", "set_F", "set F1: 2 (relevant retrieved) over (retrieved + R), the "
             "harmonic mean of set precision and set recall (trec_eval set_F)", "set_F",
             "SetF")
UTILITY = _set("Utility", "utility", "set utility with trec_eval's default coefficients: "
               "relevant retrieved minus non-relevant retrieved (trec_eval utility)",
               "utility")
