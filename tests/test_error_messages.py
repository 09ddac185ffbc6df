"""Error messages show values as Python prints them, never numpy 2's scalar reprs
(``np.float64(-1.0)``), whether the value came from an argument or from the data."""

from __future__ import annotations

import numpy as np
import pytest

import tieeval
from tieeval.errors import InputError, ParameterError, plain, plain_text

SCORES = np.array([[0.9, 0.5, 0.9, 0.1], [0.2, 0.2, 0.2, 0.7]], dtype=np.float32)
ONES = np.ones_like(SCORES)

BAD_NUMPY_ARGUMENTS = {
    "k": lambda: tieeval.evaluate(SCORES, k=np.float64(1.5)),
    "gamma": lambda: tieeval.evaluate(SCORES, labels=ONES, gamma=np.float64(-1)),
    "alpha": lambda: tieeval.evaluate(SCORES, labels=ONES, alpha=np.float64(-1),
                                      discount="power"),
    "tolerance": lambda: tieeval.evaluate(SCORES, tolerance=np.float64(-1)),
    "relevance_level": lambda: tieeval.evaluate(SCORES, labels=ONES,
                                                relevance_level=np.float64(-1)),
    "metrics": lambda: tieeval.evaluate(SCORES, metrics=np.str_("NDGC@10")),
    "level": lambda: tieeval.evaluate(SCORES, labels=ONES,
                                      metrics=[tieeval.Metric("IPrec", np.float64(2.0))]),
    "jobs": lambda: tieeval.evaluate_path("x.npz", jobs=np.int64(-1)),
    "batch_rows": lambda: tieeval.evaluate_path("x.npz", batch_rows=np.int64(0)),
}


@pytest.mark.parametrize("name", sorted(BAD_NUMPY_ARGUMENTS))
def test_numpy_arguments_are_shown_as_python_values(name):
    with pytest.raises(ParameterError) as err:
        BAD_NUMPY_ARGUMENTS[name]()
    assert "np." not in str(err.value)


@pytest.mark.parametrize("ranking, shown", [
    ([[3, 0, 1], [0, 1, 2]], "(score 0.9) below candidate 3 (score 0.1)"),
    ([[0, 2, 1], [0, 1, 2]], "a candidate scored 0.7, above its last listed score 0.2"),
])
def test_a_bad_saved_ranking_names_scores_in_their_own_digits(tmp_path, ranking, shown):
    path = str(tmp_path / "ranked.npz")
    tieeval.save_scores(path, SCORES, positive=[0, 1], ranking=np.array(ranking))
    with pytest.raises(InputError) as err:
        tieeval.evaluate_path(path, ["HR@1"], original="given")
    assert shown in str(err.value) and "np." not in str(err.value)


def test_plain_keeps_the_digits_of_the_values_dtype():
    assert repr(plain(np.float32(0.1))) == "0.1"  # not float64's 0.10000000149011612
    assert plain(np.int64(7)) == 7 and type(plain(np.int64(7))) is int
    assert plain(np.bool_(True)) is True
    assert plain([1]) == [1] and plain("np.float64(1)") == "np.float64(1)"


def test_plain_text_rewrites_every_numpy_scalar_repr():
    assert (plain_text("got np.float64(-1.0), [np.int64(2), np.uint8(3)], np.str_('a(b)'), "
                       "np.False_ and np.float32(nan)")
            == "got -1.0, [2, 3], 'a(b)', False and nan")
