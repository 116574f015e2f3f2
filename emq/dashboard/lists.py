"""The dashboard's lists of jobs (a page of one of a queue's sets), one job's fields, and find by id.

Every read is the engine's and bounded: a page by offset or a filtered page by a bounded scan
(``Queue.page``, ``scan``), and "now" is the server's TIME, the clock every script uses.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from ..core import locate
from ..core.classes import ErrorClass
from ..core.connection import get_client, guard
from ..core.logical import partition
from . import masking, scan
from .queries import prefix, server_now
from .scan import Filters, Slice, sifted, sliced

# -- lists of jobs -------------------------------------------------------------------------

LEASE_FIELDS = ("fn", "group", "worker", "attempts", "max_attempts", "claimed", "state", "progress")
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


def _list(queue: str, of: str, start: int, fields: tuple[str, ...], filters: Filters, cursor: str = "") -> JobList:
    """A page of one list: by offset, or filtered from cursor (a bounded slice: ``scan.sifted``)."""
    q, client = partition(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
    if filters.active or cursor:
        s = sifted(q, of, filters, cursor, fields)
    else:
        s = sliced(q.page(of, start, fields, count=scan.PAGE))
    for row in s.rows:
        row.fields = masking.clean(row.fields)
    return JobList(queue, now, s, filters)


def leases(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Active jobs by lease expiry, soonest first; an expiry in the past marks a stalled candidate."""
    return _list(queue, "active", start, LEASE_FIELDS, filters or Filters(), cursor)


def stalled(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Recently reclaimed jobs, latest first (the engine keeps the last 1,000 reclaims)."""
    return _list(queue, "stalled", start, STALLED_FIELDS, filters or Filters(), cursor)


def scheduled(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Jobs waiting for their due time, soonest first; retries carry their attempt."""
    return _list(queue, "scheduled", start, SCHEDULED_FIELDS, filters or Filters(), cursor)


def completed(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Completed jobs still kept, latest first."""
    return _list(queue, "completed", start, COMPLETED_FIELDS, filters or Filters(), cursor)


def dead(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """The dead-letter set, latest first, with each job's last error."""
    return _list(queue, "dead", start, DEAD_FIELDS, filters or Filters(), cursor)


def cancelled(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Cancelled jobs still kept, latest first, with the state each was cancelled in."""
    return _list(queue, "cancelled", start, CANCELLED_FIELDS, filters or Filters(), cursor)


def error_classes(queue: str) -> tuple[list[ErrorClass], int, int]:
    """The dead letter by error class (most jobs first), the dead jobs they count and the dead jobs there are."""
    q = partition(queue, prefix=prefix())
    found = q.error_classes()
    return found, sum(c.count for c in found), q.size("dead")


def ready(queue: str, group: str = "", start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Ready jobs: one lane's in claim order by offset (LRANGE, never the whole lane), or filtered, the
    lanes of the groups with ready work walked from cursor (``Queue.lane_sift``); group: the filters' own."""
    q, client = partition(queue, prefix=prefix()), get_client()
    filters = dataclasses.replace(filters or Filters(), group=group)
    with guard():
        now = server_now(client)
    plain = filters.group and not cursor and filters == Filters(group=filters.group)
    s = sliced(q.lane_page(filters.group, start, READY_FIELDS, count=scan.PAGE)) if plain else \
        sifted(q, "ready", filters, cursor, READY_FIELDS)
    for row in s.rows:
        row.fields = masking.clean(row.fields)
    return JobList(queue, now, s, filters)


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
    q, client = partition(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
    h = q.job_fields(job_id)  # a left-out field shows its default
    if h is None:
        return None
    try:
        errors = json.loads(masking.clean(h).get("errors") or "[]")
    except ValueError:
        errors = []
    return JobDetail(queue, job_id, now, h, errors if isinstance(errors, list) else [])


def find(job_id: str) -> list[str]:
    """The physical queues holding a job with this id, found as ``emq.get_job`` finds it (``core.locate``)."""
    return [q.name for q in locate.find([job_id], prefix())[job_id].queues]
