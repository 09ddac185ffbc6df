"""tieeval.register_recbole against the real RecBole: TieHit / TieNDCG / TieMRR in a
RecBole config are evaluated over the score matrix RecBole ranks, equal RecBole's own Hit /
NDCG / MRR where no score ties, follow the closed form where every score ties, and can be
the valid_metric that early stopping and the best checkpoint follow.

RecBole (and its start-up) takes seconds: the file runs in the slow tier. CI installs
``recbole==1.2.1`` beside torch; RecBole 1.2.1 still sets numpy 1.x's aliases
(``np.float = np.float_``), given here where numpy 2 has dropped them."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from tiers import SLOW

import tieeval

pytestmark = SLOW
torch = pytest.importorskip("torch")
pytest.importorskip("recbole")

for _old, _new in (("float_", np.float64), ("complex_", np.complex128), ("unicode_", np.str_)):
    if _old not in np.__dict__:
        setattr(np, _old, _new)

METRICS = ["Hit", "NDCG", "MRR", "TieHit", "TieNDCG", "TieMRR"]


def run(tmp_path, tie_all: bool = False):
    """BPR on a small interaction file for 2 epochs, early stopping on TieNDCG@10; returns
    the best validation score, the validation and test results and, per evaluated row of
    the test, the number of candidates (finite scores) and of positives."""
    from recbole.config import Config
    from recbole.data import create_dataset, data_preparation
    from recbole.evaluator.collector import Collector
    from recbole.model.general_recommender import BPR
    from recbole.trainer import Trainer
    from recbole.utils import init_seed

    tieeval.register_recbole()
    rng = np.random.default_rng(0)
    folder = tmp_path / "tiny"
    folder.mkdir()
    lines = ["user_id:token\titem_id:token\trating:float\ttimestamp:float"]
    for u in range(1, 41):
        for t, i in enumerate(rng.choice(np.arange(1, 61), size=12, replace=False)):
            lines.append(f"{u}\t{i}\t1\t{u * 100 + t}")
    (folder / "tiny.inter").write_text("\n".join(lines) + "\n")
    config = Config(model="BPR", dataset="tiny", config_dict={
        "data_path": str(tmp_path), "epochs": 2, "train_batch_size": 64,
        "eval_batch_size": 16, "metrics": METRICS, "topk": [5, 10],
        "valid_metric": "TieNDCG@10", "show_progress": False, "save_dataset": False,
        "checkpoint_dir": str(tmp_path / "saved"), "seed": 1, "reproducibility": True,
        "device": "cpu", "use_gpu": False,
        "eval_args": {"split": {"RS": [0.8, 0.1, 0.1]}, "order": "TO", "mode": "full",
                      "group_by": "user"},
        "load_col": {"inter": ["user_id", "item_id", "rating", "timestamp"]}})
    init_seed(config["seed"], config["reproducibility"])
    train, valid, test = data_preparation(config, create_dataset(config))
    model = BPR(config, train.dataset)
    trainer = Trainer(config, model)
    best, valid_result = trainer.fit(train, valid, saved=False, show_progress=False)
    if tie_all:  # every candidate scores the same: only the masks RecBole sets differ
        model.full_sort_predict = lambda interaction: torch.zeros(
            len(interaction[config["USER_ID_FIELD"]]) * model.n_items)
    seen = []
    collect = Collector.eval_batch_collect

    def spy(self, scores, interaction, positive_u, positive_i):
        positives = torch.zeros_like(scores, dtype=torch.int64)
        positives[positive_u, positive_i] = 1
        seen.append((torch.isfinite(scores).sum(1).numpy(), positives.sum(1).numpy()))
        collect(self, scores, interaction, positive_u, positive_i)
    Collector.eval_batch_collect = spy
    try:
        test_result = trainer.evaluate(test, load_best_model=False, show_progress=False)
    finally:
        Collector.eval_batch_collect = collect
    m = np.concatenate([s[0] for s in seen])
    p = np.concatenate([s[1] for s in seen])
    return best, dict(valid_result), dict(test_result), m, p


def test_tie_aware_metrics_equal_recbole_s_own_without_ties(tmp_path):
    best, valid, test, _, _ = run(tmp_path)
    for result in (valid, test):
        for own, tied in (("hit", "tiehit"), ("ndcg", "tiendcg"), ("mrr", "tiemrr")):
            for k in (5, 10):
                assert result[f"{tied}@{k}"] == pytest.approx(float(result[f"{own}@{k}"]),
                                                              abs=1e-9)
    # the valid_metric is the tie-aware one: early stopping kept its best value
    assert best == valid["tiendcg@10"]


def test_tie_aware_metrics_follow_the_closed_form_when_every_score_ties(tmp_path):
    """All candidates tied: HR@K = 1 - C(m - p, K) / C(m, K) per row (m candidates, p
    positives), the expectation over the orders of the tie."""
    _, _, test, m, p = run(tmp_path, tie_all=True)
    for k in (5, 10):
        want = np.mean([1 - comb(int(mi - pi), k) / comb(int(mi), k) for mi, pi in zip(m, p)])
        assert test[f"tiehit@{k}"] == pytest.approx(round(want, 4), abs=1e-9)
