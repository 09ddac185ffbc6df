"""Silent assumptions become errors: a padding column 0 taken for the positive, and
files that hold Python objects (torch.save, pickles) or a CSV in another layout."""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import InputError


def _compare(*args):
    return CliRunner().invoke(cli, ["compare", *map(str, args)])


@pytest.mark.parametrize("pad", [-np.inf, "min"])
def test_padding_column_zero_is_an_error_naming_the_ways_to_give_the_positive(tmp_path, pad):
    scores = np.random.default_rng(0).random((40, 20)).astype(np.float32) + 1
    scores[:, 0] = -np.inf if pad != "min" else 0.0
    path = tmp_path / "full_sort.npy"
    np.save(path, scores)
    r = _compare(path)
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "column 0" in line
    for way in ("'positive' field", "--positive-index", "'labels'"):
        assert way in line
    with pytest.raises(InputError, match="--positive-index"):
        tieeval.evaluate_path(path)
    assert _compare(path, "--positive-index", 3).exit_code == 0


def test_a_column_zero_that_is_the_lowest_in_a_minority_of_rows_is_kept(tmp_path):
    scores = np.random.default_rng(1).random((40, 20))
    scores[:20, 0] = -1.0  # exactly half the rows: not "most"
    path = tmp_path / "half.npy"
    np.save(path, scores)
    assert _compare(path).exit_code == 0


def test_torch_and_pickle_files_say_how_to_dump(tmp_path):
    torch_zip = tmp_path / "scores.pt"
    with zipfile.ZipFile(torch_zip, "w") as z:  # torch.save's layout: a zip with data.pkl
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    unnamed = tmp_path / "scores_dump"
    unnamed.write_bytes(torch_zip.read_bytes())
    pickled = tmp_path / "scores.bin"
    pickled.write_bytes(pickle.dumps([[0.1, 0.2]], protocol=4))
    for path in (torch_zip, unnamed, pickled):
        r = _compare(path)
        assert r.exit_code == 2
        (line,) = r.stderr.strip().splitlines()
        assert "tieeval.save_scores" in line and "np.save(" in line, line


def test_a_csv_in_another_layout_says_how_to_dump(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("user,item,score\n1,2,0.5\n")
    r = _compare(path)
    assert r.exit_code == 2 and "tieeval.save_scores" in r.stderr and "found: user" in r.stderr
