"""Names that say one thing: run labels (method / dataset / task / seed) are ``run_labels``
in code and API; relevance labels keep ``labels``. The older attribute name and the JSON key
``"labels"`` stay as documented aliases."""

from __future__ import annotations

import numpy as np

import tieeval
from tieeval.analysis.groups import group_runs


def test_run_labels_attribute_and_its_older_alias(tmp_path):
    scores = np.array([[0.9, 0.9, 0.1], [0.3, 0.2, 0.1]], dtype=np.float32)
    run = tieeval.evaluate(scores, k=[1], run_labels={"method": "M", "seed": "1"})
    assert run.run_labels == {"method": "M", "seed": "1"}
    assert run.labels is run.run_labels  # the older name reads the same dict
    run.labels = {"method": "N"}  # and writes it
    assert run.run_labels == {"method": "N"}
    # the JSON key keeps its spelling: the output contract
    assert run.to_dict()["labels"] == {"method": "N", "dataset": None, "task": None,
                                       "seed": None}


def test_relevance_labels_keep_labels_and_never_fill_run_labels():
    scores = np.array([[0.9, 0.9, 0.1]])
    run = tieeval.evaluate(scores, labels=np.array([[1, 0, 2]]), metrics="HR@1")
    assert run.run_labels == {}
    assert run.relevance["source"] == "labels"


def test_a_seed_group_carries_run_labels():
    scores = np.array([[0.9, 0.1]])
    runs = [tieeval.evaluate(scores, k=[1], path=f"s{s}",
                             run_labels={"method": "M", "seed": str(s)}) for s in (1, 2)]
    groups, _ = group_runs(runs)
    assert groups[0].run_labels["method"] == "M" and groups[0].labels is groups[0].run_labels
