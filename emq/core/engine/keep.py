"""Upkeep the Pump does on its own schedule (``recount.lua``, ``retain.lua``, ``stats_roll.lua``): bounded steps that
never hold the server for more than a few milliseconds, whatever the queue's size.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import config
from .base import MAX_BATCH, Ops

STEP = 500  # groups a recount step reads, jobs a retention step deletes: short enough that others barely wait


@dataclass(frozen=True)
class Retained:
    """What one retention step deleted, whether more is past its age or count, and when the oldest
    job left outlives its ttl (seconds from now; None when nothing finished is kept)."""

    completed: int
    cancelled: int
    dead: int
    more: bool
    next_s: float | None = None


class KeepOps(Ops):
    """Recount a queue's ready jobs once (a queue from before counters), trim finished jobs, roll statistics."""

    def recount_step(self, count: int = STEP) -> bool:
        """Count up to count more groups' ready jobs; True once the queue's counters are exact."""
        done, _ = self._run("recount", [min(max(int(count), 1), MAX_BATCH)])
        return bool(done)

    def retain(self, limit: int = STEP) -> Retained:
        """Delete up to limit finished jobs past EMQ_RESULT_TTL / EMQ_KEEP_COMPLETED (completed,
        cancelled) or EMQ_DEAD_TTL / EMQ_KEEP_DEAD (dead), oldest first."""
        argv = [
            int(config.get("EMQ_RESULT_TTL") * 1000), int(config.get("EMQ_KEEP_COMPLETED")),
            int(config.get("EMQ_DEAD_TTL") * 1000), int(config.get("EMQ_KEEP_DEAD")),
            min(max(int(limit), 1), MAX_BATCH),
        ]
        completed, cancelled, dead, more, next_ms = self._run("retain", argv)
        return Retained(int(completed), int(cancelled), int(dead), bool(more),
                        None if int(next_ms) < 0 else int(next_ms) / 1000)

    def roll_stats(self, after: int = 0, limit: int = STEP) -> int:
        """Roll up to limit job names' statistics into their ten-minute windows (after: names this round
        rolled already); the after of the next call of the round, or -1 once the round is done, -2 when no
        name had statistics in the last 20 minutes."""
        _, following = self._run("stats_roll", [min(max(int(limit), 1), MAX_BATCH), max(int(after), 0)])
        return int(following)
