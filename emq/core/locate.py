"""Which queue holds a job, given its id alone (DESIGN rule 13: an id stands alone).

Every entry that takes an id without a queue (``emq.get_job``, ``emq.cancel``, the commands, the
dashboard, the HTTP API) asks ``holder``. One round trip, whatever the number of queues and jobs,
reads the two places an id may say where it lives: the job a generated id names (``ids``; a
partitioned queue's id names its partition, ``topology.marked``) and the id's index entry, which
the mint of a caller-chosen id wrote (``idindex``). A queue only the index names is checked by a
second round trip. Only an id found neither way — minted before ids carried their queue, or its
index entry gone — costs a read of the registry and then one EXISTS (HGETALL, when reading the job)
per known queue (the registry's and EMQ_DEFAULT_QUEUE's, every partition of each), all in one
round trip: two more, a cost that grows with the queues, never with the jobs.

Found in one queue: that queue. In none: JobNotFound naming where it looked. In several (a
caller's ``job_id`` reused in other queues): AmbiguousJobId, which asks for the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import AmbiguousJobId, ConfigurationError, JobNotFound
from . import config, ids, topology
from .connection import get_client
from .engine import Queue
from .engine.reads import present
from .logical import JobRef, LogicalQueue, partitions
from .records import Job
from .registry import known_queues


@dataclass(frozen=True)
class Found:
    """Where one id was looked for, and the physical queues that hold a job of it."""

    job_id: str
    queues: tuple[Queue, ...]
    named: str | None  # the queue the id names (a generated id), if any
    asked: int  # known queues asked when the id said nothing (0: it did)
    prefix: str
    fields: dict[str, dict[str, str]] = field(default_factory=dict)  # physical queue -> the job's fields (``read``)

    def one(self) -> Queue:
        """The one queue holding the job; JobNotFound or AmbiguousJobId, saying what to do, otherwise."""
        if not self.queues:
            raise JobNotFound(f"no job {self.job_id!r} {self.looked()} (prefix {self.prefix!r}): never minted "
                              "there, or deleted or trimmed after its retention")
        names = sorted({topology.logical(q.name) for q in self.queues})
        if len(names) > 1:
            raise AmbiguousJobId(self.job_id, names)
        return self.queues[0]  # partitions of one queue (a chosen id in two groups): the first, as naming it gives

    def job(self, q: Queue) -> Job:
        """The job as read in one of its queues by ``find(..., whole=True)``."""
        return Job.from_fields(q.name, self.job_id, self.fields[q.name])

    def looked(self) -> str:
        """Where the id was looked for, as a JobNotFound says it."""
        named = f"in queue {self.named!r}, which the id names, nor " if self.named else ""
        return f"{named}in any of the {self.asked} known queues"


def holder(job: str | JobRef, queue: str | None = None, *, prefix: str | None = None) -> tuple[Queue, str]:
    """The physical queue that holds a job, and the job's id.

    job: an id or a ``JobRef``; queue: where to look (default: a JobRef's own queue, else wherever the
    id is). JobNotFound when no queue holds it; AmbiguousJobId when several do and none was named.
    """
    job_id, queue = _split(job, queue)
    if queue is not None:
        return LogicalQueue(queue, prefix=prefix).holding(job_id), job_id
    return find([job_id], prefix)[job_id].one(), job_id


def read(job: str | JobRef, queue: str | None = None, *, prefix: str | None = None) -> Job:
    """The job, read where ``holder`` finds it: one round trip for a generated id, reading as it looks."""
    job_id, queue = _split(job, queue)
    if queue is not None:
        return LogicalQueue(queue, prefix=prefix).get_job(job_id)
    found = find([job_id], prefix, whole=True)[job_id]
    return found.job(found.one())


def _split(job: str | JobRef, queue: str | None) -> tuple[str, str | None]:
    job_id, queue = (job.id, queue or job.queue) if isinstance(job, JobRef) else (job, queue)
    if not isinstance(job_id, str) or not job_id:
        raise TypeError(f"a job id is a non-empty str or an emq.JobRef, not {job_id!r}")
    return job_id, queue


def find(job_ids: Sequence[str], prefix: str | None = None, whole: bool = False) -> dict[str, Found]:
    """Where each id is: one round trip for all of them (one more when the index names queues the id
    does not, two more for ids found neither way: older ids, or index entries gone). whole: read the
    jobs found, every field, on the way (``Found.fields``)."""
    prefix = prefix or config.get("EMQ_PREFIX")
    job_ids = list(dict.fromkeys(job_ids))
    named = {job_id: _named(job_id, prefix) for job_id in job_ids}
    refs = [(q, job_id) for job_id in job_ids for q in named[job_id][1]]
    client = get_client()
    held: dict[str, dict[str, tuple[Queue, Any]]] = {job_id: {} for job_id in job_ids}
    hits, entries = present(client, refs, job_ids, prefix, whole)
    _keep(held, refs, hits)
    checked = {(q.name, job_id) for q, job_id in refs}
    more = [(Queue(name, prefix=prefix), job_id) for job_id, entry in zip(job_ids, entries, strict=True)
            for name in sorted(entry) if (name, job_id) not in checked]
    _keep(held, more, present(client, more, whole=whole)[0])
    asked = _probe([job_id for job_id in job_ids if not held[job_id]], held, prefix, whole)
    return {job_id: Found(job_id, tuple(q for q, _ in held[job_id].values()), named[job_id][0],
                          0 if held[job_id] else asked, prefix,
                          {name: h for name, (_, h) in held[job_id].items() if whole})
            for job_id in job_ids}


def _keep(held: dict[str, dict[str, tuple[Queue, Any]]], refs: list[tuple[Queue, str]], hits: list[Any]) -> None:
    for (q, job_id), hit in zip(refs, hits, strict=True):
        if hit:
            held[job_id][q.name] = (q, hit)


def _named(job_id: str, prefix: str) -> tuple[str | None, list[Queue]]:
    """The queue a generated id names, and its physical queues that may hold it (its partition, when marked)."""
    queue = ids.queue_of(job_id)
    if queue is None:
        return None, []
    try:
        part = topology.marked(queue, job_id)
        names = [part] if part else topology.names(queue)
    except ConfigurationError:  # a chosen id that looks generated, naming no queue there could be
        return None, []
    return queue, [Queue(name, prefix=prefix) for name in names]


def _probe(job_ids: list[str], held: dict[str, dict[str, tuple[Queue, Any]]], prefix: str, whole: bool) -> int:
    """Ask every known queue for ids found nowhere else (one round trip); how many queues were asked."""
    if not job_ids:
        return 0
    queues = partitions(sorted(known_queues(prefix) | {config.get("EMQ_DEFAULT_QUEUE")}), prefix=prefix)
    refs = [(q, job_id) for job_id in job_ids for q in queues]
    _keep(held, refs, present(get_client(), refs, whole=whole)[0])
    return len(queues)
