"""The leading Pump's upkeep of a queue, a few bounded steps a tick (Oban's pruner, in short):
count a queue's ready jobs once when it predates counters, and trim finished jobs by age and
count even when nothing finishes (EMQ_RESULT_TTL, EMQ_KEEP_COMPLETED, EMQ_DEAD_TTL, EMQ_KEEP_DEAD).

Limit: RECOUNT_STEPS + RETAIN_STEPS script calls a tick, each ~0.5 ms of the server; when work is
left the Pump ticks again at once, so a large backlog drains in slices that never block others.
"""

from __future__ import annotations

import logging

from ..core.engine import KeepOps, Queue

log = logging.getLogger("emq.pump")
RECOUNT_STEPS = 20  # recount steps a tick: 10,000 groups
RETAIN_STEPS = 10  # retention steps a tick: 5,000 finished jobs


class Upkeep:
    """One Pump's upkeep of its queues; remembers which queues' counters it found exact."""

    def __init__(self) -> None:
        self.counted: set[str] = set()

    def step(self, q: Queue) -> bool:
        """Recount and trim a few bounded steps; True when work is left for the next tick."""
        ops = KeepOps(q.name, prefix=q.keys.prefix, client=q._client)
        more = self._recount(ops)
        for _ in range(RETAIN_STEPS):
            r = ops.retain()
            if r.completed or r.cancelled or r.dead:
                log.debug("pump %s: retention deleted completed=%s cancelled=%s dead=%s",
                          q.name, r.completed, r.cancelled, r.dead)
            if not r.more:
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
