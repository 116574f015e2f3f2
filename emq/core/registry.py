"""The registries the dashboard and the commands read: queues ever used, workers alive.

Plain sets beside the queues (``<prefix>:queues``, ``<prefix>:workers``), never touched by a
queue's scripts; each process adds a queue once. A worker's entry is a key with a TTL that its
heartbeat refreshes; a reader drops the ids whose entry expired (a killed worker) from the set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import config, keys, topology
from .connection import get_client, guard
from .engine import Queue

_known: set[tuple[str, str]] = set()


def remember_queue(q: Queue) -> None:
    """Add a queue (by its logical name) to the registry the admin reads, once per process."""
    key = (q.keys.prefix, topology.logical(q.name))
    if key not in _known:
        with guard():
            get_client().sadd(keys.registry_queues(q.keys.prefix), key[1])
        _known.add(key)


def forget_all() -> None:
    """Forget which queues this process registered (the server or prefix changed)."""
    _known.clear()


def known_queues(prefix: str | None = None) -> set[str]:
    """Every logical queue name in the registry."""
    with guard():
        return set(get_client().smembers(keys.registry_queues(prefix or config.get("EMQ_PREFIX"))))


def is_known(queue: str, prefix: str | None = None) -> bool:
    """Whether a queue (physical or logical) is in the registry, or the default queue (known before its first
    job): one SISMEMBER, whatever the number of queues."""
    if topology.logical(queue) == config.get("EMQ_DEFAULT_QUEUE"):
        return True
    with guard():
        return bool(get_client().sismember(keys.registry_queues(prefix or config.get("EMQ_PREFIX")),
                                           topology.logical(queue)))


def remember_all(names: Iterable[str]) -> None:
    """Register several physical or logical queues."""
    for name in names:
        remember_queue(Queue(name))


def beat(prefix: str, worker_id: str, entry: dict[str, Any], ttl: int, settings: bool,
         client: Any = None) -> dict[str, str] | None:
    """Refresh a worker's entry for ttl seconds, and put its id back in the set if the entry had lapsed (a
    reader drops an id whose entry is gone: the entry first, then the id); with settings, read the stored
    worker settings as stored (``overrides.parse`` reads them) in the same round trip. Mostly one command a beat.
    client: the heartbeat thread's own connection, else the shared one."""
    client = client or get_client()
    with guard():
        pipe = client.pipeline(transaction=False)
        pipe.set(keys.worker(prefix, worker_id), json.dumps(entry), ex=ttl, get=True)
        if settings:
            pipe.hgetall(keys.worker_settings(prefix))
        replies = pipe.execute()
        if replies[0] is None:
            client.sadd(keys.registry_workers(prefix), worker_id)
    return replies[1] if settings else None


@dataclass(frozen=True)
class WorkerEntry:
    """A live worker's registry entry: what its heartbeat wrote, and seconds left before it expires."""

    id: str
    info: dict[str, Any]
    ttl_s: int


def workers(prefix: str | None = None, ids: Sequence[str] | None = None) -> list[WorkerEntry]:
    """The live workers among ids (default: every registered one); ids whose entry expired leave the set."""
    p = prefix or config.get("EMQ_PREFIX")
    client = get_client()
    with guard():
        if ids is None:
            ids = sorted(client.smembers(keys.registry_workers(p)))
        pipe = client.pipeline(transaction=False)
        for wid in ids:
            pipe.get(keys.worker(p, wid))
            pipe.ttl(keys.worker(p, wid))
        replies = pipe.execute() if ids else []
        alive, gone = [], []
        for i, wid in enumerate(ids):
            raw, ttl = replies[2 * i], replies[2 * i + 1]
            if raw is None:
                gone.append(wid)
            else:
                alive.append(WorkerEntry(wid, json.loads(raw), max(int(ttl), 0)))
        if gone:
            client.srem(keys.registry_workers(p), *gone)
    return alive
