"""TREC scores and relevance are read as trec_eval reads them (``atof``, i.e. C's
``strtod``) when that reads the whole field as a decimal number; any other field, which
trec_eval would read in part (``1_000`` as 1, ``abc`` as 0), is an error saying what
trec_eval would read. Checked against the C library's own ``strtod``."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
import struct

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli
from tieeval.engine.local import evaluate_path
from tieeval.errors import InputError
from tieeval.io.trec import _qrels_columns, _run_columns, strtod_prefix

_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.strtod.restype = ctypes.c_double
_libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def c_strtod(text: bytes) -> tuple[float, int]:
    """The C library's ``strtod`` on ``text`` (a process that never called setlocale for
    numbers reads them in the "C" locale, as trec_eval does)."""
    buf = ctypes.create_string_buffer(text)
    end = ctypes.c_char_p()
    value = _libc.strtod(buf, ctypes.byref(end))
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
    return value, used


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return struct.pack("<d", a) == struct.pack("<d", b)  # -0.0 apart from 0.0


FORMS = [b"1_000", b"1e5", b"+1", b".5", b"5.", b"inf", b"Inf", b"INFINITY", b"infin",
         b"-inf", b"nan", b"NaN", b"-nan", b"nan(123)", b"nan(1", b"0x1p3", b"0X1.8P1",
         b"0x10", b"0x", b"0xg", b"0x.8", b"1e", b"1e+", b"1e+5x", b"1.5f", b"1d5", b"1,5",
         b"+.5e-3", b"-0", b"1e999", b"-1e999", b"1e-400", b"4.9e-324", b"1.2.3", b"--1",
         b"+-1", b"e5", b".", b"+", b"abc", b"00012", b"0.1", b"1234567890123456789012",
         b"2.2250738585072011e-308", b"0.5abc", b"\xef\xbc\x91", b"\xd9\xa1"]


@pytest.mark.parametrize("text", FORMS)
def test_score_prefix_is_c_strtod(text):
    assert (lambda got, want: _same(got[0], want[0]) and got[1] == want[1])(
        strtod_prefix(text), c_strtod(text)), (text, strtod_prefix(text), c_strtod(text))


def test_score_prefix_is_c_strtod_on_random_fields():
    rng = np.random.default_rng(11)
    alphabet = list(b"0123456789.eE+-xXpPinfINFatyAY_()abc")
    for _ in range(20000):
        n = int(rng.integers(1, 12))
        text = bytes(int(c) for c in rng.choice(alphabet, size=n))
        got, want = strtod_prefix(text), c_strtod(text)
        assert _same(got[0], want[0]) and got[1] == want[1], (text, got, want)


_PLAIN_DECIMAL = re.compile(rb"[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?\Z"
                            rb"|[+-]?(inf|infinity|nan)\Z", re.IGNORECASE)


def _plain_ranks(lines, qrels):
    """A plain reader: scores by libc strtod, trec_eval's order (score, then docno,
    descending), each query's reciprocal rank of its first relevant document."""
    rr = []
    for q in sorted({line.split()[0] for line in lines}):
        docs = [(c_strtod(f[4])[0], f[2]) for f in (line.split() for line in lines)
                if f[0] == q]
        docs.sort(reverse=True)
        rank = next(i for i, (_, d) in enumerate(docs, 1) if qrels.get((q, d), 0) > 0)
        rr.append(1.0 / rank)
    return float(np.mean(rr))


def test_run_scores_read_as_trec_eval_reads_them(tmp_path):
    lines = [b"q1 Q0 d1 1 1e3 t", b"q1 Q0 d2 2 999.5 t", b"q1 Q0 d3 3 -INF t",
             b"q2 Q0 d1 1 5. t", b"q2 Q0 d2 2 .5E1 t", b"q2 Q0 d3 3 +4.9 t",
             b"q2 Q0 d4 4 1e400 t"]
    qrels = {(b"q1", b"d1"): 1, (b"q2", b"d2"): 1}
    (tmp_path / "run").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d2 1\nq2 0 d1 0\n")
    for ln in lines:  # every form here is one strtod reads whole
        assert c_strtod(ln.split()[4])[1] == len(ln.split()[4])
    cols = _run_columns(str(tmp_path / "run"))
    np.testing.assert_array_equal(cols.value, [c_strtod(ln.split()[4])[0] for ln in lines])
    result = evaluate_path(tmp_path / "run", qrels=tmp_path / "qrels", metrics=["MRR"])
    assert result.metric("MRR").original == _plain_ranks(lines, qrels)


@pytest.mark.parametrize("field", FORMS)
def test_a_field_is_accepted_exactly_when_strtod_reads_it_whole_as_a_decimal(tmp_path,
                                                                             field):
    (tmp_path / "run").write_bytes(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 " + field + b" t\n")
    (tmp_path / "qrels").write_bytes(b"q1 0 d1 1\nq1 0 d2 " + field + b"\n")
    value, used = c_strtod(field)
    if _PLAIN_DECIMAL.match(field):
        assert used == len(field)
        assert _same(_run_columns(str(tmp_path / "run")).value[1], value)
        if math.isfinite(value):  # a relevance must be finite besides
            assert _same(_qrels_columns(str(tmp_path / "qrels")).value[1], value)
        return
    what = (f"as {value!r}" if used else "as 0 (no number at its start)")
    for path, read, what_field in ((tmp_path / "run", _run_columns, "score"),
                                   (tmp_path / "qrels", _qrels_columns, "relevance")):
        with pytest.raises(InputError) as info:
            read(str(path))
        assert f"line 2: {what_field} " in str(info.value)
        assert "is not a number (trec_eval would read it " + what in str(info.value)
    r = CliRunner().invoke(cli, ["compare", "--qrels", str(tmp_path / "qrels"),
                                 str(tmp_path / "run")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("Error: ")


def test_an_underscore_number_is_refused_not_read_as_python_reads_it(tmp_path):
    (tmp_path / "run").write_text("q1 Q0 d1 1 1_000 t\nq1 Q0 d2 2 2 t\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    with pytest.raises(InputError, match=r"line 1: score '1_000' is not a number "
                                         r"\(trec_eval would read it as 1\.0, ignoring "
                                         r"'_000'\)"):
        evaluate_path(tmp_path / "run", qrels=tmp_path / "qrels")
