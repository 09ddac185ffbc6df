"""Tests for tieeval.analysis.audit: verdicts on published numbers and the claims CSV reader.

The numbers are constructed so that each verdict boundary is hit exactly: a claim printed
with d decimals stands for an interval of half-width 5 * 10**-(d+1) around it.
"""

from __future__ import annotations

import doctest

import pytest

import tieeval.analysis.audit
from tieeval.analysis.audit import (
    DEFAULT_TOLERANCE,
    VERDICTS,
    Claim,
    judge_against,
    judge_claim,
    parse_value,
    read_claims,
)
from tieeval.errors import InputError, ParameterError
from tieeval.records.results import MetricRow

# A metric whose tie-breaks matter: last 0.30, tie-aware 0.40 +- 0.01, first 0.50.
ROW = dict(first=0.5, last=0.3, tie_aware=0.4, tie_aware_std=0.01, original=0.45)


def judge(value, **overrides):
    return judge_claim(value, **{**ROW, **overrides})


def test_doctests():
    assert doctest.testmod(tieeval.analysis.audit).failed == 0


# ---------------------------------------------------------------------------------------
# parse_value


@pytest.mark.parametrize("text,value,tolerance", [
    ("0.4123", 0.4123, 5e-5),
    ("41.23%", 0.4123, 5e-5),
    (" 41.23 % ", 0.4123, 5e-5),
    ("41.2%", 0.412, 5e-4),
    ("74.00%", 0.74, 5e-5),
    ("0.41", 0.41, 5e-3),
    (".41", 0.41, 5e-3),
    ("4.1e-1", 0.41, 5e-3),
    ("0.412300", 0.4123, 5e-7),
    ("1", 1.0, 0.0),  # an integer claim is exact
    ("1.0000", 1.0, 5e-5),
    ("100%", 1.0, 5e-3),
    ("0", 0.0, 0.0),
    ("0.0", 0.0, 0.05),
    ("-0.0352", -0.0352, 5e-5),
])
def test_parse_value(text, value, tolerance):
    got_value, got_tolerance = parse_value(text)
    assert got_value == value
    assert got_tolerance == pytest.approx(tolerance, rel=1e-12)


@pytest.mark.parametrize("text,message", [
    ("74.00", "value 74.00 is above 1: metrics are fractions; write 74.00% for a percentage"),
    ("abc", "value 'abc' is not a number"),
    ("", "value '' is not a number"),
    ("%", "value '%' is not a number"),
    ("nan", "value 'nan' is not a finite number"),
    ("inf%", "value 'inf%' is not a finite number"),
])
def test_parse_value_errors(text, message):
    with pytest.raises(ValueError) as info:
        parse_value(text)
    assert str(info.value) == message


# ---------------------------------------------------------------------------------------
# judge_claim: each verdict and its boundaries


def test_verdict_names():
    assert VERDICTS == ("impossible", "tie-break only", "consistent")
    assert DEFAULT_TOLERANCE == 5e-5


@pytest.mark.parametrize("value,verdict,detail", [
    ("0.5001", "impossible", "above first"),       # 1e-4 above first > 5e-5
    ("0.5000", "tie-break only", "above tie-aware"),  # exactly first
    ("0.4500", "tie-break only", "above tie-aware"),  # = original, 2.5 sd above tie-aware
    ("0.4201", "tie-break only", "above tie-aware"),  # just beyond 2 sd
    ("0.4200", "consistent", "matches tie-aware"),  # exactly 2 sd
    ("0.4000", "consistent", "matches tie-aware"),
    ("0.3800", "consistent", "matches tie-aware"),  # exactly 2 sd below
    ("0.3799", "consistent", "below tie-aware"),
    ("0.3000", "consistent", "below tie-aware"),  # exactly last
    ("0.2999", "impossible", "below last"),
])
def test_verdicts(value, verdict, detail):
    v = judge(value)
    assert (v.verdict, v.detail) == (verdict, detail)
    assert v.tolerance == pytest.approx(5e-5)
    assert v.spread == pytest.approx(0.02)


def test_rounding_tolerance_boundary_at_first():
    # first = 0.49995 prints as 0.5000 (or 0.4999): a claim of "0.5000" is allowed,
    # exactly one rounding tolerance above first.
    v = judge("0.5000", first=0.49995)
    assert v.verdict == "tie-break only"
    # 0.49994 cannot print as 0.5000: 6e-5 above first
    assert judge("0.5000", first=0.49994).verdict == "impossible"
    # the same claim printed with two decimals covers [0.495, 0.505]
    assert judge("0.50", first=0.496).verdict == "tie-break only"
    assert judge("0.50", first=0.494).verdict == "impossible"
    # and as a percentage with two decimals it is as precise as four decimals
    assert judge("50.00%", first=0.49995).verdict == "tie-break only"
    assert judge("50.00%", first=0.49994).verdict == "impossible"


def test_rounding_tolerance_boundary_at_last():
    assert judge("0.3000", last=0.30005).detail == "below tie-aware"
    assert judge("0.3000", last=0.30006).detail == "below last"


def test_float_claims_use_the_default_tolerance():
    assert judge(0.50005).verdict == "tie-break only"
    assert judge(0.50006).verdict == "impossible"
    assert judge(0.5).tolerance == DEFAULT_TOLERANCE


def test_explicit_tolerance_overrides_the_printed_digits():
    assert judge("0.5001", tolerance=1e-4).verdict == "tie-break only"
    assert judge("0.50", tolerance=0.0, first=0.4999).verdict == "impossible"
    assert judge(0.5, tolerance=0).verdict == "tie-break only"


def test_spread_is_at_least_the_rounding_tolerance():
    # no tie-break variance: a claim within printing precision of tie-aware still matches
    v = judge("0.4000", tie_aware=0.40004, tie_aware_std=0.0)
    assert (v.spread, v.verdict, v.detail) == (5e-5, "consistent", "matches tie-aware")
    # 6e-5 above tie-aware is beyond the printed precision of four decimals ...
    assert judge("0.4001", tie_aware=0.40004, tie_aware_std=0.0).verdict == "tie-break only"
    # ... but not of two: "0.40" stands for [0.395, 0.405]
    v = judge("0.40", tie_aware=0.40404, tie_aware_std=0.0)
    assert (v.spread, v.detail) == (pytest.approx(5e-3), "matches tie-aware")
    # a tie-break spread wider than the rounding tolerance wins
    assert judge("0.4001", tie_aware=0.40004, tie_aware_std=1e-4).spread == 2e-4


def test_untied_metric_allows_only_its_value():
    untied = dict(first=0.4, last=0.4, tie_aware=0.4, tie_aware_std=0.0, original=0.4)
    assert judge("0.4000", **untied).verdict == "consistent"
    assert judge("0.4001", **untied).verdict == "impossible"
    assert judge("0.3999", **untied).detail == "below last"


def test_matches_original():
    assert judge("0.4500").matches_original is True
    assert judge("0.4500", original=0.45005).matches_original is True
    assert judge("0.4500", original=0.4501).matches_original is False
    assert judge("0.4500", original=None).matches_original is None


def test_verdict_to_dict():
    d = judge("0.4500").to_dict()
    assert d["verdict"] == "tie-break only"
    assert d["value"] == 0.45
    assert set(d) == {"verdict", "detail", "value", "tolerance", "spread", "first", "last",
                      "tie_aware", "tie_aware_std", "original", "matches_original"}


@pytest.mark.parametrize("overrides,message", [
    (dict(value="74.00"), "value 74.00 is above 1"),
    (dict(value="high"), "value 'high' is not a number"),
    (dict(value=float("nan")), "value must be finite, got nan"),
    (dict(value=True), "value must be a number, got True"),
    (dict(first=None), "first must be a number, got None"),
    (dict(tie_aware_std=-0.1), "tie_aware_std must be >= 0, got -0.1"),
    (dict(tolerance=-1e-5), "tolerance must be >= 0, got -1e-05"),
    (dict(last=0.6), "expected last <= tie_aware <= first, got last=0.6, tie_aware=0.4, "
                     "first=0.5"),
    (dict(tie_aware=0.51), "expected last <= tie_aware <= first"),
    (dict(original=0.2), "expected last <= original <= first, got last=0.3, original=0.2"),
])
def test_judge_validation(overrides, message):
    args = {**ROW, "value": "0.4", **overrides}
    value = args.pop("value")
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        judge_claim(value, **args)


def test_judge_against_a_metric_row():
    row = MetricRow("NDCG", 10, original=0.45, first=0.5, last=0.3, tie_aware=0.4,
                    tie_aware_std=0.01, instances=100)
    claim = Claim("SASRec", "ML-1M", None, "NDCG", 10, 0.45, "45.00%", 5e-5, 2)
    v = judge_against(claim, row)
    assert (v.verdict, v.matches_original, v.tolerance) == ("tie-break only", True,
                                                            pytest.approx(5e-5))
    assert claim.label == row.label == "NDCG@10"


# ---------------------------------------------------------------------------------------
# read_claims


def write(tmp_path, text, name="claims.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_read_claims(tmp_path):
    path = write(tmp_path, (
        "method,dataset,task,metric,k,value\n"
        "SASRec,ML-1M,,NDCG,10,0.4123\n"
        "\"BERT4Rec, v2\",ML-1M,next-item,HR@10,,71.20%\n"
        "GRU4Rec,Beauty,,mrr,,.051\n"
    ))
    claims = read_claims(path)
    assert claims == [
        Claim("SASRec", "ML-1M", None, "NDCG", 10, 0.4123, "0.4123", pytest.approx(5e-5), 2),
        Claim("BERT4Rec, v2", "ML-1M", "next-item", "HR", 10, 0.712, "71.20%",
              pytest.approx(5e-5), 3),
        Claim("GRU4Rec", "Beauty", None, "MRR", None, 0.051, ".051", pytest.approx(5e-4), 4),
    ]
    assert [c.label for c in claims] == ["NDCG@10", "HR@10", "MRR"]
    assert claims[0].to_dict()["text"] == "0.4123"


def test_read_claims_flexible_layout(tmp_path):
    # any column order, task and k columns left out, extra columns ignored, a byte-order
    # mark, comments, blank lines, header names in any case, str path
    path = write(tmp_path, (
        "# claims from Table 3\n"
        "\n"
        "Value , Metric,Dataset,Method,Source\n"
        "0.3%,NDCG@5,Yelp,LightGCN,Table 3\n"
        "# a comment between rows\n"
        "   \n"
        "0.25,HR@1,Yelp,LightGCN,\n"
    ), encoding="utf-8-sig")
    claims = read_claims(str(path))
    assert [(c.method, c.dataset, c.task, c.label, c.value, c.line) for c in claims] == [
        ("LightGCN", "Yelp", None, "NDCG@5", 0.003, 4),
        ("LightGCN", "Yelp", None, "HR@1", 0.25, 7)]
    assert claims[0].tolerance == pytest.approx(5e-4)


def test_read_claims_then_judge(tmp_path):
    path = write(tmp_path, "method,dataset,metric,value\nA,D,NDCG@10,0.5001\nB,D,NDCG@10,40%\n")
    verdicts = [judge_claim(c.text, **ROW) for c in read_claims(path)]
    assert [v.verdict for v in verdicts] == ["impossible", "consistent"]
    assert verdicts[1].tolerance == pytest.approx(5e-3)


def test_read_claims_header_only(tmp_path):
    assert read_claims(write(tmp_path, "method,dataset,task,metric,k,value\n")) == []


HEADER = "method,dataset,task,metric,k,value\n"


@pytest.mark.parametrize("text,message", [
    ("", "empty file; expected a header line method,dataset,task,metric,k,value"),
    ("# only a comment\n\n", "empty file; expected a header line"),
    ("SASRec,ML-1M,,NDCG,10,0.4123\n",
     "line 1: missing column(s) method, dataset, metric, value; the first line must be a "
     "header such as method,dataset,task,metric,k,value"),
    ("method,dataset,metric,k\n", "line 1: missing column(s) value;"),
    ("method,dataset,metric,value,Value\n", "line 1: column 'value' appears twice"),
    (HEADER + "A,D,,NDCG,10\n", "line 2: 5 cells, but the header has 6"),
    (HEADER + "A,D,,NDCG,10,0.1,extra\n", "line 2: 7 cells, but the header has 6"),
    (HEADER + "\n# c\nA,D,,NDCG,10,0.1\n ,D,,NDCG,10,0.1\n", "line 5: empty method"),
    (HEADER + "A,,,NDCG,10,0.1\n", "line 2: empty dataset"),
    (HEADER + "A,D,,,10,0.1\n", "line 2: empty metric"),
    (HEADER + "A,D,,NDCG,10,\n", "line 2: empty value"),
    # one registry for every metric: NDCG without K and MRR@K are metrics too
    (HEADER + "A,D,,Recal,10,0.1\n",
     "line 2: unknown metric 'Recal'; did you mean Recall or SRecall?"),
    (HEADER + "A,D,,HR,,0.1\n", "line 2: HR needs a cutoff, e.g. HR@10"),
    (HEADER + "A,D,,V-AUC,10,0.1\n", "line 2: V-AUC takes no cutoff (got V-AUC@10)"),
    (HEADER + "A,D,,VAUC@20,,0.1\n", "line 2: V-AUC takes no cutoff (got V-AUC@20)"),
    (HEADER + "A,D,,HR,ten,0.1\n", "line 2: k must be a whole number >= 1, got 'ten'"),
    (HEADER + "A,D,,HR,10.0,0.1\n", "line 2: k must be a whole number >= 1, got '10.0'"),
    (HEADER + "A,D,,HR,0,0.1\n", "line 2: K must be >= 1, got 0"),
    (HEADER + "A,D,,HR@5,10,0.1\n", "line 2: metric HR@5 and k 10 disagree"),
    (HEADER + "A,D,,HR@x,,0.1\n", "line 2: cutoff in 'HR@x' must be a whole number >= 1"),
    (HEADER + "A,D,,HR,10,0.1O\n", "line 2: value '0.1O' is not a number"),
    (HEADER + "A,D,,HR,10,74.00\n",
     "line 2: value 74.00 is above 1: metrics are fractions; write 74.00% for a percentage"),
])
def test_read_claims_errors(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_claims(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


def test_read_claims_file_errors(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(InputError, match=r"nope\.csv: no such file$"):
        read_claims(missing)
    with pytest.raises(InputError, match="is a directory, not a claims CSV file$"):
        read_claims(tmp_path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("method,dataset,metric,value\nA,Caf\xe9,HR@1,0.5\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin\.csv: not UTF-8 text$"):
        read_claims(latin)
