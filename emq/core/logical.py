"""A queue as its users name it: ``emq.Queue("clicks")`` (``emq.queue("clicks")``) acts on the right
partition of each job, and the physical queues of a name for the rest of emq.

Lease calls (``extend_lock``, ``release_lock``) go to the partition that holds the job, the sweep
and counts cover every partition, and ``get_job`` finds a job wherever it was routed; the same
methods whether the queue is partitioned or not. The engine's physical queue (``engine.Queue``) is
built only inside ``emq.core``: the rest of emq gets the physical queues of a name from ``partitions``
and ``partition`` here (a test pins it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import JobNotFound
from . import config, topology, waits
from .engine import MAX_BATCH, Queue, counts_of
from .engine.reads import holders
from .records import Counts, Job


def partitions(names: Iterable[str], *, prefix: str | None = None, client: Any = None) -> list[Queue]:
    """The physical queues of these names in order, repeats dropped: a partitioned queue's partitions
    (``clicks#0 …``), any other name's one queue (a partition's name too)."""
    return [Queue(n, prefix=prefix, client=client) for n in topology.expand(list(names))]


def partition(name: str, *, prefix: str | None = None) -> Queue:
    """The physical queue of one physical name: a partition (``clicks#3``) or a queue that is not partitioned.
    ValueError for a partitioned queue's own name (it names several: use ``partitions``)."""
    if topology.count(name) > 1:
        raise ValueError(f"queue {name!r} is partitioned: name one of its partitions "
                         f"({topology.home(name)} …) or take them all with partitions([{name!r}])")
    return Queue(name, prefix=prefix)


class LogicalQueue:
    """A queue as users name it, and its physical partitions (one, when it is not partitioned).

    ``emq.Queue`` is this class (``emq.LogicalQueue`` names it too); its methods are the same whether the
    queue is partitioned or not. The worker's own operations (claim, finish) are the engine's, not these.
    """

    def __init__(self, name: str, *, prefix: str | None = None) -> None:
        self.name = topology.logical(name)
        self.prefix = prefix or config.get("EMQ_PREFIX")
        self.partitions = partitions([self.name], prefix=self.prefix)

    def __repr__(self) -> str:
        return f"<Queue {self.name!r} partitions={len(self.partitions)} prefix={self.prefix!r}>"

    def of_group(self, group: str | None) -> Queue:
        """The partition a group's lane, cap and recurrences live in."""
        return Queue(topology.of_group(self.name, group), prefix=self.prefix)

    def holding(self, job_id: str) -> Queue:
        """The partition that holds a job (JobNotFound naming every partition looked in)."""
        tried = topology.probe_order(self.name, job_id)
        direct = tried[0] if len(tried) == 1 else topology.marked(self.name, job_id)
        if direct:  # a generated id names its partition: no lookup needed
            return Queue(direct, prefix=self.prefix)
        found = holders([Queue(name, prefix=self.prefix) for name in tried], job_id)
        if found:
            return Queue(found[0], prefix=self.prefix)
        raise self._not_found(job_id, tried)

    def get_job(self, job_id: str) -> Job:
        """Read a job wherever it was routed; JobNotFound when no partition holds it."""
        tried = topology.probe_order(self.name, job_id)
        for name in tried:
            try:
                return Queue(name, prefix=self.prefix).get_job(job_id)
            except JobNotFound:
                continue
        raise self._not_found(job_id, tried)

    def _not_found(self, job_id: str, tried: list[str]) -> JobNotFound:
        where = self.name if len(tried) == 1 else f"{self.name} (partitions {tried[0]}…, {len(tried)} in all)"
        return JobNotFound(f"no job {job_id!r} in queue {where}, prefix {self.prefix!r}")

    def extend_lock(self, job_id: str, token: int, ms: int) -> bool:
        """Renew one lease in the partition holding the job; False once it is lost."""
        return self.extend_locks([(job_id, token)], ms)[0] == "ok"

    def extend_locks(self, items: Iterable[tuple[str, int]], ms: int) -> list[str]:
        """Renew many leases: "ok", "stale" or "missing" per item, one round trip per partition."""
        return self._per_partition(list(items), lambda q, part: q.extend_locks(part, ms))

    def release_lock(self, job_id: str, token: int, delay: float | None = None) -> bool:
        """Give a job back (ready now, or scheduled after delay seconds); the attempt stays counted."""
        return self.release_locks([(job_id, token)], delay)[0] == "ok"

    def release_locks(self, items: Iterable[tuple[str, int]], delay: float | None = None) -> list[str]:
        """Give many jobs back: "ok", "stale" or "missing" per item."""
        return self._per_partition(list(items), lambda q, part: q.release_locks(part, delay))

    def cancel(self, job_id: str) -> bool:
        """Cancel a scheduled, ready or running job; False when it had finished or does not exist."""
        return self.cancel_many([job_id])[0] == "ok"

    def cancel_many(self, ids: Sequence[str]) -> list[str]:
        """Cancel many jobs: "ok", "missing", or the state of one that had finished, per id."""
        return self._per_partition([(job_id, 0) for job_id in ids], lambda q, part: q.cancel([i for i, _ in part]))

    def retry(self, job_id: str) -> bool:
        """Run a dead or cancelled job again, resuming its flow (see ``emq.retry``); False in any other state."""
        return self.retry_many([job_id])[0] == "ok"

    def retry_many(self, ids: Sequence[str]) -> list[str]:
        """Retry many jobs: "ok", "missing", or the state of one that was neither dead nor cancelled, per id."""
        return self._per_partition([(job_id, 0) for job_id in ids],
                                   lambda q, part: q.admin.retry([i for i, _ in part]))

    def pause(self, group: str | None = None) -> bool:
        """Pause the queue (every partition), or one group's lane; True when something was not paused yet."""
        return any([q.pause(group) for q in self._scope(group)])

    def resume(self, group: str | None = None) -> bool:
        """Resume the queue (every partition), or one group's lane; True when something was paused."""
        return any([q.resume(group) for q in self._scope(group)])

    def paused(self, group: str | None = None) -> bool:
        """Whether the queue (every partition of it) is paused, or, given a group, that group's lane.

        A paused lane does not make the queue paused: its other groups still run (``paused_groups``)."""
        return all(q.paused(group) for q in self._scope(group))

    def paused_groups(self) -> list[str]:
        """The groups whose lanes are paused, sorted, over every partition (one read a partition)."""
        return sorted({g for q in self.partitions for g in q.paused_groups()})

    def _scope(self, group: str | None) -> list[Queue]:
        return self.partitions if group is None else [self.of_group(group)]

    def _per_partition(self, items: list[tuple[str, int]], call: Any) -> list[str]:
        statuses: dict[int, str] = {}
        by_queue: dict[str, list[int]] = {}
        for i, (job_id, _) in enumerate(items):
            try:
                by_queue.setdefault(self.holding(job_id).name, []).append(i)
            except JobNotFound:
                statuses[i] = "missing"
        for name, idx in by_queue.items():
            answers = call(Queue(name, prefix=self.prefix), [items[i] for i in idx])
            statuses.update(zip(idx, answers, strict=True))
        return [statuses[i] for i in range(len(items))]

    def sweep(self, limit: int = MAX_BATCH) -> list[str]:
        """Reclaim every expired lease in every partition; returns the reclaimed ids."""
        return [job_id for q in self.partitions for job_id in q.sweep(limit)]

    def counts(self) -> Counts:
        """Jobs per state summed over the partitions (one pipelined round trip)."""
        return Counts.summed(counts_of(self.partitions))

    def set_group_limit(self, group: str, limit: int | None) -> None:
        """Cap the active jobs of one group (in the partition its lane lives in); None lifts it."""
        self.of_group(group).set_group_limit(group, limit)


@dataclass(frozen=True)
class JobRef:
    """A minted job: its id and (logical) queue, enough to look it up or cancel it later.

    ``enqueued_at`` is the server's time of the mint that wrote it (None when the mint waits for a
    commit, or ran inline); it is not part of the reference's identity. ``created`` is False when the
    call minted nothing: a job with its ``job_id`` existed, or one held its unique key (``unique_for``,
    ``debounce``), and the reference names that job. Neither is in its repr, ``JobRef(id='…', queue='…')``.
    """

    id: str
    queue: str
    enqueued_at: datetime | None = field(default=None, compare=False, repr=False)
    created: bool = field(default=True, compare=False, repr=False)

    def get(self) -> Job:
        """The job as stored now (JobNotFound once it was deleted or trimmed)."""
        return LogicalQueue(self.queue).get_job(self.id)

    def cancel(self) -> bool:
        """Cancel the job (see ``emq.cancel``); False when it had finished."""
        return LogicalQueue(self.queue).cancel(self.id)

    def retry(self) -> bool:
        """Run the job again if it is dead or cancelled, resuming its flow (see ``emq.retry``)."""
        return LogicalQueue(self.queue).retry(self.id)

    def wait(self, timeout: float | None = None) -> Job:
        """Block until the job has ended (completed, dead or cancelled) and return it, without polling.

        TimeoutError after timeout seconds (None: wait as long as it takes); JobNotFound when there
        is no such job. ``job.result`` holds a completed job's value, ``job.error`` a dead one's error.
        """
        q = LogicalQueue(self.queue).holding(self.id)
        waits.wait_state(q, self.id, timeout)
        return q.get_job(self.id)

    async def wait_async(self, timeout: float | None = None) -> Job:
        """``wait`` for a coroutine: the event loop runs on while the job has not ended."""
        q = await asyncio.to_thread(LogicalQueue(self.queue).holding, self.id)
        await waits.wait_state_async(q, self.id, timeout)
        return await asyncio.to_thread(q.get_job, self.id)


def queue(name: str | None = None) -> LogicalQueue:
    """The queue of that name (default: EMQ_DEFAULT_QUEUE) for lease and admin operations."""
    return LogicalQueue(name or config.get("EMQ_DEFAULT_QUEUE"))
