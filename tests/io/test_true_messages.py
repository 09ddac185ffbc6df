"""Messages say what is true: a file the user may not read is not "corrupted", a folder
that cannot be listed is not "no Parquet files", a negative log base is not told it must
be >= 0."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "sample_scores")


def _unprivileged():
    """A command prefix under which file permissions apply: as root, the same user
    without the capabilities that bypass them (setpriv); otherwise nothing."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def _compare_unprivileged(*args):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([*_unprivileged(), sys.executable, "-m", "tieeval", "compare",
                        *map(str, args)], capture_output=True, text=True, env=env,
                       timeout=120)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    return lines[0]


@pytest.fixture
def locked(tmp_path):
    """Inputs of every format with no read permission (restored afterwards)."""
    np.save(tmp_path / "a.npy", np.random.default_rng(0).random((20, 5)))
    shutil.copy(os.path.join(SAMPLES, "tie_free.npz"), tmp_path / "a.npz")
    shutil.copy(os.path.join(SAMPLES, "tie_free.parquet"), tmp_path / "a.parquet")
    (tmp_path / "a.csv").write_text("instance,position,score\n0,0,1\n0,1,0.5\n")
    for folder in ("dataset", "nested/inner"):
        os.makedirs(tmp_path / folder)
        shutil.copy(os.path.join(SAMPLES, "tie_free.parquet"), tmp_path / folder / "p.parquet")
    paths = [tmp_path / n for n in ("a.npy", "a.npz", "a.parquet", "a.csv", "dataset",
                                    "nested/inner")]
    for p in paths:
        os.chmod(p, 0)
    yield tmp_path
    for p in paths:
        os.chmod(p, 0o755)


@pytest.mark.parametrize("name", ["a.npy", "a.npz", "a.parquet", "a.csv"])
def test_an_unreadable_file_is_reported_as_unreadable_not_corrupted(locked, name):
    line = _compare_unprivileged(locked / name)
    assert line == f"Error: {locked / name}: cannot open: Permission denied"


@pytest.mark.parametrize("folder", ["dataset", "nested"])
def test_an_unreadable_dataset_folder_is_not_reported_as_empty(locked, folder):
    line = _compare_unprivileged(locked / folder)
    where = locked / ("dataset" if folder == "dataset" else "nested/inner")
    assert line == f"Error: {where}: cannot read the dataset folder: Permission denied"


@pytest.mark.parametrize("base", ["-2", "0", "1", "nan"])
def test_log_base_message_states_the_bound_that_applies(base):
    r = CliRunner().invoke(cli, ["compare", os.path.join(SAMPLES, "tie_free.npz"),
                                 "--metric", "NDCG@10", "--discount", "logb",
                                 "--log-base", base])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"Error: the log base must be a finite number > 1, got {float(base)!r}")
