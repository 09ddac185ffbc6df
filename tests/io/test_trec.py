"""TREC runs and qrels: parsing, trec_eval's tie rule, R with unretrieved relevant documents.

References: a hand-derived example, and a plain-Python re-implementation of trec_eval's
measures (P, recall, map, recip_rank, ndcg_cut on documents sorted by score descending, then
docno descending, as ``comp_sim_docno`` in trec_eval's ``form_res_rels.c`` does).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.engine.local import evaluate_dump
from tieeval.errors import InputError
from tieeval.io.base import RelevanceReadOptions
from tieeval.io.open import open_dump
from tieeval.io.trec import read_qrels, read_run, trec_order
from tieeval.io.trec_stream import open_trec_run
from tieeval.kernels.tie_blocks import RelBatch, TableOptions
from tieeval.metrics.options import RelMetric

RUN = """q1 Q0 d1 1 0.9 sys
q1 Q0 d2 2 0.5 sys
q1 Q0 d3 3 0.5 sys
q1 Q0 d4 4 0.1 sys
q2 Q0 a 1 2 sys
q2 Q0 b 2 2.0 sys
q3 Q0 x 1 1 sys
"""
QRELS = """q1 0 d2 1
q1 0 d4 2
q1 0 d9 1
q2 0 a 0
q2 0 b 1
q4 0 z 1
"""


@pytest.fixture
def example(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text(RUN)
    qrels.write_text(QRELS)
    return str(run), str(qrels)


def evaluate(run, qrels, *metrics):
    dump = open_trec_run(run, qrels)
    return evaluate_dump(dump, list(metrics) or None)


def read(run, qrels, options=None):
    """Open a run and read it through: a run is read query by query during the pass, so
    its input errors come from the pass (a qrels file's, from opening)."""
    return evaluate_dump(open_trec_run(str(run), str(qrels), options))


def test_parsing(example):
    run, qrels = example
    parsed, tags = read_run(run)
    assert tags == ["sys"] and list(parsed) == ["q1", "q2", "q3"]
    assert parsed["q2"] == ([b"a", b"b"], [2.0, 2.0])
    assert read_qrels(qrels)["q1"] == {b"d2": 1, b"d4": 2, b"d9": 1}


def test_trec_eval_tie_rule_is_docno_descending():
    docs = np.array([b"d1", b"d3", b"d2", b"d10", b"D5"])
    scores = np.array([1.0, 1.0, 2.0, 1.0, 1.0])
    # score 2 first; among the 1.0 ties docno descending byte-wise: d3 > d10 > d1 > D5
    assert docs[trec_order(docs, scores)].tolist() == [b"d2", b"d3", b"d10", b"d1", b"D5"]


def test_hand_derived_example(example):
    # q1 in trec_eval order: d1 (0.9), then the 0.5 tie as d3, d2 (docno descending), then
    # d4 -> labels 0, 0, 1, 2; R = 3 (d2, d4 and the unretrieved d9).
    # q2: the 2.0 tie as b, a -> labels 1, 0; R = 1.  q3 has no qrels: ignored.
    r = evaluate(*example, "P@2", "Recall@2", "MAP", "MRR", "NDCG@3")
    assert r.instances == 2
    p2 = r.metric("Precision@2")
    assert (p2.original, p2.first, p2.last, p2.tie_aware) == (0.25, 0.5, 0.25, 0.375)
    rec = r.metric("Recall@2")
    assert rec.original == 0.5 and rec.first == pytest.approx((1 / 3 + 1) / 2)
    assert rec.tie_aware == pytest.approx((1 / 6 + 1) / 2)
    # AP(q1) = (1/3 + 2/4) / 3 on the trec order; AP(q2) = 1
    assert r.metric("MAP").original == pytest.approx(((1 / 3 + 2 / 4) / 3 + 1) / 2, abs=1e-15)
    assert r.metric("MRR").original == pytest.approx((1 / 3 + 1) / 2, abs=1e-15)
    # IDCG@3(q1) takes the best judged gains 2, 1, 1 (d9 was not retrieved)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    want = (1 / math.log2(4) / idcg + 1.0) / 2
    assert r.metric("NDCG@3").original == pytest.approx(want, abs=1e-15)
    assert "trec_eval" in r.caption_note
    notes = " ".join(r.warnings)
    assert "2 queries averaged: 2 in both the run and the qrels" in notes
    assert "1 query (q3) of the run without judgements ignored" in notes
    assert "1 query (q4) of the qrels without results not evaluated" in notes
    assert "trec_eval -c" in notes
    queries = r.relevance["queries"]
    assert (queries["both"], queries["run_only_ignored"], queries["qrels_only"],
            queries["averaged"]) == (2, 1, 1, 2)
    assert "2 queries averaged (2 in run and qrels); 1 run-only ignored" in r.caption_note


def test_rank_column_is_ignored(tmp_path, example):
    run, qrels = example
    lines = [line.split() for line in RUN.splitlines()]
    for i, f in enumerate(lines):
        f[3] = str(100 - i)
    other = tmp_path / "ranks.txt"
    other.write_text("\n".join(" ".join(f) for f in lines) + "\n")
    a, b = evaluate(run, qrels).to_dict(), evaluate(str(other), qrels).to_dict()
    for d in (a, b):
        d.pop("path")
        for w in d["data_warnings"]:
            w.pop("message")  # names the file
    assert a == b


def test_query_with_only_unretrieved_relevant_scores_zero(tmp_path):
    run, qrels = tmp_path / "r", tmp_path / "q"
    run.write_text("q1 Q0 a 1 1 t\nq1 Q0 b 2 0.5 t\nq2 Q0 c 1 1 t\n")
    qrels.write_text("q1 0 a 1\nq2 0 z 1\nq2 0 c 0\n")
    r = evaluate(str(run), str(qrels), "HR@1", "Recall@1", "MRR")
    for name in ("HR@1", "Recall@1", "MRR"):
        row = r.metric(name)
        assert row.instances == 2 and row.skipped == 0
        assert row.tie_aware == 0.5  # q1 scores 1, q2 (relevant z never retrieved) 0


@pytest.mark.parametrize("run_text,qrels_text,message", [
    ("q1 Q0 a 1 1\n", "q1 0 a 1\n", "line 1: expected 6 fields"),
    ("q1 Q0 a 1 x t\n", "q1 0 a 1\n", "line 1: score 'x' is not a number"),
    ("q1 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n", "q1 0 a 1\n", "query q1: document a is retrieved twice"),
    ("q1 Q0 a 1 1 t\n", "q1 0 a 1\nq1 0 a 2\n", "line 2: query q1: document a is judged twice"),
    ("q1 Q0 a 1 1 t\n", "q1 0 a\n", "line 1: expected 4 fields"),
    ("q1 Q0 a 1 1 t\n", "q1 0 a high\n", "line 1: relevance 'high' is not a number"),
    ("q1 Q0 a 1 1 t\n", "q2 0 a 1\n", "no query of the run has judgements"),
    ("", "q1 0 a 1\n", "no results (empty run file)"),
    ("q1 Q0 a 1 1 t\n", "\n", "no judgements (empty qrels file)"),
])
def test_input_errors(tmp_path, run_text, qrels_text, message):
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text(run_text)
    qrels.write_text(qrels_text)
    with pytest.raises(InputError, match=None) as info:
        read(run, qrels)
    assert message in str(info.value)


def test_open_dump_routes_qrels_and_cli(example):
    run, qrels = example
    dump = open_dump(run, RelevanceReadOptions(qrels=qrels))
    assert dump.format == "trec" and dump.relevance.original == "given"
    evaluate_dump(dump)  # the tag is known once every line was read
    assert dump.metadata == {"tag": "sys"}  # kept, but the file names the run
    result = CliRunner().invoke(cli, ["compare", "--qrels", qrels, run, "-m", "P@2",
                                      "--format", "json"])
    assert result.exit_code == 0
    (row,) = json.loads(result.stdout)["runs"][0]["metrics"]
    assert (row["metric"], row["k"], row["original"]) == ("Precision", 2, 0.25)
    missing = CliRunner().invoke(cli, ["compare", "--qrels", qrels + ".nope", run])
    assert missing.exit_code == 2 and "no such file" in missing.output


# ---------------------------------------------------------------------------------------
# trec_eval's measures, re-implemented in plain Python on its own ordering


def trec_eval_measures(run: dict, qrels: dict, k: int) -> dict:
    per = {"P": [], "recall": [], "map": [], "recip_rank": [], "ndcg_cut": []}
    for q, docs in run.items():
        judged = qrels.get(q)
        if judged is None:
            continue
        num_rel = sum(1 for v in judged.values() if v > 0)
        if num_rel == 0:
            continue  # tieeval skips these (trec_eval would average them in as 0)
        ranked = [d for d, _ in sorted(docs, key=lambda x: (x[1], x[0]), reverse=True)]
        rels = [judged.get(d, 0) for d in ranked]
        hits = [r > 0 for r in rels]
        per["P"].append(sum(hits[:k]) / k)
        per["recall"].append(sum(hits[:k]) / num_rel)
        found, ap = 0, 0.0
        for i, h in enumerate(hits, 1):
            if h:
                found += 1
                ap += found / i
        per["map"].append(ap / num_rel)
        per["recip_rank"].append(next((1 / i for i, h in enumerate(hits, 1) if h), 0.0))
        dcg = sum(max(r, 0) / math.log2(i + 1) for i, r in enumerate(rels[:k], 1))
        ideal = sorted((v for v in judged.values() if v > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        per["ndcg_cut"].append(dcg / idcg)
    return {name: math.fsum(v) / len(v) for name, v in per.items()}


def test_original_column_matches_trec_eval_measures(tmp_path, rng):
    run, qrels, lines, judgements = {}, {}, [], []
    for q in range(40):
        n = int(rng.integers(1, 15))
        docs = rng.choice(60, size=n, replace=False)
        scores = rng.choice([0.25, 0.5, 1.0, 2.0], size=n).tolist()  # heavy ties
        names = [f"{'D' if d % 3 else 'd'}{d}" for d in docs]  # mixed case: byte order
        run[f"q{q}"] = [(name.encode(), float(s)) for name, s in zip(names, scores)]
        lines += [f"q{q} Q0 {name} 0 {s!r} t" for name, s in zip(names, scores)]
        judged = {}
        for d in rng.choice(60, size=12, replace=False):
            name = f"{'D' if d % 3 else 'd'}{d}"
            judged[name.encode()] = int(rng.integers(0, 4))
        qrels[f"q{q}"] = judged
        judgements += [f"q{q} 0 {name.decode()} {v}" for name, v in judged.items()]
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    run_path.write_text("\n".join(lines) + "\n")
    qrels_path.write_text("\n".join(judgements) + "\n")
    k = 5
    want = trec_eval_measures(run, qrels, k)
    r = evaluate(str(run_path), str(qrels_path), f"P@{k}", f"Recall@{k}", "MAP", "MRR",
                 f"NDCG@{k}")
    got = {"P": r.metric(f"Precision@{k}"), "recall": r.metric(f"Recall@{k}"),
           "map": r.metric("MAP"), "recip_rank": r.metric("MRR"),
           "ndcg_cut": r.metric(f"NDCG@{k}")}
    for name, row in got.items():
        assert row.original == pytest.approx(want[name], rel=1e-12, abs=1e-15), name
        assert row.last <= row.original <= row.first
        assert row.last <= row.tie_aware <= row.first


def test_unranked_items_equal_items_appended_below_the_cutoff(rng):
    # Judged items missing from the ranking act like items ranked below every candidate,
    # as long as K does not reach them: same R, same ideal DCG, same hits.
    for _ in range(30):
        n, u = int(rng.integers(3, 9)), int(rng.integers(0, 4))
        scores = rng.choice([0.0, 1.0, 2.0], size=n)
        labels = rng.choice([-1, 0, 1, 2], size=n)
        extra = rng.choice([0, 1, 3], size=u)
        with_unranked = RelBatch(scores, labels, np.array([0, n]),
                                 unranked=(extra, np.array([0, u])))
        appended = RelBatch(np.concatenate([scores, np.full(u, -np.inf)]),
                            np.concatenate([labels, extra]), np.array([0, n + u]))
        for name in ("HR", "Recall", "Precision", "NDCG", "MAP", "MRR", "SRecall", "SNDCG"):
            for k in range(1, n + 1):
                m = RelMetric(name, k)
                a, b = with_unranked.values(m), appended.values(m)
                for col in ("first", "last", "tie_aware", "variance", "defined"):
                    np.testing.assert_allclose(getattr(a, col), getattr(b, col), rtol=1e-12,
                                               atol=1e-15, err_msg=f"{name}@{k} {col}")


def test_given_order_must_be_a_ranking():
    with pytest.raises(InputError, match="row 1: candidates are not listed best first"):
        RelBatch(np.array([2.0, 1.0, 1.0, 3.0]), np.array([1, 0, 1, 0]), np.array([0, 2, 4]),
                 options=TableOptions(original="given"))
    b = RelBatch(np.array([2.0, 1.0, 1.0]), np.array([0, 0, 1]), np.array([0, 3]),
                 options=TableOptions(original="given"))
    v = b.values(RelMetric("MRR"))
    assert v.original[0] == 1 / 3 and v.first[0] == 1 / 2  # the given order, not argsort


def test_trec_rule_is_the_default_and_only_rule_of_trec_runs(example):
    """--original trec changes nothing (no original_rule key); other rules are refused."""
    import json

    from click.testing import CliRunner

    from tieeval.cli import cli
    run, qrels = example
    base = ["compare", str(run), "--qrels", str(qrels), "-f", "json", "-q", "-m", "P@2"]
    plain = CliRunner().invoke(cli, base)
    trec = CliRunner().invoke(cli, base + ["--original", "trec"])
    assert plain.exit_code == 0 and trec.exit_code == 0, trec.output
    assert json.loads(plain.output) == json.loads(trec.output)
    assert "original_rule" not in json.loads(trec.output)["runs"][0]
    other = CliRunner().invoke(cli, base + ["--original", "stable"])
    assert other.exit_code == 2 and "trec_eval's order" in other.output


# ---------------------------------------------------------------------------------------
# reading: the vectorised reader agrees with the line-by-line one (trec_eval's rules)


def _messy(rng, records, comment_col0):
    """``records`` (lists of fields) written with random blanks, blank lines, comments."""
    out = []
    for fields in records:
        seps = [str(rng.choice([" ", "\t", "  ", " \t", "\x0b", "\x0c"])) for _ in fields]
        line = "".join(f + s for f, s in zip(fields, seps))
        if rng.random() < 0.2:
            line = str(rng.choice([" ", "\t"])) + line
        out.append(line)
        if rng.random() < 0.1:
            out.append(str(rng.choice(["", "  ", "\t"])))
        if rng.random() < 0.1:
            out.append("# comment " + " ".join(fields))
        if not comment_col0 and rng.random() < 0.1:
            out.append("  \t# indented comment")
    return str(rng.choice(["\n", "\r\n"])).join(out) + str(rng.choice(["", "\n"]))


@pytest.mark.parametrize("seed", range(8))
def test_vectorised_reader_agrees_with_line_reader(tmp_path, seed):
    from tieeval.io.trec import _qrels_columns, _qrels_lines, _run_columns, _run_lines
    rng = np.random.default_rng(seed)
    plain = seed % 2 == 0  # half the files in the plain layout (the fast path as is)
    run_records, qrels_records = [], []
    for i in range(200):
        q, d = f"q{rng.integers(0, 9)}", f"D#{i}"
        fields = [q, "Q0", d, str(i), repr(float(rng.choice([0.5, 1.0, -0.0, 1e300]))), "t"]
        if not plain and rng.random() < 0.1:
            fields += ["junk", "after"]
        run_records.append(fields)
        qrels_records.append([q, "0", d, str(int(rng.integers(-1, 4)))])
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    if plain:
        run_path.write_text("\n".join(" ".join(f) for f in run_records) + "\n")
        qrels_path.write_text("\n".join(" ".join(f) for f in qrels_records) + "\n")
    else:
        run_path.write_bytes(_messy(rng, run_records, False).encode())
        qrels_path.write_bytes(_messy(rng, qrels_records, True).encode())
    got = _run_columns(str(run_path))
    want = list(_run_lines(str(run_path), run_path.read_bytes()))
    assert got.qid.to_pylist() == [r[0] for r in want]
    assert got.docno.to_pylist() == [r[1] for r in want]
    np.testing.assert_array_equal(got.value, [r[2] for r in want])
    assert got.tags == ["t"] and len(want) == 200
    got = _qrels_columns(str(qrels_path))
    want = list(_qrels_lines(str(qrels_path), qrels_path.read_bytes()))
    assert got.docno.to_pylist() == [r[1] for r in want] and len(want) == 200
    np.testing.assert_array_equal(got.value, [r[2] for r in want])


@pytest.mark.parametrize("seed", range(6))
def test_chunked_reader_agrees_with_line_reader_across_chunk_boundaries(tmp_path,
                                                                        monkeypatch, seed):
    """Files are parsed a chunk at a time, each cut after a line end: with chunks of a few
    dozen bytes (lines longer than a chunk, chunks of comments and blank lines only, ids
    repeated across chunks) the records, their ids and the tags are the line reader's."""
    from tieeval.io import trec
    from tieeval.io.trec import _qrels_columns, _qrels_lines, _run_columns, _run_lines
    monkeypatch.setattr(trec, "CHUNK_BYTES", int(np.random.default_rng(seed).integers(7, 90)))
    rng = np.random.default_rng(100 + seed)
    run_records, qrels_records = [], []
    for i in range(150):
        q, d = f"q{rng.integers(0, 5)}", f"doc-{'x' * int(rng.integers(0, 40))}{i % 60}"
        run_records.append([q, "Q0", d, str(i), repr(float(rng.choice([0.5, 1.0, 2.5]))),
                            f"t{i // 50}"])
        qrels_records.append([q, "0", f"{d}.{i}", str(int(rng.integers(-1, 4)))])
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    if seed % 2 == 0:
        run_path.write_text("\n".join(" ".join(f) for f in run_records) + "\n")
        qrels_path.write_text("\n".join(" ".join(f) for f in qrels_records) + "\n")
    else:
        run_path.write_bytes(_messy(rng, run_records, False).encode())
        qrels_path.write_bytes(_messy(rng, qrels_records, True).encode())
    got = _run_columns(str(run_path))
    want = list(_run_lines(str(run_path), run_path.read_bytes()))
    assert got.qid.to_pylist() == [r[0] for r in want] and len(want) == 150
    assert got.docno.to_pylist() == [r[1] for r in want]
    np.testing.assert_array_equal(got.value, [r[2] for r in want])
    assert got.tags == ["t0", "t1", "t2"]
    got = _qrels_columns(str(qrels_path))
    want = list(_qrels_lines(str(qrels_path), qrels_path.read_bytes()))
    assert got.qid.to_pylist() == [r[0] for r in want] and len(want) == 150
    assert got.docno.to_pylist() == [r[1] for r in want]
    np.testing.assert_array_equal(got.value, [r[2] for r in want])


def test_a_bad_line_in_a_later_chunk_is_named(tmp_path, monkeypatch):
    from tieeval.io import trec
    monkeypatch.setattr(trec, "CHUNK_BYTES", 64)
    lines = [f"q1 Q0 d{i} {i} 1.5 t" for i in range(40)]
    lines[33] = "q1 Q0 d33 33 1_000 t"
    (tmp_path / "run").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 34: score '1_000' is not a number"):
        trec._run_columns(str(tmp_path / "run"))


def test_trec_eval_comment_rules(tmp_path):
    """Runs: '#' as the first non-blank character; qrels: '#' in the first column (an
    indented '#...' line is a judgement, as trec_eval reads it); '#' inside a docno is data."""
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("# c\n  # c 2 3 4 5 6\nq1 Q0 d#1 1 1 t\n\nq1 Q0 d2 2 0.5 t extra\n")
    qrels.write_text("# c\n# c\nq1 0 d#1 1\n  #q 0 d2 1\n")
    parsed, tags = read_run(str(run))
    assert parsed == {"q1": ([b"d#1", b"d2"], [1.0, 0.5])} and tags == ["t"]
    assert read_qrels(str(qrels)) == {"q1": {b"d#1": 1.0}, "#q": {b"d2": 1.0}}


def _big_run(lines, bad_line, bad):
    text = [f"q{i // 100} Q0 d{i} {i} {1.0 / (1 + i % 7)!r} t" for i in range(lines)]
    text[bad_line - 1] = bad
    return "\n".join(text) + "\n"


@pytest.mark.parametrize("bad,message", [
    ("q1 Q0 d9 1 high t", "line 700: score 'high' is not a number"),
    ("q1 Q0 d9 1 1.0", "line 700: expected 6 fields 'qid Q0 docno rank score tag', got 5"),
    ("q1 Q0  d9 1 1.0", "line 700: expected 6 fields"),
])
def test_errors_name_the_line_on_large_files(tmp_path, bad, message):
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text(_big_run(2000, 700, bad))
    qrels.write_text("q1 0 d1 1\n")
    with pytest.raises(InputError) as info:
        read(run, qrels)
    assert message in str(info.value)


def test_non_utf8_qid_and_qrels_errors_name_the_line(tmp_path):
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_bytes(_big_run(900, 500, "q1 Q0 d1 1 1 t").encode().replace(
        b"q1 Q0 d1 1 1 t", b"q\xff Q0 d1 1 1 t"))
    qrels.write_text("q1 0 d1 1\n")
    with pytest.raises(InputError, match="line 500: query id b'q\\\\xff' is not valid UTF-8"):
        read(run, qrels)
    run.write_text(_big_run(900, 500, "q1 Q0 d1 1 1 t"))
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1 extra\n")
    with pytest.raises(InputError, match="line 2: expected 4 fields 'qid iter docno "
                                         "relevance', got 5"):
        read(run, qrels)
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1\nq1 0 d1 2\n")
    with pytest.raises(InputError, match="line 3: query q1: document d1 is judged twice"):
        read(run, qrels)


def test_missing_query_rows_have_no_candidates(example):
    run, qrels = example
    dump = open_trec_run(run, qrels, RelevanceReadOptions(missing_queries="zero"))
    dump.settle()  # one pass in the dump's order (a streamed pass gives q4 a batch of its own)
    (batch,) = list(dump.batches(100))
    assert batch.ids.tolist() == ["q1", "q2", "q4"]
    assert np.diff(batch.offsets).tolist() == [4, 2, 0]
    assert batch.unranked[0].tolist() == [1.0, 1.0]  # q1's d9, q4's z
    r = evaluate_dump(dump, [tieeval_metric("MRR")])
    assert r.metric("MRR").instances == 3 and r.metric("MRR").original == pytest.approx(
        (1 / 3 + 1 + 0) / 3)


def tieeval_metric(name):
    from tieeval.metrics.metric import Metric
    return Metric.parse(name)


@pytest.mark.parametrize("layout", ["listed", "queries shuffled", "lines shuffled"])
def test_whole_run_reader_puts_lines_in_trec_evals_order(tmp_path, layout):
    """The whole-run reader orders each query's lines as trec_eval does (score descending,
    NaN last, docno descending), whether the run lists each query's lines together by
    score descending, in the queries' own order or not, or in no order at all."""
    from tieeval.io.trec import load

    rng = np.random.default_rng(3)
    lines, qrels, want = [], [], {}
    for q in range(30):
        n = int(rng.integers(1, 40))
        docs = [f"d{d}".encode() for d in rng.choice(500, n, replace=False)]
        scores = -np.sort(-np.round(rng.normal(size=n), 1))  # ties, descending
        scores[rng.random(n) < (0.0 if layout == "listed" else 0.1)] = np.nan
        lines.append([f"q{q:02d} Q0 {d.decode()} 0 {float(s)!r} t" for d, s in zip(docs, scores)])
        qrels += [f"q{q:02d} 0 {d.decode()} {int(d[1:]) + 1}" for d in docs]
        want[f"q{q:02d}"] = [int(docs[i][1:]) + 1 for i in trec_order(np.array(docs), scores)]
    if layout != "listed":
        lines = [lines[i] for i in rng.permutation(len(lines))]
    text = [line for query in lines for line in query]
    if layout == "lines shuffled":
        text = [text[i] for i in rng.permutation(len(text))]
    (tmp_path / "run").write_text("\n".join(text) + "\n")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    qids, _, labels, offsets = load(str(tmp_path / "run"), str(tmp_path / "qrels"))[:4]
    assert list(qids) == sorted(want)
    for i, qid in enumerate(qids):
        assert labels[offsets[i]:offsets[i + 1]].tolist() == want[qid]
