"""Which of a worker's queues a pass asks first: in turn (default), by weight, or strictly in order.

``--queues high,low`` rotates the first queue each pass, so both are served alike.
``--queues high:5,low:1`` asks by smooth weighted round robin (nginx's): in every 6 passes ``high``
is asked first 5 times and ``low`` once, spread out rather than in runs, so when both are full
their jobs start about 5:1. ``--strict`` asks in the order given and stops at the first queue that
fills the pass: a queue is claimed from only when every queue before it had nothing more ready.
A pass's later queues still get their finishes sent; only their claims wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import topology
from ..core.engine import Queue
from ..errors import ConfigurationError


def parse(specs: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """["high:5", "low"] -> (["high", "low"], {"high": 5, "low": 1}); a weight is a whole number >= 1."""
    names, weights = [], {}
    for spec in specs:
        name, _, weight = spec.partition(":")
        try:
            w = int(weight) if weight else 1
        except ValueError:
            w = 0
        if w < 1:
            raise ConfigurationError(f"queue weight in {spec!r} must be a whole number >= 1, e.g. {name}:5")
        names.append(name.strip())
        weights[name.strip()] = w
    return names, weights


class QueueOrder:
    """The order one pass asks n queues in (indexes), and whether it stops at the first full one."""

    def __init__(self, weights: Sequence[int], strict: bool = False) -> None:
        if strict and len(set(weights)) > 1:
            raise ConfigurationError("--strict serves queues in the order given: give it no weights")
        self.weights = list(weights)
        self.strict = strict
        self.weighted = len(set(self.weights)) > 1
        self.current = [0] * len(self.weights)
        self.turn = 0

    def next(self, claims: bool = True) -> list[int]:
        """The indexes of the queues in the order this pass asks them. Only a pass that claims takes a
        turn: one that only sends finishes must not use up a queue's turn (it would starve it)."""
        n = len(self.weights)
        if self.strict or n == 1 or not claims:
            return list(range(n))
        if self.weighted:
            first = self._smooth()
        else:
            self.turn = (self.turn + 1) % n
            first = self.turn
        return [(first + i) % n for i in range(n)]

    def stops(self, want: int, got: int) -> bool:
        """--strict: a queue that filled what it was asked may have more ready, so later queues wait."""
        return self.strict and want > 0 and got == want

    def _smooth(self) -> int:
        total = sum(self.weights)
        for i, w in enumerate(self.weights):
            self.current[i] += w
        best = max(range(len(self.weights)), key=lambda i: self.current[i])
        self.current[best] -= total
        return best


def resolve(specs: Sequence[str], strict: bool = False) -> tuple[list[Queue], QueueOrder]:
    """A worker's physical queues (partitions expanded) and their order; a partition weighs as its queue."""
    names, weights = parse(specs)
    weight = {p: w for n, w in weights.items() for p in topology.expand([n])}
    queues = [Queue(n) for n in topology.expand(names)]
    return queues, QueueOrder([weight[q.name] for q in queues], strict)
