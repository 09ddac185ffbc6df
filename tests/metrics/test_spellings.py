"""trec_eval's and ir_measures' spellings of the registry's metrics.

The expected translations are written here from trec_eval's and ir_measures' documentation
(trec_eval's measure names and ``-m`` syntax, ir_measures/measures/*.py), not read back
from tieeval's tables. A mapping whose tieeval metric the registry does not have yet is
skipped, not failed.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from guide import read

from tieeval.analysis.check import parse_metric_key
from tieeval.engine.arguments import metric_list
from tieeval.errors import ParameterError
from tieeval.metrics import spellings
from tieeval.metrics.metric import Metric
from tieeval.metrics.options import parse_rel_metric
from tieeval.metrics.registry import REGISTRY

# trec_eval's name -> tieeval's canonical name
TREC_EVAL = [
    ("map", "MAP"), ("map_cut_100", "MAP@100"), ("map_cut_5", "MAP@5"),
    ("P_10", "Precision@10"), ("P_1000", "Precision@1000"), ("recall_1000", "Recall@1000"),
    ("recall_5", "Recall@5"), ("ndcg", "NDCG"), ("ndcg_cut_10", "NDCG@10"),
    ("recip_rank", "MRR"), ("success_1", "Success@1"), ("success_10", "Success@10"),
    ("Rprec", "Rprec"), ("bpref", "Bpref"), ("gm_map", "GMAP"),
    ("iprec_at_recall_0.10", "IPrec@0.1"), ("iprec_at_recall_0.1", "IPrec@0.1"),
    ("iprec_at_recall_.10", "IPrec@0.1"), ("iprec_at_recall_0.00", "IPrec@0.0"),
    ("iprec_at_recall_1.00", "IPrec@1.0"),
    ("num_ret", "NumRet"), ("num_rel", "NumRel"), ("num_rel_ret", "NumRelRet"),
    ("num_q", "NumQ"),
]

# ir_measures' name -> tieeval's canonical name
IR_MEASURES = [
    ("P@10", "Precision@10"), ("R@100", "Recall@100"), ("Recall@100", "Recall@100"),
    ("nDCG@10", "NDCG@10"), ("nDCG", "NDCG"), ("AP", "MAP"), ("AP@100", "MAP@100"),
    ("RR", "MRR"), ("RR@10", "MRR@10"), ("RR(cutoff=10)", "MRR@10"),
    ("AP(rel=1)@5", "MAP@5"), ("Success@10", "Success@10"), ("Rprec", "Rprec"),
    ("Bpref", "Bpref"), ("IPrec@0.1", "IPrec@0.1"), ("Judged@10", "Judged@10"),
    ("ERR@20", "ERR@20"), ("NumRet", "NumRet"), ("NumRel", "NumRel"),
    ("NumRelRet", "NumRelRet"), ("NumRet(rel=1)", "NumRelRet"), ("NumQ", "NumQ"),
]


def canonical(text: str) -> Metric:
    """The tieeval metric ``text`` names; skip the test while the registry lacks it."""
    name = text.split("@")[0]
    if name not in REGISTRY:
        pytest.skip(f"{name} is not a registered metric yet")
    return Metric.parse(text)


@pytest.mark.parametrize("text,expected", TREC_EVAL + IR_MEASURES)
def test_spellings_name_the_registry_metric(text, expected):
    want = canonical(expected)
    assert Metric.parse(text) == want
    assert Metric.expand(text) == [want]
    # the metric lists of the API, and the thresholds of check, take them too
    assert metric_list(text) == [want]
    assert parse_metric_key(f"{text}")[0] == want


@pytest.mark.parametrize("text,expected", [
    ("P.5,10", ["Precision@5", "Precision@10"]),
    ("P.10,5", ["Precision@5", "Precision@10"]),  # sorted, as trec_eval sorts them
    ("ndcg_cut.10,20", ["NDCG@10", "NDCG@20"]),
    ("map_cut.100", ["MAP@100"]),
    ("recall.5,1000", ["Recall@5", "Recall@1000"]),
    ("success.1,5,10", ["Success@1", "Success@5", "Success@10"]),
    ("iprec_at_recall..10,.20", ["IPrec@0.1", "IPrec@0.2"]),
    ("ndcg_cut", [f"NDCG@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]),
    ("ndcg.", ["NDCG"]),
])
def test_trec_eval_lists_expand(text, expected):
    want = [canonical(t) for t in expected]
    assert Metric.expand(text) == want
    assert metric_list(["MRR", text]) == list(dict.fromkeys([Metric("MRR"), *want]))
    if len(want) > 1:
        with pytest.raises(ParameterError, match="names .* metrics"):
            Metric.parse(text)


# trec_eval's all_trec list (measures.c, trec_names), written out
ALL_TREC = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
            "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj",
            "rbp", "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
            "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel",
            "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
            "set_F", "num_nonrel_judged_ret"]


def test_all_trec_is_every_listed_measure_tieeval_has():
    got = Metric.expand("all_trec")
    assert len(got) == len(set(got))
    names = {spellings.trec_eval_name(m.spec, m.k).rsplit("_", 1)[0]
             if m.k is not None else spellings.trec_eval_name(m.spec, m.k) for m in got}
    missing = set(spellings.missing_trec())
    # every all_trec measure is either expanded or documented as missing (runid is a line)
    assert names | missing | {"runid", "relstring"} == set(ALL_TREC)
    assert not names & missing
    assert {"P", "recall", "map", "map_cut", "ndcg", "ndcg_cut", "recip_rank",
            "success"} <= names
    # official is a part of it
    assert set(Metric.expand("official")) <= set(got)


@pytest.mark.parametrize("printed", [
    "P_5", "P_10", "recall_1000", "ndcg", "ndcg_cut_10", "map", "map_cut_100", "recip_rank",
    "success_1", "iprec_at_recall_0.10", "iprec_at_recall_1.00", "Rprec", "bpref", "gm_map",
    "num_ret", "num_rel_ret"])
def test_trec_eval_names_print_back(printed):
    measure = spellings._TREC.get(spellings.key(printed.rsplit("_", 1)[0])) or \
        spellings._TREC[spellings.key(printed)]
    if not spellings.available(measure.target):
        pytest.skip(f"{measure.target} is not a registered metric yet")
    metric = Metric.parse(printed)
    assert spellings.trec_eval_name(metric.spec, metric.k) == printed


@pytest.mark.parametrize("text,match", [
    ("P_0", "cutoff '0' of 'P_0' must be >= 1"),
    ("P.x", "parameter 'x' of 'P.x' must be a cutoff >= 1"),
    ("iprec_at_recall_1.5", "must be in \\[0, 1\\]"),
    ("relstring", "'relstring' is trec_eval's relstring line, not a metric"),
    ("relstring.x", "parameter 'x' of 'relstring.x' must be a number of documents"),
    ("map.5", "trec_eval's map takes no parameters"),
    ("nDCG(judged_only=True)@10", "is tieeval's --judged-only"),
    ("P(rel=2)@10", "'rel=2' .* is tieeval's --relevance-level 2"),
    ("Precision", "Precision needs a cutoff"),
    ("runid", "'runid' is trec_eval's runid line, not a metric"),
])
def test_spelling_errors(text, match):
    with pytest.raises(ParameterError, match=match):
        Metric.parse(text)


def test_unknown_name_suggests_the_closest_names_on_one_short_line():
    """An unknown name is answered with the closest names, written with its cutoff, on one
    line (the full list of every spelling was 672 characters); with nothing close, the
    registry's names and where every spelling is listed."""
    for text, close in (("ndcg_cutt_10", "ndcg_cut_10"), ("NDGC@10", "NDCG@10"),
                        ("Recal@5", "Recall@5"), ("RecipRnak@10", "RecipRank@10"),
                        ("HitRatoi@10", "HitRatio@10")):
        with pytest.raises(ParameterError) as info:
            Metric.parse(text)
        said = str(info.value)
        assert "\n" not in said and len(said) < 160, said
        assert f"did you mean {close}" in said, said
    with pytest.raises(ParameterError) as info:
        Metric.parse("nope")
    said = str(info.value)
    assert said.startswith("unknown metric 'nope'; choose from HR, Recall")
    assert "docs/metric-names.md" in said and len(said) < 300


def test_rel_metric_parser_takes_spellings():
    assert str(parse_rel_metric("ndcg_cut_10")) == "NDCG@10"
    assert str(parse_rel_metric("nDCG(dcg=exp-log2)@10")) == "NDCG(gain=exponential)@10"
    assert str(parse_rel_metric("nDCG(dcg=log2)@10")) == "NDCG@10"
    assert str(parse_rel_metric("RR(cutoff=5)")) == "MRR@5"
    assert str(parse_rel_metric("NDCG(gain=exp)@10")) == "NDCG(gain=exponential)@10"
    with pytest.raises(ParameterError, match="names 2 metrics"):
        parse_rel_metric("P.5,10")


def test_registry_spellings_are_not_translated():
    for text in ("NDCG@10", "MRR", "V-AUC", "HR@5", "SNDCG@10", "NDCG(gain=exp)@10"):
        assert spellings.translate(text) is None
    assert spellings.translate(42) is None


def test_spellings_evaluate_as_the_registry_names():
    """The API evaluates a trec_eval list exactly as the canonical names."""
    import tieeval
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 4, size=(30, 12)).astype(np.float64)
    labels = rng.integers(0, 3, size=(30, 12))
    a = tieeval.evaluate_labels(scores, labels, metrics=["ndcg_cut.3,5", "P_5", "recip_rank"])
    b = tieeval.evaluate_labels(scores, labels, metrics=["NDCG@3", "NDCG@5", "Precision@5",
                                                          "MRR"])
    assert a.to_dict()["metrics"] == b.to_dict()["metrics"]


def test_docs_table_is_the_registry():
    """docs/metric-names.md holds the generated table and missing list verbatim."""
    page = read("docs/metric-names.md")
    table = page.split("markdown_table() -->\n", 1)[1].split("<!-- end of names table", 1)[0]
    missing = page.split("markdown_missing() -->\n", 1)[1].split("<!-- end of missing", 1)[0]
    hint = ("regenerate docs/metric-names.md from tieeval.metrics.spellings.markdown_table() "
            "and markdown_missing()")
    assert table == spellings.markdown_table(), hint
    assert missing == spellings.markdown_missing(), hint
    for name in REGISTRY:  # every registry key is in the table, as a name or an alias
        spec = REGISTRY[name]
        assert f"`{spec.name}" in table
        for alias in spec.aliases:
            assert f"`{alias}`" in table


def test_metric_help_points_to_the_page_listing_every_name():
    """The -m help is a few lines (tests/cli/test_help_width.py): it names the page that
    lists every name, alias and spelling, which the test above checks against the
    registry."""
    from click.testing import CliRunner

    from tieeval.cli import cli
    out = CliRunner().invoke(cli, ["compare", "--help"], terminal_width=10000).output
    help_text = " ".join(out.split())
    assert "every name is in docs/metric-names.md" in help_text
    page = read("docs/metric-names.md")
    for spec in dict.fromkeys(REGISTRY.values()):
        assert f"`{spec.name}" in page
        for alias in spec.aliases:
            assert f"`{alias}`" in page


# trec_eval 10's measure table (measures.c, te_trec_measures), written out in its order
TREC_EVAL_10_MEASURES = [
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel",
    "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "prefs_num_prefs_poss",
    "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
    "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
    "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
    "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap", "rbp", "rbp_resid",
    "unj"]


def test_every_trec_eval_measure_has_a_status():
    """The page lists trec_eval 10's whole measure table, and each status is what the
    names do: a supported name parses, a refused one is refused with its reason."""
    rows = spellings.trec_status()
    assert [re.sub(r"_[Kx]$", "", name) for name, *_ in rows] == TREC_EVAL_10_MEASURES
    for name, target, status, note in rows:
        bare = re.sub(r"_[Kx]$", "", name)
        if status == spellings.REFUSED:
            assert note
            with pytest.raises(ParameterError, match=f"is trec_eval's {bare}, which tieeval "
                                                     "does not compute"):
                Metric.expand(bare)
        elif bare not in ("runid", "relstring"):  # lines of the format, no metric
            assert Metric.expand(bare), bare
            assert target.split("@")[0] in REGISTRY


def test_every_ir_measures_measure_has_a_status():
    """The page lists every measure ir_measures registers; a refused name is refused with
    its reason, never read as another measure."""
    rows = spellings.ir_status()
    listed = [name.split(",")[0].split("@")[0] for name, *_ in rows]
    assert listed == list(spellings.IR_CATALOGUE)
    ir_measures = pytest.importorskip("ir_measures")
    registry = {n for n in ir_measures.measures.registry if n.isascii()}  # α_nDCG: alpha_nDCG
    assert registry == set(spellings.IR_CATALOGUE)
    for name, target, status, _note in rows:
        if status == spellings.REFUSED:
            text = name + ("(max_rel=4)@10" if name == "SDCG" else "@10")
            with pytest.raises(ParameterError, match="which tieeval does not compute"):
                Metric.expand(text)
        else:
            for spelled, want in zip(name.split(", "), target.split(", ")):
                k = "10" if spelled.endswith("@K") else "0.5" if spelled.endswith("@x") else ""
                text = spelled.replace("@K", "@" + k).replace("@x", "@" + k)
                assert Metric.parse(text) == Metric.parse(want.replace("@K", "@" + k)
                                                          .replace("@x", "@" + k))


@pytest.mark.parametrize("text,match", [
    ("P(rel=2)@5", "is tieeval's --relevance-level 2 .* give P@5 with --relevance-level 2"),
    ("NumRet(rel=2)", "give NumRelRet with --relevance-level 2"),
    ("nDCG(judged_only=True)@10", "is tieeval's --judged-only"),
    ("Judged(judged_only=True)@10", "ir_measures' Judged has no judged_only parameter"),
    ("nDCG(gains={0:1})@5", "has no tieeval counterpart"),
    ("SDCG(max_rel=4)@10", "ir_measures' SDCG, which tieeval does not compute \\(scaled DCG"),
    ("RBP(p=0.8)", "ir_measures' RBP, which tieeval does not compute"),
])
def test_ir_measures_options_point_to_their_counterpart(text, match):
    with pytest.raises(ParameterError, match=match):
        Metric.expand(text)


def test_docs_status_tables_are_generated():
    page = read("docs/metric-names.md")
    for name, make in (("trec_eval status", spellings.markdown_trec_status),
                       ("ir_measures status", spellings.markdown_ir_status)):
        block = page.split(f"<!-- {name}: generated by", 1)[1].split("-->\n", 1)[1]
        block = block.split(f"<!-- end of {name}", 1)[0]
        assert block == make(), ("regenerate docs/metric-names.md from "
                                 f"tieeval.metrics.spellings.{make.__name__}()")


@pytest.mark.parametrize("text", ["RBP", "Rbp", "RBP(p=0.5)", "RBP@10", "RBP(rel=1)",
                                  "RBP(p=0.8)"])
def test_ir_measures_rbp_is_not_trec_evals_rbp(text):
    """ir_measures' RBP is p = 0.8 with the grades as gains (trectools; ir_measures'
    measures/rbp.py: p defaults to 0.8): never answered as trec_eval's rbp (p = 0.9, gains
    scaled), which only the lower-case trec_eval name gives."""
    with pytest.raises(ParameterError) as info:
        Metric.expand(text)
    said = str(info.value)
    assert said.startswith(f"{text!r} is ir_measures' RBP, which tieeval does not compute")
    assert "p = 0.8" in said and "`rbp` (`TrecRBP`)" in said
    assert [str(m) for m in Metric.expand("rbp")] == ["TrecRBP"]
    assert [str(m) for m in Metric.expand("rbp.p=0.9")] == ["TrecRBP"]


@pytest.mark.parametrize("text,plain", [("nDCG(dcg='exp-log2')@10", "NDCG@10"),
                                        ("nDCG(dcg=exp-log2)", "NDCG"),
                                        ("NDCG(gain=exponential)@10", "NDCG@10"),
                                        ("NDCG(gain=exp)@5", "NDCG@5")])
def test_a_gain_in_a_metric_name_points_to_the_runs_option(text, plain):
    """The message names what was written and the option that gives it, never a spelling
    the user did not write."""
    with pytest.raises(ParameterError) as info:
        Metric.expand(text)
    said = str(info.value)
    assert said.startswith(repr(text))
    assert f"give -m {plain} with --gain " in said
    assert "cannot parse" not in said
    if "dcg" in text:
        assert "NDCG(gain=" not in said


def test_rr_at_k_carries_the_tie_order_note_judged_carries():
    """ir_measures computes RR@K with its msmarco provider, which sorts a query's documents
    by (-score, docno) (docno ascending), as it computes Judged@K: both notes say the
    Original column can differ on ties, and the docs' table prints them."""
    from tieeval.metrics.spellings import IR_NOTES, markdown_ir_status
    for name in ("Judged", "RR"):
        assert "docno ascending" in IR_NOTES[name]
        assert "First, Last and Tie-aware do not depend on a tie order" in IR_NOTES[name]
    rows = [row for row in markdown_ir_status().splitlines()
            if row.startswith(("| `RR`", "| `MRR`"))]
    assert len(rows) == 2 and all("supported, with a note" in r for r in rows)
