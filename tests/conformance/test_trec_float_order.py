"""``--format trec_eval`` prints the digit trec_eval prints where its floating-point order
decides it: the Original value of one ranking is computed in trec_eval's order of
operations (m_set_P.c, m_set_recall.c, m_set_rel_P.c, m_set_F.c, m_11pt_avg.c), written
out here in Python doubles (C's doubles, the same operations in the same order)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli


def files(tmp_path, retrieved: int, relevant: int, hits: int):
    """One query retrieving ``retrieved`` documents with distinct scores, ``hits`` of them
    relevant, and ``relevant`` relevant documents in all."""
    run = "".join(f"q1 Q0 d{i} {i + 1} {retrieved - i} t\n" for i in range(retrieved))
    qrels = "".join(f"q1 0 d{i} {1 if i < hits else 0}\n" for i in range(retrieved))
    qrels += "".join(f"q1 0 u{i} 1\n" for i in range(relevant - hits))
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text(qrels)
    return str(tmp_path / "run"), str(tmp_path / "qrels")


def trec_lines(run, qrels, measure):
    result = CliRunner().invoke(cli, ["compare", "--qrels", qrels, run, "-m", measure,
                                      "--convention", "trec_eval", "--format", "trec_eval",
                                      "--per-query", "-q"])
    assert result.exit_code == 0, result.output
    return [line.split() for line in result.stdout.splitlines()]


@pytest.mark.parametrize("measure,n,r,x,value", [
    # (b + 1) P R / (b P + R), b = 1: 5/32 is 0.15625000000000003 there (0.1563, where the
    # exact 0.15625 prints 0.1562), 7/32 0.21874999999999994 (0.2187, not 0.2188)
    ("set_F", 6, 58, 5, lambda n, r, x: (1.0 + 1.0) * (x / n) * (x / r)
     / (1.0 * (x / n) + x / r)),
    ("set_F", 9, 55, 7, lambda n, r, x: (1.0 + 1.0) * (x / n) * (x / r)
     / (1.0 * (x / n) + x / r)),
    # one division: 3/160, where (1/160) * 3 is 0.018750000000000003 (0.0188)
    ("set_P", 160, 5, 3, lambda n, r, x: x / n),
    ("set_recall", 5, 160, 3, lambda n, r, x: x / r),
    ("set_relative_P", 160, 170, 3, lambda n, r, x: x / min(n, r)),
])
def test_set_measures_in_trec_evals_order(tmp_path, measure, n, r, x, value):
    want = value(n, r, x)
    run, qrels = files(tmp_path, n, r, x)
    lines = trec_lines(run, qrels, measure)
    assert [m for m, _, _ in lines] == [measure, measure]
    for _, _, printed in lines:  # the query's line and the 'all' line
        assert printed == f"{want:.4f}"
    name = {"set_F": "SetF", "set_P": "SetP", "set_recall": "SetR",
            "set_relative_P": "SetRelP"}[measure]
    row = tieeval.evaluate_path(run, [name], qrels=qrels, convention="trec_eval").metrics[0]
    assert row.original == want  # every bit
    exact = {"SetF": 2 * x / (n + r)}.get(name)
    if exact is not None:  # the tie-aware value stays the exact one, within an ulp
        assert row.tie_aware == pytest.approx(exact, rel=1e-15)


def test_eleven_point_average_sums_from_the_highest_level(tmp_path):
    """m_11pt_avg.c adds the interpolated precisions from recall 1.0 down to 0.0, then
    divides by 11: tieeval's Original per query is that sum, bit for bit, of its own
    iprec_at_recall values."""
    from tieeval.analysis.trec_eval import query_values
    from tieeval.engine.arguments import metric_list, rel_options
    from tieeval.io.base import RelevanceReadOptions
    rng = np.random.default_rng(3)
    lines, judged = [], []
    for q in range(40):
        n = int(rng.integers(3, 30))
        lines += [f"q{q} Q0 d{i} 0 {n - i} t" for i in range(n)]
        judged += [f"q{q} 0 d{i} {int(rng.random() < 0.4)}" for i in range(n)]
        judged.append(f"q{q} 0 extra 1")
    (tmp_path / "run").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels").write_text("\n".join(judged) + "\n")
    levels = [f"IPrec@{x}" for x in ("0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7",
                                     "0.8", "0.9", "1")]
    got = query_values(str(tmp_path / "run"), metric_list([*levels, "IPrec11pt"]),
                       options=RelevanceReadOptions(qrels=str(tmp_path / "qrels")),
                       relevance=rel_options(None, {"convention": "trec_eval"}))
    columns = list(got.values.values())
    eleven, average = columns[:11], columns[11]["original"]
    for i in range(len(got.qids)):
        total = 0.0
        for column in reversed(eleven):
            total += float(column["original"][i])
        assert float(average[i]) == total / 11
