"""The values of flows as the engine takes them: a job with its parents, and a parent's outcome.

A *flow* is jobs that wait for other jobs: a job after others (``after=``), a chain's steps, a
batch's members and callbacks. Each job lives in one physical queue; a parent may live in another
(another cluster slot), which ``emq.core.flows`` handles with a link and a relay (see _flow.lua).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from . import stored
from .records import MintSpec

KINDS = ("parent", "chain step", "batch", "chord")  # how a failed parent is named in a child's reason
WHENS = ("completed", "finished", "failed")  # run when: all completed | all settled | one failed


@dataclass(frozen=True)
class Parent:
    """A job (or a batch) another job waits for, in its physical queue."""

    queue: str
    id: str


@dataclass(frozen=True)
class FlowItem:
    """One job of a flow to mint in ``queue``: its spec, its parents and how it treats them.

    ``flow`` is (queue, id) of the batch or chain record it belongs to (None: none); ``member``
    makes its end count for that batch (``chord``: and its result go to it). ``pass_result`` puts each
    parent's result (a batch's summary) first among its arguments when it is released.
    """

    spec: MintSpec
    queue: str
    parents: tuple[Parent, ...] = ()
    kind: str = "parent"
    when: str = "completed"
    pass_result: bool = False
    flow: tuple[str, str] | None = None
    member: bool = False
    chord: bool = False

    def argv(self) -> list[Any]:
        """flow_mint.lua's fields of this job: mint's 15, its 8, then the parent ids (local first)."""
        local = [p.id for p in self.parents if p.queue == self.queue] if self.parents else []
        remote = [p.id for p in self.parents if p.queue != self.queue] if self.parents else []
        batch = ""
        if self.member and self.flow is not None:
            batch = "L" if self.flow[0] == self.queue else "RC" if self.chord else "R"
        flow = _flow_json(self.flow) if self.flow is not None else ""
        far = json.dumps({p.id: p.queue for p in self.parents if p.queue != self.queue}) if remote else ""
        return [*stored.mint_row(self.spec), self.kind, self.when, "1" if self.pass_result else "0", flow, batch,
                len(local), len(remote), far, *local, *remote]

    def ref(self) -> str:
        """The job as a flow record lists it: JSON [queue, id]."""
        if self.spec.id.isalnum():  # generated ids (hex): no escaping needed, no encoder call per member
            return f'[{_json(self.queue)}, "{self.spec.id}"]'
        return json.dumps([self.queue, self.spec.id])

    def remote(self) -> list[Parent]:
        """The parents in other queues: linked after this job is minted."""
        return [p for p in self.parents if p.queue != self.queue]


@functools.lru_cache(maxsize=256)
def _flow_json(flow: tuple[str, str]) -> str:
    """A flow's reference as stored on each of its jobs (the same for its 10,000 members: encoded once)."""
    return json.dumps(list(flow))


@functools.lru_cache(maxsize=256)
def _json(text: str) -> str:
    return json.dumps(text)


@dataclass(frozen=True)
class Settled:
    """A parent's outcome for a job (or a batch) in another queue, as flow_relay takes it."""

    child: str
    parent: str
    state: str  # completed | dead | cancelled | missing; a batch parent: completed | failed; revive (retried)
    result: str = "null"  # the parent's result JSON (a batch's summary, a chord's results)
    reason: str = ""
    batch: bool = False  # child is a batch and parent one of its members
    gen: int = 0  # the parent's generation: how often a retry reopened it (_revive.lua)

    def argv(self) -> list[Any]:
        return [self.child, self.parent, self.state, self.result, self.reason, "1" if self.batch else "0", self.gen]


@dataclass(frozen=True)
class Relayed:
    """One entry of a queue's relay list: the outcome and the queue it goes to."""

    seq: int
    queue: str
    settled: Settled

    @classmethod
    def parse(cls, entry: str) -> Relayed:
        seq, _, body = entry.partition("|")
        e = json.loads(body)
        batch = e.get("b") is True
        settled = Settled(e["c"], e["p"], e["s"], e.get("r") or "null", e.get("w") or "", batch, int(e.get("g") or 0))
        return cls(int(seq), e["q"], settled)
