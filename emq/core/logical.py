"""A queue as its users name it: ``emq.queue("clicks")`` acts on the right partition of each job.

Lease calls (``extend_lock``, ``release_lock``) go to the partition that holds the job, the sweep
and counts cover every partition, and ``get_job`` finds a job wherever it was routed. For an
unpartitioned queue each call is exactly the engine's ``Queue`` call, and the engine's other
operations are there too; on a partitioned one those act on one of ``.partitions``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import JobNotFound
from . import config, topology, waits
from .connection import get_client, guard
from .engine import MAX_BATCH, Queue, counts_of
from .records import Counts, Job


class LogicalQueue:
    """A logical queue and its physical partitions (one, when it is not partitioned)."""

    def __init__(self, name: str, *, prefix: str | None = None) -> None:
        self.name = topology.logical(name)
        self.prefix = prefix or config.get("EMQ_PREFIX")
        self.partitions = [Queue(n, prefix=self.prefix) for n in topology.names(self.name)]

    def __repr__(self) -> str:
        return f"<LogicalQueue {self.name!r} partitions={len(self.partitions)} prefix={self.prefix!r}>"

    def __getattr__(self, name: str) -> Any:
        """Every other engine operation of an unpartitioned queue (``bclaim``, ``finish``, ``mint``…)."""
        if name.startswith("_") or name == "partitions" or not hasattr(Queue(self.name), name):
            raise AttributeError(name)
        if len(self.partitions) > 1:
            raise AttributeError(
                f"{name} acts on one partition of the partitioned queue {self.name!r}: "
                f"call it on one of emq.queue({self.name!r}).partitions"
            )
        return getattr(self.partitions[0], name)

    def of_group(self, group: str | None) -> Queue:
        """The partition a group's lane, cap and recurrences live in."""
        return Queue(topology.of_group(self.name, group), prefix=self.prefix)

    def holding(self, job_id: str) -> Queue:
        """The partition that holds a job (JobNotFound naming every partition looked in)."""
        tried = topology.probe_order(self.name, job_id)
        direct = tried[0] if len(tried) == 1 else topology.marked(self.name, job_id)
        if direct:  # a generated id names its partition: no lookup needed
            return Queue(direct, prefix=self.prefix)
        with guard():
            pipe = get_client().pipeline(transaction=False)
            for name in tried:
                pipe.exists(Queue(name, prefix=self.prefix).keys.job(job_id))
            found = pipe.execute()
        for name, hit in zip(tried, found, strict=True):
            if hit:
                return Queue(name, prefix=self.prefix)
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

    def pause(self, group: str | None = None) -> bool:
        """Pause the queue (every partition), or one group's lane; True when something was not paused yet."""
        return any([q.pause(group) for q in self._scope(group)])

    def resume(self, group: str | None = None) -> bool:
        """Resume the queue (every partition), or one group's lane; True when something was paused."""
        return any([q.resume(group) for q in self._scope(group)])

    def paused(self, group: str | None = None) -> bool:
        """Whether the queue (every partition of it) is paused, or, given a group, that group's lane."""
        return all(q.paused(group) for q in self._scope(group))

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
    ``debounce``), and the reference names that job.
    """

    id: str
    queue: str
    enqueued_at: datetime | None = field(default=None, compare=False)
    created: bool = field(default=True, compare=False)

    def get(self) -> Job:
        """The job as stored now (JobNotFound once it was deleted or trimmed)."""
        return LogicalQueue(self.queue).get_job(self.id)

    def cancel(self) -> bool:
        """Cancel the job (see ``emq.cancel``); False when it had finished."""
        return LogicalQueue(self.queue).cancel(self.id)

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
