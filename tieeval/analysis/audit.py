"""Judge a published number against what the score dumps allow.

A paper prints, say, ``NDCG@10 = 0.4123`` for its method. Re-evaluating the method's saved
scores gives four numbers for that metric: ``last <= tie_aware <= first`` and ``original``
(the codebase's own ``np.argsort``), plus ``tie_aware_std``, the spread of the mean under
random tie-breaking. :func:`judge_claim` compares the printed value with them, within its
rounding tolerance (half a unit of the last printed digit: ``"0.4123"`` may stand for
anything in [0.41225, 0.41235]); its Notes say what each verdict means.

:func:`read_claims` reads the published numbers from a CSV file.
"""


from __future__ import annotations

import csv
import math
import os
from decimal import Decimal, InvalidOperation
from typing import cast

from tieeval.errors import InputError, ParameterError, TieevalError
from tieeval.io.base import require_regular_file
from tieeval.metrics.metric import Metric
from tieeval.metrics.registry import REGISTRY, parse_gamma, signed_names
from tieeval.records.audit import (  # noqa: F401 - the audit records, where they were
    VERDICTS,
    AuditItem,
    Claim,
    Verdict,
)
from tieeval.records.results import gammas_text, label_rows, original_rule_of

DEFAULT_TOLERANCE = 5e-5  # half a unit of the 4th decimal, the usual printed precision
CLAIM_COLUMNS = ("method", "dataset", "task", "metric", "k", "value")
REQUIRED_COLUMNS = ("method", "dataset", "metric", "value")
GAMMA_COLUMN = "gamma"  # optional: which --gamma row a claim on a signed metric is about

# Slack for comparisons that sit exactly on a boundary: 0.12345 + 0.00005 need not round to
# the float nearest 0.1235, and a claim exactly at a boundary must not flip with the rounding.
_BOUNDARY_SLACK = 1e-9
# Inputs that are meant to satisfy last <= tie_aware <= first may differ by float rounding.
_ORDER_SLACK = 1e-9


def parse_value(text: str) -> tuple[float, float]:
    """A published value and its rounding tolerance, from the text as printed.

    Parameters
    ----------
    text : str
        A decimal number as printed in the paper (``"0.4123"``, ``".41"``, ``"4.1e-1"``) or
        a percentage with a trailing ``%`` (``"41.23%"``, meaning 0.4123).

    Returns
    -------
    value, tolerance : float, float
        The value as a fraction and half a unit of its last printed digit (after the
        ``%`` scaling): ``"0.4123"`` and ``"41.23%"`` both give ``(0.4123, 5e-05)``. A
        bare integer (``"0"``, ``"1"``) is exact: tolerance 0 (a printed ``0`` is not
        "anything below 0.5"); write ``0.0`` for one printed digit.

    Raises
    ------
    ValueError
        With a one-line reason: not a finite decimal number, or a bare number above 1
        (the metrics are fractions; a percentage must say so with ``%``: a guess would
        turn a typo into a verdict).

    Examples
    --------
    >>> parse_value("41.23%")
    (0.4123, 5e-05)
    >>> parse_value("0.41")
    (0.41, 0.005)
    >>> parse_value("0")
    (0.0, 0.0)
    """
    stripped = text.strip()
    percent = stripped.endswith("%")
    number = stripped[:-1].strip() if percent else stripped
    try:
        dec = Decimal(number)
    except InvalidOperation:
        raise ValueError(f"value {text.strip()!r} is not a number") from None
    if not dec.is_finite():
        raise ValueError(f"value {text.strip()!r} is not a finite number")
    if percent:
        dec = dec.scaleb(-2)  # exact: moves the decimal point, keeps the printed digits
    elif abs(dec) > 1:
        raise ValueError(f"value {number} is above 1: metrics are fractions; "
                         f"write {number}% for a percentage")
    if not percent and number.lstrip("+-").isdigit():
        return float(dec), 0.0  # an integer claim is exact
    exponent = cast(int, dec.as_tuple().exponent)  # an int: dec is finite
    tolerance = float(Decimal(5).scaleb(exponent - 1))
    return float(dec), tolerance


def _number(value, name: str) -> float:
    if isinstance(value, bool) or value is None:
        raise ParameterError(f"{name} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise ParameterError(f"{name} must be finite, got {out}")
    return out


def judge_claim(value, *, first, last, tie_aware, tie_aware_std, original,
                tolerance=None) -> Verdict:
    """Judge a published value against one metric's numbers from the dumps.

    Parameters
    ----------
    value : str or float
        The published value. As a string (``"0.4123"``, ``"41.23%"``) it sets the rounding
        tolerance from its printed digits (see :func:`parse_value`); as a float the
        tolerance is :data:`DEFAULT_TOLERANCE` (5e-5, four printed decimals).
    first, last, tie_aware : float
        Dataset means of the metric with every tie broken in favour of the positive, against
        it, and in expectation; ``last <= tie_aware <= first``.
    tie_aware_std : float
        Standard deviation of the dataset mean under random tie-breaking, >= 0.
    original : float or None
        The value from the codebase's own ``np.argsort``, or None if unknown.
    tolerance : float, optional
        Override the rounding tolerance (>= 0).

    Returns
    -------
    Verdict

    Notes
    -----
    In order, with ``tol`` the tolerance and ``spread = max(2 * tie_aware_std, tol)``:

    1. ``value > first + tol``: 'impossible', 'above first' (no tie-breaking of these
       scores gives that number).
    2. ``value < last - tol``: 'impossible', 'below last'.
    3. ``value > tie_aware + spread``: 'tie-break only', 'above tie-aware' (only a
       tie-breaker that favours the positive, such as putting it first among equal
       scores, reaches it).
    4. ``value < tie_aware - spread``: 'consistent', 'below tie-aware' (a lower number is
       what a pessimistic tie-breaker or an honest rounding down gives).
    5. otherwise 'consistent', 'matches tie-aware'.

    Boundaries belong to the milder verdict: a claim exactly ``tol`` above ``first`` is not
    impossible (the comparisons allow ``1e-9 * tol`` for float rounding).

    Examples
    --------
    >>> v = judge_claim("0.4123", first=0.4125, last=0.30, tie_aware=0.35,
    ...                 tie_aware_std=0.001, original=0.4123)
    >>> v.verdict, v.detail, v.matches_original
    ('tie-break only', 'above tie-aware', True)
    """
    if isinstance(value, str):
        try:
            claimed, printed = parse_value(value)
        except ValueError as exc:
            raise ParameterError(str(exc)) from None
    else:
        claimed, printed = _number(value, "value"), DEFAULT_TOLERANCE
    if tolerance is None:
        tol = printed
    else:
        tol = _number(tolerance, "tolerance")
        if tol < 0:
            raise ParameterError(f"tolerance must be >= 0, got {tol}")
    first = _number(first, "first")
    last = _number(last, "last")
    tie_aware = _number(tie_aware, "tie_aware")
    tie_aware_std = _number(tie_aware_std, "tie_aware_std")
    if tie_aware_std < 0:
        raise ParameterError(f"tie_aware_std must be >= 0, got {tie_aware_std}")
    original = None if original is None else _number(original, "original")
    slack = _ORDER_SLACK * max(1.0, abs(first), abs(last))
    for name, inside in (("tie_aware", tie_aware), ("original", original)):
        if inside is not None and not last - slack <= inside <= first + slack:
            raise ParameterError(f"expected last <= {name} <= first, got last={last}, "
                                 f"{name}={inside}, first={first}")

    edge = tol * (1.0 + _BOUNDARY_SLACK)
    spread = max(2.0 * tie_aware_std, tol)
    band = spread * (1.0 + _BOUNDARY_SLACK)
    if claimed - first > edge:
        verdict, detail = "impossible", "above first"
    elif last - claimed > edge:
        verdict, detail = "impossible", "below last"
    elif claimed - tie_aware > band:
        verdict, detail = "tie-break only", "above tie-aware"
    elif tie_aware - claimed > band:
        verdict, detail = "consistent", "below tie-aware"
    else:
        verdict, detail = "consistent", "matches tie-aware"
    matches = None if original is None else abs(claimed - original) <= edge
    return Verdict(verdict, detail, claimed, tol, spread, first, last, tie_aware,
                   tie_aware_std, original, matches)


def judge_against(claim: Claim, row) -> Verdict:
    """Judge ``claim`` against a metric row (anything with ``first``, ``last``,
    ``tie_aware``, ``tie_aware_std`` and ``original``, such as a ``MetricRow``)."""
    return judge_claim(claim.text, first=row.first, last=row.last, tie_aware=row.tie_aware,
                       tie_aware_std=row.tie_aware_std, original=row.original)


def _parse_gamma(text: str, metric: str, k: int | None) -> float | None:
    # An empty cell says nothing; a value belongs to a signed metric only.
    if not text:
        return None
    if not REGISTRY[metric].signed:
        raise ValueError(f"{Metric(metric, k)} has no gamma; the {GAMMA_COLUMN} column is "
                         f"for the signed metrics ({', '.join(signed_names())})")
    try:
        return parse_gamma(text)
    except TieevalError as exc:
        raise ValueError(str(exc)) from None


def _parse_metric(name: str, k_text: str) -> tuple[str, int | None]:
    # "NDCG@10" in the metric column, or "NDCG" with 10 in the k column; not both disagreeing.
    k = None
    if k_text:
        try:
            k = int(k_text)
        except ValueError:
            raise ValueError(f"k must be a whole number >= 1, got {k_text!r}") from None
    try:
        if "@" in name or k is None:  # NDCG@10, or a name alone: MRR, ndcg_cut_10, P_5
            metric = Metric.parse(name)
            if k is not None and metric.k != k:
                raise ValueError(f"metric {name} and k {k} disagree")
        else:
            metric = Metric(name, k)
    except TieevalError as exc:
        raise ValueError(str(exc)) from None
    if isinstance(metric.k, float):
        raise ValueError(f"claims name metrics at a rank cutoff; {metric} has a recall level")
    return metric.name, metric.k


def read_claims(path) -> list[Claim]:
    """Read published numbers from a CSV file.

    Parameters
    ----------
    path : str or os.PathLike
        A UTF-8 CSV file (a byte-order mark is allowed) whose first line is a header naming
        the columns ``method, dataset, task, metric, k, value`` in any order. ``task`` and
        ``k`` may be left empty or left out; an optional ``gamma`` column says which
        ``--gamma`` row a signed metric's value is about; other columns (a source or a
        note) are ignored.

    Returns
    -------
    list of Claim
        In file order. Blank lines and lines whose first cell starts with ``#`` are skipped.

    Notes
    -----
    * ``metric`` is a registry name (HR, NDCG, MRR; case-insensitive), either with its
      cutoff (``NDCG@10``) or with the cutoff in ``k``.
    * ``value`` is the number as published (:func:`parse_value`), kept as text too, since
      its printed digits set the rounding tolerance.
    * ``gamma``, when given, is a number >= 0 and only on a signed metric (SHR, SRecall,
      SDCG, SNDCG); an empty cell leaves the claim's gamma to :func:`audit_groups`.

    Raises
    ------
    InputError
        One line naming the file and, for bad rows, the line: missing file, no header,
        missing column, wrong cell count, empty required cell, unknown metric, bad value.

    Examples
    --------
    A file such as::

        method,dataset,task,metric,k,value
        SASRec,ML-1M,,NDCG,10,0.4123
        BERT4Rec,ML-1M,,HR@10,,71.20%
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a claims CSV file")
    if os.path.exists(path):
        require_regular_file(path)  # a FIFO would block the open forever
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(_numbered_rows(fh))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except csv.Error as exc:
        raise InputError(f"{path}: malformed CSV ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    if not rows:
        raise InputError(f"{path}: empty file; expected a header line "
                         f"{','.join(CLAIM_COLUMNS)}")

    header_line, header = rows[0]
    names = [cell.strip().lower() for cell in header]
    where = f"{path}: line {header_line}"
    for i, name in enumerate(names):
        if name and name in names[:i]:
            raise InputError(f"{where}: column {name!r} appears twice")
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}; the first line "
                         f"must be a header such as {','.join(CLAIM_COLUMNS)}")
    index = {name: i for i, name in enumerate(names)}

    claims: list[Claim] = []
    for line, cells in rows[1:]:
        where = f"{path}: line {line}"
        if len(cells) != len(names):
            raise InputError(f"{where}: {len(cells)} cells, but the header has {len(names)}")
        cell = {c: (cells[index[c]].strip() if c in index else "")
                for c in CLAIM_COLUMNS + (GAMMA_COLUMN,)}
        for c in REQUIRED_COLUMNS:
            if not cell[c]:
                raise InputError(f"{where}: empty {c}")
        try:
            metric, k = _parse_metric(cell["metric"], cell["k"])
            value, tolerance = parse_value(cell["value"])
            gamma = _parse_gamma(cell[GAMMA_COLUMN], metric, k)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
        claims.append(Claim(cell["method"], cell["dataset"], cell["task"] or None, metric, k,
                            value, cell["value"], tolerance, line, gamma))
    return claims


def _numbered_rows(fh):
    """``(line number, cells)`` of each non-blank, non-comment CSV record."""
    reader = csv.reader(fh)
    start = 1
    for cells in reader:
        line, start = start, reader.line_num + 1  # the record's first physical line
        if any(c.strip() for c in cells) and not cells[0].lstrip().startswith("#"):
            yield line, cells


# ---------------------------------------------------------------------------------------
# Matching claims to runs (``tieeval audit``)


def _norm(text) -> str | None:
    return None if text is None else str(text).strip().casefold()


def _describe(labels: dict) -> str:
    return "/".join(str(labels.get(k)) if labels.get(k) is not None else "?"
                    for k in ("method", "dataset", "task"))


def match_group(claim: Claim, groups, source: str = "claims"):
    """The run group a claim is about, or None.

    A group matches when its ``method`` and ``dataset`` labels equal the claim's (ignoring
    case and surrounding spaces) and so does its ``task`` -- unless the claim leaves the
    task empty, when any task matches. Several matching groups (an empty task over runs of
    several tasks, or labels differing only in case) are an :class:`InputError`.
    """
    want = (_norm(claim.method), _norm(claim.dataset), _norm(claim.task))
    found = [g for g in groups
             if _norm(g.run_labels.get("method")) == want[0]
             and _norm(g.run_labels.get("dataset")) == want[1]
             and (want[2] is None or _norm(g.run_labels.get("task")) == want[2])]
    if len(found) > 1:
        which = ", ".join(_describe(g.run_labels) for g in found)
        hint = "; fill in its task" if claim.task is None else ""
        raise InputError(f"{source}: line {claim.line}: {claim.method}/{claim.dataset} "
                         f"matches several run groups ({which}){hint}")
    return found[0] if found else None


def audit_groups(claims: list[Claim], groups, source: str = "claims") -> list[AuditItem]:
    """Judge every claim against the seed means of its matching run group.

    Parameters
    ----------
    claims : list of Claim
        From :func:`read_claims`.
    groups : list of GroupResult
        Seed-averaged runs (:func:`tieeval.analysis.groups.group_runs`) evaluated with every claimed
        metric.
    source : str
        Name of the claims file, for error messages.

    Returns
    -------
    list of AuditItem
        In claim order; a claim that matches no group has ``verdict`` None (status
        ``'unmatched'``).

    Notes
    -----
    A signed metric evaluated at several gammas has one row per gamma: a claim on it names
    its gamma (the ``gamma`` column), and one that does not is an :class:`InputError`
    naming its line, unless a single gamma was evaluated. A gamma that was not evaluated
    is an :class:`InputError` too.
    """
    items = []
    for claim in claims:
        group = match_group(claim, groups, source)
        if group is None:
            items.append(AuditItem(claim, None, gamma=claim.gamma))
            continue
        row = _claimed_row(claim, group, source)
        items.append(AuditItem(claim, judge_against(claim, row), dict(group.run_labels),
                               group.seeds, tuple(r.path for r in group.runs),
                               row.gamma, row.labelled, original_rule_of(group.runs)))
    return items


def _claimed_row(claim: Claim, group, source: str):
    """The group's row of the claim's metric, at the claim's gamma (see audit_groups)."""
    rows = label_rows(group.metrics, claim.label)
    if not rows:
        raise ParameterError(f"{claim.label} was not evaluated for {_describe(group.run_labels)}")
    where = f"{source}: line {claim.line}"
    if claim.gamma is not None:
        picked = label_rows(rows, claim.label, claim.gamma)
        if not picked:
            raise InputError(f"{where}: {claim.label} at gamma {claim.gamma:g} was not "
                             f"evaluated ({gammas_text(rows)}); add it to --gamma")
        return picked[0]
    if len(rows) > 1:
        raise InputError(f"{where}: {claim.label} has one row per gamma "
                         f"({gammas_text(rows)}); say which in a '{GAMMA_COLUMN}' column, "
                         "or evaluate one --gamma")
    return rows[0]


def claimed_metrics(claims: list[Claim]) -> list[Metric]:
    """The distinct metrics the claims name, in file order."""
    return list(dict.fromkeys(Metric(c.metric, c.k) for c in claims))


def unmatched_message(items: list[AuditItem], groups, source: str) -> str | None:
    """One line about the claims that match no run (None when every claim matched)."""
    missing = [i.claim for i in items if i.verdict is None]
    if not missing:
        return None
    c = missing[0]
    task = f", task {c.task!r}" if c.task is not None else ""
    runs = ", ".join(_describe(g.run_labels) for g in groups[:5])
    more = f" and {len(groups) - 5} more" if len(groups) > 5 else ""
    return (f"{source}: line {c.line}: no run is labelled method {c.method!r}, dataset "
            f"{c.dataset!r}{task} (runs: {runs}{more}); "
            f"{'1 claim matches' if len(missing) == 1 else f'{len(missing)} claims match'} "
            "no run: label the dumps with --meta, --template or their metadata, or pass "
            "--ignore-unmatched")
