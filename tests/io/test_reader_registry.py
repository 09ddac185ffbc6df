"""The registry of readers: every format is one module of tieeval.io.readers, found by
listing the package; a run imports only the reader it uses; a new reader is one module."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tieeval
from tieeval.engine.local import evaluate, evaluate_path
from tieeval.errors import InputError
from tieeval.io import readers
from tieeval.io.open import open_dump

# what a run of one format must leave unloaded: the other readers and their helpers
_NOT_FOR_PARQUET = ("tieeval.io.npy", "tieeval.io.npz", "tieeval.io.crc32", "tieeval.io.long",
                    "tieeval.io.trec_stream", "deflate", "isal")
_NOT_FOR_NPY = ("tieeval.io.parquet", "tieeval.io.parquet_footer", "tieeval.io.npz",
                "tieeval.io.long", "tieeval.io.trec_stream", "pyarrow")


def _loaded_after_run(path) -> set[str]:
    code = textwrap.dedent(f"""
        import sys, warnings
        import tieeval
        warnings.simplefilter("ignore")
        tieeval.evaluate_path({str(path)!r})
        print("\\n".join(sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_run_imports_only_its_reader(tmp_path, rng, fmt):
    scores = np.round(rng.random((20, 6)), 1)
    path = tmp_path / f"s.{fmt}"
    if fmt == "npy":
        np.save(path, scores)
    else:
        tieeval.save_scores(str(path), scores)
    loaded = _loaded_after_run(path)
    assert f"tieeval.io.{fmt}" in loaded  # the run did read it
    unwanted = _NOT_FOR_PARQUET if fmt == "parquet" else _NOT_FOR_NPY
    assert sorted(m for m in unwanted if m in loaded) == []


def test_every_module_of_the_package_declares_a_reader():
    import pkgutil
    modules = {m.name for m in pkgutil.iter_modules(readers.__path__)}
    assert {r.__class__ for r in readers.readers()} == {readers.Reader}
    assert len(readers.readers()) == len(modules)
    for reader in readers.readers():
        assert set(reader.carries) <= set(readers.CARRIES), reader.name
        assert set(reader.layouts) <= {"wide", "long"} and reader.layouts, reader.name


def test_detection_follows_the_declarations(tmp_path):
    for reader in readers.readers():
        for suffix in reader.suffixes:
            assert readers.detect_format(f"x{suffix.upper()}") == reader.name
        for magic in reader.magic:
            path = tmp_path / f"{reader.name}.bin"
            path.write_bytes(magic + b"\0" * 8)
            assert readers.detect_format(str(path)) == reader.name
            assert readers.sniff(magic + b"\0") is reader


def test_sniff_knows_a_csv_header_but_not_a_trec_run():
    assert readers.sniff(b"instance,position,score,label\r\n0,0,0.5,1").name == "csv"
    assert readers.sniff(b"q1 Q0 d1 1 0.5 tag\n") is None
    assert readers.sniff(b"\xff\xfe,\x00") is None


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder added to the readers' package path, the registry read again around it."""
    monkeypatch.setattr(readers, "__path__", [*readers.__path__, str(tmp_path)])
    readers.readers.cache_clear()
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("tieeval.io.readers.demo")]:
        del sys.modules[name]
    monkeypatch.undo()
    readers.readers.cache_clear()


def test_a_new_reader_is_one_module(plugin_dir, rng):
    # a whitespace-separated text matrix: the module below is all it takes
    (plugin_dir / "demo_text.py").write_text(textwrap.dedent('''
        import numpy as np
        from tieeval.io.base import Dump
        from tieeval.io.readers import Reader
        from tieeval.records.batch import Batch

        def open_text(path, options):
            scores = np.loadtxt(path, ndmin=2)
            positive = np.full(len(scores), options.positive_index or 0, dtype=np.int64)

            def batches(size):
                for lo in range(0, len(scores), size):
                    yield Batch(scores[lo:lo + size], positive[lo:lo + size], lo)
            return Dump(path, "demo", scores.dtype, {}, batches, rows=len(scores))

        READER = Reader("demo", "score text", open_text, suffixes=(".scores.txt",),
                        order=50)
    '''))
    scores = np.round(rng.random((15, 7)), 1)
    path = plugin_dir / "run.scores.txt"
    np.savetxt(path, scores)
    assert open_dump(str(path)).format == "demo"
    assert readers.detect_format(str(path)) == "demo"
    (plugin_dir / "x.unknown").write_text("junk\n")
    with pytest.raises(InputError, match=r"\.scores\.txt"):  # named in the message
        open_dump(str(plugin_dir / "x.unknown"))
    got, want = evaluate_path(str(path)), evaluate(scores)
    assert [r.to_dict() for r in got.metrics] == [r.to_dict() for r in want.metrics]


def test_a_module_without_reader_fails_loudly(plugin_dir):
    (plugin_dir / "demo_empty.py").write_text("X = 1\n")
    with pytest.raises(RuntimeError, match="demo_empty declares no READER"):
        readers.readers()


def test_check_of_a_parquet_dump_without_a_ranking_loads_no_dataset_module(tmp_path, rng):
    """`check` looks for a saved ranking in the footer's schema: a dump without one never
    imports pyarrow.dataset, which imports pandas (half a second of every such check)."""
    path = tmp_path / "s.parquet"
    tieeval.save_scores(str(path), np.round(rng.random((20, 6)), 1))
    code = textwrap.dedent(f"""
        import sys
        from tieeval.cli import main
        sys.argv = ["tieeval", "check", {str(path)!r}, "-q", "--max-tie-frequency", "1"]
        try:
            main()
        except SystemExit as stop:
            assert stop.code == 0, stop.code
        print("\\n".join(sys.modules), file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = set(done.stderr.split())
    assert "tieeval.io.saved_ranking" in loaded  # the ranking was looked for
    assert sorted(m for m in ("pyarrow.dataset", "pandas") if m in loaded) == []
