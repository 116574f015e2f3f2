"""The leading Pump's upkeep of a queue, a few bounded steps a tick (Oban's pruner, in short):
count a queue's ready jobs once when it predates counters, and trim finished jobs by age and
count even when nothing finishes (EMQ_RESULT_TTL, EMQ_KEEP_COMPLETED, EMQ_DEAD_TTL, EMQ_KEEP_DEAD).

Limit: RECOUNT_STEPS + RETAIN_STEPS script calls a tick, each ~0.5 ms of the server; when work is
left the Pump ticks again at once, so a large backlog drains in slices that never block others.
A quiet queue is not trimmed every tick: retention runs again when its oldest finished job
outlives its ttl (the script says when), or after RETAIN_EVERY seconds at the latest, which bounds
how long the dead set may exceed EMQ_KEEP_DEAD (finish and cancel trim completed and cancelled
jobs by count as they end). An idle worker with its Pump so sends ~0.9 commands/s, not 1.4.
"""

from __future__ import annotations

import logging
import time

from ..core.engine import KeepOps, Queue

log = logging.getLogger("emq.pump")
RECOUNT_STEPS = 20  # recount steps a tick: 10,000 groups
RETAIN_STEPS = 10  # retention steps a tick: 5,000 finished jobs
RETAIN_EVERY = 300.0  # seconds: the longest a queue goes without a retention step


class Upkeep:
    """One Pump's upkeep of its queues; remembers which queues' counters it found exact."""

    def __init__(self) -> None:
        self.counted: set[str] = set()
        self.retain_at: dict[str, float] = {}  # queue namespace -> monotonic time of its next retention

    def step(self, q: Queue) -> bool:
        """Recount and trim a few bounded steps; True when work is left for the next tick."""
        ops = KeepOps(q.name, prefix=q.keys.prefix, client=q._client)
        more = self._recount(ops)
        if time.monotonic() < self.retain_at.get(ops.keys.ns, 0.0):
            return more
        for _ in range(RETAIN_STEPS):
            r = ops.retain()
            if r.completed or r.cancelled or r.dead:
                log.debug("pump %s: retention deleted completed=%s cancelled=%s dead=%s",
                          q.name, r.completed, r.cancelled, r.dead)
            if not r.more:
                wait = RETAIN_EVERY if r.next_s is None else min(r.next_s, RETAIN_EVERY)
                self.retain_at[ops.keys.ns] = time.monotonic() + wait
                return more
        return True

    def _recount(self, ops: KeepOps) -> bool:
        if ops.keys.ns in self.counted:
            return False
        for _ in range(RECOUNT_STEPS):
            if ops.recount_step():
                self.counted.add(ops.keys.ns)
                return False
        return True
