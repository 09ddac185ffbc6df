"""Test helpers shared by several test modules."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys

from tieeval.kernels.accumulator import Accumulator
from tieeval.kernels.base import EvalSpec
from tieeval.kernels.single import SinglePositiveKernel


class CountsAccumulator:
    """The single-positive kernel fed row counts directly (``dense_counts`` output), with
    the accumulator's merge and state round trip: sums of rows evaluated one way, to
    compare with the pipeline's."""

    def __init__(self, metrics, acc: Accumulator | None = None):
        self.kernel = SinglePositiveKernel(EvalSpec(tuple(metrics)))
        self.acc = acc if acc is not None else self.kernel.new()
        self.metrics = list(metrics)

    def add(self, counts) -> None:
        self.kernel.add_counts(self.acc, counts)

    def merge(self, other: "CountsAccumulator") -> None:
        self.acc.merge(other.acc)

    def to_state(self) -> dict:
        return self.acc.to_state()

    def from_state_like(self, state: dict) -> "CountsAccumulator":
        return CountsAccumulator(self.metrics, Accumulator.from_state(state))

    def result(self, path: str, dtype, labels=None):
        return self.kernel.result(self.acc, path, dtype, labels)


def tie_orderings(scores, labels):
    """Every distinct label sequence of an ordering consistent with the scores.

    Blocks of equal scores (IEEE ``==``, so -0.0 ties 0.0) are permuted independently with
    ``itertools.permutations``. Each distinct sequence arises from the same number of
    orderings (the product over blocks of the factorials of each label's count), so the
    plain mean over distinct sequences is the mean over all orderings.
    """
    values = [x.item() for x in scores]  # exact: Python floats, or ints for integer rows
    levels = sorted(set(values), reverse=True)
    blocks = [[lab for v, lab in zip(values, labels) if v == level] for level in levels]
    per_block = [sorted(set(itertools.permutations(b))) for b in blocks]
    return [sum(parts, ()) for parts in itertools.product(*per_block)]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_output(code: str, *args: str) -> str:
    """What ``python -c code args...`` prints, run in a fresh interpreter from the
    repository's root (what a module loads at start-up is seen only there); a failure
    fails the test with the interpreter's stderr."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def trec_lines_every_digit(monkeypatch) -> None:
    """``--format trec_eval`` lines print each value with every digit (repr) instead of
    trec_eval's %6.4f, so that comparisons with saved trec_eval output see every bit."""
    import math

    import tieeval.report.trec_eval as report

    def every_digit(line):
        value = line.value
        if isinstance(value, str):
            return value
        return str(int(value)) if line.integer and math.isfinite(value) else repr(value)

    monkeypatch.setattr(report, "trec_value", every_digit)


def rel_batch(scores, labels, offsets=None, **kw):
    """A :class:`RelBatch` of a batch's data and its table options given together, for
    tests that vary either from one dict (``judged=``, ``depth=``, ``sparse=`` ...)."""
    from dataclasses import fields

    from tieeval.kernels.tie_blocks import RelBatch, TableOptions
    names = {f.name for f in fields(TableOptions)}
    options = TableOptions(**{name: kw.pop(name) for name in list(kw) if name in names})
    return RelBatch(scores, labels, offsets, options=options, **kw)


def fake_torch(order):
    """A stand-in for torch whose ``topk`` ranks each row by ``order(row)`` (a row's
    positions, best first): ``from_numpy``, ``topk(...).indices`` and ``.numpy()``, all the
    Original column's ``topk`` rule calls."""

    class Tensor:
        def __init__(self, arr):
            self.arr = arr

        def numpy(self):
            return self.arr

    class FakeTorch:
        __version__ = "fake"

        @staticmethod
        def from_numpy(arr):
            return Tensor(arr)

        @staticmethod
        def topk(t, k, dim=-1):
            import numpy as np
            top = np.stack([order(r) for r in np.atleast_2d(t.arr)])[:, :k]
            return type("TopK", (), {"indices": Tensor(top if t.arr.ndim == 2 else top[0])})()

    return FakeTorch


@contextlib.contextmanager
def small_tmpfs(folder, size="64k"):
    """A ``size`` tmpfs mounted at ``folder`` (made here) for the block, unmounted after;
    the test is skipped where mounting is not permitted (not root, or a sandbox)."""
    import pytest
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    os.mkdir(folder)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("mount is not permitted here")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
