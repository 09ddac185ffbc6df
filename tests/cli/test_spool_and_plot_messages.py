"""Two messages that named too little: a full disk under standard input's spool says it
is standard input and which folder (TMPDIR) is full; a figure whose text leaves matplotlib
no room no longer prints matplotlib's warning with its source line."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import small_tmpfs

from tieeval.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPOOL_FULL = ("Error: <stdin>: no space left on device while spooling it to {} (standard "
              "input is copied to a temporary file there; TMPDIR names another folder)")


def npz_bytes(tmp_path, rows=20, cols=10) -> bytes:
    path = tmp_path / "dump.npz"
    scores = np.random.default_rng(0).random((rows, cols))
    np.savez(path, scores=scores, positive=np.zeros(rows, dtype=np.int64))
    return path.read_bytes()


class _FullDisk:
    """A spool file whose writes fail as on a full disk."""

    closed = False

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self):
        self.closed = True


def test_a_full_disk_while_spooling_names_stdin_and_the_folder(tmp_path, monkeypatch):
    import tempfile
    data = npz_bytes(tmp_path)
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    real_fdopen = os.fdopen

    def fdopen(fd, mode="r", *args, **kwargs):
        if mode == "wb":
            os.close(fd)
            return _FullDisk()
        return real_fdopen(fd, mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    result = CliRunner().invoke(cli, ["compare", "-", "-q"], input=data)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [SPOOL_FULL.format(spool)]
    assert os.listdir(spool) == []  # the spool is removed


def test_a_full_tmpfs_under_tmpdir(tmp_path):
    with small_tmpfs(tmp_path / "small") as small:
        data = npz_bytes(tmp_path, rows=400, cols=100)  # ~320 KB: more than the tmpfs
        env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(small)}
        proc = subprocess.run([sys.executable, "-m", "tieeval", "compare", "-", "-q"],
                              input=data, capture_output=True, env=env, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.decode().splitlines() == [SPOOL_FULL.format(small)]
        assert os.listdir(small) == []


def test_html_of_two_tiny_runs_with_long_names_prints_no_matplotlib_warning(tmp_path):
    pytest.importorskip("matplotlib")
    for i, scores in enumerate(([[0.9, 0.1]], [[0.5, 0.5]])):
        np.savez(tmp_path / f"{'LM'[i] * 200}.npz", scores=np.array(scores),
                 positive=np.array([0]))
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-m", "tieeval", "compare", "L" * 200 + ".npz",
                           "M" * 200 + ".npz", "-f", "html", "-k", "1"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "<svg" in proc.stdout


def test_a_figure_whose_layout_collapses_is_drawn_without_a_warning(monkeypatch):
    """Labels kept at full length leave the axes no room: matplotlib's constrained layout
    gives up (and warns); the figure is drawn again without it, and nothing warns."""
    pytest.importorskip("matplotlib")
    from tieeval.records.paper import FigurePanel, FigurePoint
    from tieeval.report import plot
    monkeypatch.setattr(plot, "LABEL_CHARS", 10_000)
    points = [FigurePoint(method=name * 200, top_tie_size=size, inflation=drop, seeds=1)
              for name, size, drop in (("L", 1.0, 0.0), ("M", 2.0, 0.23))]

    def figure():
        return plot.figure1_figure([FigurePanel(task=None, dataset=None, points=points,
                                                r=None)])

    with warnings.catch_warnings(record=True) as caught:  # the case is one that warns
        warnings.simplefilter("always")
        figure().savefig(io.BytesIO(), format="svg")
    assert any("constrained_layout" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = plot._drawn(figure(), "svg")
    assert caught == []
    assert image.startswith(b"<?xml")
