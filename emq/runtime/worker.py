"""The worker's loop: claims jobs in batches, hands them to slots, finishes them in batches.

One loop thread talks to the server for claims and finishes: each pass finishes what ended and
claims for the free room in one pipelined round trip per queue (``rounds``, which owns them: with
short jobs, the next one on the wire while it starts the last one's jobs; ``prefetch`` sizes the
room), and parks on the Metronome (whose parker claims for it: ``handoff``) when there is nothing
to claim. Its other duties have their own rooms: ``dispatch`` starts the claimed jobs on ``slots``
and ``aio`` (the jobs' threads), ``leases``, ``heartbeat``, ``outbox``, ``deadlines``. The worker
builds them in the order they need each other, and each gets what it needs, not the worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from ..core import config, registry
from ..core.rates import apply_limits
from ..errors import ServerFull, ServerUnavailable
from . import exits, report
from .aio import LoopThread
from .deadlines import Deadlines
from .dispatch import Dispatch
from .heartbeat import Heartbeat, describe
from .idle import RECHECK, IdleBudget, drained
from .leases import Leases
from .metronome import Metronome
from .order import resolve
from .outage import Outage
from .outbox import Outbox
from .pump import Pump, Rows
from .retune import retune
from .rounds import SAY_WITHIN, Rounds
from .slots import Slots
from .startup import on_stop_signals
from .tuning import Tuning
from .wire import Wire

log = logging.getLogger("emq.worker")
# Seconds between a worker's retries in an outage, at most: its held outcomes must reach a restarted
# server well inside the one lease period the sweep waits for them (see reclaim_expired).
MAX_PAUSE = 2.0


class Worker:
    """``manage.py emq_worker``: run jobs of some queues until stopped (or drained, in burst mode).

    One job: the loop, past the class size bar because it builds the parts it owns in the order they need
    each other; what each part does is in its own room, and so is a change of them (``retune``).
    """

    def __init__(self, queues: Sequence[str] | None = None, *, concurrency: int = 10, batch: int | None = None,
                 burst: bool = False, pump: bool = True, rows: Rows | None = None, grace: float | None = None,
                 park_timeout: float = 30.0, strict: bool = False, prefetch: int | None = None) -> None:
        self.specs = specs = list(queues or [config.get("EMQ_DEFAULT_QUEUE")])
        self.queues, order = resolve(specs, strict)  # "high:5": weights
        self.concurrency = max(1, concurrency)
        self.strict, self.batch_arg, self.prefetch_arg, self.rows = strict, batch, prefetch, rows
        self.park_timeout = park_timeout
        self.burst = burst
        self.grace = config.get("EMQ_GRACE") if grace is None else grace
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.stopping: float | None = None  # monotonic time the stop was asked
        self.stops = self.told = 0  # stops asked, and said
        self.signal = threading.Event()  # wakes the loop: an outcome, a stop, a wake token, work made ready
        self.tuning = Tuning(self.concurrency, specs, self.signal)  # what operators stored for it (``retune``)
        self.outage = Outage(log, f"worker {self.id}")
        self.outbox = Outbox(self.signal)
        self.deadlines = Deadlines(self.outbox.put, drain=self.stop)
        self.slots = Slots(self.concurrency, self.outbox.put, self.deadlines)
        self.leases = Leases(self.queues, on_cancel=self.deadlines.cancel)
        self.aio = LoopThread()
        self.jobs = Dispatch(self.concurrency, self.leases, self.slots, self.aio, self.deadlines, self.outbox)
        self.wire = Wire(self.queues)  # the queues on the loop's own connection
        self.idle = IdleBudget(burst)
        self.rounds = Rounds(self.queues, order, self.wire, self.jobs, self.outbox, self.idle,
                             batch=max(1, batch or self.concurrency), worker_id=self.id,
                             prefetch=self.concurrency if prefetch is None else prefetch)
        self.metronome = Metronome(self.queues, self.signal, park_timeout, claim=self.rounds.claim, room=self.room)
        self.pump = Pump(self.queues, rows=rows, on_ready=self.signal.set) if pump else None
        self.heartbeat = Heartbeat(self.queues[0].keys.prefix, self.id, self.entry, self.tuning.post)

    @property
    def processed(self) -> int:
        """Outcomes the server recorded."""
        return self.rounds.processed

    def run(self) -> int:
        """Work until stopped (or, in burst mode, until drained); returns the exit code."""
        on_stop_signals(self.stop)  # a second signal cuts the grace short
        self._register()
        pump = [self.pump] if self.pump else []
        for part in (self.deadlines, self.slots, self.leases, self.metronome, *pump):
            part.start()
        log.info("worker %s up: queues=%s concurrency=%s", self.id, [q.name for q in self.queues], self.concurrency)
        try:
            while not self._pass():
                pass
        finally:
            self.rounds.say()
            self.rounds.flush()
            pump = [self.pump] if self.pump else []  # a change of queues made a new one
            for part in (self.aio, self.metronome, *pump, self.leases, self.slots, self.deadlines):
                part.close()
            self.heartbeat.close()
            self.wire.close()
        log.info("worker %s stopped after %s jobs", self.id, self.processed)
        return exits.RECYCLE if self.deadlines.exhausted else exits.STOPPED  # the supervisor starts another

    def stop(self) -> None:
        """Stop claiming; running jobs get the grace period (a second call cuts it short)."""
        if self.stopping is not None:
            self.grace = 0
        self.stops += 1  # said by the loop (report.stopping): a signal handler may interrupt a dispatch
        self.stopping = time.monotonic()
        self.signal.set()

    def room(self) -> int:
        """Jobs to claim now (``Rounds.free``); none once stopping, or while an operator pauses it."""
        return self.rounds.free() if self.stopping is None and not self.tuning.paused else 0

    def entry(self) -> dict[str, Any]:
        """This worker's registry entry, as the heartbeat writes it (``heartbeat.describe``)."""
        t = self.tuning
        return describe(self.id, [q.name for q in self.queues], self.concurrency, self.jobs.running,
                        self.processed, specs=list(t.queues), paused=t.paused, settings=list(t.sources),
                        started_with={"concurrency": t.started[0], "queues": list(t.started[1])})

    def _pass(self) -> bool:
        """One pass of the loop; True when the worker is done."""
        self.signal.clear()
        if self.tuning.pending:
            retune(self)
        rounds = self.rounds
        outcomes = rounds.outcomes()
        free = self.room()
        try:
            claimed = rounds.exchange(outcomes, free)
        except Exception as exc:  # a server state (full, away...) or a refused call: wait, never die
            rounds.say()
            return self._outage(exc)
        if rounds.talked:
            self.outage.ok(f"; sent {len(outcomes)} held outcome(s) before claiming" if outcomes else "")
        if self.stopping is not None:
            rounds.say()
            return self._stop_pass()
        if claimed and rounds.free() > 0:
            return False  # room left: claim again at once (the next round trip says the lines held back)
        if rounds.free() <= 0:  # every slot busy (a claim that filled them waits at once, not after an empty pass)
            if not (rounds.unsaid or rounds.flying) or not self.signal.wait(SAY_WITHIN):  # ended soon: next pass
                rounds.say()
                if not rounds.flying:  # else the next pass reads it: it sends nothing, so it keeps none
                    self.signal.wait(RECHECK)
            return False
        if rounds.flying:  # room, and a claim on the wire: read it before anything parks
            try:
                rounds.settle()
            except Exception as exc:
                return self._outage(exc)
            return False
        rounds.say()  # no round trip ahead to hide them behind: say them before any wait
        if self.jobs.running == 0 and self.burst and self._drained():
            return True
        return self._park()

    def _park(self) -> bool:
        """Free slots and nothing ready: park until a token (handoff) or an outcome, or a tally is due. A paused
        worker waits without parking: its parkers would take wake tokens meant for the other workers."""
        wait = self.rounds.park_for(1.0 if self.burst else RECHECK)
        if self.tuning.paused:
            self.signal.wait(wait)
            return False
        self.metronome.park()
        self.idle.park_ended(self.metronome.wait(wait))
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
        self.told = report.stopping(self.stops, self.told, self.jobs.running, self.grace)
        if self.jobs.running == 0:
            return True
        if time.monotonic() - self.stopping >= self.grace:
            self.leases.release_all(self.grace)
            return True
        self.signal.wait(0.05)
        return False

    def _register(self) -> None:
        """Enter the registries and start the heartbeat. A full server (it answers, but refuses writes)
        does not stop the start: the jobs already queued still need a worker, and the beat retries. A server
        that went away since the process checked (a failover at that moment) is waited for, with backoff."""
        while self.stopping is None:
            try:
                self._enter()
            except ServerUnavailable as exc:
                self.signal.wait(min(self.outage.failed(exc), MAX_PAUSE))
                continue
            self.outage.ok()
            return

    def _enter(self) -> None:
        """One try at ``_register``: ServerUnavailable when the server is away (the heartbeat's connection too)."""
        try:
            registry.remember_all(q.name for q in self.queues)
            apply_limits([q.name for q in self.queues])  # EMQ_GROUP_LIMITS and EMQ_RATE_LIMITS
            self.heartbeat.beat()
        except ServerFull as exc:  # a kind of ServerUnavailable, but one the start goes on through
            log.warning("worker %s starts while the server is full: %s", self.id, exc)
        self.heartbeat.start(beat=False)
