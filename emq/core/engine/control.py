"""Stopping work on purpose: cancel jobs (``cancel.lua``), pause and resume a queue or a group's lane.

``Queue`` inherits these, so ``Queue("mail").cancel([...])`` and ``.pause()`` read like the
rest of its operations; ``emq.queue()`` routes them to the right partition.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import config
from ..connection import guard
from .base import MAX_BATCH, Ops


class ControlOps(Ops):
    """Cancel, pause, resume and read the paused state of one physical queue."""

    def cancel(self, ids: Sequence[str]) -> list[str]:
        """Cancel jobs that wait or run: "ok", "missing", or the state of a job that had finished."""
        ttl_ms = int(config.get("EMQ_RESULT_TTL") * 1000)
        keep = config.get("EMQ_KEEP_COMPLETED")
        statuses: list[str] = []
        for start in range(0, len(ids), MAX_BATCH):
            statuses.extend(self._run("cancel", [ttl_ms, keep, *ids[start : start + MAX_BATCH]]))
        return statuses

    def pause(self, group: str | None = None) -> bool:
        """Pause the queue, or one group's lane; True when it was not paused before."""
        return bool(self._run("pause", [group or ""]))

    def resume(self, group: str | None = None) -> bool:
        """Resume the queue, or one group's lane, and wake parked workers; True when it was paused."""
        return bool(self._run("resume", [group or ""]))

    def paused(self, group: str | None = None) -> bool:
        """Whether claims skip this queue (or, given a group, that group's lane)."""
        with guard():
            if group is None:
                return bool(self.client.exists(self.keys.paused))
            return bool(self.client.sismember(self.keys.paused_groups, group))

    def paused_groups(self) -> list[str]:
        """The groups whose lanes are paused, sorted (a short list: pausing is done by hand)."""
        with guard():
            return sorted(self.client.smembers(self.keys.paused_groups))
