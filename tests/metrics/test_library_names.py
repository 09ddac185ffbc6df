"""Every library's name of a metric is accepted, a family name with --k expands, and an
unknown name gets the closest names in one short line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import ParameterError
from tieeval.metrics.metric import Metric
from tieeval.metrics.registry import LIBRARY_VOCABULARIES, REGISTRY, metric_names

# each library's own spelling (its metric class or config key) -> tieeval's metric
SPELLINGS = {
    "HitRatio@10": "HR@10", "Hit@10": "HR@10", "hit_rate@10": "HR@10",  # Cornac, LensKit, ranx
    "RecipRank@10": "MRR@10", "RecipRank": "MRR",  # LensKit
    "AveragePrecision@10": "MAP@10", "AveragePrecision": "MAP",  # LensKit
    "AUC": "AUC",  # Cornac
    "mrr@5": "MRR@5", "map@5": "MAP@5", "ndcg@5": "NDCG@5", "precision@5": "Precision@5",
    "recall@5": "Recall@5", "dcg@5": "DCG@5", "r-precision": "Rprec", "bpref": "Bpref",
}


@pytest.mark.parametrize("text", sorted(SPELLINGS))
def test_a_library_spelling_names_the_metric(text):
    assert str(Metric.parse(text)) == SPELLINGS[text]


def test_library_spellings_give_the_same_figures():
    rng = np.random.default_rng(2)
    scores = np.round(rng.random((30, 8)), 1)
    labels = (rng.random((30, 8)) < 0.3).astype(np.int64)
    theirs = tieeval.evaluate(scores, labels=labels, metrics=["HitRatio@3", "RecipRank@3",
                                                            "AveragePrecision@3"])
    ours = tieeval.evaluate(scores, labels=labels, metrics=["HR@3", "MRR@3", "MAP@3"])
    assert theirs.to_dict()["metrics"] == ours.to_dict()["metrics"]


def test_every_name_of_every_library_vocabulary_is_accepted():
    for spec in {REGISTRY[name] for name in metric_names()}:
        for vocabulary in LIBRARY_VOCABULARIES:
            for name in spec.names_in(vocabulary):
                assert REGISTRY[name] is spec, (vocabulary, name)


def test_a_family_name_expands_over_the_cutoffs_given(tmp_path):
    path = str(tmp_path / "s.npz")
    tieeval.save_scores(path, np.random.default_rng(0).random((20, 12)).astype(np.float32))
    out = CliRunner().invoke(cli, ["compare", path, "-m", "HR", "--k", "1", "5", "10",
                                   "--format", "csv"])
    assert out.exit_code == 0, out.output
    rows = [line.split(",")[1:3] for line in out.stdout.splitlines()[1:]]
    assert rows == [["HR", "1"], ["HR", "5"], ["HR", "10"]]
    # a library's family name too, beside a metric with its own cutoff, in order
    out = CliRunner().invoke(cli, ["compare", path, "-m", "HitRatio", "-m", "NDCG@3",
                                   "-m", "Recall", "--k", "2,4", "--format", "csv"])
    assert out.exit_code == 0, out.output
    rows = [tuple(line.split(",")[1:3]) for line in out.stdout.splitlines()[1:]]
    assert rows == [("HR", "2"), ("HR", "4"), ("NDCG", "3"), ("Recall", "2"), ("Recall", "4")]
    # the API: with k given
    run = tieeval.evaluate_path(path, "HR", k=[1, 5])
    assert [str(m.metric) + "@" + str(m.k) for m in run.metrics] == ["HR@1", "HR@5"]


def test_a_family_name_without_cutoffs_is_still_refused(tmp_path):
    path = str(tmp_path / "s.npz")
    tieeval.save_scores(path, np.zeros((2, 3), dtype=np.float32))
    out = CliRunner().invoke(cli, ["compare", path, "-m", "HR"])
    assert out.exit_code == 2 and "HR needs a cutoff" in out.output
    with pytest.raises(ParameterError, match="HR needs a cutoff"):
        tieeval.evaluate(np.zeros((2, 3)), metrics="HR")
    # a name whose cutoff is optional means the whole list without k
    run = tieeval.evaluate(np.array([[0.1, 0.9, 0.5]]), metrics="MRR")
    assert [(m.metric, m.k, m.original) for m in run.metrics] == [("MRR", None, 1 / 3)]


def test_k_cuts_every_measure_that_takes_a_cutoff(tmp_path):
    # the positive (column 0) ranks 3rd of 4: RR@1 = RR@2 = 0, RR@3 = RR = 1/3; NDCG@K
    # is 1/log2(4) from K = 3 on; AP of one positive is its RR
    scores = np.array([[0.2, 0.9, 0.5, 0.1]])
    run = tieeval.evaluate(scores, metrics=["MRR", "NDCG", "MAP", "MRR@all", "ndcg@ALL"],
                           k=[2, 3])
    got = [(m.metric, m.k, m.original) for m in run.metrics]
    assert got == [("MRR", 2, 0.0), ("MRR", 3, 1 / 3), ("NDCG", 2, 0.0),
                   ("NDCG", 3, pytest.approx(0.5)), ("MAP", 2, 0.0), ("MAP", 3, 1 / 3),
                   ("MRR", None, 1 / 3), ("NDCG", None, pytest.approx(0.5))]
    path = str(tmp_path / "s.npz")
    tieeval.save_scores(path, scores.astype(np.float32))
    out = CliRunner().invoke(cli, ["compare", path, "-m", "HR", "-m", "NDCG", "-m", "MAP",
                                   "-m", "MRR@all", "--k", "1", "3", "--format", "csv"])
    assert out.exit_code == 0, out.output
    rows = [tuple(line.split(",")[1:3]) for line in out.stdout.splitlines()[1:]]
    assert rows == [("HR", "1"), ("HR", "3"), ("NDCG", "1"), ("NDCG", "3"), ("MAP", "1"),
                    ("MAP", "3"), ("MRR", "")]
    # without --k a bare name is the whole list, as before
    out = CliRunner().invoke(cli, ["compare", path, "-m", "NDCG", "--format", "csv"])
    assert [line.split(",")[1:3] for line in out.stdout.splitlines()[1:]] == [["NDCG", ""]]


@pytest.mark.parametrize("text, message", [
    ("HR@all", "HR has no untruncated form ('HR@all'); give a cutoff, e.g. HR@10"),
    ("V-AUC@all", "V-AUC has no untruncated form ('V-AUC@all'); write V-AUC")])
def test_all_names_the_whole_list_only_where_the_cutoff_is_optional(text, message):
    with pytest.raises(ParameterError, match=re.escape(message)):
        Metric.parse(text)


def test_an_unknown_name_on_the_command_line_is_one_short_line(tmp_path):
    path = str(tmp_path / "s.npz")
    tieeval.save_scores(path, np.zeros((2, 3), dtype=np.float32))
    out = CliRunner().invoke(cli, ["compare", path, "-m", "NDGC@10"])
    assert out.exit_code == 2
    error = [line for line in out.output.splitlines() if line.startswith("Error:")]
    assert error == ["Error: Invalid value for '--metric' / '-m': unknown metric 'NDGC' in "
                     "'NDGC@10'; did you mean NDCG@10? (every name: docs/metric-names.md)"]
