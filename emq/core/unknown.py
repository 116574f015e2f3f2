"""Jobs waiting for a name no live worker knows: the warning of ``emq status`` and the dashboard.

In a rolling deploy new code mints jobs of names old workers lack; such a job is given back
without spending an attempt (``finish.lua``'s unknown outcome) and counted in its queue's small
``unknown`` hash, name -> "<jobs>,<first ms>". A reader compares those names with the names the
live workers of the queue publish in their registry entries (``runtime.heartbeat.describe``):
one pipelined read of the hashes, and the workers only when some hash has a name, so the cost
grows with the unknown names and the workers, never with the jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import registry, topology
from .connection import guard
from .engine import Queue


@dataclass(frozen=True)
class UnknownName:
    """Jobs of one name, held in one logical queue, that no live worker of the queue knows."""

    queue: str
    name: str
    jobs: int  # held now: each leaves the count as it runs on a worker that knows it, or ends
    first_ms: int  # server ms a worker first did not know a job of this name
    waiting_ms: int  # how long ago that was (server clock)


def held(queues: Sequence[Queue]) -> tuple[int, list[dict[str, tuple[int, int]]]]:
    """The server's clock (ms) and, per queue, its held names: name -> (jobs, first ms)."""
    if not queues:
        return 0, []
    client = queues[0].client
    with guard():
        sec, usec = client.time()
        pipe = client.pipeline(transaction=False)
        for q in queues:
            pipe.hgetall(q.keys.unknown)
        replies = pipe.execute()
    now = int(sec) * 1000 + int(usec) // 1000
    return now, [{name: _parsed(v) for name, v in r.items()} for r in replies]


def _parsed(value: str) -> tuple[int, int]:
    jobs, _, first = value.partition(",")
    return int(jobs or 0), int(first or 0)


def unknown_names(queues: Sequence[str], prefix: str | None = None) -> list[UnknownName]:
    """For these logical queues, the held names no live worker serving the queue knows, by queue then name."""
    physical = {name: [Queue(p, prefix=prefix) for p in topology.names(name)] for name in queues}
    flat = [q for parts in physical.values() for q in parts]
    now, hashes = held(flat)
    by_queue = {q.name: h for q, h in zip(flat, hashes, strict=True)}
    if not any(hashes):
        return []
    known = _known(registry.workers(prefix or flat[0].keys.prefix))
    out = []
    for queue, parts in physical.items():
        summed: dict[str, tuple[int, int]] = {}  # a partitioned queue's partitions added up
        for q in parts:
            for name, (jobs, first) in by_queue[q.name].items():
                if name not in known.get(q.name, ()):
                    before, since = summed.get(name, (0, first))
                    summed[name] = (before + jobs, min(since, first))
        out += [UnknownName(queue, name, jobs, first, max(now - first, 0))
                for name, (jobs, first) in sorted(summed.items())]
    return out


def _known(workers: list[registry.WorkerEntry]) -> dict[str, set[str]]:
    """Per physical queue, the job names some live worker serving it knows (a worker of an earlier
    version publishes none: it counts as knowing none)."""
    known: dict[str, set[str]] = {}
    for w in workers:
        names = set(w.info.get("jobs", ()))
        for q in w.info.get("queues", ()):
            known.setdefault(q, set()).update(names)
    return known
