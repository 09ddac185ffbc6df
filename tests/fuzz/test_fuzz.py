"""Fuzzing: seeded mutations of valid dumps through ``tieeval compare``.

Valid NPY, NPZ (stored and compressed), Parquet, long-layout CSV and TREC files are
mutated (byte flips, truncations, inserted and deleted bytes, header and shape edits, line
edits) and each mutant is evaluated through the command line. Every run must end with exit
0 or 2, never a traceback or an "internal error", within a memory limit and a time limit.

The mutants run in batches: a few subprocesses (``driver.py``), each under
``RLIMIT_AS`` and a timeout, evaluate many files in process. ``TIEEVAL_FUZZ_CASES`` sets
the number of mutants per kind (default 500: about 3,000 cases); ``TIEEVAL_FUZZ_SEED`` the
seed. A failing case is kept under the pytest tmp directory and named in the message.

The option parsers (``--k``, ``-m``, ``--template``, ``--meta``, ``--gamma``,
``--tolerance``) get property tests with hypothesis at the end.
"""

from __future__ import annotations

import gzip  # noqa: F401 - kept for mutants of .csv.gz, see _csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver.py")
CASES = int(os.environ.get("TIEEVAL_FUZZ_CASES", "500"))
SEED = int(os.environ.get("TIEEVAL_FUZZ_SEED", "20240611"))
MEMORY_LIMIT = 3 << 30  # bytes of address space per driver process
BATCHES = 6  # driver processes, run two at a time
TIMEOUT = 240  # seconds per driver process


# ---------------------------------------------------------------------------------------
# valid seeds

def _seeds(tmp) -> dict[str, list[tuple[str, bytes]]]:
    """``{kind: [(suffix, bytes)]}``: small valid files of each kind."""
    rng = np.random.default_rng(7)
    s = np.round(rng.random((12, 6)), 1).astype(np.float32)
    out: dict[str, list] = {}

    def saved(name, writer):
        path = os.path.join(tmp, name)
        writer(path)
        with open(path, "rb") as fh:
            return fh.read()
    out["npy"] = [(".npy", saved("a.npy", lambda p: np.save(p, s))),
                  (".npy", saved("b.npy", lambda p: np.save(p, np.asfortranarray(s))))]
    out["npz"] = [(".npz", saved("a.npz", lambda p: np.savez(
        p, scores=s, positive=np.arange(12) % 6, method=np.array("m")))),
        (".npz", saved("l.npz", lambda p: np.savez(
            p, scores=s, labels=(s > 0.5).astype(np.int8))))]
    out["npz_compressed"] = [(".npz", saved("c.npz", lambda p: np.savez_compressed(
        p, scores=s, positive=np.arange(12) % 6))),
        (".npz", saved("d.npz", lambda p: np.savez_compressed(
            p, scores=s, labels=(s > 0.5).astype(np.float32))))]
    col = pa.array([list(r) for r in s], type=pa.list_(pa.float32()))
    out["parquet"] = [
        (".parquet", saved("a.parquet", lambda p: pq.write_table(
            pa.table({"scores": col, "positive": pa.array(np.arange(12) % 6)}), p,
            write_page_checksum=True))),
        (".parquet", saved("b.parquet", lambda p: pq.write_table(
            pa.table({"instance": pa.array(np.repeat(np.arange(4), 3)),
                      "position": pa.array(np.tile(np.arange(3), 4)),
                      "score": pa.array(s[:4, :3].ravel())}), p, compression="zstd")))]
    lines = ["instance,position,score,label"]
    for i in range(6):
        for j in range(4):
            lines.append(f"{i},{j},{s[i, j]:.1f},{int(j == i % 4)}")
    out["csv"] = [(".csv", ("\n".join(lines) + "\n").encode())]
    run, qrels = [], []
    for q in range(4):
        for d in range(5):
            run.append(f"q{q} Q0 d{d} {d + 1} {s[q, d]:.1f} sys")
        qrels.append(f"q{q} 0 d{q % 5} {1 + q % 2}")
        qrels.append(f"q{q} 0 d{(q + 2) % 5} 0")
    out["trec"] = [(".run", ("\n".join(run) + "\n").encode())]
    with open(os.path.join(tmp, "qrels"), "w") as fh:
        fh.write("\n".join(qrels) + "\n")
    return out


# ---------------------------------------------------------------------------------------
# mutations

_SHAPE = re.compile(rb"'shape': \(([^)]*)\)")
_HUGE = [b"0", b"1", b"-1", b"2", b"7", b"255", b"65536", b"2147483648",
         b"4611686018427387904", b"9223372036854775807", b"18446744073709551616",
         b"99999999999999999999999", b"", b"1e3", b"'a'", b"None", b"(", b"}"]


def _flip(rng, data: bytearray) -> str:
    n = int(rng.integers(1, 9))
    for _ in range(n):
        i = int(rng.integers(len(data)))
        data[i] ^= 1 << int(rng.integers(8))
    return f"flip {n}"


def _byte_set(rng, data: bytearray) -> str:
    i = int(rng.integers(len(data)))
    data[i] = int(rng.choice([0, 0x7F, 0x80, 0xFF, ord("9"), ord(","), ord("\n")]))
    return f"set {i}"


def _truncate(rng, data: bytearray) -> str:
    n = int(rng.integers(0, len(data)))
    del data[n:]
    return f"truncate {n}"


def _insert(rng, data: bytearray) -> str:
    i = int(rng.integers(len(data) + 1))
    junk = bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
    data[i:i] = junk
    return f"insert {i}"


def _delete(rng, data: bytearray) -> str:
    i = int(rng.integers(len(data)))
    n = int(rng.integers(1, 16))
    del data[i:i + n]
    return f"delete {i}+{n}"


def _header_edit(rng, data: bytearray) -> str:
    """An edit of the .npy header(s): the shape, the dtype, the order."""
    m = list(_SHAPE.finditer(bytes(data)))
    if not m:
        return _flip(rng, data)
    hit = m[int(rng.integers(len(m)))]
    choice = int(rng.integers(4))
    if choice == 0:
        dims = [_HUGE[int(rng.integers(len(_HUGE)))] for _ in range(int(rng.integers(0, 4)))]
        new = b"'shape': (" + b", ".join(dims) + (b",)" if len(dims) == 1 else b")")
    elif choice == 1:
        new = hit.group(0).replace(b"(", b"(" + _HUGE[int(rng.integers(len(_HUGE)))] + b", ",
                                   1)
    elif choice == 2:
        new = hit.group(0)[:-1] + b", }"
    else:
        new = hit.group(0)
        start = bytes(data).rfind(b"'descr': '", 0, hit.start())
        if start >= 0:
            descr = [b"<f2", b"<f8", b">i8", b"|b1", b"<U3", b"|O", b"<c16", b"V8", b"<M8",
                     b"<f4"][int(rng.integers(10))]
            end = data.index(b"'", start + 10)
            data[start + 10:end] = descr
            return f"descr {descr.decode()}"
    data[hit.start():hit.end()] = new
    return f"shape {new.decode(errors='replace')}"


def _fortran(rng, data: bytearray) -> str:
    text = bytes(data)
    if b"'fortran_order': False" in text:
        data[:] = text.replace(b"'fortran_order': False", b"'fortran_order': True ", 1)
        return "fortran"
    return _flip(rng, data)


def _lines(rng, data: bytearray) -> str:
    lines = bytes(data).split(b"\n")
    i = int(rng.integers(len(lines)))
    choice = int(rng.integers(6))
    if choice == 0:
        lines.insert(i, lines[i])
    elif choice == 1:
        del lines[i]
    elif choice == 2:
        fields = lines[i].split(b",") if b"," in lines[i] else lines[i].split(b" ")
        if fields:
            fields[int(rng.integers(len(fields)))] = _HUGE[int(rng.integers(len(_HUGE)))]
        lines[i] = (b"," if b"," in lines[i] else b" ").join(fields)
    elif choice == 3:
        lines[i] = lines[i] + (b",x" if b"," in lines[i] else b" x")
    elif choice == 4:
        lines[i] = b"\xef\xbb\xbf" + lines[i] if i == 0 else b"nan" + lines[i]
    else:
        lines[i] = lines[i].replace(b"0", b"\xff", 1)
    data[:] = b"\n".join(lines)
    return f"line {i} edit {choice}"


BINARY = [_flip, _byte_set, _truncate, _insert, _delete, _header_edit, _fortran]
TEXT = [_flip, _byte_set, _truncate, _insert, _delete, _lines, _lines, _lines]


def _mutants(tmp, seeds, per_kind: int, seed: int):
    rng = np.random.default_rng(seed)
    cases = []
    qrels = os.path.join(tmp, "qrels")
    for kind, files in seeds.items():
        ops = TEXT if kind in ("csv", "trec") else BINARY
        folder = os.path.join(tmp, kind)
        os.makedirs(folder, exist_ok=True)
        for n in range(per_kind):
            suffix, original = files[n % len(files)]
            data = bytearray(original)
            what = []
            for _ in range(int(rng.integers(1, 3))):
                if not data:
                    break
                what.append(ops[int(rng.integers(len(ops)))](rng, data))
            path = os.path.join(folder, f"m{n:05d}{suffix}")
            with open(path, "wb") as fh:
                fh.write(bytes(data))
            args = ["compare", path, "--format", "json", "-q", "--jobs", "1"]
            if kind == "trec":
                args += ["--qrels", qrels]
            cases.append([f"{kind}/{n} ({'; '.join(what)})", args])
    return cases


def _limit_memory():  # pragma: no cover - runs in the child
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run_batches(tmp, cases):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "ARROW_DEFAULT_MEMORY_POOL": "system"}
    env.pop("TIEEVAL_DEBUG", None)
    chunks = [cases[i::BATCHES] for i in range(BATCHES)]
    results, procs = [], []
    for i, chunk in enumerate(chunks):
        procs.append((i, chunk, os.path.join(tmp, f"out{i}.json"), None))
    running = []

    def start(i, chunk, out_path):
        cases_path = os.path.join(tmp, f"cases{i}.json")
        with open(cases_path, "w") as fh:
            json.dump(chunk, fh)
        proc = subprocess.Popen([sys.executable, DRIVER, cases_path, out_path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                preexec_fn=_limit_memory)
        return (i, chunk, out_path, proc)

    def finish(entry):
        i, chunk, out_path, proc = entry
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        done = []
        if os.path.exists(out_path):
            with open(out_path) as fh:
                done = json.load(fh)
            os.unlink(out_path)
        results.extend(done)
        if len(done) < len(chunk):  # the driver died on the case after the last recorded
            results.append([chunk[len(done)][0], f"driver died ({proc.returncode})",
                            err.decode(errors="replace")[-2000:]])
            rest = chunk[len(done) + 1:]
            if rest:
                finish(start(f"{i}r{len(done)}", rest, out_path))
    for i, chunk, out_path, _ in procs:
        running.append(start(i, chunk, out_path))
        if len(running) >= max(2, os.cpu_count() or 1):
            finish(running.pop(0))
    while running:
        finish(running.pop(0))
    return results


def test_fuzzed_dumps_exit_0_or_2(tmp_path):
    seeds = _seeds(str(tmp_path))
    cases = _mutants(str(tmp_path), seeds, CASES, SEED)
    results = _run_batches(str(tmp_path), cases)
    assert len(results) == len(cases)
    bad = [(case, code, err) for case, code, err in results
           if code not in (0, 2) or "Traceback" in err or "internal error" in err]
    assert not bad, "\n\n".join(f"{case}: exit {code}\n{err}" for case, code, err in bad[:5])
    codes = [code for _, code, _ in results]
    # the mutants must reach the readers, not all be refused at the door
    assert codes.count(0) > len(cases) // 20 and codes.count(2) > len(cases) // 4


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


@pytest.mark.parametrize("option", ["--k", "-m", "--template", "--meta", "--gamma",
                                    "--tolerance"])
@settings(max_examples=60, deadline=None)
@given(value=_OPTION_TEXT)
def test_option_parsers_never_crash(small_dump, option, value):
    if value.startswith("-"):
        value = " " + value  # a value, not another option
    result = CliRunner().invoke(cli, ["compare", small_dump, option, value, "--format", "json",
                                      "-q", "--jobs", "1"], catch_exceptions=False)
    _clean(result)
