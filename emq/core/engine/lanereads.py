"""Reading a queue's lanes without changing them: the ring in serving order, the groups with ready work and
their state, one lane's jobs in claim order, the running jobs per group.

A lane is read as ``emq.core.lanes`` says (a list, or a solo; priority markers read from the group's zset).
Every read is a page (LRANGE, SSCAN step) of a bounded size, in pipelined round trips (rule 8).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .. import lanes, stored
from ..connection import guard
from .base import Ops
from .reads import PAGE, Entry, Page

RUNNING_SCAN = 5000  # leases read at most to count the running jobs of uncapped groups


@dataclass(frozen=True)
class Lane:
    """One group's lane: its ready jobs, its running ones (its cap's count, else from the leases; None: too
    many leases to count), its cap, when the job at its head became due, whether it is paused."""

    group: str
    depth: int
    active: int | None
    cap: int | None
    oldest_ms: int | None
    paused: bool = False


@dataclass(frozen=True)
class Lanes:
    """A page of the ring in serving order, an SSCAN step of the groups with ready work and one of the
    paused groups, each as its Lane; the lane set's size; whether the whole queue is paused."""

    ring: list[Lane]
    ring_start: int
    ring_len: int
    lanes: list[Lane]
    lanes_cursor: int
    lanes_total: int
    paused: bool
    paused_groups: list[Lane]


class LaneReads(Ops):
    """The lanes of one physical queue as a reader sees them; ``Queue`` inherits these."""

    def lanes(self, ring_start: int = 0, lanes_cursor: int = 0, count: int = PAGE) -> Lanes:
        """The ring from ring_start (count groups), a step of the lane set from lanes_cursor, a step of the
        paused groups, each group with its Lane."""
        k, client = self.keys, self.client
        with guard():
            ring = self.ring_groups(ring_start, count)
            ring_len = client.llen(k.ring)
            lanes_cursor, groups = client.sscan(k.lanes, lanes_cursor, count=count)
            _, held_off = client.sscan(k.paused_groups, 0, count=count)
            rows = self.lane_states(ring + sorted(groups) + sorted(held_off))
            total = client.scard(k.lanes)
            paused = bool(client.exists(k.paused))
        n, m = len(ring), len(ring) + len(groups)
        return Lanes(rows[:n], ring_start, ring_len, rows[n:m], lanes_cursor, total, paused, rows[m:])

    def ring_groups(self, start: int = 0, count: int = PAGE) -> list[str]:
        """A page of the ring: the groups whose lanes claims serve, in serving order from start."""
        with guard():
            return self.client.lrange(self.keys.ring, start, start + count - 1)

    def lane_states(self, groups: Sequence[str]) -> list[Lane]:
        """Each group's Lane, in two pipelined round trips (a third reads the leases when a group has no cap)."""
        k = self.keys
        with guard():
            pipe = self.client.pipeline(transaction=False)
            for g in groups:
                pipe.llen(k.lane(g))
                pipe.hget(k.active, g)
                pipe.hget(k.caps, g)
                pipe.lindex(k.lane(g), 0)
                pipe.sismember(k.paused_groups, g)
                pipe.hget(k.solo, g)  # a lone job a batch mint queued: no list (core/lanes.py)
            r = pipe.execute() if groups else []
            rows = [_with_solo(r[6 * i : 6 * i + 6]) for i in range(len(groups))]
            heads = stored.read(self.client, [k.job(row[3] or "-") for row in rows], ("due",))
            running = self.running() if any(row[2] is None for row in rows) else {}
        return [Lane(g, int(depth or 0), int(active or 0) if cap is not None else (running or {}).get(g),
                     None if cap is None else int(cap), int(head["due"]) if job and head["due"] else None, bool(paused))
                for g, (depth, active, cap, job, paused), head in zip(groups, rows, heads, strict=True)]

    def running(self, limit: int = RUNNING_SCAN) -> dict[str, int] | None:
        """Leases per group, read from the lease set: an uncapped group keeps no count (only a cap needs one,
        bclaim.lua). O(jobs in flight), never O(backlog); None past limit leases."""
        with guard():
            ids = self.client.zrange(self.keys.leases, 0, limit)
            if len(ids) > limit:
                return None
            groups = stored.read(self.client, [self.keys.job(i) for i in ids], ("group",))
        return dict(Counter(f["group"] for f in groups if f["group"] is not None))

    def lane_page(self, group: str, start: int = 0, fields: Sequence[str] = (), count: int = PAGE) -> Page:
        """A page of one lane's ready jobs in claim order (LRANGE, never the whole lane), each scored by when
        it became due, with these fields."""
        start = max(int(start), 0)
        k, client = self.keys, self.client
        with guard():
            ids = lanes.lane_range(client, k, group, start, start + count - 1)
            ids = lanes.prioritized(client, k, group, start, ids)
            total = lanes.lane_len(client, k, group)
            data = stored.read(client, [k.job(i) for i in ids], list(dict.fromkeys([*fields, "due"])))
        entries = [Entry(i, int(f["due"] or 0), {name: f[name] for name in fields})
                   for i, f in zip(ids, data, strict=True)]
        return Page(entries, start, start + count if start + count < total else None, total, len(entries))


def _with_solo(row: list) -> list:
    """A group's (depth, active, cap, head, paused, solo) read as (depth, active, cap, head, paused)."""
    depth, active, cap, head, paused, solo = row
    if solo is not None:
        depth, head = int(depth or 0) + 1, head or solo
    return [depth, active, cap, head, paused]
