"""One read function per dashboard page, over the engine's keys (``emq.keys``) and nothing else.

Every function reads a bounded amount: a page of a set by offset (ZRANGE/LRANGE) or a cursor
step of a registry (SSCAN); "now" is the server's TIME, the clock every script uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import conf, keys, partitions
from ..connection import get_client, guard
from ..engine import Counts, Queue
from ..pump import lead_ttl_ms
from .scan import PAGE, Filters, Slice, page

QUEUE_PAGE = 25  # queues on one overview page
WORKER_PAGE = 50  # workers on one overview page
WORKER_TTL = 30  # seconds a worker's heartbeat key lives; refreshed every 10 s
MINUTES = 60  # the chart's span
QUEUE_LIST_LIMIT = 500  # queues offered in the queue picker


def server_now(client: Any) -> int:
    """The server's clock in ms: the one clock every script uses."""
    sec, usec = client.time()
    return int(sec) * 1000 + int(usec) // 1000


def prefix() -> str:
    return conf.get("EMQ_PREFIX")


def known_queues(limit: int = QUEUE_LIST_LIMIT) -> list[str]:
    """Queue names from the registry, by SSCAN, at most limit of them (sorted)."""
    client, names, cursor = get_client(), [], 0
    with guard():
        while True:
            cursor, batch = client.sscan(keys.registry_queues(prefix()), cursor, count=200)
            names.extend(batch)
            if cursor == 0 or len(names) >= limit:
                return partitions.expand(sorted(names))[:limit]


# -- overview ------------------------------------------------------------------------------


@dataclass
class QueueRow:
    name: str
    counts: Counts
    leader: str | None
    last_tick_ms: int | None  # server ms of the leader's last tick
    late_ms: int  # how long the oldest due job has waited for promotion (0: none due)


@dataclass
class WorkerRow:
    id: str
    info: dict[str, Any]
    age_s: int | None  # seconds since its last heartbeat; None: its key expired (gone)


@dataclass
class Overview:
    now_ms: int
    queues: list[QueueRow]
    queue_cursor: int
    workers: list[WorkerRow]
    worker_cursor: int
    minutes: list[tuple[int, int, int]]  # (minute start ms, completed, failed), oldest first


def overview(queue_cursor: int = 0, worker_cursor: int = 0) -> Overview:
    """Every queue (a page) with counts and Pump status, the workers (a page), the last hour's outcomes."""
    client, p = get_client(), prefix()
    with guard():
        queue_cursor, names = client.sscan(keys.registry_queues(p), queue_cursor, count=QUEUE_PAGE)
        worker_cursor, wids = client.sscan(keys.registry_workers(p), worker_cursor, count=WORKER_PAGE)
        now = server_now(client)
        names = partitions.expand(sorted(names))  # a partitioned queue shows each of its partitions
        rows = _queue_rows(client, names, now)
        workers = _worker_rows(client, p, sorted(wids))
        minutes = _minutes(client, [Queue(n, prefix=p) for n in names], now)
    return Overview(now, rows, queue_cursor, workers, worker_cursor, minutes)


def _queue_rows(client: Any, names: list[str], now: int) -> list[QueueRow]:
    from .. import scripts

    queues = [Queue(n, prefix=prefix()) for n in names]
    counts = scripts.run_many(client, [("counts", [q.keys.ns], []) for q in queues]) if queues else []
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.get(q.keys.leader)
        pipe.pttl(q.keys.leader)
    lead = pipe.execute()
    ttl_ms = lead_ttl_ms()
    rows = []
    for i, q in enumerate(queues):
        r = [int(x) for x in counts[i]]
        c = Counts(r[0], r[1], r[2], r[3], r[4], r[5], None if r[6] < 0 else r[6], r[7])
        leader, pttl = lead[2 * i], lead[2 * i + 1]
        last_tick = now - (ttl_ms - pttl) if leader and pttl > 0 else None
        late = now - c.next_due_ms if c.next_due_ms is not None and c.next_due_ms <= now else 0
        rows.append(QueueRow(q.name, c, leader, last_tick, late))
    return rows


def _worker_rows(client: Any, p: str, wids: list[str]) -> list[WorkerRow]:
    pipe = client.pipeline(transaction=False)
    for wid in wids:
        pipe.get(keys.worker(p, wid))
        pipe.ttl(keys.worker(p, wid))
    replies = pipe.execute()
    rows = []
    for i, wid in enumerate(wids):
        raw, ttl = replies[2 * i], replies[2 * i + 1]
        info = json.loads(raw) if raw else {}
        rows.append(WorkerRow(wid, info, WORKER_TTL - ttl if raw and ttl >= 0 else None))
    return rows


def _minutes(client: Any, queues: list[Queue], now: int) -> list[tuple[int, int, int]]:
    """Completed and failed per minute over the last hour, summed over the queues given."""
    current = now // 60000
    span = range(current - MINUTES + 1, current + 1)
    pipe = client.pipeline(transaction=False)
    for q in queues:
        for m in span:
            pipe.hmget(q.keys.minute(m), ["completed", "failed"])
    replies = pipe.execute() if queues else []
    out = []
    for j, m in enumerate(span):
        done = failed = 0
        for i in range(len(queues)):
            c, f = replies[i * MINUTES + j]
            done += int(c or 0)
            failed += int(f or 0)
        out.append((m * 60000, done, failed))
    return out


# -- lanes ---------------------------------------------------------------------------------


@dataclass
class GroupRow:
    group: str
    depth: int
    active: int
    cap: int | None
    oldest_ms: int | None  # due time of the job at the head of its lane


@dataclass
class Lanes:
    queue: str
    now_ms: int
    ring: list[GroupRow]
    ring_start: int
    ring_len: int
    lanes: list[GroupRow]  # groups with ready work (on the ring or capped off it), an SSCAN step
    lanes_cursor: int
    lanes_total: int

    @property
    def ring_next(self) -> int | None:
        return self.ring_start + PAGE if self.ring_start + PAGE < self.ring_len else None


def lanes(queue: str, ring_start: int = 0, lanes_cursor: int = 0) -> Lanes:
    """The ring in serving order (a page) and the groups with ready work (an SSCAN step)."""
    q, client = Queue(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
        ring = client.lrange(q.keys.ring, ring_start, ring_start + PAGE - 1)
        ring_len = client.llen(q.keys.ring)
        lanes_cursor, groups = client.sscan(q.keys.lanes, lanes_cursor, count=PAGE)
        stats = _group_rows(client, q, ring + sorted(groups))
        total = client.scard(q.keys.lanes)
    return Lanes(queue, now, stats[: len(ring)], ring_start, ring_len, stats[len(ring) :], lanes_cursor, total)


def _group_rows(client: Any, q: Queue, groups: list[str]) -> list[GroupRow]:
    pipe = client.pipeline(transaction=False)
    for g in groups:
        pipe.llen(q.keys.lane(g))
        pipe.hget(q.keys.active, g)
        pipe.hget(q.keys.caps, g)
        pipe.lindex(q.keys.lane(g), 0)
    r = pipe.execute()
    heads = [r[4 * i + 3] for i in range(len(groups))]
    pipe = client.pipeline(transaction=False)
    for head in heads:
        pipe.hget(q.keys.job(head or "-"), "due")
    dues = pipe.execute()
    return [
        GroupRow(g, int(r[4 * i] or 0), int(r[4 * i + 1] or 0), None if r[4 * i + 2] is None else int(r[4 * i + 2]),
                 int(dues[i]) if heads[i] and dues[i] else None)
        for i, g in enumerate(groups)
    ]


# -- lists of jobs -------------------------------------------------------------------------

LEASE_FIELDS = ("fn", "group", "worker", "attempts", "max_attempts", "claimed", "state")
STALLED_FIELDS = ("fn", "group", "state", "stalled", "max_stalled", "reclaimed_from", "reason", "attempts")
SCHEDULED_FIELDS = ("fn", "group", "attempts", "max_attempts", "origin", "error")
COMPLETED_FIELDS = ("fn", "group", "attempts", "claimed", "origin", "result")
DEAD_FIELDS = ("fn", "group", "attempts", "max_attempts", "reason", "origin", "error")


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
        h = client.hgetall(q.keys.job(job_id))
    if not h:
        return None
    try:
        errors = json.loads(h.get("errors") or "[]")
    except ValueError:
        errors = []
    return JobDetail(queue, job_id, now, h, errors)


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
