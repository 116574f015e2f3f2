"""Cancel a whole flow: every unfinished member of a batch or chord (every step of a chain) and its callbacks.

The flow's record, in its home queue, lists its members in order (``members:<id>``, JSON [queue,
id]); they are read CHUNK at a time and each chunk is cancelled with one ``cancel`` call per queue
it touches (cancel.lua, up to 1,000 ids a call), so a batch of 10,000 members in one queue costs
20 round trips. Callbacks go first: the batch that the members' cancels settle finds them
cancelled and runs none of them. A chain's steps go last first: a cancelled step's end finds the
steps after it cancelled already (they end cancelled, not dead because of it).
Limit: a job minted meanwhile is not a member; a batch's record expires EMQ_RESULT_TTL after it
settled (a chain's after it was opened), and then there is nothing left to cancel by its id.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable

from ..errors import JobNotFound
from . import topology
from .connection import get_client, guard
from .engine import MAX_BATCH, Queue

CHUNK = MAX_BATCH  # members read per round trip


def home_of(queue: str, flow_id: str, prefix: str) -> Queue:
    """The partition of queue (logical, or one of its partitions) that records the flow; JobNotFound if none."""
    queues = [Queue(name, prefix=prefix) for name in topology.names(topology.logical(queue))]
    if len(queues) > 1:
        with guard():
            pipe = get_client().pipeline(transaction=False)
            for q in queues:
                pipe.exists(q.keys.flow(flow_id))
            queues = [q for q, hit in zip(queues, pipe.execute(), strict=True) if hit] or queues[:1]
    return queues[0]


def cancel(home: Queue, flow_id: str) -> int:
    """Cancel what has not finished of the flow recorded in home; returns how many jobs were cancelled."""
    record = home.flow.record(flow_id)
    if not record:
        raise JobNotFound(f"no batch, chord or chain {flow_id!r} in queue {home.name!r} (prefix "
                          f"{home.keys.prefix!r}): it never existed there, or its record expired")
    callbacks = [(ref[0], ref[1]) for ref in json.loads(record.get("callbacks") or "{}").values()]
    cancelled = _cancel(home.keys.prefix, callbacks)
    backwards = record.get("kind") == "chain"
    for k in itertools.count(0, CHUNK):
        refs = home.flow.members(flow_id, -k - CHUNK if backwards else k, CHUNK)
        cancelled += _cancel(home.keys.prefix, reversed(refs) if backwards else refs)
        if len(refs) < CHUNK:
            break
    return cancelled


def _cancel(prefix: str, refs: Iterable[tuple[str, str]]) -> int:
    """Cancel jobs given as (queue, id), one call per queue; how many were cancelled ("ok")."""
    by_queue: dict[str, list[str]] = {}
    for queue, job_id in refs:
        by_queue.setdefault(queue, []).append(job_id)
    return sum(status == "ok" for name, ids in by_queue.items() for status in Queue(name, prefix=prefix).cancel(ids))
