"""The idle budget: what a worker with nothing to do may send (≤ 1 command/s, see ``make bench``).

Every change that makes work visible pushes a wake token, so a park that ends by its timeout
means nothing became visible and the next claim can be skipped; a claim every RECHECK seconds
anyway guards against a token lost in flight (a parker killed mid-pop).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from ..core.engine import Queue, counts_of
from ..core.records import Counts

RECHECK = 60.0  # seconds: the longest a parked worker goes without a claim
BURST_HORIZON_MS = 5000  # a burst worker waits for retries due this soon
# A hold ended this long ago still keeps a burst worker: the Pump's tick is about to put its lane back
# (without a Pump, --no-pump, nothing would, and the worker ends once this passed).
HOLD_SLACK_MS = 1000


class IdleBudget:
    """Remembers how the last park ended and says whether the next claim is worth sending."""

    def __init__(self, burst: bool) -> None:
        self.burst = burst
        self.quiet = False  # the last park ended by its timeout, not by a token or an outcome
        self.next_recheck = 0.0

    def park_ended(self, woken: bool) -> None:
        self.quiet = not woken

    def skip_claim(self) -> bool:
        """After a park that no token ended, nothing became visible: skip the claim."""
        quiet, self.quiet = self.quiet, False
        if not quiet or self.burst or time.monotonic() >= self.next_recheck:
            self.next_recheck = time.monotonic() + RECHECK
            return False
        return True


def drained(queues: Sequence[Queue]) -> bool:
    """Nothing claimable, active, to relay or due within BURST_HORIZON_MS in any of the queues (burst mode's end).

    Ready work is claimable when its lane is on the ring of a queue that is not paused: a burst
    worker leaves a paused queue's or lane's jobs where they are. Ready work held by a rate limit
    is waited for, however long the hold lasts: the Pump puts its lane back when the hold ends.
    The queues are read twice and must not have moved in between: each read is one queue at a
    time, and a parent's outcome relayed from one queue to another (the Pump) could otherwise pass
    between two of them unseen.
    """
    first = counts_of(queues)
    if not all(_idle(c) for c in first) or _rate_held(queues, first):
        return False
    second = counts_of(queues)
    return [_still(c) for c in first] == [_still(c) for c in second]


def _rate_held(queues: Sequence[Queue], counts: Sequence[Counts]) -> bool:
    """Whether a queue with ready work off its ring has a rate hold that has not ended (or just ended,
    and the Pump has yet to put the lane back): that work runs once the hold ends."""
    for q, c in zip(queues, counts, strict=True):
        if c.ready and not c.paused:
            holds = q.rates.holds(1)
            if holds and holds[0][1] > c.now_ms - HOLD_SLACK_MS:
                return True
    return False


def _idle(c: Counts) -> bool:
    if (c.ready and c.groups_on_ring and not c.paused) or c.active or c.relaying:
        return False
    return c.next_due_ms is None or c.next_due_ms - c.now_ms > BURST_HORIZON_MS


def _still(c: Counts) -> Counts:
    """The counts without the clock, to compare two reads."""
    return dataclasses.replace(c, now_ms=0)
