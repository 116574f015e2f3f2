"""Thin Python over the dashboard's Lua scripts (``emq/lua/admin_*.lua``): one function per script.

Each takes job ids of one queue and answers a status per id ("ok", "missing", or the state
that made the job ineligible), one round trip per chunk of MAX_BATCH ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import scripts
from ..connection import guard
from ..engine import MAX_BATCH, Queue


def _run(q: Queue, name: str, ids: Sequence[str]) -> list[str]:
    statuses: list[str] = []
    for start in range(0, len(ids), MAX_BATCH):
        with guard():
            statuses.extend(scripts.run(q.client, name, [q.keys.ns], list(ids[start : start + MAX_BATCH])))
    return statuses


def run_now(q: Queue, ids: Sequence[str]) -> list[str]:
    """Make scheduled jobs ready now, ahead of their due time."""
    return _run(q, "admin_run_now", ids)


def retry(q: Queue, ids: Sequence[str]) -> list[str]:
    """Give dead jobs a fresh budget of attempts and make them ready now."""
    return _run(q, "admin_retry", ids)


def delete(q: Queue, ids: Sequence[str]) -> list[str]:
    """Delete scheduled, completed or dead jobs (ready and active ones are refused)."""
    return _run(q, "admin_delete", ids)
