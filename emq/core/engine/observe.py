"""What a queue looks like from outside, for scrapes and the command line (``emq/lua/metrics.lua``).

One pipelined round trip reads every queue asked for: the counts script and the metrics script
of each, O(1) in jobs and bounded in groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import scripts
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
