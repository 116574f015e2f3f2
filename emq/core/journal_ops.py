"""A durable job's round trips by queue name: its journal read once a run and written under its token,
signals delivered, its spawned children linked to it and their outcomes read.

The jobs layer (``emq.jobs.steps``, ``children``) and the dashboard call these with names; the engine's
queues they act on are built here, inside ``emq.core`` (``engine.journal``, ``engine.flow``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import JobNotFound
from . import locate
from .engine import FlowOps, JournalOps
from .engine.journal import Ended, Journal
from .logical import LogicalQueue

__all__ = ["Ended", "Journal", "deliver", "ended", "holding", "link_child", "put", "read", "signal_on"]


def read(queue: str, job_id: str) -> Journal:
    """The journal of a job of this physical queue, with the server's clock: one round trip."""
    return JournalOps(queue).read(job_id)


def put(queue: str, job_id: str, token: int, field: str, json: str, child: str = "") -> tuple[str, str]:
    """Write an entry and/or a child about to be spawned under the attempt's token (``JournalOps.put``)."""
    return JournalOps(queue).put(job_id, token, field, json, child)


def deliver(job_id: str, name: str, payload_json: str, queue: str | None = None) -> str:
    """Deliver a signal to a job, in the queue given or wherever its id is (``locate``): "ok" (taken), "sent",
    "late", "missing", or the state of a job that had ended (``signal.lua``)."""
    try:
        q, job_id = locate.holder(job_id, queue)
    except JobNotFound:
        return "missing"
    return signal_on(q.name, q.keys.prefix, job_id, name, payload_json)


def signal_on(queue: str, prefix: str, job_id: str, name: str, payload_json: str) -> str:
    """``deliver`` to a job of one physical queue (the dashboard's)."""
    return JournalOps(queue, prefix=prefix).signal(job_id, name, payload_json)


def holding(queue: str, job_id: str) -> str:
    """The physical queue that holds a job of a logical queue (JobNotFound when none does)."""
    return LogicalQueue(queue).holding(job_id).name


def link_child(child_queue: str, child_id: str, parent_queue: str, parent_id: str) -> None:
    """Make a spawned child's end reach its parent: linked as a job the parent waits for (``flow_link``), or,
    when the child has ended already, its outcome settled in the parent's queue now (``flow_relay``)."""
    link = FlowOps(child_queue).link("" if child_queue == parent_queue else parent_queue, [(child_id, parent_id)])[0]
    if link is not None:
        FlowOps(parent_queue).relay([link])


def ended(queue: str, ids: Sequence[str]) -> list[Ended]:
    """The outcomes of jobs of one physical queue, in order (a parent's children)."""
    return JournalOps(queue).ended(ids)
