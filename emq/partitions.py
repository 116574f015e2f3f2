"""Partitioned queues: one busy queue split into k sub-queues ``Q#0 … Q#k-1`` that spread over shards.

Declared in settings, ``EMQ_PARTITIONS = {"clicks": 6}``. Each partition is a whole queue with its
own hash tag (``<prefix>:{clicks#3}:…``), so every script still touches one slot and the
partitions land on different cluster nodes. A grouped job goes to the partition its group hashes
to (CRC32, the same in every process), so a group's FIFO lane, fairness and cap hold inside that
partition; an ungrouped job goes round-robin, or by its id when the caller chose one (so the
create-if-absent of an explicit id still finds the same partition). Generated ids end in
``~<partition>`` so ``get_job`` goes straight to the right one.

Workers and Pumps serving ``clicks`` serve all its partitions (``expand``): claims rotate over them
and a parked worker waits on each one's wake list. Limit: changing k re-routes groups; jobs
already minted stay where they are, so only grow k, and only once the old partitions are drained
of grouped work whose order matters.
"""

from __future__ import annotations

import itertools
import random
import threading
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from . import conf, keys
from .engine import Counts, MintSpec, Queue
from .errors import ConfigurationError, JobNotFound
from .records import Job

SEP = "#"  # between a queue's name and its partition number
MARK = "~"  # between a generated job id and its partition number

_turns: dict[str, Any] = {}
_lock = threading.Lock()


def count(queue: str) -> int:
    """How many partitions a queue has (1: not partitioned)."""
    k = conf.get("EMQ_PARTITIONS").get(queue, 1)
    if not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"EMQ_PARTITIONS[{queue!r}] must be an integer >= 1, not {k!r}")
    if k > 1 and SEP in queue:
        raise ConfigurationError(f"partitioned queue {queue!r} must not contain {SEP!r} (it names a partition)")
    return k


def names(queue: str) -> list[str]:
    """The physical queues of a queue: ``Q#0 … Q#k-1``, or ``[Q]`` when it is not partitioned."""
    k = count(queue)
    return [queue] if k == 1 else [f"{queue}{SEP}{p}" for p in range(k)]


def home(queue: str) -> str:
    """The partition that holds a queue's queue-wide state, such as its recurrences: ``Q#0`` (or ``Q``)."""
    return names(queue)[0]


def expand(queues: Sequence[str]) -> list[str]:
    """Replace each partitioned queue by its partitions, keeping order and dropping repeats."""
    return list(dict.fromkeys(name for q in queues for name in names(q)))


def queues(queue: str) -> list[Queue]:
    """The Queue objects of every partition, for the admin, the sweep and counts."""
    return [Queue(n) for n in names(queue)]


def logical(name: str) -> str:
    """The queue a physical name belongs to: ``clicks#3`` -> ``clicks``; anything else unchanged."""
    base, sep, p = name.rpartition(SEP)
    if sep and p.isdigit() and int(p) < conf.get("EMQ_PARTITIONS").get(base, 1):
        return base
    return name


def of_key(key: str, k: int) -> int:
    """The partition a group (or a caller's job id) always goes to: CRC32, stable across processes."""
    return zlib.crc32(key.encode()) % k


def of_group(queue: str, group: str) -> str:
    """The physical queue a group's lane lives in (its cap applies there, exactly)."""
    k = count(queue)
    return queue if k == 1 else f"{queue}{SEP}{of_key(group, k)}"


def _next_turn(queue: str, k: int) -> int:
    turn = _turns.get(queue)
    if turn is None:
        with _lock:
            # Each process starts at a random partition so many producers do not all fill #0 first.
            turn = _turns.setdefault(queue, itertools.count(random.randrange(k)))
    return next(turn) % k


def _partition(queue: str, k: int, spec: MintSpec) -> int:
    if spec.group != keys.DEFAULT_GROUP:
        return of_key(spec.group, k)
    if spec.if_absent:
        return of_key(spec.id, k)
    return _next_turn(queue, k)


def route(queue: str, specs: Sequence[MintSpec]) -> tuple[list[MintSpec], dict[str, list[MintSpec]]]:
    """Place each job in a partition: (the specs with their final ids, the batch of each physical queue)."""
    k = count(queue)
    if k == 1:
        return list(specs), {queue: list(specs)}
    placed: list[MintSpec] = []
    batches: dict[str, list[MintSpec]] = {}
    for spec in specs:
        p = _partition(queue, k, spec)
        if not spec.if_absent:
            spec = replace(spec, id=f"{spec.id}{MARK}{p}")
        placed.append(spec)
        batches.setdefault(f"{queue}{SEP}{p}", []).append(spec)
    return placed, batches


def _probe_order(queue: str, job_id: str) -> list[str]:
    """The partition named in a generated id first, then the others (ids chosen by callers carry none)."""
    all_names = names(queue)
    head, mark, p = job_id.rpartition(MARK)
    if mark and p.isdigit() and int(p) < len(all_names) and len(all_names) > 1:
        first = all_names[int(p)]
        return [first] + [n for n in all_names if n != first]
    return all_names


def get_job(job_id: str, queue: str) -> Job:
    """Read a job of a queue, partitioned or not; JobNotFound names every partition looked in."""
    tried = _probe_order(queue, job_id)
    for name in tried:
        try:
            return Queue(name).get_job(job_id)
        except JobNotFound:
            continue
    where = queue if len(tried) == 1 else f"{queue} (partitions {tried[0]}…, {len(tried)} in all)"
    raise JobNotFound(f"no job {job_id!r} in queue {where}, prefix {conf.get('EMQ_PREFIX')!r}")


def counts(queue: str) -> Counts:
    """A partitioned queue's counts summed over its partitions (one round trip each)."""
    parts = [q.counts() for q in queues(queue)]
    if len(parts) == 1:
        return parts[0]
    dues = [c.next_due_ms for c in parts if c.next_due_ms is not None]
    return Counts(
        now_ms=max(c.now_ms for c in parts),
        scheduled=sum(c.scheduled for c in parts),
        ready=sum(c.ready for c in parts),
        active=sum(c.active for c in parts),
        completed=sum(c.completed for c in parts),
        dead=sum(c.dead for c in parts),
        next_due_ms=min(dues) if dues else None,
        groups_on_ring=sum(c.groups_on_ring for c in parts),
    )


def sweep(queue: str) -> list[str]:
    """Reclaim expired leases in every partition; returns the reclaimed ids."""
    return [job_id for q in queues(queue) for job_id in q.sweep()]
