"""The dashboard's operations on jobs by id (``emq/lua/admin_*.lua``): one method per script.

Each answers a status per id: "ok", "missing", or the state that made the job ineligible.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import MAX_BATCH, Ops


class AdminOps(Ops):
    """Run now, retry and delete, a chunk of ids per round trip; purge finished jobs by age."""

    def run_now(self, ids: Sequence[str]) -> list[str]:
        """Make scheduled jobs ready now, ahead of their due time."""
        return self._chunked("admin_run_now", ids)

    def retry(self, ids: Sequence[str]) -> list[str]:
        """Give dead or cancelled jobs a fresh budget of attempts and make them ready now; a job of a flow
        resumes it: the jobs that died because of it wait for it again (``admin_retry.lua``)."""
        return self._chunked("admin_retry", ids)

    def delete(self, ids: Sequence[str]) -> list[str]:
        """Delete scheduled, waiting, completed or dead jobs (ready and active ones are refused)."""
        return self._chunked("admin_delete", ids)

    def purge(self, state: str, age_ms: int, limit: int = MAX_BATCH) -> tuple[int, int]:
        """Delete up to limit completed or dead jobs finished at least age_ms ago, oldest first.

        Returns (deleted, still left past the age); limit 0 only counts them.
        """
        if state not in ("completed", "dead"):
            raise ValueError(f"purge takes state 'completed' or 'dead', not {state!r}")
        deleted, left = self._run("purge", [state, max(int(age_ms), 0), min(max(int(limit), 0), MAX_BATCH)])
        return int(deleted), int(left)
