"""Regression tests for the findings of the fuzzing harness (tests/fuzz/test_fuzz.py), each
checked against the independent reader of tests/fuzz/fuzz_oracle.py or the format's rule."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tieeval

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_oracle  # noqa: E402


def test_npy_header_with_boolean_extents_is_refused(tmp_path):
    """A header whose shape reads ``(True, True)`` is damaged: numpy.load refuses it, and
    tieeval used to read it as a 1 x 1 matrix (True is an int in Python)."""
    path = tmp_path / "a.npy"
    np.save(path, np.array([[0.5, 0.25]], dtype=np.float32))
    data = path.read_bytes().replace(b"'shape': (1, 2)", b"'shape': (True, True)")
    path.write_bytes(data)
    with pytest.raises(fuzz_oracle.Invalid):
        fuzz_oracle.read_npy(str(path))
    with pytest.raises(tieeval.TieevalError, match="bad shape"):
        tieeval.evaluate_path(str(path), ["HR@1"])


def test_trec_run_with_a_byte_order_mark_keeps_it_in_the_first_query_id(tmp_path):
    """trec_eval reads a UTF-8 byte-order mark as part of the first query id, so the first
    line belongs to another query. tieeval's fast reader (pyarrow's CSV parser) dropped it
    and its line reader kept it: the two disagreed, and the run differed from trec_eval's."""
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_bytes(b"\xef\xbb\xbfq0 Q0 d0 1 0.5 sys\nq0 Q0 d1 2 0.5 sys\n"
                    b"q1 Q0 d0 1 0.5 sys\nq1 Q0 d1 2 0.4 sys\n")
    qrels.write_bytes(b"q0 0 d0 1\nq1 0 d1 1\n")
    result = tieeval.evaluate_path(str(run), ["HR@1", "MRR"], qrels=str(qrels))
    # q0 retrieved only d1 (not relevant): RR 0; q1 ranks its relevant d1 second: RR 1/2
    want = fuzz_oracle.figures(fuzz_oracle.read_trec(str(run), str(qrels)), [1])
    assert want["MRR"][:3] == (0.25, 0.25, 0.25)
    assert result.metric("MRR").tie_aware == pytest.approx(0.25, rel=1e-12)
    assert result.metric("HR@1").first == 0.0
    assert result.metric("MRR").instances == 2
