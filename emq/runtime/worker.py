"""The worker's loop: claims jobs in batches, hands them to slots, finishes them in batches.

One loop thread talks to the server for claims and finishes: each pass finishes what ended and
claims for the free room in one pipelined round trip per queue (``rounds``: with short jobs, the next
one on the wire while it starts the last one's jobs; ``prefetch`` sizes the room), and parks on the
Metronome (whose parker claims for it: ``handoff``) when there is nothing to claim. Its other duties
have their own rooms: ``leases``, ``heartbeat``, ``outbox``, ``slots`` and ``aio`` (the jobs'
threads), ``deadlines``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Sequence

from ..core import config, registry
from ..core.rates import apply_limits
from ..core.records import Outcome
from ..errors import ServerFull, ServerUnavailable
from . import report
from .aio import LoopThread
from .deadlines import Deadlines
from .heartbeat import Heartbeat, describe
from .held import Held
from .idle import RECHECK, IdleBudget, drained
from .leases import Leases
from .metronome import Metronome
from .order import resolve
from .outage import Outage
from .outbox import Outbox
from .prefetch import Prefetch
from .pump import Pump
from .rounds import SAY_WITHIN, Rounds
from .slots import Slots
from .startup import on_stop_signals
from .wire import Wire

log = logging.getLogger("emq.worker")
# Seconds between a worker's retries in an outage, at most: its held outcomes must reach a restarted
# server well inside the one lease period the sweep waits for them (see reclaim_expired).
MAX_PAUSE = 2.0


class Worker:
    """``manage.py emq_worker``: run jobs of some queues until stopped (or drained, in burst mode)."""

    def __init__(self, queues: Sequence[str] | None = None, *, concurrency: int = 10, batch: int | None = None,
                 burst: bool = False, pump: bool = True, grace: float | None = None,
                 park_timeout: float = 30.0, strict: bool = False, prefetch: int | None = None) -> None:
        self.queues, self.order = resolve(queues or [config.get("EMQ_DEFAULT_QUEUE")], strict)  # "high:5": weights
        self.concurrency = max(1, concurrency)
        self.batch = max(1, batch or self.concurrency)
        self.burst = burst
        self.grace = config.get("EMQ_GRACE") if grace is None else grace
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.signal = threading.Event()
        self.outbox = Outbox()
        self.deadlines = Deadlines(self._report, lambda held: self.slots.replace(held), self.stop)
        self.leases = Leases(self.queues, on_cancel=self.deadlines.cancel)
        self.slots = Slots(self.concurrency, self._report, self.deadlines)
        self.aio = LoopThread()
        self.metronome = Metronome(self.queues, self.signal, park_timeout,
                                   claim=lambda n: self.rounds.exchange([], n, hold=False),
                                   room=lambda: self._free() if self.stopping is None else 0)
        self.pump = Pump(self.queues, on_ready=self.signal.set) if pump else None
        self.heartbeat = Heartbeat(self.queues[0].keys.prefix, self.id, lambda: describe(self))
        self.running = self.running_async = self.processed = 0
        self.talked, self.said_at = False, 0.0  # the last pass sent something; monotonic time lines were last said
        self.outage = Outage(log, f"worker {self.id}")
        self.async_slots = config.get("EMQ_ASYNC_SLOTS")
        self.stopping: float | None = None  # monotonic time the stop was asked
        self.stops = self.told = 0  # stops asked, and said
        self.idle = IdleBudget(burst)
        self.unsaid: report.Unsaid = []  # completed lines said during a next round trip (report.say, rounds.say_soon)
        self.wire = Wire(self.queues)  # the queues on the loop's own connection
        self.rounds = Rounds(self)  # the loop's round trips (its next one on the wire while it reads the last)
        self.prefetch = Prefetch(self.concurrency, self.concurrency if prefetch is None else prefetch)

    def run(self) -> int:
        """Work until stopped (or, in burst mode, until drained); returns the exit code."""
        on_stop_signals(self.stop)  # a second signal cuts the grace short
        _register(self)
        for part in (self.deadlines, self.slots, self.leases, self.metronome, *([self.pump] if self.pump else [])):
            part.start()
        log.info("worker %s up: queues=%s concurrency=%s", self.id, [q.name for q in self.queues], self.concurrency)
        try:
            while not self._pass():
                pass
        finally:
            self._say()
            for part in (self.aio, self.metronome, *([self.pump] if self.pump else []), self.leases, self.slots,
                         self.deadlines):
                part.close()
            self.heartbeat.close()
            self.wire.close()
        log.info("worker %s stopped after %s jobs", self.id, self.processed)
        return 1 if self.deadlines.exhausted else 0  # a drain for stuck threads: the supervisor starts another

    def stop(self) -> None:
        """Stop claiming; running jobs get the grace period (a second call cuts it short)."""
        if self.stopping is not None:
            self.grace = 0
        self.stops += 1  # said by the loop (report.stopping): a signal handler may interrupt a dispatch
        self.stopping = time.monotonic()
        self.signal.set()

    def _pass(self) -> bool:
        """One pass of the loop; True when the worker is done."""
        self.signal.clear()
        outcomes = self.outbox.take_pending() + self._arrived()
        free = 0 if self.stopping is not None else self._free()
        try:
            claimed = self.rounds.exchange(outcomes, free)
        except Exception as exc:  # a server state (full, away...) or a refused call: wait, never die
            self._say()
            return self._outage(exc)
        if self.talked:
            self.outage.ok(f"; sent {len(outcomes)} held outcome(s) before claiming" if outcomes else "")
        if self.stopping is not None:
            self._say()
            return self._stop_pass()
        if claimed and self._free() > 0:
            return False  # room left: claim again at once (the next round trip says the lines held back)
        if self._free() <= 0:  # every slot busy (a claim that filled them waits at once, not after an empty pass)
            if not (self.unsaid or self.rounds.flying) or not self.signal.wait(SAY_WITHIN):  # ended soon: next pass
                self._say()
                if not self.rounds.flying:  # else the next pass reads it: it sends nothing, so it keeps none
                    self.signal.wait(RECHECK)
            return False
        if self.rounds.flying:  # room, and a claim on the wire: read it before anything parks
            try:
                self.rounds.settle()
            except Exception as exc:
                return self._outage(exc)
            return False
        self._say()  # no round trip ahead to hide them behind: say them before any wait
        if self.running == 0 and self.burst and self._drained():
            return True
        self.metronome.park()  # free slots and nothing ready: park until a token (handoff) or an outcome
        self.idle.park_ended(self.metronome.wait(1.0 if self.burst else RECHECK))
        self.metronome.unpark()
        return False

    def _outage(self, exc: Exception) -> bool:
        """The server is away or refusing (``faults``): keep running jobs and their outcomes, retry with
        jittered backoff, say so once. After it, held outcomes go before any claim (``rounds``)."""
        if not isinstance(exc, ServerUnavailable):
            log.debug("worker loop error", exc_info=exc)
        pause = min(self.outage.failed(exc, f" ({len(self.outbox)} outcome(s) held)"), MAX_PAUSE)
        if self.stopping is not None and time.monotonic() - self.stopping >= self.grace:
            return True
        self.signal.wait(pause)
        return False

    def _drained(self) -> bool:
        try:
            return drained(self.queues)
        except ServerUnavailable:
            return False

    def _stop_pass(self) -> bool:
        self.told = report.stopping(self.stops, self.told, self.running, self.grace)
        if self.running == 0:
            return True
        if time.monotonic() - self.stopping >= self.grace:
            self.leases.release_all(self.grace)
            return True
        self.signal.wait(0.05)
        return False

    def _free(self) -> int:
        """Jobs to claim now: any of them may be a plain job, so each needs a free thread (or to be one
        of the few that keep the threads busy during the next round trip: ``prefetch``)."""
        room = self.concurrency + self.prefetch.extra - self.rounds.claiming  # a claim on the wire took its part
        return max(0, min(room - (self.running - self.running_async), room + self.async_slots - self.running))

    def _arrived(self) -> list[tuple[Held, Outcome]]:
        out = self.outbox.arrived()
        if out:
            self.prefetch.arrived(time.monotonic(), helds := [held for held, _ in out])  # one list for both
            self.running -= len(out)
            self.running_async -= sum([held.is_async for held in helds]) if self.running_async else 0
            self.leases.drop_all(helds)
        return out

    def _say(self) -> None:
        if report.say(self.unsaid):
            self.said_at = time.monotonic()

    def _report(self, held: Held, outcome: Outcome) -> None:
        self.outbox.put(held, outcome)
        if not self.signal.is_set():  # put first: the loop clears a set signal before it reads the outbox
            self.signal.set()


def _register(self: Worker) -> None:
    """Enter the registries and start the heartbeat. A full server (it answers, but refuses writes)
    does not stop the start: the jobs already queued still need a worker, and the beat retries."""
    try:
        registry.remember_all(q.name for q in self.queues)
        apply_limits([q.name for q in self.queues])  # EMQ_GROUP_LIMITS and EMQ_RATE_LIMITS
        self.heartbeat.beat()
    except ServerFull as exc:
        log.warning("worker %s starts while the server is full: %s", self.id, exc)
    self.heartbeat.start(beat=False)
