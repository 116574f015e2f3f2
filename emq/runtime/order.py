"""Which of a worker's queues a pass asks first: in turn (default), by weight, or strictly in order.

``--queues high,low`` rotates the first queue each pass, so both are served alike.
``--queues high:5,low:1`` weighs the jobs claimed, not the passes: each queue earns credit in
proportion to its weight for every job the worker claims and spends one for each job it claims
itself, and a pass asks the queue with the most credit first. While both are full their jobs start
5:1 whatever the number a pass claims (a pass may take 1 job or 50), spread out rather than in
runs; a queue that was empty earns at most CREDIT_CAP jobs of catch-up.
``--strict`` asks in the order given and stops at the first queue that fills the pass: a queue is
claimed from only when every queue before it had nothing more ready.
A pass's later queues still get their finishes sent; only their claims wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import topology
from ..core.engine import Queue
from ..core.logical import partitions
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


CREDIT_CAP = 64.0  # jobs of catch-up a weighted queue may bank while it has nothing ready


class QueueOrder:
    """The order one pass asks n queues in (indexes), and whether it stops at the first full one."""

    def __init__(self, weights: Sequence[int], strict: bool = False) -> None:
        if strict and len(set(weights)) > 1:
            raise ConfigurationError("--strict serves queues in the order given: give it no weights")
        self.weights = list(weights)
        self.strict = strict
        self.weighted = len(set(self.weights)) > 1
        self.credit = [0.0] * len(self.weights)
        self.turn = 0

    def next(self, claims: bool = True) -> list[int]:
        """The indexes of the queues in the order this pass asks them. Only a pass that claims takes a
        turn: one that only sends finishes must not use up a queue's turn (it would starve it)."""
        n = len(self.weights)
        if self.strict or n == 1 or not claims:
            return list(range(n))
        if self.weighted:
            return sorted(range(n), key=lambda i: -self.credit[i])
        self.turn = (self.turn + 1) % n
        return [(self.turn + i) % n for i in range(n)]

    def charge(self, claimed: Sequence[int]) -> None:
        """A pass claimed claimed[i] jobs from queue i: each queue earns its share of them and spends
        what it took, so the jobs (not the passes) follow the weights."""
        got = sum(claimed)
        if not self.weighted or not got:
            return
        total = sum(self.weights)
        for i, w in enumerate(self.weights):
            c = self.credit[i] + got * w / total - claimed[i]
            self.credit[i] = max(-CREDIT_CAP, min(CREDIT_CAP, c))

    def stops(self, want: int, got: int) -> bool:
        """--strict: a queue that filled what it was asked may have more ready, so later queues wait."""
        return self.strict and want > 0 and got == want


def resolve(specs: Sequence[str], strict: bool = False) -> tuple[list[Queue], QueueOrder]:
    """A worker's physical queues (partitions expanded) and their order; a partition weighs as its queue."""
    names, weights = parse(specs)
    weight = {p: w for n, w in weights.items() for p in topology.expand([n])}
    queues = partitions(names)
    return queues, QueueOrder([weight[q.name] for q in queues], strict)
