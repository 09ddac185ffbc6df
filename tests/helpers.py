"""Test helpers shared by several test modules."""

from __future__ import annotations

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
