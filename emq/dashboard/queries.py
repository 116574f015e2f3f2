"""One read function per dashboard page, through the engine's read methods and the registries.

Every function reads a bounded amount: a page of a set by offset (ZRANGE/LRANGE) or a cursor
step of a registry (SSCAN); "now" is the server's TIME, the clock every script uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..core import config, keys, registry, topology
from ..core.connection import get_client, guard
from ..core.engine import Queue, snapshots
from ..core.engine.lanereads import Lane
from ..core.engine.observe import leases_by_worker, outcomes_by_minute
from ..core.logical import partition, partitions
from ..core.records import Counts
from ..runtime.heartbeat import TTL as WORKER_TTL
from ..runtime.pump import lead_ttl_ms
from .scan import PAGE

QUEUE_PAGE = 25  # queues on one overview page
WORKER_PAGE = 50  # workers on one overview page
MINUTES = 60  # the chart's span
QUEUE_LIST_LIMIT = 500  # queues offered in the queue picker
LEASE_SCAN = 1000  # leases per queue read to count each worker's jobs in flight


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
    latency_ms: int | None = None  # how long the oldest ready job has waited (None: nothing ready)
    workers: int = 0  # live workers that serve it

    @property
    def unserved(self) -> bool:
        """Jobs wait here and no live worker serves the queue: they never run until one does."""
        return self.workers == 0 and bool(self.counts.ready or self.counts.scheduled or self.counts.active)


@dataclass
class WorkerRow:
    id: str
    info: dict[str, Any]
    age_s: int  # seconds since its last heartbeat (never negative: one TTL shared with the worker)
    in_flight: int = 0  # leases it holds now, from the server (they add up to the queues' active counts)

    @property
    def started_ms(self) -> int | None:
        return int(self.info["started"]) * 1000 if self.info.get("started") else None

    @property
    def memory(self) -> str:
        rss = self.info.get("rss")
        return "—" if rss is None else f"{rss / 1_048_576:.0f} MB"


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
    physical = partitions(names, prefix=p)
    serving = _serving(p)
    rows = _grouped(names, _queue_rows(physical, now, serving))  # partitions beneath their queue
    workers = _worker_rows(p, sorted(wids))
    current = now // 60000
    minutes = outcomes_by_minute(physical, range(current - MINUTES + 1, current + 1))
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
        waits = [r.latency_ms for r in parts if r.latency_ms is not None]
        out.append(QueueRow(name, total, None, None, max(r.late_ms for r in parts), parts,
                            max(waits) if waits else None, max(r.workers for r in parts)))
    return out


def _queue_rows(queues: list[Queue], now: int, serving: Counter) -> list[QueueRow]:
    """Each queue's counts, Pump, lateness and latency (``snapshots``: one pipelined round trip; the oldest
    ready job looked for at the heads of the first 100 lanes in serving order, so O(1) in groups)."""
    rows = []
    for q, snap in zip(queues, snapshots(queues, lead_ttl_ms()), strict=True):
        c = snap.counts
        last_tick = now - snap.last_tick_ms if snap.last_tick_ms is not None else None
        late = now - c.next_due_ms if c.next_due_ms is not None and c.next_due_ms <= now else 0
        rows.append(QueueRow(q.name, c, snap.leader, last_tick, late, latency_ms=snap.oldest_ready_ms,
                             workers=serving[q.name]))
    return rows


def _serving(p: str) -> Counter:
    """Live workers per physical queue they serve (the worker registry: O(workers), never O(jobs))."""
    return Counter(n for e in registry.workers(p) for n in set(topology.expand(e.info.get("queues", []))))


def _worker_rows(p: str, wids: list[str]) -> list[WorkerRow]:
    """Live workers only (an expired entry leaves the registry here), each with the leases it holds now
    (read from the leases, so they add up to the active counts; bounded: LEASE_SCAN a queue)."""
    entries = registry.workers(p, wids)
    held = leases_by_worker(partitions(sorted({q for e in entries for q in e.info.get("queues", [])}), prefix=p),
                            LEASE_SCAN)
    return [WorkerRow(e.id, e.info, max(WORKER_TTL - e.ttl_s, 0), held.get(e.id, 0)) for e in entries]


# -- lanes ---------------------------------------------------------------------------------


GroupRow = Lane  # one group's lane as the Lanes page shows it (the engine's value)


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
    q, client = partition(queue, prefix=prefix()), get_client()
    with guard():
        now = server_now(client)
    v = q.lanes(ring_start, lanes_cursor, count=PAGE)
    return Lanes(queue, now, v.ring, v.ring_start, v.ring_len, v.lanes, v.lanes_cursor, v.lanes_total, v.paused,
                 v.paused_groups)
