"""Fuzzing: seeded mutants of valid dumps, their figures checked against an oracle.

Every input format is fuzzed (tests/fuzz/fuzz_mutants.py): NPY, NPZ stored and deflated,
wide Parquet (list and fixed-size list columns), long-layout Parquet and CSV, TREC run +
qrels. Each mutant goes through ``tieeval.evaluate_path`` in a driver process
(tests/fuzz/driver.py; every 4th also through ``tieeval compare --format json`` in process,
and a handful through the command line in a subprocess here), and is re-read by an
independent reader (tests/fuzz/fuzz_oracle.py: ``numpy.load(allow_pickle=False)``,
``pyarrow.parquet.read_table``, the ``csv`` module, a plain TREC parser). A finding is:

* a mutant tieeval accepts that the independent reader refuses (or finds invalid: a NaN
  score, a positive out of range, an ambiguous member ...);
* an accepted mutant whose first / last / tie-aware HR@1, HR@3, HR@10, NDCG@1, NDCG@3,
  NDCG@10 or MRR, or whose instance counts, differ from the closed-form oracle's (1e-12
  relative; multi-positive and graded forms for labelled dumps and TREC runs);
* a refusal that is not a :class:`~tieeval.TieevalError` with a one-line message (exit 2
  with one ``Error:`` line on the command line), a case that takes more than 5 s, or a
  driver that dies or exceeds its memory limit (3 GB of address space).

Size and time, in two driver processes: every run of the suite fuzzes 15 mutants per
format (120 in all, ids ``[quick-...]``, about 3 CPU-seconds); the slow tier (``-m slow``,
run by CI as its own step; ids ``[full-...]``) 250 per format, 2,000 in all (about 35
CPU-seconds). ``TIEEVAL_FUZZ_CASES`` (mutants per format), ``TIEEVAL_FUZZ_SECONDS`` (a time
budget, for long runs) and ``TIEEVAL_FUZZ_SEED`` change the slow tier's run
(tests/fuzz/fuzz_run.py; the seed, both). The mutants per format and what became of them
are printed in pytest's summary under "fuzzing". A failing case is kept under pytest's tmp
directory and named in the message, with its mutation; ``fuzz_mutants.make(fmt, case,
seed, folder)`` writes it again.

Long run, at low priority::

    TIEEVAL_FUZZ_SECONDS=900 TIEEVAL_FUZZ_SEED=7 nice -n 19 python -m pytest -q -p \\
        no:cacheprovider tests/fuzz -m slow -rA

The option parsers (``--k``, ``-m``, ``--template``, ``--meta``, ``--gamma``,
``--tolerance``) get property tests with hypothesis at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import driver  # noqa: E402
import fuzz_mutants  # noqa: E402
import fuzz_oracle  # noqa: E402
import fuzz_run  # noqa: E402
from fuzz_known import KNOWN, known_defect  # noqa: E402
from tiers import SLOW, tiered  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module", params=["quick", pytest.param("full", marks=SLOW)])
def fuzz_records(tmp_path_factory, request):
    """Every mutant's record (fuzz_run.run_fuzz): the quick run's in every run of the
    suite, the full run's in the slow tier; the counts go to pytest's summary."""
    quick = request.param == "quick"
    started = time.time()
    records = fuzz_run.run_fuzz(str(tmp_path_factory.mktemp("fuzz")), quick=quick)
    lines = fuzz_run.summarise(records, time.time() - started, known_defect)
    request.config.pluginmanager.register(fuzz_run.Summary(lines),
                                          f"tieeval-fuzz-summary-{request.param}")
    return records


def _show(records) -> str:
    return "\n\n".join(f"{r['fmt']} case {r['case']} ({r['cls']}: {r['what']}) "
                        f"{r.get('path', '')}:\n{r['finding']}" for r in records[:6])


@pytest.mark.parametrize("fmt", fuzz_mutants.FORMATS)
def test_fuzzed_mutants_have_the_oracles_figures_or_a_clean_refusal(fuzz_records, fmt):
    bad = [r for r in fuzz_records if r["fmt"] == fmt and "finding" in r
           and not known_defect(r)]
    assert not bad, f"{len(bad)} finding(s):\n" + _show(bad)


@pytest.mark.parametrize("name", list(KNOWN))
def test_known_defect_is_gone(fuzz_records, name):
    bad = [r for r in fuzz_records if known_defect(r) == name]
    assert not bad, f"{len(bad)} mutant(s) show {name}: {KNOWN[name]}\n" + _show(bad)


def test_fuzzing_reaches_the_readers_and_the_figures(fuzz_records):
    """Every format has mutants accepted (so figures were compared) and refused, and the
    unmutated controls are accepted."""
    for fmt in fuzz_mutants.FORMATS:
        mine = [r for r in fuzz_records if r["fmt"] == fmt]
        accepted = [r for r in mine if r.get("tieeval") == "accepted"]
        refused = [r for r in mine if r.get("tieeval") == "refused"]
        controls = [r for r in mine if r["cls"] == "valid"]
        assert len(accepted) >= len(mine) // 5, fmt
        assert len(refused) >= len(mine) // 10, fmt
        assert sum(r.get("tieeval") == "accepted" for r in controls) >= 0.8 * len(controls)
        assert any("cli" in r for r in accepted) and any("cli" in r for r in refused), fmt


def test_command_line_on_fuzzed_mutants_in_a_subprocess(fuzz_records, tmp_path, request):
    """A handful of mutants through ``python -m tieeval compare``: exit 0 with the
    oracle's figures in the JSON, or exit 2 with one ``Error:`` line."""
    picked = []
    # one per format, accepted or refused (after the quick run: every third format)
    quick = request.node.callspec.params["fuzz_records"] == "quick"
    for i, fmt in enumerate(fuzz_mutants.FORMATS):
        if quick and i % 3:
            continue
        outcome = ("accepted", "refused")[i % 2]
        hit = [r for r in fuzz_records if r["fmt"] == fmt and "finding" not in r
               and r.get("tieeval") == outcome and r["cls"] != "valid"]
        if hit:
            picked.append(hit[len(hit) // 2])
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for record in picked:
        path, qrels, _, _ = fuzz_mutants.make(record["fmt"], record["case"], fuzz_mutants.SEED,
                                              str(tmp_path))
        args = [sys.executable, "-m", "tieeval", "compare", path, "--format", "json", "-q",
                "--jobs", "1"] + [a for m in driver.METRICS for a in ("-m", m)]
        if qrels:
            args += ["--qrels", qrels]
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        try:
            want = fuzz_oracle.figures(fuzz_oracle.read(record["fmt"], path, qrels),
                                       list(driver.KS))
        except fuzz_oracle.Invalid:
            want = None
        problem = driver.check_cli(proc.returncode, proc.stdout, proc.stderr, want)
        assert problem is None, (record["fmt"], record["case"], record["what"], problem)
        assert proc.returncode == (0 if record["tieeval"] == "accepted" else 2)


# ---------------------------------------------------------------------------------------
# option parsers: property tests

hypothesis = pytest.importorskip("hypothesis")
from click.testing import CliRunner  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tieeval.cli import cli  # noqa: E402

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_OPTION_TEXT = st.one_of(
    _TEXT,
    st.from_regex(r"[+-]?\d{0,25}(\.\d{0,5})?([eE][+-]?\d{1,4})?(,\s*\d{0,20})*", fullmatch=True),
    st.from_regex(r"[A-Za-z-]{0,8}(@\d{0,22})?(:[a-z=0-9.]{0,10})?", fullmatch=True),
    st.from_regex(r"(\*|\{[a-z]{0,8}\}|[a-z_./]{0,4}){0,12}", fullmatch=True),
    st.from_regex(r"([a-z]{0,8}=[^,]{0,8},?){0,4}", fullmatch=True),
)


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("prop") / "run_a_seed1.npy"
    np.save(path, np.round(np.random.default_rng(1).random((8, 5)), 1))
    return str(path)


def _clean(result):
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
    if result.exit_code == 2:
        assert result.output.rstrip().splitlines()[-1].startswith("Error: ")


@pytest.mark.parametrize("option", tiered(["--k", "-m", "--gamma", "--template", "--meta",
                                           "--tolerance"], quick=3))
@settings(max_examples=60, deadline=None)
@given(value=_OPTION_TEXT)
def test_option_parsers_never_crash(small_dump, option, value):
    if value.startswith("-"):
        value = " " + value  # a value, not another option
    result = CliRunner().invoke(cli, ["compare", small_dump, option, value, "--format", "json",
                                      "-q", "--jobs", "1"], catch_exceptions=False)
    _clean(result)
