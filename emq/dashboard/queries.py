"""One read function per dashboard page, over the engine's keys (``emq.keys``) and nothing else.

Every function reads a bounded amount: a page of a set by offset (ZRANGE/LRANGE) or a cursor
step of a registry (SSCAN); "now" is the server's TIME, the clock every script uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..core import config, keys, registry, topology
from ..core.connection import get_client, guard
from ..core.engine import Queue, counts_of
from ..core.records import Counts
from ..runtime.heartbeat import TTL as WORKER_TTL
from ..runtime.pump import lead_ttl_ms
from .scan import PAGE

QUEUE_PAGE = 25  # queues on one overview page
WORKER_PAGE = 50  # workers on one overview page
MINUTES = 60  # the chart's span
QUEUE_LIST_LIMIT = 500  # queues offered in the queue picker
LEASE_SCAN = 1000  # leases per queue read to count each worker's jobs in flight
RUNNING_SCAN = 5000  # leases read to count the running jobs of uncapped groups on the Lanes page


def server_now(client: Any) -> int:
    """The server's clock in ms: the one clock every script uses."""
    sec, usec = client.time()
    return int(sec) * 1000 + int(usec) // 1000


def prefix() -> str:
    return config.get("EMQ_PREFIX")


def known_queues(limit: int = QUEUE_LIST_LIMIT) -> list[str]:
    """Queue names from the registry, by SSCAN, at most limit of them (sorted)."""
    client, names, cursor = get_client(), [], 0
    with guard():
        while True:
            cursor, batch = client.sscan(keys.registry_queues(prefix()), cursor, count=200)
            names.extend(batch)
            if cursor == 0 or len(names) >= limit:
                return topology.expand(sorted(names))[:limit]


# -- overview ------------------------------------------------------------------------------


@dataclass
class QueueRow:
    name: str
    counts: Counts
    leader: str | None
    last_tick_ms: int | None  # server ms of the leader's last tick
    late_ms: int  # how long the oldest due job has waited for promotion (0: none due)
    partitions: list[QueueRow] = field(default_factory=list)  # a partitioned queue's rows, beneath it


@dataclass
class WorkerRow:
    id: str
    info: dict[str, Any]
    age_s: int  # seconds since its last heartbeat (never negative: one TTL shared with the worker)
    in_flight: int = 0  # leases it holds now, from the server (they add up to the queues' active counts)


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
        names = sorted(names)
        physical = topology.expand(names)
        rows = _grouped(names, _queue_rows(client, physical, now))  # partitions beneath their queue
        workers = _worker_rows(client, p, sorted(wids))
        minutes = _minutes(client, [Queue(n, prefix=p) for n in physical], now)
    return Overview(now, rows, queue_cursor, workers, worker_cursor, minutes)


def _grouped(names: list[str], rows: list[QueueRow]) -> list[QueueRow]:
    """One row per logical queue; a partitioned one sums its partitions, listed beneath it."""
    by_name = {r.name: r for r in rows}
    out = []
    for name in names:
        parts = [by_name[n] for n in topology.names(name)]
        if len(parts) == 1:
            out.append(parts[0])
            continue
        total = Counts.summed([r.counts for r in parts])
        out.append(QueueRow(name, total, None, None, max(r.late_ms for r in parts), parts))
    return out


def _queue_rows(client: Any, names: list[str], now: int) -> list[QueueRow]:
    queues = [Queue(n, prefix=prefix()) for n in names]
    counts = counts_of(queues)
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.get(q.keys.leader)
        pipe.pttl(q.keys.leader)
    lead = pipe.execute()
    ttl_ms = lead_ttl_ms()
    rows = []
    for i, q in enumerate(queues):
        c = counts[i]
        leader, pttl = lead[2 * i], lead[2 * i + 1]
        last_tick = now - (ttl_ms - pttl) if leader and pttl > 0 else None
        late = now - c.next_due_ms if c.next_due_ms is not None and c.next_due_ms <= now else 0
        rows.append(QueueRow(q.name, c, leader, last_tick, late))
    return rows


def _worker_rows(client: Any, p: str, wids: list[str]) -> list[WorkerRow]:
    """Live workers only (an expired entry leaves the registry here), each with the leases it holds now."""
    entries = registry.workers(p, wids)
    held = _held(client, p, sorted({q for e in entries for q in e.info.get("queues", [])}))
    return [WorkerRow(e.id, e.info, max(WORKER_TTL - e.ttl_s, 0), held.get(e.id, 0)) for e in entries]


def _held(client: Any, p: str, queues: list[str]) -> dict[str, int]:
    """Active jobs per worker in these queues, read from the leases (so they add up to the active counts).

    Bounded: the first LEASE_SCAN leases of each queue.
    """
    pipe = client.pipeline(transaction=False)
    for name in queues:
        pipe.zrange(Queue(name, prefix=p).keys.leases, 0, LEASE_SCAN - 1)
    leased = pipe.execute() if queues else []
    pipe = client.pipeline(transaction=False)
    for name, ids in zip(queues, leased, strict=True):
        for job_id in ids:
            pipe.hget(Queue(name, prefix=p).keys.job(job_id), "worker")
    counts: dict[str, int] = {}
    for worker in pipe.execute() if any(leased) else []:
        if worker:
            counts[worker] = counts.get(worker, 0) + 1
    return counts


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
    active: int | None  # its leases (under a cap: its count; else read from the lease set); None: too many
    cap: int | None
    oldest_ms: int | None  # due time of the job at the head of its lane
    paused: bool = False


@dataclass
class Lanes:
    queue: str
    now_ms: int
    ring: list[GroupRow]
    ring_start: int
    ring_len: int
    lanes: list[GroupRow]  # groups with ready work (on the ring or capped or paused off it), an SSCAN step
    lanes_cursor: int
    lanes_total: int
    paused: bool = False  # the whole queue
    paused_groups: list[GroupRow] = field(default_factory=list)  # an SSCAN step of the paused lanes

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
        _, held_off = client.sscan(q.keys.paused_groups, 0, count=PAGE)
        rows = _group_rows(client, q, ring + sorted(groups) + sorted(held_off))
        total = client.scard(q.keys.lanes)
        paused = bool(client.exists(q.keys.paused))
    n, m = len(ring), len(ring) + len(groups)
    return Lanes(queue, now, rows[:n], ring_start, ring_len, rows[n:m], lanes_cursor, total, paused, rows[m:])


def _with_solo(row: list) -> list:
    """A group's (depth, active, cap, head, paused, solo) read as (depth, active, cap, head, paused)."""
    depth, active, cap, head, paused, solo = row
    if solo is not None:
        depth, head = int(depth or 0) + 1, head or solo
    return [depth, active, cap, head, paused]


def _group_rows(client: Any, q: Queue, groups: list[str]) -> list[GroupRow]:
    pipe = client.pipeline(transaction=False)
    for g in groups:
        pipe.llen(q.keys.lane(g))
        pipe.hget(q.keys.active, g)
        pipe.hget(q.keys.caps, g)
        pipe.lindex(q.keys.lane(g), 0)
        pipe.sismember(q.keys.paused_groups, g)
        pipe.hget(q.keys.solo, g)  # a lone job a batch mint queued: no list (emq/core/lanes.py)
    r = pipe.execute()
    rows = [_with_solo(r[6 * i : 6 * i + 6]) for i in range(len(groups))]
    pipe = client.pipeline(transaction=False)
    for row in rows:
        pipe.hmget(q.keys.job(row[3] or "-"), "due", "created")  # no due: due when created (core/layout.py)
    dues = [due or created for due, created in pipe.execute()]
    running = _running(client, q) if any(row[2] is None for row in rows) else {}
    return [
        GroupRow(g, int(depth or 0), int(active or 0) if cap is not None else running.get(g),
                 None if cap is None else int(cap), int(due) if head and due else None, bool(paused))
        for g, (depth, active, cap, head, paused), due in zip(groups, rows, dues, strict=True)
    ]


def _running(client: Any, q: Queue) -> dict[str, int]:
    """Leases per group, read from the lease set: an uncapped group keeps no count (only a cap needs
    one, bclaim.lua). O(jobs in flight), never O(backlog); past RUNNING_SCAN leases, {} ("—")."""
    ids = client.zrange(q.keys.leases, 0, RUNNING_SCAN)
    if len(ids) > RUNNING_SCAN:
        return {}
    pipe = client.pipeline(transaction=False)
    for i in ids:
        pipe.hget(q.keys.job(i), "group")
    return dict(Counter(g for g in pipe.execute() if g is not None))
