"""Flows across queues: mint jobs that wait for jobs in other queues, and forward parents' outcomes.

Two queues are two cluster slots, and no script touches two (DESIGN rule 6). So a job whose
parent lives elsewhere is connected in three steps, each one script on one queue:

1. the child is minted ``waiting`` in its queue, every parent pending (``flow_mint``);
2. each parent's queue records the child (``flow_link``): the parent's end will tell it; a
   parent that has already settled is answered instead;
3. those answers are relayed to the child's queue (``flow_relay``).

When a parent settles later, its end (finish, cancel, the stalled sweep) settles children of
its own queue in the same script and appends an entry for each other child to its queue's
relay list, waking the Pump; the leading Pump forwards the entries (``forward``) and only then
acknowledges them. A crash in between forwards an entry twice: harmless, since a child counts
each parent once (its pending set loses the parent id, or the entry changes nothing). So a
child is released exactly once, however often an outcome arrives (at-least-once delivery,
idempotent effect). Minting the child before linking means no outcome can arrive before it.
A process that dies between steps 1 and 2, or a parent whose record vanished, would leave the child
waiting for ever: the Pump's look at waiting jobs (_orphans.lua) asks the parents' queues again
(``recheck``), a few jobs a second.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..errors import JobNotFound
from . import topology
from .connection import get_client, guard
from .engine import Queue
from .graph import FlowItem, Parent, Settled
from .logical import LogicalQueue
from .registry import remember_queue

FORWARD_ROUNDS = 10  # relay calls one Pump tick makes at most (the next tick goes on)


def mint(items: Sequence[FlowItem], prefix: str) -> dict[str, int]:
    """Mint a flow's jobs, parents before children; returns the server's ms of each new job's mint.

    Consecutive jobs of one queue go in one call (chunks pipelined); parents in other queues
    are checked before anything is written and linked once their children exist.
    """
    check_parents(items, prefix)
    stamps: dict[str, int] = {}
    for name, run in _runs(items):
        q = Queue(name, prefix=prefix)
        remember_queue(q)
        now_ms, created = q.flow.mint(run)
        made = [item for item, new in zip(run, created, strict=True) if new]
        stamps.update(dict.fromkeys((item.spec.id for item in made), now_ms))
        link(made, prefix)
    return stamps


def _runs(items: Sequence[FlowItem]) -> Iterator[tuple[str, list[FlowItem]]]:
    """Consecutive items of one physical queue."""
    run: list[FlowItem] = []
    for item in items:
        if run and item.queue != run[0].queue:
            yield run[0].queue, run
            run = []
        run.append(item)
    if run:
        yield run[0].queue, run


def check_parents(items: Sequence[FlowItem], prefix: str) -> None:
    """JobNotFound, before anything is written, for a parent in another queue that does not exist.

    Parents in a job's own queue are checked by flow_mint itself; parents minted by this same
    flow are not looked for.
    """
    minted = {(item.queue, item.spec.id) for item in items}
    wanted = [(p, item) for item in items for p in item.remote() if (p.queue, p.id) not in minted]
    if not wanted:
        return
    with guard():
        pipe = get_client().pipeline(transaction=False)
        for p, _ in wanted:
            k = topology.keys_of(prefix, p.queue)
            pipe.exists(k.job(p.id))
            pipe.exists(k.flow(p.id))
        found = pipe.execute()
    for i, (p, item) in enumerate(wanted):
        if not (found[2 * i] or found[2 * i + 1]):
            raise JobNotFound(
                f"job {item.spec.name} is to run after job {p.id!r}, which does not exist in queue {p.queue!r}: "
                "it was never minted, or was deleted or trimmed after its retention"
            )


def link(children: Sequence[FlowItem], prefix: str) -> None:
    """Record minted children in their parents' queues; relay at once what has settled already."""
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for child in children:
        for p in child.remote():
            pairs.setdefault((p.queue, child.queue), []).append((p.id, child.spec.id))
    settled: dict[str, list[Settled]] = {}
    for (parent_queue, child_queue), part in pairs.items():
        answers = Queue(parent_queue, prefix=prefix).flow.link(child_queue, part)
        settled.setdefault(child_queue, []).extend(a for a in answers if a is not None)
    for child_queue, items in settled.items():
        if items:
            Queue(child_queue, prefix=prefix).flow.relay(items)


def forward(q: Queue) -> bool:
    """Forward a queue's relay list to the queues its entries name; True when entries are left for the next tick.

    Each round relays a page, then acknowledges it by sequence number on the next read. Entries that
    came while the list was not empty woke nobody (only the first of an empty list wakes the Pump),
    so whatever the last read leaves needs a tick at once, not after the Pump's park.
    """
    acked = 0
    for _ in range(FORWARD_ROUNDS):
        entries = q.flow.relayed(acked)
        if not entries:
            return False
        by_queue: dict[str, list[Settled]] = {}
        for e in entries:
            by_queue.setdefault(e.queue, []).append(e.settled)
        for name, items in by_queue.items():
            Queue(name, prefix=q.keys.prefix).flow.relay(items)
        acked = entries[-1].seq
    return bool(q.flow.relayed(acked, limit=1))  # acknowledges the last round


def recheck(q: Queue, far: Sequence[tuple[str, str, str]]) -> None:
    """Ask the parents' queues again about jobs of q that wait for them: (child, parent, parent's queue)
    each, from the Pump's look at q's waiting jobs (_orphans.lua). A parent whose record vanished
    answers "missing", one whose outcome never arrived answers it, and either is relayed to q; a
    parent still pending is linked again (idempotent)."""
    by_queue: dict[str, list[tuple[str, str]]] = {}
    for child, parent, queue in far:
        by_queue.setdefault(queue, []).append((parent, child))
    settled: list[Settled] = []
    for queue, pairs in by_queue.items():
        settled += [a for a in Queue(queue, prefix=q.keys.prefix).flow.link(q.name, pairs) if a is not None]
    if settled:
        q.flow.relay(settled)


def parent_of(queue: str, job_id: str, prefix: str) -> Parent:
    """The parent a job id names in a logical queue: in which partition it lives."""
    names = topology.names(queue)
    if len(names) == 1:
        return Parent(names[0], job_id)
    return Parent(LogicalQueue(queue, prefix=prefix).holding(job_id).name, job_id)
