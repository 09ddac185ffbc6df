"""Rendering of ``tieeval check`` outcomes: one line per check (text or GitHub workflow
annotations) and a JSON document for machines."""

from __future__ import annotations

import json

from tieeval.analysis.check import Outcome
from tieeval.report.format import fmt_percent, fmt_value, metric_title
from tieeval.results import report_dict

CHECK_FORMATS = ("text", "github", "json")

_WHAT = {"max_inflation": "{metric} inflation",
         "max_gap": "{metric} gap",
         "min": "{metric} tie-aware",
         "max_tie_frequency": "top-score tie frequency",
         "max_positive_tie_frequency": "positive tie frequency"}


def _fmt(x: float, unit: str, digits: int) -> str:
    return f"{x * 100:.{digits}f}%" if unit == "fraction" else f"{x:.{digits + 2}f}"


def _fmt_pair(measured: float, bound: float, unit: str, passed: bool) -> tuple[str, str]:
    """Measured and bound as text (2 decimals of a percentage, 4 of a metric); a failed
    check gets more digits until the two no longer read equal."""
    for digits in range(2, 10):
        m, b = _fmt(measured, unit, digits), _fmt(bound, unit, digits)
        if passed or m != b:
            break
    return m, b


def message(o: Outcome) -> str:
    """``NDCG@10 inflation 67.65% > max 5.00% (original 0.8738, tie-aware 0.2826)``:
    what was measured, its value, the comparison and the bound (no status, no path). A
    gamma row of a signed metric reads ``SNDCG@10 γ=0.5 inflation ...``."""
    t = o.threshold
    what = _WHAT[t.kind].format(metric=metric_title(str(o.metric), o.gamma))
    side = t.comparison
    context = ""
    if t.kind in ("max_inflation", "max_gap"):
        row = o.row if o.row is not None else o.run.metric(str(o.metric))
        context = (f" (original {fmt_value(row.original)}, "
                   f"tie-aware {fmt_value(row.tie_aware)})")
    if o.measured is None:
        bound = fmt_percent(t.bound) if t.unit == "fraction" else fmt_value(t.bound)
        return f"{what} undefined as the original is 0 ({side} {bound}){context}"
    measured, bound = _fmt_pair(o.measured, t.bound, t.unit, o.passed)
    if side == "max":
        op = "<=" if o.passed else ">"
    else:
        op = ">=" if o.passed else "<"
    return f"{what} {measured} {op} {side} {bound}{context}"


def outcome_line(o: Outcome) -> str:
    return f"{'PASS' if o.passed else 'FAIL'} {o.run.path}: {message(o)}"


def summary(outcomes: list[Outcome]) -> str:
    failed = sum(not o.passed for o in outcomes)
    if failed:
        return f"{failed} of {len(outcomes)} checks failed"
    return f"all {len(outcomes)} checks passed"


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(o: Outcome) -> str:
    """A workflow command: ``::error`` for a failed check, ``::notice`` for a passed one."""
    level = "notice" if o.passed else "error"
    return (f"::{level} file={_gh_property(o.run.path)},title=tieeval check::"
            f"{_gh_data(('PASS ' if o.passed else 'FAIL ') + message(o))}")


def to_text(outcomes: list[Outcome]) -> str:
    return "\n".join([outcome_line(o) for o in outcomes] + [summary(outcomes)]) + "\n"


def to_github(outcomes: list[Outcome]) -> str:
    return "\n".join([github_line(o) for o in outcomes] + [summary(outcomes)]) + "\n"


def to_json(outcomes: list[Outcome], runs) -> str:
    doc = report_dict(runs)
    failed = sum(not o.passed for o in outcomes)
    checks = {"passed": failed == 0, "failed": failed,
              "checks": [o.to_dict() for o in outcomes]}
    env = {k: doc.pop(k) for k in ("tieeval_version", "numpy_version", "numpy_simd",
                                   "machine")}
    return json.dumps({**env, **checks, **doc}, indent=2, allow_nan=False) + "\n"
