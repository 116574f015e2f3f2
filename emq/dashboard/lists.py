"""The dashboard's lists of jobs (a page of one of a queue's sets), one job's fields, and find by id.

Every read is bounded: a page by offset or a filtered page by a bounded scan (``scan``), and
"now" is the server's TIME, the clock every script uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core import keys, layout
from ..core.connection import get_client, guard
from ..core.engine import Queue
from ..core.lanes import lane_len, lane_range
from . import masking
from .queries import known_queues, prefix, server_now
from .scan import PAGE, Filters, Row, Slice, hmget_many, page

# -- lists of jobs -------------------------------------------------------------------------

LEASE_FIELDS = ("fn", "group", "worker", "attempts", "max_attempts", "claimed", "state")
STALLED_FIELDS = ("fn", "group", "state", "stalled", "max_stalled", "reclaimed_from", "reason", "attempts")
# Lists that show a result or an error also read the arguments, to find the secrets to scrub from them.
SCHEDULED_FIELDS = ("fn", "group", "attempts", "max_attempts", "origin", "error", "args", "kwargs")
COMPLETED_FIELDS = ("fn", "group", "attempts", "claimed", "origin", "result", "args", "kwargs")
DEAD_FIELDS = ("fn", "group", "attempts", "max_attempts", "reason", "origin", "error", "args", "kwargs")
CANCELLED_FIELDS = ("fn", "group", "attempts", "cancelled_from", "origin")
READY_FIELDS = ("fn", "group", "attempts", "max_attempts", "due", "origin", "priority")


@dataclass
class JobList:
    queue: str
    now_ms: int
    slice: Slice
    filters: Filters = field(default_factory=Filters)


def _list(queue: str, suffix: str, start: int, fields: tuple[str, ...], desc: bool, filters: Filters) -> JobList:
    q, client = Queue(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
        s = page(client, q.keys.fixed(suffix), q.keys.job, start, fields, desc=desc, filters=filters)
    for row in s.rows:
        row.fields = masking.clean(row.fields)
    return JobList(queue, now, s, filters)


def leases(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """Active jobs by lease expiry, soonest first; an expiry in the past marks a stalled candidate."""
    return _list(queue, "leases", start, LEASE_FIELDS, False, filters or Filters())


def stalled(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """Recently reclaimed jobs, latest first (the engine keeps the last 1,000 reclaims)."""
    return _list(queue, "reclaims", start, STALLED_FIELDS, True, filters or Filters())


def scheduled(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """Jobs waiting for their due time, soonest first; retries carry their attempt."""
    return _list(queue, "scheduled", start, SCHEDULED_FIELDS, False, filters or Filters())


def completed(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """Completed jobs still kept, latest first."""
    return _list(queue, "done", start, COMPLETED_FIELDS, True, filters or Filters())


def dead(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """The dead-letter set, latest first, with each job's last error."""
    return _list(queue, "dead", start, DEAD_FIELDS, True, filters or Filters())


def cancelled(queue: str, start: int = 0, filters: Filters | None = None) -> JobList:
    """Cancelled jobs still kept, latest first, with the state each was cancelled in."""
    return _list(queue, "cancelled", start, CANCELLED_FIELDS, True, filters or Filters())


PMARK = "\0p"  # _prio.lua's marker in a lane


def ready(queue: str, group: str, start: int = 0) -> JobList:
    """A page of one lane's ready jobs in claim order (a page by offset: LRANGE, never the whole lane)."""
    q, client = Queue(queue, prefix=prefix()), get_client()
    start = max(int(start), 0)
    with guard():
        now = server_now(client)
        ids = prioritized(client, q, group, start, lane_range(client, q.keys, group, start, start + PAGE - 1))
        total = lane_len(client, q.keys, group)
        data = hmget_many(client, [q.keys.job(i) for i in ids], READY_FIELDS)
    rows = [Row(i, int(f["due"] or 0), f) for i, f in zip(ids, data, strict=True)]
    nxt = start + PAGE if start + PAGE < total else None
    return JobList(queue, now, Slice(rows, start, nxt, total, scanned=len(rows)), Filters(group=group))


def prioritized(client, q: Queue, group: str, start: int, ids: list[str]) -> list[str]:
    """A lane page with its priority markers read: the k-th marker of the list stands for the k-th
    member of the group's priority zset (each claim of a marker takes the zset's first, _prio.lua)."""
    marks = [n for n, i in enumerate(ids) if i == PMARK]
    if not marks:
        return ids
    before = len(client.lpos(q.keys.lane(group), PMARK, count=0, maxlen=start) or []) if start else 0
    members = client.zrange(q.keys.ns + keys.PLANE + group, before, before + len(marks) - 1)
    out = list(ids)
    for n, member in zip(marks, members, strict=False):
        out[n] = member
    return out


# -- one job -------------------------------------------------------------------------------


@dataclass
class JobDetail:
    queue: str
    id: str
    now_ms: int
    fields: dict[str, str]
    errors: list[dict[str, Any]]


def job(queue: str, job_id: str) -> JobDetail | None:
    """Every stored field of one job, or None when it does not exist."""
    q, client = Queue(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
        h = layout.filled(client.hgetall(q.keys.job(job_id)))  # a left-out field shows its default
    if not h:
        return None
    try:
        errors = json.loads(masking.clean(h).get("errors") or "[]")
    except ValueError:
        errors = []
    return JobDetail(queue, job_id, now, h, errors if isinstance(errors, list) else [])


def find(job_id: str) -> list[str]:
    """The known queues holding a job with this id."""
    names = known_queues()
    client = get_client()
    with guard():
        pipe = client.pipeline(transaction=False)
        for n in names:
            pipe.exists(Queue(n, prefix=prefix()).keys.job(job_id))
        found = pipe.execute() if names else []
    return [n for n, hit in zip(names, found, strict=True) if hit]
