"""Filtered slices of a queue's ready jobs: its lanes walked from a cursor, a lane's jobs in claim order.

Ready jobs sit in one list a group (``emq.core.lanes``), with no index by name or time, so every filter on
them, the time range too (on each job's due time), is a bounded walk: at most ``budget`` jobs read a
call, the lanes of many groups read in one pipelined round trip and their jobs' fields in another. One
group's lane is walked alone; without a group the walk goes through the set of groups with ready work
by SSCAN (every group that keeps ready work through the walk is met once; in no particular order).

The cursor (JSON, for a URL) holds the SSCAN cursor, the groups of its last step not finished yet and the
place in the first of them. A job that leaves the lane before that place moves the place back by one:
``shifted`` says by how much, for an action that took jobs out (cancel, move); a claim by a worker meanwhile
makes the walk pass over a job, which a second run meets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .. import lanes, stored
from ..connection import guard
from .base import Ops
from .filters import Filters
from .reads import Entry
from .sift import MAX_BUDGET, MAX_WANT, Sifted

GROUPS_A_TRIP = 50  # lanes read in one pipelined round trip
CHUNK = 500  # most jobs read from one lane a round trip


class LaneSift(Ops):
    """The ready jobs of one physical queue, filtered; ``Queue`` inherits these."""

    def lane_sift(self, filters: Filters, cursor: str = "", *, budget: int = 2000, want: int = 50,
                  fields: Sequence[str] = ()) -> Sifted:
        """The ready jobs that pass filters (their group's lane alone when filters name a group), at most want
        among at most budget read after cursor, with these fields; each scored by its due time."""
        walk = _Walk(*_parse(cursor, filters.group), min(max(budget, 1), MAX_BUDGET), min(max(want, 1), MAX_WANT))
        asked = list(dict.fromkeys([*filters.needs(), *fields, "due"]))
        with guard():
            while not walk.full:
                if not walk.pending:
                    if walk.scan < 0:
                        break
                    walk.scan, walk.pending, walk.offset = self._groups(walk.scan)
                    continue
                batch = self._lanes(walk.pending[:GROUPS_A_TRIP], walk.offset, min(CHUNK, walk.left))
                data = stored.read(self.client, [self.keys.job(i) for ids in batch for i in ids], asked)
                walk.take(batch, data, filters, fields, min(CHUNK, walk.left))
            total = self._ready_total(filters.group)
        return Sifted(walk.kept, walk.cursor(), walk.read, total)

    def _groups(self, scan: int) -> tuple[int, list[str], int]:
        """The next SSCAN step of the groups with ready work: (its cursor, -1 past the last step; groups; 0)."""
        nxt, groups = self.client.sscan(self.keys.lanes, scan, count=GROUPS_A_TRIP)
        return int(nxt) or -1, sorted(groups), 0

    def _lanes(self, groups: Sequence[str], offset: int, count: int) -> list[list[str]]:
        """Up to count ids of each group's lane in claim order (the first from offset), in one round trip."""
        k = self.keys
        pipe = self.client.pipeline(transaction=False)
        for i, g in enumerate(groups):
            start = offset if i == 0 else 0
            pipe.lrange(k.lane(g), start, start + count - 1)
            pipe.hget(k.solo, g)
        r = pipe.execute()
        out = []
        for i, g in enumerate(groups):
            start = offset if i == 0 else 0
            ids, solo = r[2 * i], r[2 * i + 1]
            if not ids and solo is not None and start == 0:
                ids = [solo]
            if lanes.PMARK in ids:
                ids = lanes.prioritized(self.client, k, g, start, ids)
            out.append(ids)
        return out

    def _ready_total(self, group: str) -> int:
        """How many jobs are ready: in one lane, or in the queue (its counter, as counts.lua reads it)."""
        if group:
            return lanes.lane_len(self.client, self.keys, group)
        return int(self.client.hget(self.keys.counters, "ready") or 0)


class _Walk:
    """Where a walk of lanes stands: the SSCAN cursor, the groups to walk, the place in the first, what it
    read and kept."""

    def __init__(self, scan: int, pending: list[str], offset: int, budget: int, want: int) -> None:
        self.scan, self.pending, self.offset, self.budget, self.want = scan, pending, offset, budget, want
        self.read, self.kept = 0, []

    @property
    def left(self) -> int:
        return self.budget - self.read

    @property
    def full(self) -> bool:
        return self.read >= self.budget or len(self.kept) >= self.want

    def take(self, batch: list[list[str]], data: list[dict], filters: Filters, fields: Sequence[str],
             per_lane: int) -> None:
        """Go through a round trip's lanes in order, keeping the jobs that pass, until the slice is full."""
        rows = iter(data)
        for ids in batch:
            for job_id in ids:
                f = next(rows)
                self.read, self.offset = self.read + 1, self.offset + 1
                due = int(f["due"] or 0)
                if filters.passes(f, due if f["fn"] is not None else None):
                    self.kept.append(Entry(job_id, due, {k: f[k] for k in fields}))
                if self.full:
                    return
            if len(ids) == per_lane:
                return  # this lane may hold more: read on from here in the next round trip
            self.pending, self.offset = self.pending[1:], 0

    def cursor(self) -> str | None:
        return json.dumps([self.scan, self.pending, self.offset]) if self.pending or self.scan >= 0 else None


def _parse(cursor: str, group: str) -> tuple[int, list[str], int]:
    """A cursor as (SSCAN cursor, -1: no more steps; groups still to walk; place in the first)."""
    if cursor:
        try:
            scan, pending, offset = json.loads(cursor)
            return int(scan), [str(g) for g in pending], max(int(offset), 0)
        except (ValueError, TypeError):
            raise ValueError(f"not a cursor of ready jobs: {cursor[:80]!r}") from None
    return (-1, [group], 0) if group else (0, [], 0)


def shifted(cursor: str | None, removed: dict[str, int]) -> str | None:
    """A lane cursor with its place moved back by the jobs an action took out of the lane it stands in
    (removed: group -> jobs taken out of it before the place)."""
    if not cursor:
        return cursor
    scan, pending, offset = json.loads(cursor)
    if pending and removed.get(pending[0]):
        offset = max(offset - removed[pending[0]], 0)
    return json.dumps([scan, pending, offset])
