"""The dashboard's reads of flows: jobs waiting for parents, batches and chains, one flow's members,
and the parents and children of one job. Every read is the engine's (``Queue.flow``, ``reads.states``):
a page (ZRANGE, LRANGE, SSCAN) of a bounded size, in pipelined round trips; a member's state is read
from the queue that holds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.connection import get_client, guard
from ..core.engine import Queue
from ..core.engine.reads import states as job_states
from ..core.logical import partition
from .lists import JobList, _list
from .queries import prefix, server_now
from .scan import PAGE, Filters

WAITING_FIELDS = ("fn", "group", "kind", "flow", "origin", "failed_parent", "waits", "spawns")
FLOW_FIELDS = ("kind", "total", "state", "completed", "dead", "cancelled", "created", "finished", "callbacks")
STEP_SCAN = 100  # steps of a chain read to show its progress in the list of flows
LINKS = 50  # parents and children shown on a job's page


def _q(name: str) -> Queue:
    return partition(name, prefix=prefix())


def _states(refs: list[tuple[str, str]]) -> list[str | None]:
    """The state of each (queue, id), in one pipelined round trip (None: gone)."""
    return job_states([(_q(queue), job_id) for queue, job_id in refs])


def waiting(queue: str, start: int = 0, filters: Filters | None = None, cursor: str = "") -> JobList:
    """Jobs waiting for their parents, a signal or their children, oldest first, with how many parents (or
    children) each still waits for."""
    data = _list(queue, "waiting", start, WAITING_FIELDS, filters or Filters(), cursor)
    pending = _q(queue).flow.pending([row.id for row in data.slice.rows])
    for row, n in zip(data.slice.rows, pending, strict=True):
        row.fields["pending"] = n
    return data


@dataclass
class FlowRow:
    id: str
    fields: dict[str, Any]
    done: int  # members (steps) that have ended
    total: int

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100


@dataclass
class Flows:
    queue: str
    now_ms: int
    rows: list[FlowRow]
    start: int
    next: int | None
    total: int


def flows(queue: str, start: int = 0) -> Flows:
    """The batches and chains recorded in a queue, latest first, a page at a time, with their progress."""
    q, client = _q(queue), get_client()
    start = max(int(start), 0)
    with guard():
        now = server_now(client)
    ids, total = q.flow.page(start, PAGE)
    records = q.flow.records(ids, FLOW_FIELDS)
    rows = [_flow_row(q, i, r) for i, r in zip(ids, records, strict=True) if r["kind"]]
    return Flows(queue, now, rows, start, start + PAGE if start + PAGE < total else None, total)


def _flow_row(q: Queue, flow_id: str, r: dict[str, Any]) -> FlowRow:
    total = int(r["total"] or 0)
    if r["kind"] != "chain":  # a batch or a chord: counted as its members end
        done = sum(int(r[k] or 0) for k in ("completed", "dead", "cancelled"))
        return FlowRow(flow_id, r, done, total)
    steps = q.flow.members(flow_id, 0, STEP_SCAN)
    done = sum(1 for s in _states(steps) if s in ("completed", "dead", "cancelled"))
    return FlowRow(flow_id, r, done, total)


@dataclass
class FlowDetail:
    queue: str
    id: str
    now_ms: int
    row: FlowRow
    members: list[tuple[str, str, str | None]]  # (queue, id, state) of a page
    start: int
    next: int | None
    callbacks: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # (name, queue, id, state)

    @property
    def end(self) -> int:
        return self.start + len(self.members)


def flow(queue: str, flow_id: str, start: int = 0) -> FlowDetail | None:
    """One batch or chain: its progress, callbacks and a page of its members with their states."""
    q, client = _q(queue), get_client()
    start = max(int(start), 0)
    with guard():
        now = server_now(client)
    (record,) = q.flow.records([flow_id], FLOW_FIELDS)
    if not record["kind"]:
        return None
    refs = q.flow.members(flow_id, start, PAGE)
    calls = [(name, *ref) for name, ref in json.loads(record["callbacks"] or "{}").items()]
    states = _states(refs + [(c[1], c[2]) for c in calls])
    row = _flow_row(q, flow_id, record)
    members = [(qn, i, s) for (qn, i), s in zip(refs, states, strict=False)]
    callbacks = [(name, qn, i, s) for (name, qn, i), s in zip(calls, states[len(refs):], strict=True)]
    nxt = start + PAGE if start + PAGE < row.total else None
    return FlowDetail(queue, flow_id, now, row, members, start, nxt, callbacks)


@dataclass
class JobLinks:
    pending: list[str]  # parents still waited for (this queue's view: ids)
    children: list[tuple[str, str, str | None]]  # (queue, id, state) of jobs waiting for this one
    flow: tuple[str, str] | None  # (queue, id) of its batch or chain


def job_links(queue: str, job_id: str, fields: dict[str, str]) -> JobLinks:
    """A job's place in flows: the parents it still waits for, the jobs that wait for it (after a failed end: the
    jobs it told, which a retry resumes), its flow."""
    pending, children = _q(queue).flow.links(job_id, LINKS, fields.get("fallen"))
    states = _states(children)
    flow_ref = tuple(json.loads(fields["flow"])) if fields.get("flow") else None
    return JobLinks(sorted(pending)[:LINKS], [(*c, s) for c, s in zip(children, states, strict=True)][:LINKS],
                    flow_ref)
