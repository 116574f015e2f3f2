"""The worker loop's round trips: finish what ended and claim for the free room, then start what came.

A worker of one queue on a plain server keeps its next round trip on the wire while it handles
the last (``Rounds._pipelined``): it sends the outcomes and the claim of this pass, then reads the
replies of the pass before, so the server runs one while the loop decodes the other and starts
its jobs (a round trip's server time and the loop's own work were end to end, each about half of a
batch's time: docs/reference/performance.md). The claim on the wire takes room, so that needs a
prefetch (``prefetch``): a worker of jobs longer than a round trip has none, and reads each
round trip at once, as every worker of several queues (or on a cluster) does.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence

from ..core.engine import Queue
from ..core.engine.base import MAX_BATCH
from ..core.engine.queue import Exchange, Sent, Stats
from ..core.records import Outcome
from ..core.wire import Line
from . import report
from .dispatch import Dispatch
from .held import Held
from .idle import IdleBudget
from .leases import take_progress
from .order import QueueOrder
from .outbox import Outbox
from .prefetch import Prefetch
from .tally import Tally
from .wire import Wire

log = logging.getLogger("emq.worker")
Done = list[tuple[Held, Outcome]]
# Seconds the completed lines of a full batch wait for its outcomes at most: the next round trip says them
# while the server works (said before the wait, they held the batch's jobs back, the loop holding the GIL).
SAY_WITHIN = 0.05
# Completed lines a round trip writes at least, unless SAY_WITHIN passed since the last write (and the loop
# writes them before any wait): a write a round trip (~50 lines at 50 threads) cost the loop about as much
# again as formatting its lines (the record, the frame, the handler's lock, a write call that hands the
# GIL to the slots).
SAY_LINES = 200


class Rounds:
    """The round trips of one worker's loop, and their state: the ones sent and not yet read (``flying``,
    oldest first), the jobs those claim (``claiming``: room taken already), the ``prefetch`` they make
    room for, the completed lines held back to be said while one is on the wire (``unsaid``).

    One job: the round trips, past the class size bar because sending, reading, losing one and hiding the
    lines behind it all work on that one state, which a pass may leave on the wire for the next to read;
    split up, each part would reach into the others' state (as the worker's functions once did).
    """

    def __init__(self, queues: Sequence[Queue], order: QueueOrder, wire: Wire, jobs: Dispatch, outbox: Outbox,
                 idle: IdleBudget, *, batch: int, prefetch: int, worker_id: str) -> None:
        self.queues = queues
        self.order = order
        self.wire = wire  # the queues on the loop's own connection
        self.jobs = jobs  # starts what the round trips claim
        self.outbox = outbox  # the outcomes to send
        self.idle = idle
        self.batch = batch
        self.worker_id = worker_id
        self.prefetch = Prefetch(jobs.threads, prefetch)
        self.line: Line | None = None  # the loop's own connection, for a worker of one queue
        self.flying: deque[tuple[Done, int, Sent, float]] = deque()  # (outcomes, claim, sent, when: 0 once kept)
        self.claiming = 0  # jobs asked for by the round trips in flight: room taken already
        self.kept = 0  # passes that left their round trip on the wire (the pipelining at work)
        self.talked = False  # the last exchange sent something
        self.processed = 0  # outcomes the server recorded
        self.unsaid: report.Unsaid = []  # completed lines, said during a next round trip (``say``, ``_say_soon``)
        self.said_at = 0.0  # monotonic time lines were last said
        self.tally = Tally()  # statistics per job name, sent on a finish about once a second
        self.retired: dict[str, Queue] = {}  # queues no longer claimed from whose jobs may still run here

    def outcomes(self) -> Done:
        """The outcomes to send: the ones held back by an outage, then those reported since the last pass
        (whose jobs no longer run: ``Dispatch.ended``)."""
        pending, out = self.outbox.take_pending(), self.outbox.arrived()
        if out:
            self.prefetch.arrived(time.monotonic(), helds := [held for held, _ in out])  # one list for both
            self.jobs.ended(helds)
        return pending + out

    def free(self) -> int:
        """Jobs to claim now: the jobs' room with the prefetch, less what the round trips in flight claim."""
        return self.jobs.room(self.prefetch.extra - self.claiming)

    def claim(self, n: int) -> int:
        """Claim up to n jobs and start them, every round trip read before it returns (a parker's claim for
        the parked loop: ``handoff``); the number of jobs started."""
        return self.exchange([], n, hold=False)

    def exchange(self, outcomes: Done, free: int, hold: bool = True) -> int:
        """Finish outcomes and claim up to free jobs; the number of jobs started. hold=False reads
        every round trip before it returns."""
        if self.idle.skip_claim() and not outcomes:
            free = 0
        if self.retired:
            outcomes = self._strays(outcomes)
        if self.line is None and len(self.queues) == 1 and (own := self.wire.own()) is not None:
            self.line = Line(own)
        if self.line is None:
            # No round trip on the wire to keep the threads busy during: a prefetch would only hold
            # jobs back here, and a pass's room beyond one queue's batch would defeat --queues weights.
            self.prefetch.off()
            return self._each_queue(outcomes, free)
        return self._pipelined(outcomes, free, hold)

    def settle(self) -> int:
        """Read every round trip in flight (before a park or a long wait); the jobs started."""
        return self._pipelined([], 0, hold=False) if self.flying else 0

    def park_for(self, timeout: float) -> float:
        """How long a park may last: timeout, or less when a tally is due before (a finish of no items sends it)."""
        now = time.monotonic()
        due = [d for q in self.queues if (d := self.tally.due_in(q.name, now)) is not None]
        return min([timeout, *due])

    def flush(self) -> None:
        """Send every tally now (a stop), each queue's on a finish of no items, once the round trips in
        flight are read; best effort: a server away at a stop costs a second's statistics, not the stop."""
        try:
            self.settle()
            for q in [*(self.wire[i] for i in range(len(self.queues))), *self.retired.values()]:
                if stats := self.tally.take(q.name):
                    q.finish([], stats)
        except Exception as exc:
            log.debug("worker %s could not send its last statistics: %s", self.worker_id, exc)

    def serve(self, queues: Sequence[Queue], order: QueueOrder, wire: Wire) -> None:
        """Claim from these queues from now on (an operator's change, ``Worker._retune``), once the round trips
        in flight are read; the outcomes of jobs from the queues left still go to them (``_strays``)."""
        self.settle()
        names = {q.name for q in queues}
        self.retired.update({q.name: q.on(None) for q in self.queues if q.name not in names})
        for name in names:
            self.retired.pop(name, None)
        self.queues, self.order, self.wire, self.line = queues, order, wire, None
        self.prefetch = Prefetch(self.jobs.threads, self.prefetch.start_limit)

    def resize(self, threads: int, batch: int, prefetch: int) -> None:
        """Claim for threads slots from now on, up to batch jobs a round trip, prefetch beyond them at most."""
        self.batch, self.prefetch = max(1, batch), Prefetch(threads, prefetch)

    def _strays(self, outcomes: Done) -> Done:
        """Finish the outcomes of jobs from queues this worker left (a round trip each, on the shared client);
        the others. Once none of their jobs runs here, they are forgotten."""
        ours: Done = []
        theirs: dict[str, Done] = {}
        for item in outcomes:
            (theirs.setdefault(item[0].queue.name, []) if item[0].queue.name in self.retired else ours).append(item)
        for name, done in theirs.items():
            q = self.retired[name]
            try:
                states = q.finish([o for _, o in done], self.tally.take(name))
            except Exception:
                self.outbox.keep(done)
                raise
            self._settled(q, done, Exchange(states, [], None))
        if not theirs and not any(self.jobs.leases.of_queue(name) for name in self.retired):
            self.retired.clear()
        return ours

    def say(self) -> None:
        """Write the completed lines held back (before a wait: no round trip ahead to hide them behind)."""
        if report.say(self.unsaid):
            self.said_at = time.monotonic()

    def _say_soon(self) -> None:
        """Write the lines held back once SAY_LINES of them wait, or SAY_WITHIN passed since the last write."""
        if len(self.unsaid) >= SAY_LINES or time.monotonic() - self.said_at >= SAY_WITHIN:
            self.say()

    def _pipelined(self, outcomes: Done, free: int, hold: bool) -> int:
        """Send this pass's round trip, then read the ones before it; the new one stays on the wire
        when it claims and the jobs are short (``prefetch``): the jobs read now end within about a
        round trip, and their outcomes wake the loop to send the next and read it."""
        if len(outcomes) > MAX_BATCH:
            self.outbox.keep(outcomes[MAX_BATCH:])
            outcomes = outcomes[:MAX_BATCH]
        want = max(0, min(free, self.batch))  # free counts the claims on the wire already
        stats = self.tally.take(self.queues[0].name, time.monotonic())
        self.talked = bool(outcomes or want or stats)
        started, error = 0, None
        try:
            if self.talked:
                self._send(outcomes, want, stats)
                self._say_soon()  # while the server works
            keep = hold and want and self.prefetch.extra > 0  # and jobs run: their outcomes come soon
            while self.flying and not (keep and len(self.flying) == 1 and self.jobs.running > 0 and error is None):
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

    def _send(self, outcomes: Done, want: int, stats: Stats | None) -> None:
        try:
            sent = self.wire[0].send_exchange(self.line, [o for _, o in outcomes], want, self.worker_id,
                                              take_progress([h for h, _ in outcomes]), stats)
        except Exception:
            self.outbox.keep(outcomes)  # not on the wire: offered again (``_lost`` holds those that were)
            raise
        self.flying.append((outcomes, want, sent, time.monotonic()))
        self.claiming += want

    def _read(self) -> tuple[int, Exception | None]:
        done, want, sent, when = self.flying[0]
        q = self.wire[0]
        ex = q.read_exchange(self.line, sent)
        self.flying.popleft()
        self.claiming -= want
        if want and when:
            self.prefetch.tripped(time.monotonic() - when)
        return self._settled(q, done, ex), ex.error

    def _lost(self) -> None:
        """An error took the round trips in flight: their outcomes are held for the next pass; the
        jobs they claimed, if the server ran them, return when their leases end (the sweep)."""
        for done, *_ in self.flying:
            self.outbox.keep(done)
        self.flying.clear()
        self.claiming = 0
        if self.line is not None:
            self.line.drop()  # replies left on it would answer the next round trip

    def _each_queue(self, outcomes: Done, free: int) -> int:
        """Finish what ended and claim up to free slots: one round trip per queue touched, read at once."""
        by_queue: dict[str, Done] = {}
        if len(self.queues) == 1:  # the common case: no sorting a job
            by_queue = {self.queues[0].name: outcomes} if outcomes else {}
        else:
            for item in outcomes:
                by_queue.setdefault(item[0].queue.name, []).append(item)
        claimed, self.talked, now = 0, False, time.monotonic()
        per_queue = [0] * len(self.queues)
        for i in self.order.next(free > 0):
            q = self.queues[i]
            done, want = by_queue.pop(q.name, []), min(free - claimed, self.batch)
            stats = self.tally.take(q.name, now)
            if done or want > 0 or stats:
                self.talked = True
                try:
                    sent = time.monotonic()
                    ex = self.wire[i].exchange([o for _, o in done], max(want, 0), self.worker_id, self._say_soon,
                                               take_progress([h for h, _ in done]), stats)
                    if want > 0:
                        self.prefetch.tripped(time.monotonic() - sent)
                except Exception:
                    self.outbox.keep(done + [item for items in by_queue.values() for item in items])
                    raise
                n = self._settled(q, done, ex)
                claimed += n
                per_queue[i] += n
                free = claimed if self.order.stops(want, n) else free  # --strict: the next queues wait
                if ex.error is not None:
                    self.outbox.keep([item for items in by_queue.values() for item in items])
                    raise ex.error
        self.order.charge(per_queue)  # weights count jobs claimed, not passes
        return claimed

    def _settled(self, q: Queue, done: Done, ex: Exchange) -> int:
        """Report what the server decided of done and start what it claimed (its error is the caller's)."""
        if ex.states is None:
            self.outbox.keep(done)  # refused: offered again (held through the outage)
        else:
            self.processed += len(done)
            report.finished(q.name, done, ex.states, self.unsaid)
            if done:
                self.tally.note(q.name, done, ex.states)
        self.jobs.start(q, ex.claimed)
        return len(ex.claimed)
