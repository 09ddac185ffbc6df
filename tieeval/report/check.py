"""Rendering of ``tieeval check`` outcomes: one line per check (text or GitHub workflow
annotations) and a JSON document for machines."""

from __future__ import annotations

import errno
import math
import os

from tieeval.errors import OutputError
from tieeval.records.check import (
    CHANGE_KINDS,
    OPTION_NAMES,
    ORIGINAL_KINDS,
    SIGMA_FLOOR,
    CheckResult,
    DumpError,
    Outcome,
)
from tieeval.records.results import report_dict
from tieeval.report.format import (
    counted,
    fmt_percent,
    fmt_value,
    json_text,
    md_escape,
    md_table,
    metric_title,
)
from tieeval.report.registry import Output, register
from tieeval.report.runs import rules_footer
from tieeval.sink import atomic_output, check_output_path
from tieeval.util.escaping import escape

_WHAT = {"max_change": "{metric} change",
         "max_inflation": "{metric} change",
         "max_change_sigma": "{metric} change",
         "max_spread": "{metric} first-last spread / tie-aware",
         "max_tie_decided": "{metric} decided by the tie-break",
         "max_gap": "{metric} gap",
         "min": "{metric} tie-aware",
         "max_tie_frequency": "top-score tie frequency",
         "max_positive_tie_frequency": "positive tie frequency"}


def _fmt(x: float, unit: str, digits: int) -> str:
    if unit == "sigma":
        return f"{x:.{digits}f}"
    return f"{x * 100:.{digits}f}%" if unit == "fraction" else f"{x:.{digits + 2}f}"


def _signed(x: float | None) -> str:
    return "undefined" if x is None else f"{x * 100:+.2f}%"


def _fmt_pair(measured: float, bound: float, unit: str, passed: bool) -> tuple[str, str]:
    """Measured and bound as text (2 decimals of a percentage, 4 of a metric); a failed
    check gets more digits until the two no longer read equal."""
    for digits in range(2, 10):
        m, b = _fmt(measured, unit, digits), _fmt(bound, unit, digits)
        if passed or m != b:
            break
    return m, b


def message(o: Outcome) -> str:
    """``NDCG@10 change -67.65%: |change| 67.65% > max 5.00% (original 0.8738,
    tie-aware 0.2826)``: what was measured, its value, the comparison and the bound (no
    status, no path). A gamma row of a signed metric reads ``SNDCG@10 γ=0.5 change ...``.
    The change is signed (tie-aware relative to original); the bound is on its size."""
    t = o.threshold
    what = _WHAT[t.kind].format(metric=metric_title(str(o.metric), o.gamma))
    side = t.comparison
    context = ""
    if t.kind in (*CHANGE_KINDS, "max_gap", "max_change_sigma"):
        row = o.row if o.row is not None else o.run.metric(str(o.metric))
        std = (f" ± {fmt_value(row.tie_aware_std)}" if t.kind == "max_change_sigma"
               and row.tie_aware_std is not None else "")
        context = (f" (original {fmt_value(row.original)}, "
                   f"tie-aware {fmt_value(row.tie_aware)}{std})")
    elif t.kind == "max_spread" and o.row is not None:
        context = (f" (first {fmt_value(o.row.first)}, last {fmt_value(o.row.last)}, "
                   f"tie-aware {fmt_value(o.row.tie_aware)})")
    if t.kind in CHANGE_KINDS:
        what = f"{what} {_signed(o.change)}: |change|"
    elif t.kind == "max_change_sigma":
        what = f"{what} {_signed(o.change)}: in tie-break std"
    if t.kind == "max_change_sigma" and o.passed and (o.measured is None
                                                      or o.measured > t.bound):
        sigma = "undefined" if o.measured is None else f"{o.measured:.2f}"
        return (f"{what} {sigma}, yet |change| <= {fmt_percent(SIGMA_FLOOR)} of the "
                f"original (passes){context}")
    if o.measured is None:
        if t.kind == "max_change_sigma":
            return f"{what} undefined: no tie-break spread, yet a change{context}"
        if t.kind == "max_spread":
            return f"{what} undefined as the tie-aware value is 0 ({side} " \
                   f"{fmt_percent(t.bound)}){context}"
        bound = fmt_percent(t.bound) if t.unit == "fraction" else fmt_value(t.bound)
        return f"{what} undefined as the original is 0 ({side} {bound}){context}"
    measured, bound = _fmt_pair(o.measured, t.bound, t.unit, o.passed)
    op = ("<=" if o.passed else ">") if side == "max" else (">=" if o.passed else "<")
    return f"{what} {measured} {op} {side} {bound}{context}"


def outcome_line(o: Outcome) -> str:
    return escape(f"{'PASS' if o.passed else 'FAIL'} {o.run.path}: {message(o)}")


def summary(outcomes: list[Outcome], errors: list[DumpError] | tuple = ()) -> str:
    failed = sum(not o.passed for o in outcomes)
    if failed:
        text = f"{failed} of {counted(len(outcomes), 'check')} failed"
    elif len(outcomes) == 1:
        text = "1 check passed"
    elif outcomes or not errors:
        text = f"all {len(outcomes)} checks passed"
    else:
        text = "no check made"
    if errors:
        text += f"; {counted(len(errors), 'dump')} could not be checked"
    return text


def error_line(e: DumpError) -> str:
    """``ERROR path: reason``: a dump that could not be checked, as the line of
    ``--format text`` (its message names it)."""
    return escape(f"ERROR {e.message}")


def github_line(o: Outcome) -> str:
    """A workflow command: ``::error`` for a failed check (``::notice`` for a passed one,
    which ``--format github`` no longer prints: one summary line says how many passed)."""
    level = "notice" if o.passed else "error"
    return (f"::{level} file={escape(o.run.path, 'github-property')},title=tieeval check::"
            f"{escape(('PASS ' if o.passed else 'FAIL ') + message(o), 'github-data')}")


def github_error(e: DumpError) -> str:
    """The ``::error`` annotation of a dump that could not be checked."""
    return (f"::error file={escape(e.path, 'github-property')},title=tieeval check::"
            f"{escape(error_line(e), 'github-data')}")


def github_summary(outcomes: list[Outcome], errors: list[DumpError] | tuple = ()) -> str:
    """The one ``::notice`` of a run: how many checks passed and failed, over how many
    dumps, and how many dumps could not be checked."""
    failed = sum(not o.passed for o in outcomes)
    dumps = len({o.run.path for o in outcomes})
    text = (f"::notice title=tieeval check::{len(outcomes) - failed} passed / {failed} "
            f"failed ({counted(len(outcomes), 'check')} on {counted(dumps, 'dump')}")
    if errors:
        text += f"; {len(errors)} could not be checked"
    return text + ")"


def _bound_text(kind: str, value: float) -> str:
    if kind == "max_change_sigma":
        return f"{math.ceil(value * 10) / 10:g}"
    if kind in ("min", "max_gap"):
        return f"{value:.4g}"
    return f"{math.ceil(value * 1000) / 10:g}%"


def advice(outcomes: list[Outcome]) -> list[str]:
    """One line per failed threshold: which it is, its worst figure, and how to relax it
    (explicit thresholds replace the default gate)."""
    lines = []
    seen: dict = {}
    for o in outcomes:
        if not o.passed:
            seen.setdefault(o.threshold, []).append(o)
    for t, failed in seen.items():
        option = OPTION_NAMES[t.kind]
        target = f"{t.metric}=" if t.metric is not None else ""
        measured = [o.measured for o in failed if o.measured is not None]
        relax = f"a looser {option}"
        if measured:
            worst = (max if t.comparison == "max" else min)(measured)
            relax = f"e.g. {option} {target}{_bound_text(t.kind, worst)}"
        bound = _fmt(t.bound, t.unit, 2)
        lines.append(f"Failed: {option} {target}{bound} ({counted(len(failed), 'check')}); "
                     f"to relax it pass {relax} (thresholds given replace the default gate)")
    return lines


def to_text(result: CheckResult | list[Outcome]) -> str:
    """One line per check, a dump that could not be checked one ``ERROR`` line in its
    place, then the summary and how to relax each failed threshold."""
    return _report(result, github=False)


def _report(result: CheckResult | list[Outcome], github: bool) -> str:
    """:func:`to_text`, or with ``github`` an ``::error`` annotation per failed check and
    per dump that could not be checked and one ``::notice`` summary (the advice stays plain
    log lines): a passed check is not annotated, as a dozen notices per dump would bury
    the failures."""
    result = result if isinstance(result, CheckResult) else CheckResult(list(result), [])
    outcomes = result.outcomes
    lines = []
    for _, done, error in result.by_dump():
        if error is not None:
            lines.append(github_error(error) if github else error_line(error))
        lines += [github_line(o) for o in done if not o.passed] if github else [
            outcome_line(o) for o in done]
    lines.append((github_summary if github else summary)(outcomes, result.errors))
    # what the Original figures the checks read were ranked by (none read: no line)
    read = [o.run.effective_original_rule for o in outcomes
            if o.threshold.kind in ORIGINAL_KINDS]
    footer = [rules_footer(read)] if read else []
    return "\n".join(lines + advice(outcomes) + footer) + "\n"


def step_summary(result: CheckResult) -> str:
    """The job summary (Markdown): passed and failed checks per dump, then each failed
    check with its reason, and each dump that could not be checked with its error."""
    outcomes = result.outcomes
    lines = ["### tieeval check", "", summary(outcomes, result.errors), "",
             md_table(["Dump", "Passed", "Failed"],
                      [[path, str(sum(o.passed for o in group)),
                        "error" if error is not None else str(sum(not o.passed
                                                                 for o in group))]
                       for path, group, error in result.by_dump()])]
    failed = [o for o in outcomes if not o.passed]
    if failed or result.errors:
        lines += ["", "| Dump | Failed check |", "| --- | --- |"]
        lines += [f"| {md_escape(e.path)} | {md_escape(error_line(e))} |" for e in result.errors]
        lines += [f"| {md_escape(o.run.path)} | {md_escape(message(o))} |" for o in failed]
    if failed:
        lines += [""] + [f"- {md_escape(line)}" for line in advice(outcomes)]
    return "\n".join(lines) + "\n\n"


def append_step_summary(path: str, text: str) -> None:
    """Append ``text`` to GitHub's job summary file (``$GITHUB_STEP_SUMMARY``) through the
    output sink: the runner shows what every step appended, so what the file holds is kept
    and ``text`` added after it, written completely or not at all; a FIFO, a device or a
    folder named there is refused at once (an append would block or land outside a file)."""
    target = check_step_summary(path)
    try:
        before = b""
        if target != "-":  # '-': stdout, where --output FILE took the data elsewhere
            try:
                with open(target, "rb") as fh:
                    before = fh.read()
            except FileNotFoundError:
                pass
            except OSError as exc:
                reason = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
                raise OutputError(reason) from None
        with atomic_output(target, what=_SUMMARY) as out:
            out.write(before + text.encode("utf-8"))
    except OutputError as exc:
        raise _summary_error(path, exc) from None


_SUMMARY = "the job summary"


def _summary_error(path: str, exc: OutputError) -> OutputError:
    return OutputError(f"GITHUB_STEP_SUMMARY {path}: cannot append the job summary: {exc}")


def check_step_summary(path: str) -> str:
    """Refuse ``path`` (``$GITHUB_STEP_SUMMARY``) as the job summary's file as the output
    sink refuses any output (a device, a folder, an input of the run or another of its
    outputs), naming the variable; called before the evaluation too. Returns the path to
    write."""
    try:
        return check_output_path(path, what=_SUMMARY)
    except OutputError as exc:
        raise _summary_error(path, exc) from None


def to_json(outcomes: list[Outcome], runs, errors: list[DumpError] | tuple = ()) -> str:
    """The checks and the runs; ``errors`` (only when a dump could not be checked: each
    one's path and error) after the checks, and ``passed`` false."""
    doc = report_dict(runs)
    failed = sum(not o.passed for o in outcomes)
    checks: dict = {"passed": failed == 0 and not errors, "failed": failed,
                    "checks": [o.to_dict() for o in outcomes]}
    if errors:
        checks["errors"] = [e.to_dict() for e in errors]
    env = {k: doc.pop(k) for k in ("tieeval_version", "numpy_version", "numpy_simd",
                                   "machine")}
    return json_text({**env, **checks, **doc})


# ---------------------------------------------------------------------------------------
# the renderers of check results, by format

@register("check", "text", "one line per check")
def _check_text(result: CheckResult, out: Output) -> None:
    out.write(to_text(result))


def _check_step_summary_target() -> None:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        check_step_summary(target)


@register("check", "github", "GitHub workflow annotations of failed checks, one "
                            "::notice summary, and a job summary table where "
                            "GITHUB_STEP_SUMMARY is set", before=_check_step_summary_target,
         progress_bar=False)
def _check_github(result: CheckResult, out: Output) -> None:
    out.write(_report(result, github=True))
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        append_step_summary(target, step_summary(result))


@register("check", "json", "checks and runs for machines", machine_readable=True)
def _check_json(result: CheckResult, out: Output) -> None:
    out.write(to_json(result.outcomes, result.runs, result.errors))
