"""Pass/fail logic of ``tieeval check``, the CI gate: thresholds parsed into values, and
each run's figures compared with them. Nothing here prints or formats.

Thresholds (every bound is inclusive: a figure equal to its bound passes, up to 1e-12 of
float rounding):

* ``max_change`` (``max_inflation`` is its older name, kept so that existing gates keep
  working): the relative change from original to tie-aware,
  ``|tie_aware - original| / original``, at most the bound (either direction: a figure
  the tie-break decides is suspect whether it flatters or not; the report prints it
  signed, ``change = (tie_aware - original) / original``);
* ``max_change_sigma``: ``|original - tie_aware|`` in tie-break standard deviations of
  the mean (``tie_aware_std``), at most the bound; a change of at most
  :data:`SIGMA_FLOOR` (1 %) of the original passes whatever its sigma, and a metric
  without an exact variance (ERR, IPrec, GMAP) is not checked;
* ``max_spread``: the first-last spread relative to the value,
  ``(first - last) / |tie_aware|``, at most the bound;
* ``max_tie_decided``: per K, the share of instances whose HR@K the tie-break decides
  (first and last differ; ``ties.tie_decided``), at most the bound;
* ``max_gap``: the absolute gap ``|original - tie_aware|`` at most the bound;
* ``min``: the tie-aware value at least the bound;
* ``max_tie_frequency``: the share of instances whose top score is tied;
* ``max_positive_tie_frequency``: the share of instances whose positive is tied.

``max_change``, ``max_change_sigma``, ``max_spread``, ``max_gap`` and ``min`` name a
metric (``NDCG@10=5%``) or, without one (``5%``), apply to every
metric evaluated. Bounds are fractions (``0.05``) or percentages (``5%``);
``max_change_sigma`` takes a number of standard deviations (``3``). The default gate
(:data:`DEFAULT_THRESHOLDS`) applies when no threshold is given.

Several gammas. A signed metric of a labelled run evaluated at several ``--gamma`` values
has one row per gamma, and a check is made per row, keyed by (metric, K, gamma): a
threshold naming the metric alone (``SNDCG@10=5%``) applies to each of its gamma rows, one
outcome per gamma; ``SNDCG@10[gamma=0.5]=5%`` applies to the gamma 0.5 row only (a gamma
that was not evaluated is an error).
"""


from __future__ import annotations

import re

from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.metrics.registry import parse_gamma, signed_names
from tieeval.records.check import (  # noqa: F401 - the check records, where they were
    CHANGE_KINDS,
    KINDS,
    OPTION_NAMES,
    SIGMA_FLOOR,
    Outcome,
    Threshold,
)
from tieeval.records.results import MetricRow, RunResult, gammas_text, label_rows

# The gate when no threshold is given: it fails a dump whose figures the tie-break decides
# (the share of HR@K outcomes it decides, how far apart First and Last are, and an
# Original further from Tie-aware than tie-break noise explains) and passes a tie-free one.
DEFAULT_THRESHOLDS = (("max_tie_decided", "5%"), ("max_spread", "10%"),
                      ("max_change_sigma", "3"))
DEFAULT_GATE = " ".join(f"--{kind.replace('_', '-')} {bound}"
                        for kind, bound in DEFAULT_THRESHOLDS)
# Bounds are inclusive up to float rounding: |0.6 - 0.8| / 0.8 is 0.2500000000000001 in
# binary floating point and must still pass "25%". Every figure checked lies within [0, a
# few], so an absolute allowance far below any printed digit is enough.
TOLERANCE = 1e-12


_NUMBER = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(%?)\s*$")
# SNDCG@10[gamma=0.5]: one gamma row of a signed metric ("γ" is accepted for "gamma")
_GAMMA = re.compile(r"^(.*?)\[\s*(?:gamma|γ)\s*=\s*([^\]]*?)\s*\]\s*$", re.IGNORECASE)


def parse_metric_key(text: str, option: str = "metric") -> tuple[Metric, float | None]:
    """``"NDCG@10"`` -> (NDCG@10, None); ``"SNDCG@10[gamma=0.5]"`` -> (SNDCG@10, 0.5).

    The gamma form is for the signed metrics only (SHR, SRecall, SDCG, SNDCG).
    """
    m = _GAMMA.match(text)
    if m is None:
        return Metric.parse(text), None
    metric = Metric.parse(m.group(1))
    if not metric.spec.signed:
        raise ParameterError(f"{option}: {metric} has no gamma; [gamma=...] picks a row of a "
                             f"signed metric ({', '.join(signed_names())})")
    try:
        return metric, parse_gamma(m.group(2))
    except ParameterError as exc:
        raise ParameterError(f"{option}: {exc} in {text!r}") from None


def _match_bound(text: str, option: str, expected: str, percent: bool) -> re.Match[str]:
    m = _NUMBER.match(str(text))
    if not m or (m.group(2) and not percent):
        raise ParameterError(f"{option}: expected {expected}, got {text!r}")
    if float(m.group(1)) < 0:
        raise ParameterError(f"{option}: the bound must be >= 0, got {text!r}")
    return m


def parse_bound(text: str, option: str = "bound") -> float:
    """``"5%"`` -> 0.05, ``"0.05"`` -> 0.05. A bare number above 1 is refused (ambiguous:
    write ``10%`` or ``0.10``); negative bounds are refused."""
    m = _match_bound(text, option, "a number or a percentage (0.05 or 5%)", True)
    value = float(m.group(1))
    if m.group(2):
        return value / 100.0
    if value > 1:
        raise ParameterError(f"{option}: {text!r} is ambiguous; write it as a percentage "
                             f"({m.group(1)}%) or a fraction (<= 1)")
    return value


def default_thresholds() -> list[Threshold]:
    """The default gate (:data:`DEFAULT_THRESHOLDS`) as thresholds."""
    return [parse_threshold(kind, bound) for kind, bound in DEFAULT_THRESHOLDS]


def parse_threshold(kind: str, text: str) -> Threshold:
    """Parse one option value: ``"NDCG@10=5%"``, ``"SNDCG@10[gamma=0.5]=5%"`` or ``"5%"``
    for metric kinds, ``"10%"`` for the tie frequencies.

    >>> parse_threshold("max_inflation", "NDCG@10=5%")
    Threshold(kind='max_inflation', bound=0.05, metric=Metric(name='NDCG', k=10), gamma=None)
    >>> parse_threshold("min", "SNDCG@10[gamma=0.5]=0.3").gamma
    0.5
    """
    if kind not in KINDS:
        raise ParameterError(f"unknown check {kind!r}; choose from {', '.join(KINDS)}")
    takes_metric, _, unit = KINDS[kind]
    option = OPTION_NAMES[kind]
    metric = gamma = None
    key, sep, value = str(text).rpartition("=")
    if sep:
        if not takes_metric:
            raise ParameterError(f"{option} takes a bound only (e.g. {option} 10%), "
                                 f"got {text!r}")
        metric, gamma = parse_metric_key(key, option)
    else:
        value = text
    if unit == "sigma":  # a number of standard deviations (>= 0, no percentage)
        bound = float(_match_bound(value, option, "a number of standard deviations (e.g. 3)",
                                   False).group(1))
    else:
        bound = parse_bound(value, option)
    if unit == "value" and bound > 1:
        raise ParameterError(f"{option}: metrics lie in [0, 1], so a bound of {value!r} "
                             "can never be met or missed")
    if (kind.endswith("frequency") or kind == "max_tie_decided") and bound > 1:
        raise ParameterError(f"{option}: a frequency lies in [0, 100%], got {value!r}")
    return Threshold(kind, bound, metric, gamma)


def metrics_needed(thresholds, default) -> list[Metric]:
    """The metrics to evaluate: those named, plus ``default`` if a threshold names none."""
    named = [t.metric for t in thresholds if t.metric is not None]
    if any(t.metric is None and KINDS[t.kind][0] for t in thresholds) or not named:
        named = list(default) + named
    return list(dict.fromkeys(named))


def metric_rows(run: RunResult, metric: Metric, gamma: float | None = None) -> list:
    """The run's rows of ``metric``: one per gamma for a signed metric of a labelled run
    (only the ``gamma`` row when given), else one. Raises ParameterError when none is."""
    rows = label_rows(run.metrics, str(metric))
    if gamma is not None:
        picked = label_rows(rows, str(metric), gamma)
        if not picked:
            raise ParameterError(f"{run.path}: {metric}[gamma={gamma!r}] was not evaluated "
                                 f"({gammas_text(rows)}); add it to --gamma")
        rows = picked
    if not rows:
        raise ParameterError(f"{run.path}: {metric} was not evaluated")
    return rows


def within_floor(row: MetricRow | None) -> bool:
    """True when ``|original - tie_aware|`` is at most :data:`SIGMA_FLOOR` of the
    original."""
    if row is None or row.original is None or row.tie_aware is None:
        return False
    diff = abs(row.original - row.tie_aware)
    return diff <= TOLERANCE or (row.original != 0
                                 and diff / abs(row.original) <= SIGMA_FLOOR + TOLERANCE)


def measure(run: RunResult, threshold: Threshold, metric: Metric | None,
            row: MetricRow | None = None) -> float | None:
    """The figure ``threshold`` bounds: a tie statistic of ``run`` (``metric`` is HR@K for
    ``max_tie_decided``), else a figure of ``row``, the metric row checked."""
    kind = threshold.kind
    if kind == "max_tie_frequency":
        return run.ties.top_tie_frequency
    if kind == "max_positive_tie_frequency":
        return run.ties.positive_tie_frequency
    if kind == "max_tie_decided":
        assert metric is not None and metric.k is not None
        return run.ties.tie_decided[int(metric.k)]
    assert row is not None
    original, tie_aware = row.original, row.tie_aware
    if tie_aware is None:  # no instance evaluated: nothing to bound
        return None
    if kind == "max_spread":  # no Original read (a saved ranking too short leaves it null)
        if row.first is None or row.last is None:
            return None
        spread, value = abs(row.first - row.last), abs(tie_aware)
        if value == 0:
            return 0.0 if spread == 0 else None
        return spread / value
    if kind == "min":
        return tie_aware
    if original is None:
        return None
    if kind in CHANGE_KINDS:
        if original == 0:
            return 0.0 if tie_aware == 0 else None
        return abs(tie_aware - original) / original
    if kind == "max_change_sigma":
        diff = abs(original - tie_aware)
        if diff <= TOLERANCE:
            return 0.0
        return diff / row.tie_aware_std if row.tie_aware_std else None
    return abs(original - tie_aware)  # max_gap


def run_checks(runs: list[RunResult], thresholds: list[Threshold],
               default: list[Metric] | None = None) -> list[Outcome]:
    """Every threshold on every run, in run order then threshold order. A metric-less
    metric threshold applies to each of ``default`` (None: every metric the run has). A
    threshold reaches every gamma row of a signed metric unless it names a gamma."""
    outcomes = []
    for run in runs:
        for t in thresholds:
            targets: list[tuple[Metric | None, MetricRow | None]]
            if t.kind == "max_tie_decided":
                targets = [(Metric("HR", k), None) for k in sorted(run.ties.tie_decided)]
            elif not KINDS[t.kind][0]:
                targets = [(None, None)]
            else:
                if t.metric is not None:
                    metrics = [t.metric]
                elif default is not None:
                    metrics = list(default)
                else:
                    metrics = list(dict.fromkeys(Metric(m.metric, m.k) for m in run.metrics))
                targets = [(m, row) for m in metrics for row in metric_rows(run, m, t.gamma)]
                if t.kind == "max_change_sigma":  # no exact variance (ERR, IPrec, ...): no check
                    targets = [(m, row) for m, row in targets
                               if row is not None and row.tie_aware_std is not None]
            for metric, row in targets:
                value = measure(run, t, metric, row)
                if t.kind == "max_change_sigma" and within_floor(row):
                    passed = True  # a change of at most 1 % passes whatever its sigma
                elif value is None:
                    passed = False
                elif t.comparison == "max":
                    passed = value <= t.bound + TOLERANCE
                else:
                    passed = value >= t.bound - TOLERANCE
                outcomes.append(Outcome(run, t, metric, value, passed, row))
    return outcomes
