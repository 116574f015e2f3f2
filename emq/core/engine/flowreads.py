"""Reading a queue's flows without changing them: the batches and chains it records, a flow's members,
and the parents and children of a job. Each read is a page (ZRANGE, LRANGE, SSCAN) of a bounded size,
a pipelined round trip for many; a member's state is read from its own queue (``reads.states``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..connection import guard
from .base import Ops

Ref = tuple[str, str]  # (physical queue, job id)


class FlowReads(Ops):
    """The flow records and links of one physical queue; ``FlowOps`` (``Queue.flow``) inherits these."""

    def page(self, start: int, count: int) -> tuple[list[str], int]:
        """Ids of the batches and chains recorded here from start, latest first, and how many there are."""
        with guard():
            return (self.client.zrange(self.keys.flows, start, start + count - 1, desc=True),
                    int(self.client.zcard(self.keys.flows)))

    def records(self, ids: Sequence[str], fields: Sequence[str]) -> list[dict[str, str | None]]:
        """These fields of each flow's record, in one pipelined round trip (all None: it expired)."""
        if not ids:
            return []
        with guard():
            pipe = self.client.pipeline(transaction=False)
            for flow_id in ids:
                pipe.hmget(self.keys.flow(flow_id), list(fields))
            return [dict(zip(fields, r, strict=True)) for r in pipe.execute()]

    def members(self, flow_id: str, start: int, count: int) -> list[Ref]:
        """A page of a flow's members (a chain's steps) in order, each as (queue, id)."""
        with guard():
            return [_ref(x) for x in self.client.lrange(self.keys.members(flow_id), start, start + count - 1)]

    def pending(self, ids: Sequence[str]) -> list[int]:
        """How many parents each waiting job still waits for, in one pipelined round trip."""
        if not ids:
            return []
        with guard():
            pipe = self.client.pipeline(transaction=False)
            for job_id in ids:
                pipe.scard(self.keys.deps(job_id))
            return [int(n) for n in pipe.execute()]

    def links(self, job_id: str, count: int, fallen: str | None = None) -> tuple[list[str], list[Ref]]:
        """An SSCAN step (about count) of the parents a job still waits for (their ids, in this queue's view)
        and of the jobs waiting for it, each as (queue, id); fallen: the job's field of that name, the children
        its failed end told (_flow.lua), listed when none waits."""
        with guard():
            _, pending = self.client.sscan(self.keys.deps(job_id), 0, count=count)
            _, kids = self.client.sscan(self.keys.children(job_id), 0, count=count)
        if not kids and fallen:
            kids = json.loads(fallen)[:count]
        return list(pending), [(child_q or self.name, cid) for child_q, cid in map(_ref, kids)]


def _ref(raw: str) -> Ref:
    """A member or a child as stored: JSON [queue, id] ("" queue: the one that stores it)."""
    queue, job_id = json.loads(raw)
    return queue, job_id
