"""Shared oracles and data generators for the tieeval test suite.

The oracles here are deliberately independent of tieeval's kernels: they never use the
(a, b) counts. Ranks come from enumerating every ordering of a row with
``itertools.permutations`` and keeping the ones consistent with the scores, or from a
stable ``np.lexsort`` that places the positive first or last among its ties.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import os
import shutil
import sys
import tempfile
import zlib

import numpy as np
import pytest

FLOAT_DTYPES = (np.float16, np.float32, np.float64)

# IEEE corner cases every pool carries: both infinities and both zeros (which tie).
SPECIAL_SCORES = (np.inf, -np.inf, -0.0, 0.0)
PLAIN_SCORES = (1.0, 0.5, -2.0, 3.0, 0.25)


@functools.lru_cache(maxsize=None)
def all_orders(n: int) -> np.ndarray:
    """Every ordering of ``range(n)`` as an ``(n!, n)`` int array."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)


def consistent_orders(scores: np.ndarray, nan_worst: bool = False) -> np.ndarray:
    """Orderings (candidate indices, best first) whose scores never increase.

    With ``nan_worst`` NaN ranks below every number and NaNs tie with each other.
    Comparisons run on the row's own dtype.
    """
    orders = all_orders(len(scores))
    ranked = scores[orders]
    hi, lo = ranked[:, :-1], ranked[:, 1:]
    if nan_worst:
        hi_nan, lo_nan = np.isnan(hi), np.isnan(lo)
        ok = (~hi_nan & (lo_nan | (hi >= lo))) | (hi_nan & lo_nan)
    else:
        ok = hi >= lo
    return orders[ok.all(axis=1)]


def enumerated_ranks(scores: np.ndarray, positive: int, nan_worst: bool = False) -> np.ndarray:
    """The positive's 1-based rank in every consistent ordering (one entry per ordering)."""
    orders = consistent_orders(scores, nan_worst)
    assert len(orders) >= 1
    return np.argmax(orders == positive, axis=1) + 1


def hr_of_rank(rank, k):
    return (np.asarray(rank) <= k).astype(np.float64)


def ndcg_of_rank(rank, k):
    rank = np.asarray(rank, dtype=np.float64)
    return np.where(rank <= k, 1.0 / np.log2(rank + 1.0), 0.0)


def rr_of_rank(rank, k=None):
    return 1.0 / np.asarray(rank, dtype=np.float64)


RANK_METRICS = {"HR": hr_of_rank, "NDCG": ndcg_of_rank, "MRR": rr_of_rank}


def lexsort_rank(scores: np.ndarray, positive: int, place: str, nan_worst: bool = False) -> int:
    """Rank of the positive in a stable descending sort that breaks its ties ``place``-wise.

    ``place='first'`` puts the positive ahead of the candidates it ties with, ``'last'``
    behind them. The primary key sorts NaN last (only used with ``nan_worst``).
    """
    n = len(scores)
    is_pos = np.arange(n) == positive
    tiebreak = (~is_pos if place == "first" else is_pos).astype(np.int8)
    if scores.dtype.kind == "f":
        s = scores.astype(np.float64)  # exact upcast; negation cannot overflow
        keys = [tiebreak, -s]
        if nan_worst:
            keys.append(np.isnan(s))
    else:
        # integers: negating the minimum overflows, so sort by descending distinct-value rank
        _, level = np.unique(scores, return_inverse=True)
        keys = [tiebreak, -level.ravel()]
    order = np.lexsort(tuple(keys))
    return int(np.flatnonzero(order == positive)[0]) + 1


def random_row(rng: np.random.Generator, dtype, n: int, pool=None) -> np.ndarray:
    """A row of ``n`` scores drawn with replacement from a small pool, so ties are common."""
    if pool is None:
        pool = SPECIAL_SCORES + PLAIN_SCORES
    size = int(rng.integers(1, len(pool) + 1))
    chosen = rng.choice(np.array(pool, dtype=np.float64), size=size, replace=False)
    return rng.choice(chosen, size=n).astype(dtype)


def fsum_mean(values) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="run the slow tier too (tests marked slow: tests/tiers.py); "
                          "'-m slow' runs the slow tier alone")


def pytest_configure(config):
    """Where ``PYTHONDONTWRITEBYTECODE`` is set, every Python a test starts (the command
    line in a subprocess: about 300 in a plain run) would compile tieeval's modules from
    source again, a third of each start. For the session they keep their compiled modules
    in one temporary folder instead (``PYTHONPYCACHEPREFIX``): nothing is written in the
    tree, and the folder is removed at the end. What the processes run is unchanged."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        prefix = tempfile.mkdtemp(prefix="tieeval-tests-pyc-")
        config.stash[_PYC_PREFIX] = prefix
        os.environ["PYTHONPYCACHEPREFIX"] = prefix
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_unconfigure(config):
    prefix = config.stash.get(_PYC_PREFIX, None)
    if prefix is not None:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        shutil.rmtree(prefix, ignore_errors=True)


_PYC_PREFIX = pytest.StashKey[str]()


def _named(config) -> list[str]:
    """The node ids named on the command line (``path::name``), relative to the root."""
    out = []
    for arg in config.args:
        if "::" in arg:
            path, rest = arg.split("::", 1)
            path = os.path.relpath(os.path.abspath(path), str(config.rootpath))
            out.append(path.replace(os.sep, "/") + "::" + rest)
    return out


def pytest_collection_modifyitems(config, items):
    """A plain run leaves the slow tier out (tests/tiers.py), unless --slow or a -m
    expression is given, or the test is named by its node id."""
    if config.getoption("--slow") or config.option.markexpr:
        return
    named = _named(config)
    keep, slow = [], []
    for item in items:
        chosen = any(item.nodeid == n or item.nodeid.startswith((n + "[", n + "::"))
                     for n in named)
        (slow if item.get_closest_marker("slow") and not chosen else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep


@pytest.fixture
def rng(request) -> np.random.Generator:
    # One seed per test, derived from its name, so tests do not share a random stream.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for every Spark test (tests/engine/test_spark*.py): Spark local
    mode takes seconds to start. Asked for only by tests that skip without pyspark."""
    from tieeval.engine import spark as tspark
    session = tspark.session("tieeval-tests")
    yield session
    session.stop()


# pyarrow on Python 3.10 calls gc.get_referrers (its workaround for bpo-42248, in
# SignalStopHandler) every time it starts a CSV parse: a scan of every object the collector
# tracks, which late in a session of 2,000 tests is ~25 ms a parse -- 190 s of the suite,
# most of it in the tests that read TREC files in hundreds of small chunks. The objects
# that exist when a test starts are set aside from the collector (gc.freeze) while it runs,
# and put back after it: the scan then sees only the test's own objects, among them the
# frames pyarrow's workaround looks for, so what runs and what is checked are unchanged.
_GC_SCANS_EVERY_PARSE = sys.version_info[:2] == (3, 10)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _GC_SCANS_EVERY_PARSE:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
