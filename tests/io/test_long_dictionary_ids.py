"""Long-layout instance ids stored dictionary-encoded (what ``DataFrame.to_parquet``
writes for a pandas ``category``) are read by value, whatever the codes of each row group
or file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import enumerated_ranks, hr_of_rank, rr_of_rank

from tieeval.engine.local import evaluate_path


def _tied_rows(rng, rows=12, cols=5):
    return rng.integers(0, 3, size=(rows, cols)).astype(np.float64)


def _dictionary_ids(ids, order):
    """``ids`` dictionary-encoded with the dictionary in ``order`` (codes differ from a
    plain encoding, as a category's do)."""
    values = sorted(set(ids), key=order)
    codes = np.array([values.index(i) for i in ids], dtype=np.int8)
    return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values))


@pytest.mark.parametrize("kind", ["string", "integer"])
@pytest.mark.parametrize("shuffled", [False, True])
def test_dictionary_encoded_instance_ids_are_read_by_value(tmp_path, kind, shuffled):
    rng = np.random.default_rng(7)
    s = _tied_rows(rng)
    positive = rng.integers(0, s.shape[1], size=s.shape[0])
    rows, cols = s.shape
    names = [f"user{i:02d}" if kind == "string" else 1000 - i for i in range(rows)]
    inst = [names[r] for r in range(rows) for _ in range(cols)]
    pos = np.tile(np.arange(cols), rows)
    label = (pos == np.repeat(positive, cols)).astype(np.int8)
    order = rng.permutation(len(inst)) if shuffled else np.arange(len(inst))
    # two files whose dictionaries list the ids in different orders: the codes disagree
    half = len(order) // 2
    for part, (lo, hi, key) in enumerate([(0, half, str), (half, len(order), lambda v: -hash(v))]):
        idx = order[lo:hi]
        table = pa.table({"instance": _dictionary_ids([inst[i] for i in idx], key),
                          "position": pa.array(pos[idx]),
                          "score": pa.array(s.reshape(-1)[idx]),
                          "label": pa.array(label[idx])})
        assert pa.types.is_dictionary(table.schema.field("instance").type)
        pq.write_table(table, tmp_path / f"part{part}.parquet", row_group_size=17)
    result = evaluate_path(tmp_path, metrics=["HR@2", "MRR"])
    assert result.instances == rows
    ranks = [enumerated_ranks(s[r], int(positive[r])) for r in range(rows)]
    assert result.metric("HR@2").tie_aware == pytest.approx(
        np.mean([hr_of_rank(r, 2).mean() for r in ranks]), abs=1e-12)
    assert result.metric("MRR").tie_aware == pytest.approx(
        np.mean([rr_of_rank(r).mean() for r in ranks]), abs=1e-12)
