"""The worker loop's round trips: finish what ended and claim for the free room, then start what came.

A worker of one queue on a plain server keeps its next round trip on the wire while it handles
the last (``Rounds.pipelined``): it sends the outcomes and the claim of this pass, then reads the
replies of the pass before, so the server runs one while the loop decodes the other and starts
its jobs (a round trip's server time and the loop's own work were end to end: ~350 + ~300 µs a
16-job batch of no-op jobs, issue #19). The claim on the wire takes room, so that needs a
prefetch (``prefetch``): a worker of jobs longer than a round trip has none, and reads each
round trip at once, as every worker of several queues (or on a cluster) does.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from ..core.engine import Queue
from ..core.engine.base import MAX_BATCH
from ..core.engine.queue import Exchange, exchange, read_exchange, send_exchange
from ..core.records import Claimed, Outcome
from ..core.wire import Line
from . import report, runner
from .aio import Interruptible
from .held import Held

log = logging.getLogger("emq.worker")

Done = list[tuple[Held, Outcome]]
# Seconds the completed lines of a full batch wait for its outcomes at most: the next round trip says them
# while the server works (said before the wait, they held the batch's jobs back, the loop holding the GIL).
SAY_WITHIN = 0.05
# Completed lines a round trip writes at least, unless SAY_WITHIN passed since the last write (and the loop
# writes them before any wait): a write a round trip (~50 lines at 50 threads) cost the loop about as much
# again as formatting its lines (the record, the frame, the handler's lock, a write call that hands the
# GIL to the slots): ~0.5 us a job (issue #19).
SAY_LINES = 200
Worker = Any  # worker.Worker, whose loop these are (named, not imported: it imports this module)


class Rounds:
    """The round trips of one worker's loop; ``flying`` the ones sent and not yet read, oldest first."""

    def __init__(self, w: Worker) -> None:
        self.w = w
        self.line: Line | None = None  # the loop's own connection, for a worker of one queue
        self.flying: deque[tuple[Done, int, Any, float]] = deque()  # (outcomes, claim, sent, when: 0 once kept)
        self.claiming = 0  # jobs asked for by the round trips in flight: room taken already
        self.kept = 0  # passes that left their round trip on the wire (the pipelining at work)

    def exchange(self, outcomes: Done, free: int, hold: bool = True) -> int:
        """Finish outcomes and claim up to free jobs; the number of jobs started. hold=False reads
        every round trip before it returns (a parker's claim for the parked loop)."""
        w = self.w
        if w.idle.skip_claim() and not outcomes:
            free = 0
        if self.line is None and len(w.queues) == 1 and (own := w.wire.own()) is not None:
            self.line = Line(own)
        if self.line is None:
            # No round trip on the wire to keep the threads busy during: a prefetch would only hold
            # jobs back here, and a pass's room beyond one queue's batch would defeat --queues weights.
            w.prefetch.off()
            return exchange_all(w, outcomes, free)
        return self.pipelined(outcomes, free, hold)

    def pipelined(self, outcomes: Done, free: int, hold: bool) -> int:
        """Send this pass's round trip, then read the ones before it; the new one stays on the wire
        when it claims and the jobs are short (``prefetch``): the jobs read now end within about a
        round trip, and their outcomes wake the loop to send the next and read it."""
        w = self.w
        if len(outcomes) > MAX_BATCH:
            w.outbox.keep(outcomes[MAX_BATCH:])
            outcomes = outcomes[:MAX_BATCH]
        want = max(0, min(free, w.batch))  # free counts the claims on the wire already
        w.talked = bool(outcomes or want)
        started, error = 0, None
        try:
            if w.talked:
                self._send(outcomes, want)
                say_soon(w)  # while the server works
            keep = hold and want and w.prefetch.extra > 0  # and jobs run: their outcomes come soon
            while self.flying and not (keep and len(self.flying) == 1 and w.running > 0 and error is None):
                n, err = self._read()
                started, error = started + n, error or err
            if self.flying:  # kept: its reply waits for the loop's next pass, which is no round trip's measure
                self.flying[0] = self.flying[0][:3] + (0.0,)
                self.kept += 1
        except Exception:
            self._lost()
            raise
        if error is not None:  # an error reply (a full server...): every round trip in flight was read
            raise error
        return started

    def _send(self, outcomes: Done, want: int) -> None:
        w = self.w
        try:
            sent = send_exchange(w.wire[0], self.line, [o for _, o in outcomes], want, w.id)
        except Exception:
            w.outbox.keep(outcomes)  # not on the wire: offered again (``_lost`` holds those that were)
            raise
        self.flying.append((outcomes, want, sent, time.monotonic()))
        self.claiming += want

    def settle(self) -> int:
        """Read every round trip in flight (before a park or a long wait); the jobs started."""
        return self.pipelined([], 0, hold=False) if self.flying else 0

    def _read(self) -> tuple[int, Exception | None]:
        w = self.w
        done, want, sent, when = self.flying[0]
        ex = read_exchange(w.wire[0], self.line, sent)
        self.flying.popleft()
        self.claiming -= want
        if want and when:
            w.prefetch.tripped(time.monotonic() - when)
        return settled(w, w.wire[0], done, ex), ex.error

    def _lost(self) -> None:
        """An error took the round trips in flight: their outcomes are held for the next pass; the
        jobs they claimed, if the server ran them, return when their leases end (the sweep)."""
        for done, *_ in self.flying:
            self.w.outbox.keep(done)
        self.flying.clear()
        self.claiming = 0
        if self.line is not None:
            self.line.drop()  # replies left on it would answer the next round trip


def exchange_all(self: Worker, outcomes: Done, free: int) -> int:
    """Finish what ended and claim up to free slots: one round trip per queue touched, read at once."""
    by_queue: dict[str, Done] = {}
    if len(self.queues) == 1:  # the common case: no sorting a job
        by_queue = {self.queues[0].name: outcomes} if outcomes else {}
    else:
        for item in outcomes:
            by_queue.setdefault(item[0].queue.name, []).append(item)
    claimed, self.talked = 0, False
    per_queue = [0] * len(self.queues)
    for i in self.order.next(free > 0):
        q = self.queues[i]
        done, want = by_queue.pop(q.name, []), min(free - claimed, self.batch)
        if done or want > 0:
            self.talked = True
            try:
                sent = time.monotonic()
                ex = exchange(self.wire[i], [o for _, o in done], max(want, 0), self.id, lambda: say_soon(self))
                if want > 0:
                    self.prefetch.tripped(time.monotonic() - sent)
            except Exception:
                self.outbox.keep(done + [item for items in by_queue.values() for item in items])
                raise
            n = settled(self, q, done, ex)
            claimed += n
            per_queue[i] += n
            free = claimed if self.order.stops(want, n) else free  # --strict: the next queues wait
            if ex.error is not None:
                self.outbox.keep([item for items in by_queue.values() for item in items])
                raise ex.error
    self.order.charge(per_queue)  # weights count jobs claimed, not passes
    return claimed


def say_soon(w: Worker) -> None:
    """Write the completed lines held back once SAY_LINES of them wait, or SAY_WITHIN passed since the last write."""
    if len(w.unsaid) >= SAY_LINES or time.monotonic() - w.said_at >= SAY_WITHIN:
        w._say()


def settled(self: Worker, q: Queue, done: Done, ex: Exchange) -> int:
    """Report what the server decided of done and start what it claimed (its error is the caller's)."""
    if ex.states is None:
        self.outbox.keep(done)  # refused: offered again (held through the outage)
    else:
        self.processed += len(done)
        report.finished(q.name, done, ex.states, self.unsaid)
    dispatch(self, q, ex.claimed)
    return len(ex.claimed)


def dispatch(self: Worker, q: Queue, jobs: list[Claimed]) -> None:
    """Start the jobs of one claim, held as one batch; one that cannot start ends dead as corrupt.
    The plain ones go to the slots at once (one wake a batch, see ``slots``)."""
    now = time.monotonic()
    helds = [Held(q, job, now) for job in jobs if not job.fault]
    if len(helds) < len(jobs):
        for job in jobs:
            if job.fault:
                corrupt(self, q, job, job.fault)
    self.leases.hold_all(helds)
    self.running += len(helds)
    asyncs = {name for name in {held.job.name for held in helds} if runner.is_async(name)}  # once a function
    if asyncs:
        helds = _start_async(self, q, helds, asyncs)
    if helds:
        self.slots.submit_all(helds)


def _start_async(self: Worker, q: Queue, helds: list[Held], asyncs: set[str]) -> list[Held]:
    """Start the jobs of asyncs (``async def``) on the worker's event loop; the plain ones, for the slots."""
    plain = []
    for held in helds:
        if held.job.name not in asyncs:
            plain.append(held)
            continue
        held.is_async = True
        self.running_async += 1
        try:
            self.aio.submit(run_async(self, held))
        except Exception as exc:
            corrupt(self, q, held.job, exc)
    return plain


def corrupt(self: Worker, q: Queue, job: Claimed, exc: object) -> None:
    """End a job that cannot start dead as corrupt; the rest of its batch goes on."""
    log.error("job id=%s name=%s is corrupt: %s; ending it dead", job.id, job.name, exc)
    self.outbox.keep([(Held(q, job), Outcome(job.id, job.token, "corrupt", str(exc)[:500]))])
    self.signal.set()


async def run_async(w: Worker, held: Held) -> None:
    """An ``async def`` job on the worker's loop, under its limits; its outcome is reported once."""

    mine = False

    def started(run: Interruptible) -> None:
        w.deadlines.enter(held, run.interrupt_threadsafe)

    def left() -> None:
        nonlocal mine
        mine = w.deadlines.leave(held)

    if held.stopped is not None:
        return  # cancelled before it started: its outcome is reported
    outcome = await runner.execute_async(held.queue.name, held.job, held.stop, started, left, held)
    if mine:
        w._report(held, outcome)
