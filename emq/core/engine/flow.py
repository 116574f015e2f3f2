"""Flows on one queue (``emq/lua/flow_*.lua``): mint jobs that wait, link and relay parents' outcomes,
record batches and chains. ``emq.core.flows`` puts these together across queues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import errors
from ..connection import guard
from ..graph import FlowItem, Relayed, Settled
from .base import MAX_BATCH
from .flowreads import FlowReads

MAX_ARGS = 100_000  # ARGV of one flow_mint call at most (a chunk of jobs with many parents is cut sooner)
RELAY_BATCH = 1000  # relay entries handed out, or relayed, per call
PIPELINE = 10  # chunks sent in one pipelined round trip


class FlowOps(FlowReads):
    """The flow scripts of one physical queue, and the reads of its flows."""

    def mint(self, items: Sequence[FlowItem]) -> tuple[int, list[bool]]:
        """Mint jobs of a flow, a chunk a call (pipelined); the server's ms and a created flag per job.

        JobNotFound when a job names a parent in this queue that does not exist (that chunk wrote nothing).
        """
        calls, chunk, size = [], [], 0
        for item in items:
            argv = item.argv()
            if chunk and (len(chunk) >= MAX_BATCH or size + len(argv) > MAX_ARGS):
                calls.append(chunk)
                chunk, size = [], 0
            chunk.append((item, argv))
            size += len(argv)
        if chunk:
            calls.append(chunk)
        replies: list[Any] = []
        for start in range(0, len(calls), PIPELINE):  # bounds the client's buffer, as Queue.mint_stamped does
            part = calls[start : start + PIPELINE]
            chosen = [(item.spec.id, item.spec.due) for c in part for item, _ in c if item.spec.if_absent]
            replies += self._run_many([("flow_mint", [len(c), *(a for _, argv in c for a in argv)]) for c in part],
                                      also=self._noted(chosen))
        now_ms, created = 0, []
        for c, reply in zip(calls, replies, strict=True):
            if int(reply[0]) == -1:
                item = c[int(reply[1]) - 1][0]
                raise errors.JobNotFound(
                    f"job {item.spec.name} (id {item.spec.id}) is to run after job {reply[2]!r}, which does not "
                    f"exist in queue {self.name!r}: it was never minted, or was deleted or trimmed after its retention"
                )
            now_ms = now_ms or int(reply[0])
            created.extend(bool(x) for x in reply[1:])
        return now_ms, created

    def link(self, child_queue: str, pairs: Sequence[tuple[str, str]]) -> list[Settled | None]:
        """Record (parent id, child id) pairs here, children in child_queue; a settled parent is answered.

        Per pair: None when linked (the parent's end will relay), else the parent's outcome to relay now.
        """
        out: list[Settled | None] = []
        for start in range(0, len(pairs), MAX_BATCH):
            part = pairs[start : start + MAX_BATCH]
            r = self._run("flow_link", [child_queue, *(x for pair in part for x in pair)])
            for i, (pid, cid) in enumerate(part):
                state, result, reason = r[3 * i : 3 * i + 3]
                out.append(None if state == "pending" else Settled(cid, pid, state, result or "null", reason or ""))
        return out

    def relay(self, items: Sequence[Settled]) -> None:
        """Settle parents of jobs (or batches) in this queue; each item counts once however often it comes."""
        for start in range(0, len(items), RELAY_BATCH):
            part = items[start : start + RELAY_BATCH]
            self._run("flow_relay", [len(part), *(x for s in part for x in s.argv())])

    def relayed(self, acked: int = 0, limit: int = RELAY_BATCH) -> list[Relayed]:
        """Drop the relay entries forwarded up to sequence number acked; the next up to limit, oldest first."""
        return [Relayed.parse(e) for e in self._run("flow_out", [int(acked), min(limit, RELAY_BATCH)])]

    def open(self, flow_id: str, kind: str, total: int, ttl_ms: int, callbacks: str,
             members: Sequence[tuple[str, str]], limit: int = 0) -> None:
        """Record a batch, chord or chain here with its members ((JSON [queue, id], id) each), a chunk a call,
        pipelined; limit: the bytes a chord's results may take in all."""
        head: list[Any] = [flow_id, kind, total, int(ttl_ms), callbacks, int(limit)]
        calls = [("flow_open", [*head, *(x for m in members[i : i + MAX_BATCH] for x in m)])
                 for i in range(0, len(members), MAX_BATCH)]
        for start in range(0, len(calls), PIPELINE):
            self._run_many(calls[start : start + PIPELINE])

    def record(self, flow_id: str) -> dict[str, str]:
        """A batch's or chain's record as stored ({} once it expired, or for an unknown id)."""
        with guard():
            return self.client.hgetall(self.keys.flow(flow_id))
