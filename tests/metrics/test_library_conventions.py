"""Microsoft recommenders, implicit and torchmetrics against the libraries themselves, on
tied and tie-free score matrices: each figure they report equals the tieeval column
docs/reproducing.md names for it, under the library's tie rule or from the ranking it
scored (``--original given``).

The libraries are optional test dependencies (recommenders 1.2.1 installed with
``--no-deps`` beside pandas and scikit-learn; implicit 0.7.3; torch and torchmetrics 1.9.0);
without one its test skips.
"""

from __future__ import annotations

import numpy as np
import pytest

import tieeval

KS = (1, 3, 5, 8)


def _matrix(seed, tied, rows=30, n=12):
    rng = np.random.default_rng(seed)
    if tied:
        scores = rng.integers(0, 4, (rows, n)).astype(np.float64) / 4  # ties everywhere
    else:
        scores = rng.permutation(rows * n).reshape(rows, n).astype(np.float64) / (rows * n)
    labels = (rng.random((rows, n)) < 0.3).astype(np.int64)
    labels[:, 0] |= rng.random(rows) < 0.5
    labels[3] = 0  # a user without a test item: left out by both
    return scores, labels


def _frames(scores, labels):
    pd = pytest.importorskip("pandas")
    rows, n = scores.shape
    users, items = np.repeat(np.arange(rows), n), np.tile(np.arange(n), rows)
    # predictions listed user by user, items in index order (a score matrix's order)
    pred = pd.DataFrame({"userID": users, "itemID": items, "prediction": scores.ravel()})
    hit = labels.ravel() > 0
    true = pd.DataFrame({"userID": users[hit], "itemID": items[hit],
                         "rating": np.ones(int(hit.sum()))})
    return true, pred


# slow tier: importing pandas, scikit-learn and recommenders costs several CPU-seconds
@pytest.mark.slow
@pytest.mark.parametrize("tied", [False, True])
def test_recommenders_python_evaluation(tied):
    pytest.importorskip("recommenders")
    ev = pytest.importorskip("recommenders.evaluation.python_evaluation")
    scores, labels = _matrix(5, tied)
    true, pred = _frames(scores, labels)
    run = tieeval.evaluate(scores, labels=labels, k=KS, convention="recommenders",
                           original="stable")
    assert [str(m.metric) + f"@{m.k}" for m in run.metrics] == [
        f"{name}@{k}" for name in ("Precision", "Recall", "NDCG", "MAP") for k in KS]
    theirs = {"Precision": ev.precision_at_k, "Recall": ev.recall_at_k,
              "NDCG": ev.ndcg_at_k, "MAP": ev.map_at_k}
    for name, function in theirs.items():
        for k in KS:
            got = function(true, pred, k=k)
            row = run.metric(f"{name}@{k}")
            assert row.original == pytest.approx(got, abs=1e-12), (name, k)
            if not tied:
                assert row.first == pytest.approx(row.last, abs=1e-12)
                assert row.tie_aware == pytest.approx(got, abs=1e-12)
    # its map (not map_at_k) divides AP@K by R: --ap-norm R
    plain = tieeval.evaluate(scores, labels=labels, metrics="MAP", k=KS,
                             convention="recommenders", ap_norm="R", original="stable")
    for k in KS:
        assert plain.metric(f"MAP@{k}").original == pytest.approx(ev.map(true, pred, k=k),
                                                                   abs=1e-12)


def _implicit_model(scores):
    """An implicit model whose scores are ``scores`` exactly: user factors the scores,
    item factors the identity (float32 dot products with one non-zero term)."""
    pytest.importorskip("implicit")
    from implicit.cpu.als import AlternatingLeastSquares
    model = AlternatingLeastSquares(factors=scores.shape[1])
    model.user_factors = scores.astype(np.float32)
    model.item_factors = np.eye(scores.shape[1], dtype=np.float32)
    return model


@pytest.mark.parametrize("tied", [False, True])
def test_implicit_ranking_metrics_at_k(tied):
    sparse = pytest.importorskip("scipy.sparse")
    scores, labels = _matrix(9, tied)
    scores = scores.astype(np.float32)
    model = _implicit_model(scores)
    from implicit.evaluation import ranking_metrics_at_k
    rows, n = scores.shape
    train = sparse.csr_matrix((rows, n), dtype=np.float32)
    test = sparse.csr_matrix(labels.astype(np.float32))
    # its whole ranking is reverse-stable (ties by descending position); a shorter one
    # is a heap's top K, whose choice inside a tie block cut by K follows no rule: its
    # figures at K come from the list it scores at K (the ranking given below)
    whole, _ = model.recommend(np.arange(rows), train, N=n)
    reverse = np.array([np.lexsort((-np.arange(n), -row)) for row in scores])
    assert np.array_equal(whole, reverse)
    for k in KS:
        theirs = ranking_metrics_at_k(model, train, test, K=k, show_progress=False)
        ids, _ = model.recommend(np.arange(rows), train, N=k)  # the list it scores at K
        run = tieeval.evaluate(scores, labels=labels, k=[k], convention="implicit",
                               ranking=ids, original="given")
        assert [str(m.metric) for m in run.metrics] == ["Precision", "MAP", "NDCG",
                                                        "AUC-cut"]
        # its precision is micro-averaged: the sum of hits over the sum of min(K, R)
        assert run.metric(f"Precision@{k}").original == pytest.approx(theirs["precision"],
                                                                      abs=1e-12)
        assert run.metric(f"NDCG@{k}").original == pytest.approx(theirs["ndcg"], abs=1e-12)
        assert run.metric(f"MAP@{k}").original == pytest.approx(theirs["map"], abs=1e-12)
        # its auc is the AUC of the list: a pair below K counts 1/2
        assert run.metric(f"AUC-cut@{k}").original == pytest.approx(theirs["auc"],
                                                                    abs=1e-12)
        if not tied:
            for name in ("NDCG", "AUC-cut"):
                row = run.metric(f"{name}@{k}")
                assert row.tie_aware == pytest.approx(theirs[name.split("-")[0].lower()],
                                                      abs=1e-12)
                assert row.first == row.last


@pytest.mark.parametrize("tied", [False, True])
def test_implicit_auc_counts_training_items_as_other_items(tied):
    # recommend() leaves a user's training items out of its list, and its auc counts
    # them among the N = items - P other items: saved with the score -inf and kept as
    # candidates (docs/reproducing.md), every figure is the library's; a user left with
    # fewer items than K gets a list padded by the filtered ones
    sparse = pytest.importorskip("scipy.sparse")
    scores, labels = _matrix(10, tied)
    scores = scores.astype(np.float32)
    rng = np.random.default_rng(11)
    training = (rng.random(scores.shape) < 0.3) & (labels == 0)
    training[5] = True
    training[5, :3] = False  # three items left to recommend
    labels[5] = 0
    labels[5, 0] = 1
    model = _implicit_model(scores)
    from implicit.evaluation import ranking_metrics_at_k
    rows, _ = scores.shape
    train = sparse.csr_matrix(training.astype(np.float32))
    test = sparse.csr_matrix(labels.astype(np.float32))
    saved = np.where(training, -np.inf, scores).astype(np.float32)
    for k in KS:
        theirs = ranking_metrics_at_k(model, train, test, K=k, show_progress=False)
        ids, _ = model.recommend(np.arange(rows), train, N=k)
        assert not np.isin(ids[5, :3], np.flatnonzero(training[5])).any()
        run = tieeval.evaluate(saved, labels=labels, k=[k], convention="implicit",
                               ranking=ids, original="given")
        for name, key in (("Precision", "precision"), ("MAP", "map"), ("NDCG", "ndcg"),
                          ("AUC-cut", "auc")):
            row = run.metric(f"{name}@{k}")
            assert row.original == pytest.approx(theirs[key], abs=1e-12), (name, k)
            if not tied:
                assert row.tie_aware == pytest.approx(theirs[key], abs=1e-12), (name, k)


# slow tier: importing torch and torchmetrics costs several CPU-seconds
@pytest.mark.slow
def test_torchmetrics_functional_retrieval():
    torch = pytest.importorskip("torch")
    fn = pytest.importorskip("torchmetrics.functional.retrieval")
    scores, labels = _matrix(13, tied=True)
    scores = (scores + 0.25).astype(np.float32)  # > 0: it zeroes targets of preds <= 0
    labels[7] = 0  # no relevant item: it counts 0 (empty_target_action="neg")
    rows = len(scores)
    preds = [torch.from_numpy(s) for s in scores]
    target = [torch.from_numpy(lab > 0) for lab in labels]

    def theirs(function, k, **kw):
        return float(np.mean([float(function(preds[i], target[i], top_k=k, **kw))
                              for i in range(rows)]))

    argsorted = np.stack([torch.argsort(p, descending=True).numpy() for p in preds])
    for k in KS:
        # HitRate and Recall rank with torch.argsort: its ranking, given
        given = tieeval.evaluate(scores, labels=labels, metrics=[f"HR@{k}", f"Recall@{k}"],
                                 ranking=argsorted, original="given",
                                 convention="torchmetrics")
        assert given.metric(f"HR@{k}").original == pytest.approx(
            theirs(fn.retrieval_hit_rate, k), abs=1e-6)
        assert given.metric(f"Recall@{k}").original == pytest.approx(
            theirs(fn.retrieval_recall, k), abs=1e-6)
        # Precision, MRR and MAP rank with torch.topk(K) at each K: --original topk, one K
        topk = tieeval.evaluate(scores, labels=labels, k=[k], convention="torchmetrics",
                                original="topk")
        assert [str(m.metric) for m in topk.metrics] == ["HR", "Recall", "Precision", "MRR",
                                                         "MAP", "NDCG"]
        assert topk.metric(f"MAP@{k}").original == pytest.approx(
            theirs(fn.retrieval_average_precision, k), abs=1e-6)
        assert topk.metric(f"Precision@{k}").original == pytest.approx(
            theirs(fn.retrieval_precision, k), abs=1e-6)
        assert topk.metric(f"MRR@{k}").original == pytest.approx(
            theirs(fn.retrieval_reciprocal_rank, k), abs=1e-6)
        # its NDCG averages the gains of tied items: the Tie-aware column
        ndcg = float(np.mean([float(fn.retrieval_normalized_dcg(
            preds[i], torch.from_numpy(labels[i]), top_k=k)) for i in range(rows)]))
        assert topk.metric(f"NDCG@{k}").tie_aware == pytest.approx(ndcg, abs=1e-6)
    # --original topk-each: every K's own torch.topk list, in one run
    each = tieeval.evaluate(scores, labels=labels, k=KS, convention="torchmetrics",
                            original="topk-each")
    for k in KS:
        for name, function in (("Precision", fn.retrieval_precision),
                               ("MRR", fn.retrieval_reciprocal_rank),
                               ("MAP", fn.retrieval_average_precision)):
            assert each.metric(f"{name}@{k}").original == pytest.approx(theirs(function, k),
                                                                        abs=1e-6), (name, k)


def _orders(row):
    """Every ordering of ``row``'s candidates by non-increasing score (each tie order)."""
    from itertools import permutations
    return [p for p in permutations(range(len(row)))
            if all(row[p[i]] >= row[p[i + 1]] for i in range(len(p) - 1))]


def test_micro_precision_against_enumeration():
    # sum of hits over the sum of min(K, R), in every column: Original (stable), First and
    # Last (the most and fewest hits over the tie orders), Tie-aware (their mean) and its
    # standard deviation (the rows' variances of hits, summed, over the squared weights)
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 3, (8, 6)).astype(np.float64)
    labels = (rng.random((8, 6)) < 0.4).astype(np.int64)
    labels[:, 1] = 1
    labels[5] = 0  # left out
    for k in (1, 2, 4):
        rows = [i for i in range(len(scores)) if labels[i].sum()]
        hits = [[labels[i][list(p[:k])].sum() for p in _orders(scores[i])] for i in rows]
        weight = sum(min(k, labels[i].sum()) for i in rows)
        stable = np.argsort(-scores, axis=1, kind="stable")
        run = tieeval.evaluate(scores, labels=labels, metrics=f"P@{k}",
                               precision_norm="micro", original="stable")
        row = run.metric(f"Precision@{k}")
        assert row.original == pytest.approx(
            sum(labels[i][stable[i, :k]].sum() for i in rows) / weight, abs=1e-12)
        assert row.first == pytest.approx(sum(max(h) for h in hits) / weight, abs=1e-12)
        assert row.last == pytest.approx(sum(min(h) for h in hits) / weight, abs=1e-12)
        assert row.tie_aware == pytest.approx(sum(np.mean(h) for h in hits) / weight,
                                              abs=1e-12)
        assert row.tie_aware_std == pytest.approx(
            np.sqrt(sum(np.var(h) for h in hits)) / weight, abs=1e-12)
        assert row.instances == len(rows)


def test_ap_over_the_hits_in_the_top_k_against_enumeration():
    # AP@K divided by the relevant items in the top K (0 without any): Original (stable),
    # First, Last, Tie-aware (the mean over every tie order), and no exact variance
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 3, (10, 7)).astype(np.float64)
    labels = (rng.random((10, 7)) < 0.4).astype(np.int64)
    labels[:, 2] = 1

    def ap(lab, k):
        top = lab[:k] > 0
        if not top.any():
            return 0.0
        return float(np.mean((np.cumsum(top) / np.arange(1, k + 1))[top]))

    stable = np.argsort(-scores, axis=1, kind="stable")
    for k in (1, 3, 5):
        values = [[ap(labels[i][list(p)], k) for p in _orders(scores[i])]
                  for i in range(len(scores))]
        run = tieeval.evaluate(scores, labels=labels, metrics=f"MAP@{k}", ap_norm="hits",
                               original="stable")
        row = run.metric(f"MAP@{k}")
        assert row.original == pytest.approx(
            np.mean([ap(labels[i][stable[i]], k) for i in range(len(scores))]), abs=1e-12)
        assert row.first == pytest.approx(np.mean([max(v) for v in values]), abs=1e-12)
        assert row.last == pytest.approx(np.mean([min(v) for v in values]), abs=1e-12)
        assert row.tie_aware == pytest.approx(np.mean([np.mean(v) for v in values]),
                                              abs=1e-12)
        assert row.tie_aware_std is None


# -- relevant items scored <= 0 (torchmetrics' preds > 0 filter) ---------------------------


def _signed(seed, tied, rows=40, n=10):
    """Scores of every sign, zeros (and -0.0) included, with labels: a row without a
    relevant item (3), one whose relevant items are all scored <= 0 (5), one all relevant
    (6)."""
    rng = np.random.default_rng(seed)
    if tied:
        values = np.array([-0.5, -0.25, -0.0, 0.0, 0.25, 0.5], dtype=np.float32)
        scores = rng.choice(values, (rows, n))
    else:  # each row a permutation of -5/n .. 4/n: one zero, -0.0 in the odd rows
        scores = np.stack([rng.permutation(n) - n // 2 for _ in range(rows)]).astype(
            np.float32) / n
        scores[1::2] = np.where(scores[1::2] == 0, np.float32(-0.0), scores[1::2])
    labels = (rng.random((rows, n)) < 0.35).astype(np.int64)
    labels[3] = 0
    labels[5] = scores[5] <= 0
    labels[6] = 1
    return scores, labels


# slow tier: importing torchmetrics costs seconds of CPU (torch alone is paid elsewhere)
@pytest.mark.slow
@pytest.mark.parametrize("tied", [False, True])
def test_torchmetrics_with_scores_of_every_sign(tied):
    torch = pytest.importorskip("torch")
    fn = pytest.importorskip("torchmetrics.functional.retrieval")
    scores, labels = _signed(21, tied)
    rows, n = scores.shape
    assert (scores < 0).any() and (scores == 0).any() and np.signbit(scores[scores == 0]).any()
    preds = [torch.from_numpy(s) for s in scores]
    target = [torch.from_numpy(lab > 0) for lab in labels]

    def theirs(function, k, **kw):
        return float(np.mean([float(function(preds[i], target[i], top_k=k, **kw))
                              for i in range(rows)]))

    def check(row, want, name):
        assert row.original == pytest.approx(want, abs=1e-6), name
        if not tied:  # every column is the one ranking's
            for column in (row.first, row.last, row.tie_aware):
                assert column == pytest.approx(want, abs=1e-6), name

    argsorted = np.stack([torch.argsort(p, descending=True).numpy() for p in preds])
    full = np.stack([torch.topk(p, n, sorted=True).indices.numpy() for p in preds])
    for k in (*KS, n):
        # HitRate and Recall rank with torch.argsort: its ranking, given
        given = tieeval.evaluate(scores, labels=labels, metrics=[f"HR@{k}", f"Recall@{k}"],
                                 ranking=argsorted, original="given",
                                 convention="torchmetrics")
        check(given.metric(f"HR@{k}"), theirs(fn.retrieval_hit_rate, k), f"HR@{k}")
        check(given.metric(f"Recall@{k}"), theirs(fn.retrieval_recall, k), f"Recall@{k}")
    # Precision, MRR and MAP rank with torch.topk(K) at each K; NDCG is the Tie-aware column
    each = tieeval.evaluate(scores, labels=labels, k=(*KS, n), convention="torchmetrics",
                            original="topk-each")
    for k in (*KS, n):
        for name, function in (("Precision", fn.retrieval_precision),
                               ("MRR", fn.retrieval_reciprocal_rank),
                               ("MAP", fn.retrieval_average_precision)):
            check(each.metric(f"{name}@{k}"), theirs(function, k), f"{name}@{k}")
        ndcg = float(np.mean([float(fn.retrieval_normalized_dcg(
            preds[i], torch.from_numpy(labels[i]), top_k=k)) for i in range(rows)]))
        assert each.metric(f"NDCG@{k}").tie_aware == pytest.approx(ndcg, abs=1e-6)
    # without top_k: the whole list, ranked by torch.topk(preds, n)
    whole = tieeval.evaluate(scores, labels=labels, metrics=["MRR@all", "MAP@all"],
                             ranking=full, original="given", convention="torchmetrics")
    check(whole.metric("MRR"), theirs(fn.retrieval_reciprocal_rank, None), "MRR")
    check(whole.metric("MAP"), theirs(fn.retrieval_average_precision, None), "MAP")


@pytest.mark.slow
@pytest.mark.parametrize("action", ["neg", "skip"])
def test_torchmetrics_classes_count_a_query_by_its_unfiltered_target(action):
    # RetrievalMetric tests the unfiltered target for empty_target_action: a query whose
    # relevant items are all scored <= 0 counts (0), one without any is "neg" 0 or left
    # out; tie-free rows, so the classes' unstable grouping sort orders nothing
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.retrieval")
    scores, labels = _signed(22, tied=False)
    rows, n = scores.shape
    indexes = torch.from_numpy(np.repeat(np.arange(rows), n))
    preds, target = torch.from_numpy(scores.ravel()), torch.from_numpy(labels.ravel() > 0)
    no_relevant = "zero" if action == "neg" else "skip"
    assert labels[5].any() and not (labels[5] & (scores[5] > 0)).any()
    with_relevant = int(np.count_nonzero(labels.sum(axis=1)))
    assert with_relevant < rows
    counted = rows if action == "neg" else with_relevant
    for k in (2, 5):
        run = tieeval.evaluate(scores, labels=labels, k=[k], convention="torchmetrics",
                               no_relevant=no_relevant)
        for name, cls in (("Recall", tm.RetrievalRecall), ("Precision", tm.RetrievalPrecision),
                          ("MRR", tm.RetrievalMRR), ("MAP", tm.RetrievalMAP)):
            metric = cls(top_k=k, empty_target_action=action)
            want = float(metric(preds, target, indexes=indexes))
            row = run.metric(f"{name}@{k}")
            assert row.original == pytest.approx(want, abs=1e-6), (name, k)
            assert row.instances == counted, (name, k)


def _gated_reference(scores, labels, k, name, ap_norm="R"):
    """Per row, over every tie order: the metric with relevant items scored <= 0 not
    relevant (Recall still divides by every relevant item); None for a row without one."""
    out = []
    for row, lab in zip(scores, labels):
        big_r = int((lab > 0).sum())
        if big_r == 0:
            out.append(None)
            continue
        seen = (lab > 0) & (row > 0)
        cut = len(row) if k is None else k
        values = []
        for p in _orders(row):
            rel = seen[list(p)][:cut]
            hits = int(rel.sum())
            if name == "Precision":
                values.append(hits / cut)
            elif name == "Recall":
                values.append(hits / big_r)
            elif name == "MRR":
                values.append(1.0 / (int(np.argmax(rel)) + 1) if hits else 0.0)
            else:
                prec = (np.cumsum(rel) / np.arange(1, rel.size + 1))[rel].sum()
                z = {"R": seen.sum(), "min": min(cut, seen.sum()), "hits": hits}[ap_norm]
                values.append(prec / z if z else 0.0)
        out.append(values)
    return out


@pytest.mark.parametrize("no_relevant", ["skip", "zero"])
def test_relevant_scores_positive_against_enumeration(no_relevant):
    # every column of Precision, Recall, MRR and MAP with relevant items scored <= 0 (0,
    # -0.0 and below) not relevant, against every tie order of small rows: Original (the
    # stable order), First / Last (the best / worst order), Tie-aware (the mean) and its
    # sd (the rows' variances summed); a row is skipped (or 0) only without any relevant
    rng = np.random.default_rng(8)
    scores = rng.choice(np.array([-1.0, -0.0, 0.0, 0.5, 1.0]), (12, 6))
    labels = (rng.random((12, 6)) < 0.45).astype(np.int64)
    labels[2] = 0
    labels[3] = scores[3] <= 0
    labels[4] = 1
    assert labels[3].any()
    stable = np.argsort(scores * -1, axis=1, kind="stable")
    cases = [("Precision", 1, "R"), ("Precision", 3, "R"), ("Recall", 2, "R"),
             ("Recall", 4, "R"), ("MRR", 2, "R"), ("MRR", None, "R"), ("MAP", 3, "R"),
             ("MAP", 3, "min"), ("MAP", 4, "hits"), ("MAP", None, "R")]
    for name, k, ap_norm in cases:
        label = f"{name}@{'all' if k is None else k}"
        run = tieeval.evaluate(scores, labels=labels, metrics=label, ap_norm=ap_norm,
                               relevant_scores="positive", no_relevant=no_relevant,
                               original="stable")
        row = run.metric(f"{name}@{k}" if k is not None else name)
        per = _gated_reference(scores, labels, k, name, ap_norm)
        orig = _gated_reference(scores[np.arange(12)[:, None], stable],
                                labels[np.arange(12)[:, None], stable], k, name, ap_norm)
        kept = [i for i, v in enumerate(per) if v is not None or no_relevant == "zero"]
        count = len(kept)
        # a row without a relevant item (kept under "zero") is 0 in every order
        values = [per[i] or [0.0] for i in kept]
        # the stable order's value: the first of its rows' orders (the identity comes first)
        original = [orig[i][0] if per[i] is not None else 0.0 for i in kept]
        where = (label, ap_norm)
        assert row.instances == count, where
        assert row.original == pytest.approx(np.mean(original), abs=1e-12), where
        assert row.first == pytest.approx(np.mean([max(v) for v in values]), abs=1e-12), where
        assert row.last == pytest.approx(np.mean([min(v) for v in values]), abs=1e-12), where
        assert row.tie_aware == pytest.approx(np.mean([np.mean(v) for v in values]),
                                              abs=1e-12), where
        if name == "MAP" and ap_norm == "hits":
            assert row.tie_aware_std is None
        else:
            var = sum(np.var(v) for v in values)
            assert row.tie_aware_std == pytest.approx(np.sqrt(var) / count, abs=1e-12), where
