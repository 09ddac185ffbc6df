"""Precision what-ifs: --cast and --tolerance.

Oracles: numpy's own ``astype`` (which new ties a float32 cast creates), a table of every
finite bfloat16 value built from bit patterns with nearest-even chosen in exact rational
arithmetic, and a brute-force definition of the tolerance block with the tie-aware value
averaged over every rank the positive can take.
"""

from __future__ import annotations

import doctest
import json
import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import enumerated_ranks, hr_of_rank, ndcg_of_rank, rr_of_rank

import tieeval
import tieeval.kernels.whatif
from tieeval.cli import cli
from tieeval.engine.local import evaluate_dump
from tieeval.errors import InputError, ParameterError
from tieeval.io.open import open_dump
from tieeval.kernels.whatif import (
    CASTS,
    WhatIf,
    cast_scores,
    round_to_bfloat16,
)
from tieeval.metrics.metric import Metric

METRICS = [Metric("HR", 1), Metric("HR", 3), Metric("NDCG", 3), Metric("MRR")]
OF_RANK = {"HR": hr_of_rank, "NDCG": ndcg_of_rank, "MRR": rr_of_rank}


def run(*args):
    """The command's stdout (warnings go to stderr)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_doctests():
    assert doctest.testmod(tieeval.kernels.whatif).failed == 0


def brute_columns(scores: np.ndarray, metric: Metric, nan_worst: bool = False) -> dict:
    """first / last / tie-aware means by enumerating every consistent order of each row."""
    out = {"first": [], "last": [], "tie_aware": []}
    f = OF_RANK[metric.name]
    for row in scores:
        ranks = enumerated_ranks(row, 0, nan_worst)
        vals = f(ranks, metric.k)
        out["first"].append(vals.max())
        out["last"].append(vals.min())
        out["tie_aware"].append(vals.mean())
    return {k: math.fsum(v) / len(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------
# cast


def test_float32_cast_collapses_near_ties_as_astype_predicts(tmp_path, rng):
    # Scores a hair apart in float64: 1 + k 1e-10 are distinct doubles but one float32.
    rows = []
    for _ in range(7):
        row = np.concatenate([1.0 + rng.integers(0, 5, size=4) * 1e-10,
                              rng.choice([0.25, 0.5, 1.0 + 3e-8, 1.0 - 3e-8], size=3)])
        rng.shuffle(row)
        rows.append(row)
    scores = np.array(rows, dtype=np.float64)
    path = tmp_path / "near.npz"
    np.savez(path, scores=scores)
    cast = scores.astype(np.float32)
    assert (cast == cast[:, :1]).sum() > (scores == scores[:, :1]).sum()  # new ties exist
    got = evaluate_dump(open_dump(str(path)), METRICS, what_if=WhatIf(cast="float32"))
    for m in METRICS:
        want = brute_columns(cast, m)
        row = got.metric(str(m))
        for column, value in want.items():
            assert getattr(row, column) == pytest.approx(value, abs=1e-12), (m, column)
        # the stored float64 scores, evaluated plainly, see fewer ties
    plain = tieeval.evaluate_path(str(path), METRICS)
    assert plain.ties.positive_tie_size < got.ties.positive_tie_size
    want_b = np.mean((cast == cast[:, :1]).sum(1))
    assert got.ties.positive_tie_size == pytest.approx(want_b)
    assert got.dtype == "float64" and got.what_if == WhatIf(cast="float32")


def test_sigmoid_saturation_in_float32():
    # docs/METRICS.md section 12 says z = 17..30; sigmoid(17) = 1 - 4.1e-8 is more than half a
    # float32 ulp (3e-8) below 1, so it stays 0.99999994. From 18 on they all become 1.0f.
    z = np.arange(18, 31, dtype=np.float64)
    sig = 1.0 / (1.0 + np.exp(-z))
    assert np.float32(1.0 / (1.0 + np.exp(-17.0))) < 1
    assert len(np.unique(sig)) == len(z)
    assert np.all(cast_scores(sig, "float32") == np.float32(1.0))
    # Column 0 holds z = 18, the smallest: untied it ranks last; cast, it ties with all.
    r64 = tieeval.evaluate(np.array([sig]), k=[1])
    r32 = tieeval.evaluate(cast_scores(np.array([sig]), "float32"), k=[1])
    assert r64.metric("MRR").tie_aware == pytest.approx(1 / len(z))
    assert r32.metric("HR@1").tie_aware == pytest.approx(1 / len(z))
    assert r32.metric("HR@1").first == 1.0


def test_float16_cast_is_numpy_astype_with_overflow():
    x = np.array([1e5, -1e5, 65504.0, 65520.0, np.nan, np.inf, -np.inf, 1e-8, -0.0])
    got = cast_scores(x, "float16")
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert got.dtype == np.float16
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isposinf(got[0]) and np.isneginf(got[1]) and np.isposinf(got[3])


def _bf16_table():
    """Every finite non-negative bfloat16 value (float64, ascending) and its bit pattern."""
    patterns = np.arange(0, 0x7F80, dtype=np.uint32)
    values = (patterns << 16).view(np.float32).astype(np.float64)
    return values, patterns


BF16_VALUES, BF16_PATTERNS = _bf16_table()
BF16_OVERFLOW = 2.0 ** 128  # the next value after the largest would be 2^128 (pattern 0x7F80)


def bf16_oracle(x: float) -> float:
    """Nearest bfloat16 to x, ties to the even pattern, decided in exact rationals."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return x
    sign = -1.0 if math.copysign(1.0, x) < 0 else 1.0
    ax = abs(x)
    i = int(np.searchsorted(BF16_VALUES, ax, side="right")) - 1  # BF16_VALUES[i] <= ax
    lo, lo_pat = BF16_VALUES[i], int(BF16_PATTERNS[i])
    if lo == ax:
        return sign * lo
    if i + 1 < len(BF16_VALUES):
        hi = BF16_VALUES[i + 1]
    else:
        hi = BF16_OVERFLOW  # the pattern after the largest (0x7F7F, odd) is even
    d_lo = Fraction(ax) - Fraction(lo)
    d_hi = Fraction(hi) - Fraction(ax)
    if d_lo < d_hi or (d_lo == d_hi and lo_pat % 2 == 0):  # neighbours: one is even
        out = lo
    else:
        out = hi
    return sign * (math.inf if out == BF16_OVERFLOW else out)


def _check_bf16(x: np.ndarray) -> None:
    got = round_to_bfloat16(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.all(got.view(np.uint32)[~np.isnan(got)] & 0xFFFF == 0)
    with np.errstate(invalid="ignore"):  # NaN payloads widen with a warning
        pairs = list(zip(x.astype(np.float64).ravel(), got.astype(np.float64).ravel()))
    for value, result in pairs:
        want = bf16_oracle(float(value))
        if math.isnan(want):
            assert math.isnan(result)
        else:
            assert result == want, (value, result, want)
            assert math.copysign(1.0, result) == math.copysign(1.0, want)


def test_bfloat16_random_float32_against_oracle(rng):
    bits = rng.integers(0, 2 ** 32, size=3000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    # plus exact midpoints (ties to even) and their neighbours
    base = rng.integers(0, 0x7F7F, size=300, dtype=np.uint32) << 16
    mids = (base | 0x8000).view(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(0))])
    _check_bf16(np.concatenate([x, near, -near]))


def test_bfloat16_float64_rounds_once(rng):
    # float64 scores across the bfloat16 range, and values within a float32 half-ulp of a
    # bfloat16 midpoint: rounding to float32 first (nearest) and then to bfloat16 would land
    # on the midpoint and break the tie the wrong way.
    x = np.exp(rng.uniform(-80, 80, size=1500)) * rng.choice([-1.0, 1.0], size=1500)
    trap = 1.0 + 2.0 ** -8 + 2.0 ** -30  # just above the midpoint between 1 and 1 + 2^-7
    naive = np.float32(trap)
    assert float(naive) == 1.0 + 2.0 ** -8  # float32 alone lands exactly on the midpoint
    assert float(round_to_bfloat16(np.array([naive]))[0]) == 1.0  # which ties to even...
    assert float(round_to_bfloat16(np.array([trap]))[0]) == 1.0 + 2.0 ** -7  # but x is above
    traps = []
    for p in rng.integers(0x0080, 0x7F7F, size=200):
        lo = float((np.uint32(p) << np.uint32(16)).view(np.float32))
        ulp = float((np.uint32(p + 1) << np.uint32(16)).view(np.float32)) - lo
        mid = lo + ulp / 2
        traps += [mid + ulp * 2.0 ** -30, mid - ulp * 2.0 ** -30, mid]
    _check_bf16(np.concatenate([x, np.array(traps)]))


def test_bfloat16_specials_and_other_dtypes():
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -3.4e38, 1e-40,
                  -1e-45, 3.3895314e38], dtype=np.float32)
    got = round_to_bfloat16(x)
    assert np.isnan(got[0]) and np.isnan(got[1])
    assert np.isposinf(got[2]) and np.isneginf(got[3])
    assert np.isposinf(got[6]) and np.isneginf(got[7])  # beyond the largest bfloat16
    _check_bf16(x)
    half = np.array([1.0009765625, 65504.0, -3.0e-5, 0.1], dtype=np.float16)  # 1 + 2^-10
    _check_bf16(half)
    ints = np.array([[1, 255, 256, 257, 258, -65535, 2 ** 40 + 1]], dtype=np.int64)
    _check_bf16(ints)
    with pytest.raises(ParameterError, match="cast must be one of"):
        cast_scores(x, "float8")


@pytest.mark.parametrize("target", CASTS)
def test_cast_preserves_nan_for_the_nan_policy(tmp_path, target):
    scores = np.array([[0.5, np.nan, 0.5000001], [np.nan, 1.0, 0.2]], dtype=np.float64)
    path = tmp_path / "nan.npz"
    np.savez(path, scores=scores)
    with pytest.raises(InputError, match=r"row 0: NaN score"):
        evaluate_dump(open_dump(str(path)), METRICS, what_if=WhatIf(cast=target))
    got = evaluate_dump(open_dump(str(path)), METRICS, what_if=WhatIf(cast=target),
                                nan_policy="worst")
    cast = cast_scores(scores, target)
    for m in METRICS:
        want = brute_columns(cast, m, nan_worst=True)
        assert got.metric(str(m)).tie_aware == pytest.approx(want["tie_aware"], abs=1e-12)


# ---------------------------------------------------------------------------------------
# tolerance


def brute_tolerance(rows, atol: float, metric: Metric, nan_worst: bool = False) -> dict:
    """Means of first / last / tie-aware and tie statistics, from the definition."""
    cols = {"first": [], "last": [], "tie_aware": [], "b": [], "top": []}
    f = OF_RANK[metric.name]
    for row in rows:
        row = [float(v) for v in row]
        p = row[0]
        if math.isnan(p):
            a = sum(not math.isnan(s) for s in row)
            b = sum(math.isnan(s) for s in row)
        else:
            tied = [s == p or abs(s - p) <= atol for s in row]
            a = sum(s > p and not t for s, t in zip(row, tied))
            b = sum(tied)
        finite = [s for s in row if not math.isnan(s)]
        if finite:
            mx = max(finite)
            top = sum(s == mx or abs(s - mx) <= atol for s in row)
        else:
            top = len(row)
        vals = [float(f(np.array([r]), metric.k)[0]) for r in range(a + 1, a + b + 1)]
        cols["first"].append(vals[0])
        cols["last"].append(vals[-1])
        cols["tie_aware"].append(math.fsum(vals) / len(vals))
        cols["b"].append(b)
        cols["top"].append(top)
    return {k: math.fsum(v) / len(v) for k, v in cols.items()}


def _pool_rows(rng, n_rows, n_cols, pool, ragged=False):
    rows = []
    for _ in range(n_rows):
        n = int(rng.integers(2, n_cols + 1)) if ragged else n_cols
        rows.append(rng.choice(np.array(pool, dtype=np.float64), size=n))
    return rows


@pytest.mark.parametrize("atol", [0.0, 1e-3, 0.011, 0.5])
def test_tolerance_dense_against_definition(tmp_path, rng, atol):
    pool = (0.5, 0.501, 0.509, 0.49, 0.52, 1.0, 0.999, np.inf, -np.inf, 0.0)
    rows = _pool_rows(rng, 40, 8, pool)
    scores = np.array(rows, dtype=np.float32)
    path = tmp_path / "s.npz"
    np.savez(path, scores=scores)
    got = evaluate_dump(open_dump(str(path)), METRICS, what_if=WhatIf(tolerance=atol))
    plain = tieeval.evaluate(scores, metrics=METRICS)
    for m in METRICS:
        want = brute_tolerance(scores, atol, m)
        row = got.metric(str(m))
        for column in ("first", "last", "tie_aware"):
            assert getattr(row, column) == pytest.approx(want[column], abs=1e-12), (m, column)
        # the original column is the codebases' argsort on the scores themselves
        assert row.original == plain.metric(str(m)).original
        assert row.last <= row.original <= row.first
    want = brute_tolerance(scores, atol, METRICS[0])
    assert got.ties.positive_tie_size == pytest.approx(want["b"])
    assert got.ties.top_tie_size == pytest.approx(want["top"])
    if atol == 0.0:
        assert [r.to_dict() for r in got.metrics] == [r.to_dict() for r in plain.metrics]


def test_tolerance_ragged_parquet_with_nan_worst(tmp_path, rng):
    pool = (0.3, 0.3001, 0.2999, 0.31, np.nan, -np.inf, 2.0)
    rows = _pool_rows(rng, 60, 7, pool, ragged=True)
    rows.append(np.array([np.nan, np.nan]))  # an all-NaN row
    table = pa.table({"scores": pa.array([r.tolist() for r in rows],
                                         type=pa.list_(pa.float64()))})
    path = tmp_path / "r.parquet"
    pq.write_table(table, path)
    atol = 2e-4
    got = evaluate_dump(open_dump(str(path)), METRICS, what_if=WhatIf(tolerance=atol),
                                nan_policy="worst", batch_rows=7)
    for m in METRICS:
        want = brute_tolerance(rows, atol, m, nan_worst=True)
        assert got.metric(str(m)).tie_aware == pytest.approx(want["tie_aware"], abs=1e-12)
        assert got.metric(str(m)).last == pytest.approx(want["last"], abs=1e-12)
    want = brute_tolerance(rows, atol, METRICS[0], nan_worst=True)
    assert got.ties.top_tie_size == pytest.approx(want["top"])
    assert got.ties.positive_tie_size == pytest.approx(want["b"])


def test_cast_then_tolerance(tmp_path, rng):
    scores = rng.normal(size=(30, 6)) * 1e-3 + 0.7
    path = tmp_path / "c.npz"
    np.savez(path, scores=scores)
    what_if = WhatIf(cast="bfloat16", tolerance=0.004)
    got = evaluate_dump(open_dump(str(path)), METRICS, what_if=what_if)
    cast = round_to_bfloat16(scores)
    want = brute_tolerance(cast, 0.004, Metric("NDCG", 3))
    assert got.metric("NDCG@3").tie_aware == pytest.approx(want["tie_aware"], abs=1e-12)
    assert got.to_dict()["what_if"] == {
        "cast": "bfloat16", "tolerance": 0.004,
        "description": "scores rounded to bfloat16 (nearest, ties to even); then scores "
                       "within 0.004 of the positive (and of the row maximum) counted as "
                       "tied"}


@pytest.mark.parametrize("bad", [-1e-3, float("nan"), float("inf"), "x", True])
def test_bad_tolerance_is_refused(bad):
    with pytest.raises(ParameterError, match="tolerance must be"):
        WhatIf(tolerance=bad)


# ---------------------------------------------------------------------------------------
# the command line labels what-ifs in every format


@pytest.fixture
def near_npz(tmp_path):
    scores = np.array([[1.0, 1.0 + 1e-10, 0.5], [0.9, 0.1, 0.9 + 1e-12],
                       [0.3, 0.2, 0.1]], dtype=np.float64)
    path = tmp_path / "near.npz"
    np.savez(path, scores=scores)
    return str(path), scores


def test_compare_cast_json_is_labelled(near_npz):
    path, scores = near_npz
    doc = json.loads(run("compare", path, "--k", "1", "--cast", "float32",
                         "--format", "json").stdout)
    assert doc["what_if"]["cast"] == "float32"
    assert doc["runs"][0]["what_if"]["cast"] == "float32"
    hr1 = doc["runs"][0]["metrics"][0]
    # float32 ties rows 0 and 1 two ways at the top: 1/2 + 1/2 + 1, over 3 rows
    assert hr1["tie_aware"] == pytest.approx(2 / 3)
    plain = json.loads(run("compare", path, "--k", "1", "--format", "json").stdout)
    assert "what_if" not in plain and "what_if" not in plain["runs"][0]
    assert plain["runs"][0]["metrics"][0]["tie_aware"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("fmt,marker", [("table", "WHAT-IF ANALYSIS"),
                                        ("markdown", "> **WHAT-IF ANALYSIS"),
                                        ("latex", "% WHAT-IF ANALYSIS")])
def test_compare_text_formats_carry_a_note(near_npz, fmt, marker):
    path, _ = near_npz
    out = run("compare", path, "--tolerance", "1e-9", "--format", fmt).stdout
    assert out.startswith(marker)
    assert "within 1e-09 of the positive" in out.splitlines()[0]


def test_compare_csv_has_a_what_if_column(near_npz):
    path, _ = near_npz
    out = run("compare", path, "--cast", "bfloat16", "--format", "csv").stdout
    header, first = out.splitlines()[:2]
    assert header.endswith(",what_if")
    assert first.endswith('"scores rounded to bfloat16 (nearest, ties to even)"')


@pytest.mark.parametrize("args,fragment", [
    (["--tolerance", "-1"], "tolerance must be a finite number >= 0"),
    (["--tolerance", "nan"], "tolerance must be a finite number >= 0"),
    (["--cast", "float8"], "'float8' is not one of"),
])
def test_bad_what_if_options_exit_2(near_npz, args, fragment):
    path, _ = near_npz
    result = CliRunner().invoke(cli, ["compare", path, *args])
    assert result.exit_code == 2
    assert fragment in result.output


def _chain_snapped(row, atol):
    """Each score replaced by the top of its chain: neighbours in descending order whose
    float64 gap is at most ``atol`` share a block (computed independently of the kernel)."""
    order = sorted(range(len(row)), key=lambda i: -row[i])
    out = list(row)
    top = row[order[0]]
    for prev, cur in zip(order, order[1:]):
        if row[prev] - row[cur] > atol:
            top = row[cur]
        out[cur] = top
    out[order[0]] = row[order[0]]
    return np.array(out)


def test_tolerance_on_labelled_rows_chains_neighbours(rng):
    """On labelled rows the tolerance joins chains of neighbours within ATOL; every column
    then equals enumeration over the chained blocks."""
    import math

    from helpers import tie_orderings

    from tieeval.engine.local import evaluate_labels

    def ndcg3(seq):
        dcg = sum(x / math.log2(r + 1) for r, x in enumerate(seq[:3], 1) if x > 0)
        ideal = sorted((x for x in seq if x > 0), reverse=True)[:3]
        return dcg / sum(x / math.log2(r + 1) for r, x in enumerate(ideal, 1))

    atol = 0.011
    scores = np.round(rng.integers(0, 6, size=(12, 6)) * 0.01
                      + rng.integers(0, 2, size=(12, 6)) * 0.5, 3)
    labels = rng.choice([0, 1, 2], size=scores.shape)
    labels[:, 0] = 1
    got = evaluate_labels(scores, labels, metrics=["NDCG@3"], what_if=WhatIf(tolerance=atol))
    row = got.metric("NDCG@3")
    values = [[ndcg3(list(seq)) for seq in tie_orderings(_chain_snapped(s, atol), lab)]
              for s, lab in zip(scores, labels)]
    assert row.tie_aware == pytest.approx(np.mean([np.mean(v) for v in values]), abs=1e-12)
    assert row.first == pytest.approx(np.mean([max(v) for v in values]), abs=1e-12)
    assert row.last == pytest.approx(np.mean([min(v) for v in values]), abs=1e-12)
    assert row.last <= row.original <= row.first
    assert "chained" in got.to_dict()["what_if"]["description"]
