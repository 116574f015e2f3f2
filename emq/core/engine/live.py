"""Live state of one queue's jobs: register a waiter (``flow_wait.lua``), renew leases with progress
(``extend.lua`` and ``progress.lua`` in one round trip).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import Ops

Progress = tuple[str, int, float, str]  # (job id, token, fraction, note)


def progress_call(progress: Sequence[Progress]) -> tuple[str, list[Any]]:
    """``progress.lua`` and its ARGV: 4 fields an item."""
    return "progress", [x for job_id, token, fraction, note in progress
                        for x in (job_id, token, repr(float(fraction)), note)]


class LiveOps(Ops):
    """Waiters and progress of one physical queue."""

    def watch(self, job_id: str, ttl_ms: int) -> str:
        """Register a ref.wait() caller for a job (or a batch recorded here); returns its state now.

        A settled state (completed, dead, cancelled; a batch: completed, failed) means nothing was
        registered: it has ended. "missing" when neither exists.
        """
        return self._run("flow_wait", [job_id, int(ttl_ms)])

    def renew(self, items: Iterable[tuple[str, int]], ms: int, progress: Sequence[Progress] = ()) -> list[str]:
        """Renew leases as ``extend_locks`` does, storing progress in the same round trip.

        Returns the lease statuses ("ok", "cancelled", "stale", "missing" per item).
        """
        argv: list[Any] = [int(ms)]
        for job_id, token in items:
            argv.extend((job_id, token))
        calls: list[tuple[str, list[Any]]] = []
        if len(argv) > 1:
            calls.append(("extend", argv))
        if progress:
            calls.append(progress_call(progress))
        if not calls:
            return []
        replies = self._run_many(calls)
        return replies[0] if len(argv) > 1 else []
