"""The leading Pump's upkeep of a queue, a few bounded steps a tick (Oban's pruner, in short):
count a queue's ready jobs once when it predates counters, and trim finished jobs by age and
count even when nothing finishes (EMQ_RESULT_TTL, EMQ_KEEP_COMPLETED, EMQ_DEAD_TTL, EMQ_KEEP_DEAD), and
roll the statistics per job name into ten-minute windows every ROLL_EVERY seconds (the week's chart).

Limit: RECOUNT_STEPS + RETAIN_STEPS script calls a tick, each a short one (``keep.STEP``); when work is
left the Pump ticks again at once, so a large backlog drains in slices that never block others.
A quiet queue is not trimmed every tick: retention runs again when its oldest finished job
outlives its ttl (the script says when), or after RETAIN_EVERY seconds at the latest, which bounds
how long the dead set may exceed EMQ_KEEP_DEAD (finish and cancel trim completed and cancelled
jobs by count as they end), which keeps an idle worker with its Pump inside its budget (``idle``).
"""

from __future__ import annotations

import logging
import time

from ..core.engine import KeepOps, Queue

log = logging.getLogger("emq.pump")
RECOUNT_STEPS = 20  # recount steps a tick: 10,000 groups
RETAIN_STEPS = 10  # retention steps a tick: 5,000 finished jobs
RETAIN_EVERY = 300.0  # seconds: the longest a queue goes without a retention step
ROLL_EVERY = 60.0  # seconds between two rolls of a queue's statistics: the week's chart lags a minute at most
ROLL_QUIET = 300.0  # seconds before the next roll of a queue that had no statistics for 20 minutes (idle budget)
ROLL_STEP = 100  # job names a roll call reads (twenty minute windows each)


class Upkeep:
    """One Pump's upkeep of its queues; remembers which queues' counters it found exact."""

    def __init__(self) -> None:
        self.counted: set[str] = set()
        self.retain_at: dict[str, float] = {}  # queue namespace -> monotonic time of its next retention
        self.roll_at: dict[str, float] = {}  # queue namespace -> monotonic time of its next roll of statistics
        self.rolled: dict[str, int] = {}  # queue namespace -> names its roll under way did (``KeepOps.roll_stats``)

    def step(self, q: Queue) -> bool:
        """Recount and trim a few bounded steps; True when work is left for the next tick."""
        ops = q.keep
        more = self._recount(ops) | self._roll(ops)
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

    def _roll(self, ops: KeepOps) -> bool:
        """One call of the statistics' roll when due; True when its round has names left."""
        ns = ops.keys.ns
        if time.monotonic() < self.roll_at.get(ns, 0.0):
            return False
        following = ops.roll_stats(self.rolled.get(ns, 0), ROLL_STEP)
        if following >= 0:
            self.rolled[ns] = following
            return True
        self.rolled.pop(ns, None)
        self.roll_at[ns] = time.monotonic() + (ROLL_QUIET if following == -2 else ROLL_EVERY)
        return False

    def _recount(self, ops: KeepOps) -> bool:
        if ops.keys.ns in self.counted:
            return False
        for _ in range(RECOUNT_STEPS):
            if ops.recount_step():
                self.counted.add(ops.keys.ns)
                return False
        return True
