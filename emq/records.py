"""The values the engine hands out: what a claim returns and what ``get_job`` reads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

STATES = ("scheduled", "ready", "active", "completed", "dead")


def from_ms(value: Any) -> datetime | None:
    """An aware UTC datetime from server milliseconds, or None when unset."""
    if value in (None, ""):
        return None
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


@dataclass(frozen=True)
class JobRef:
    """A minted job: its id and queue, enough to look it up later."""

    id: str
    queue: str


@dataclass(frozen=True)
class Claimed:
    """A job this worker holds under a lease; ``token`` fences every later call about it."""

    id: str
    token: int
    name: str
    args: list
    kwargs: dict
    lease_ms: int
    max_attempts: int
    backoff: tuple[float, float]


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended, as the finish script takes it."""

    id: str
    token: int
    outcome: str  # "completed" | "failed" | "dead"
    value: str  # result JSON, or error text
    retry_ms: int = 0


@dataclass(frozen=True)
class Job:
    """Everything stored about one job, as ``emq.get_job`` returns it."""

    id: str
    queue: str
    name: str
    state: str
    args: list
    kwargs: dict
    group: str
    attempts: int
    max_attempts: int
    result: Any = None
    error: str | None = None
    errors: list = field(default_factory=list)
    created: datetime | None = None
    due: datetime | None = None
    started: datetime | None = None
    finished: datetime | None = None
    lease_until: datetime | None = None
    worker: str | None = None
    stalled: int = 0
    reason: str | None = None
    origin: str | None = None
    priority: int = 0
    meta: dict | None = None

    @classmethod
    def from_hash(cls, queue: str, job_id: str, h: dict[str, str]) -> Job:
        """Build from the job's hash as stored by the scripts."""
        return cls(
            id=job_id,
            queue=queue,
            name=h.get("fn", ""),
            state=h.get("state", ""),
            args=json.loads(h.get("args", "[]")),
            kwargs=json.loads(h.get("kwargs", "{}")),
            group=h.get("group", ""),
            attempts=int(h.get("attempts", 0)),
            max_attempts=int(h.get("max_attempts", 0)),
            result=json.loads(h["result"]) if "result" in h else None,
            error=h.get("error"),
            errors=json.loads(h.get("errors", "[]")),
            created=from_ms(h.get("created")),
            due=from_ms(h.get("due")),
            started=from_ms(h.get("claimed")),
            finished=from_ms(h.get("finished")),
            lease_until=from_ms(h.get("lease_until")),
            worker=h.get("worker"),
            stalled=int(h.get("stalled", 0)),
            reason=h.get("reason"),
            origin=h.get("origin"),
            priority=int(h.get("priority", 0)),
            meta=json.loads(h["meta"]) if "meta" in h else None,
        )
