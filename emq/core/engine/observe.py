"""What queues look like from outside, for scrapes, the command line and the dashboard's overview.

``snapshots``: one pipelined round trip reads every queue asked for, the counts script and the metrics
script (``emq/lua/metrics.lua``) of each, O(1) in jobs and bounded in groups. The other reads here are
pipelined across the queues too and bounded by what they are asked for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import scripts, stored
from ..connection import guard
from ..records import Counts
from .queue import Queue

SOON_MS = 10_000  # leases expiring within this count as expiring soon
HEADS = 100  # lanes (in serving order) looked at for the oldest ready job


@dataclass(frozen=True)
class Snapshot:
    """One physical queue's counts, health and counters at one instant of the server clock."""

    queue: str
    counts: Counts
    oldest_ready_ms: int | None  # age of the oldest ready job seen (None: nothing ready)
    expiring_soon: int  # leases that expire within SOON_MS
    groups_with_work: int  # lanes with ready work, on the ring or held off it by their cap
    leader: str | None  # the Pump leading the queue
    last_tick_ms: int | None  # how long ago that Pump ticked
    last_minute: tuple[int, int]  # (completed, failed) in the last whole minute
    stats: dict[str, int] = field(default_factory=dict)  # the queue's counters since it was first used

    @property
    def capped_groups(self) -> int:
        """Groups with ready work held off the ring because they run at their concurrency cap."""
        return max(self.groups_with_work - self.counts.groups_on_ring, 0)


def snapshots(queues: Sequence[Queue], lead_ttl_ms: int) -> list[Snapshot]:
    """Read several queues in one pipelined round trip; lead_ttl_ms ages the Pump's last tick."""
    if not queues:
        return []
    calls = []
    for q in queues:
        calls.append(("counts", [q.keys.ns], []))
        calls.append(("metrics", [q.keys.ns], [SOON_MS, HEADS]))
    with guard():
        replies = scripts.run_many(queues[0].client, calls)
    return [_snapshot(q.name, Counts.from_reply(replies[2 * i]), replies[2 * i + 1], lead_ttl_ms)
            for i, q in enumerate(queues)]


def _snapshot(name: str, counts: Counts, r: list, lead_ttl_ms: int) -> Snapshot:
    now, oldest, leader, pttl = int(r[0]), int(r[1]), r[4] or None, int(r[5])
    return Snapshot(
        queue=name, counts=counts, oldest_ready_ms=max(now - oldest, 0) if oldest >= 0 else None,
        expiring_soon=int(r[2]), groups_with_work=int(r[3]), leader=leader,
        last_tick_ms=max(lead_ttl_ms - pttl, 0) if leader and pttl > 0 else None,
        last_minute=(int(r[6]), int(r[7])), stats={r[i]: int(r[i + 1]) for i in range(8, len(r), 2)},
    )


def leaders(queues: Sequence[Queue]) -> list[tuple[str | None, int]]:
    """Per queue, the Pump leading it (None: none) and the ms its lead has left, in one pipelined round trip."""
    if not queues:
        return []
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            pipe.get(q.keys.leader)
            pipe.pttl(q.keys.leader)
        r = pipe.execute()
    return [(r[2 * i] or None, int(r[2 * i + 1])) for i in range(len(queues))]


def leases_by_worker(queues: Sequence[Queue], limit: int) -> dict[str, int]:
    """Active jobs per worker in these queues, read from their leases (so they add up to the active counts):
    the first limit leases of each queue, in two pipelined round trips."""
    if not queues:
        return {}
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            pipe.zrange(q.keys.leases, 0, limit - 1)
        leased = pipe.execute()
        workers = stored.read(queues[0].client, [q.keys.job(i) for q, ids in zip(queues, leased, strict=True)
                                                 for i in ids], ("worker",))
    return dict(Counter(f["worker"] for f in workers if f["worker"]))


def outcomes_by_minute(queues: Sequence[Queue], minutes: Sequence[int]) -> list[tuple[int, int, int]]:
    """Completed and failed jobs in each of these minutes (epoch minutes, as the scripts bucket them),
    summed over the queues: (minute start ms, completed, failed), in one pipelined round trip."""
    replies = []
    if queues:
        with guard():
            pipe = queues[0].client.pipeline(transaction=False)
            for q in queues:
                for m in minutes:
                    pipe.hmget(q.keys.minute(m), ["completed", "failed"])
            replies = pipe.execute()
    out = []
    for j, m in enumerate(minutes):
        done = failed = 0
        for i in range(len(queues)):
            c, f = replies[i * len(minutes) + j]
            done += int(c or 0)
            failed += int(f or 0)
        out.append((m * 60000, done, failed))
    return out


def paused_lanes(queues: Sequence[Queue]) -> list[tuple[list[str], int]]:
    """Per queue: its paused groups (sorted; a short list, pausing is done by hand) and how many of
    them hold ready work (held off the ring by the pause). One pipelined read, and a second one
    only when some group is paused (single-key commands: a cluster routes each to its slot)."""
    if not queues:
        return []
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            pipe.smembers(q.keys.paused_groups)
        groups = [sorted(g) for g in pipe.execute()]
        paused = [(q, g) for q, g in zip(queues, groups, strict=True) if g]
        held = {}
        if paused:
            pipe = queues[0].client.pipeline(transaction=False)
            for q, g in paused:
                pipe.smismember(q.keys.lanes, g)
            held = {q.name: sum(map(bool, hits)) for (q, _), hits in zip(paused, pipe.execute(), strict=True)}
    return [(g, held.get(q.name, 0)) for q, g in zip(queues, groups, strict=True)]
