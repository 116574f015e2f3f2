"""Jobs that wait for other jobs, as the jobs layer builds them: parents resolved to the partition
that holds them, each job routed to its own, then minted by ``emq.core.flows`` (now, or when the
transaction commits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from django.db import transaction

from ..core import config, flows, ids, topology
from ..core.graph import FlowItem, Parent
from ..core.logical import JobRef
from ..core.records import MintSpec, from_ms
from . import tracing
from .kind import JobLike
from .options import waits_for_commit


def prefix() -> str:
    return config.get("EMQ_PREFIX")


def parents_of(after: Iterable[Any], queue: str) -> tuple[Parent, ...]:
    """The parents after= names: JobRefs, a batch's ref (it has a home), or ids: in the queue a generated
    id names, else in queue (the child's)."""
    out = []
    for p in after:
        if isinstance(p, str):
            out.append(flows.parent_of(ids.queue_of(p) or queue, p, prefix()))
        elif getattr(p, "home", None):
            out.append(Parent(p.home, p.id))
        else:
            out.append(flows.parent_of(p.queue, p.id, prefix()))
    return tuple(dict.fromkeys(out))


def when_of(fn: JobLike) -> str:
    """How a job treats a parent that did not complete: dead too ("completed"), or it runs ("finished")."""
    return "finished" if fn.options.after_failure == "run" else "completed"


def placed(fn: JobLike, specs: list[MintSpec]) -> list[tuple[MintSpec, str]]:
    """Each spec with its final id and the physical queue (partition) it goes to."""
    routed, batches = topology.route(fn.queue, specs)
    where = {s.id: name for name, batch in batches.items() for s in batch}
    return [(s, where[s.id]) for s in routed]


def mint_after(fn: JobLike, specs: list[MintSpec]) -> list[JobRef]:
    """``fn.using(after=[...]).enqueue*(...)``: the jobs wait for their parents (then run, or die)."""
    parents = parents_of(fn.options.after or (), fn.queue)
    items = [FlowItem(s, q, parents, "parent", when_of(fn)) for s, q in placed(fn, specs)]
    return submit(items, waits_for_commit(fn.options.on_commit), [(fn.queue, i.spec.id) for i in items])


def submit(items: list[FlowItem], on_commit: bool, refs: Sequence[tuple[str, str]],
           before: Callable[[], None] | None = None) -> list[JobRef]:
    """Mint a flow's items now (refs carry the mint's time), or once the transaction commits.

    ``before`` runs first (a batch's or chain's record); refs are (logical queue, id) to return.
    """
    act = partial(_write, items, before)
    if on_commit:
        transaction.on_commit(act)
        return [JobRef(job_id, queue) for queue, job_id in refs]
    stamps = act()
    return [JobRef(job_id, queue, from_ms(stamps.get(job_id))) for queue, job_id in refs]


def _write(items: list[FlowItem], before: Callable[[], None] | None) -> dict[str, int]:
    """Record, then mint inside one PRODUCER span (its trace context in each job's meta)."""
    if before is not None:
        before()
    first = items[0]
    with tracing.producer(first.spec.name, first.queue, first.spec.id, len(items)) as carrier:
        if carrier:
            stamped = tracing.stamped([i.spec for i in items], carrier)
            items = [dataclasses.replace(i, spec=s) for i, s in zip(items, stamped, strict=True)]
        return flows.mint(items, prefix())
