"""The watchdog: every job ends. Time limits of running jobs, cancels, and the threads left behind.

At a job's soft limit it raises ``SoftTimeLimit`` inside the job. At its time limit, or when the
job is cancelled or its lease was taken (a renewal answered stale: the sweep gave the job to
another worker), it *stops* the job: the attempt's outcome is reported at once through the
worker's outbox (a failure with ``JobTimeout``, or a ``Cancelled`` one that the server answers
stale), the exception is raised inside the job's code (a thread, or the coroutine's await) and a
plain job's slot gets a fresh thread, so the slot is free within moments even when the code is
blocked in C. The fencing token makes that safe: whatever the old code reports later is refused.

Code that has not returned EMQ_TIMEOUT_GRACE (30 s) after it was stopped, nor as long again as it
had run by then (twice its time limit, for a timeout), is *abandoned*. Sooner, it is most likely a
call that overran and will return (a sleep, a socket timeout longer than the job's limit): its
outcome is reported and its slot has a fresh thread, so it costs one idle thread, while recycling
the process costs every other running job a drain of up to EMQ_GRACE (30 s) with no claims meanwhile
(a few jobs overrunning in ``time.sleep`` made a pool churn when 5 s after the stop was the bar:
docs/guides/failure-modes.md has the figures). Code still blocked past both is far outside its
author's bound: a hang, and only a process exit frees it. Once EMQ_MAX_ABANDONED abandoned threads
are stuck at once (one that returns stops counting), the watchdog says so in the log and ``drain``
stops the worker, which releases its leases and exits with ``exits.RECYCLE`` (``exhausted``) so that
its supervisor starts a clean process.

Limit: one thread, waking only at the earliest deadline; each wake looks at the jobs that have
one (at most the worker's running jobs), never at finished ones.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core import config
from ..core.records import Outcome
from ..errors import Cancelled, JobTimeout, LeaseExpired, SoftTimeLimit
from . import runner
from .held import Held, Interrupt
from .threadexc import clear_pending

log = logging.getLogger("emq.worker")
IDLE_WAIT = 3600.0  # seconds the watchdog sleeps with no deadline ahead (a new one wakes it)


@dataclass(slots=True)
class Watch:
    """A running job's pending deadlines, in monotonic seconds (inf: none, or already acted on)."""

    held: Held
    soft_at: float = math.inf
    hard_at: float = math.inf
    abandon_at: float = math.inf
    stopped_at: float = math.inf

    @property
    def next_at(self) -> float:
        return min(self.soft_at, self.hard_at, self.abandon_at)


def limits(held: Held) -> tuple[float, float]:
    """The job's time limit and soft limit in seconds (inf: none); none given (None) gets EMQ_DEFAULT_TIMEOUT."""
    hard_ms, soft_ms = held.job.timeout_ms, held.job.soft_timeout_ms
    if hard_ms is None:
        default = config.get("EMQ_DEFAULT_TIMEOUT")
        hard_ms = 0 if default is None or default == math.inf else int(default * 1000)
    return (hard_ms / 1000 if hard_ms else math.inf), (soft_ms / 1000 if soft_ms else math.inf)


class Deadlines:
    """One watchdog thread per worker; ``report`` gets the outcome of each job it stops, and the slots that
    run plain jobs under it (``replaces``) a stopped one's slot back; ``drain`` stops a stuck worker.

    One job: the deadlines of the jobs running here, armed, acted on, and the threads they leave behind,
    under one lock and one wake; the lines past the bar are the per-attempt paths written inline (``enter``).
    """

    def __init__(self, report: Callable[[Held, Outcome], None], drain: Callable[[], None]) -> None:
        self.report = report
        self.replace: Callable[[Held], None] = _no_slots
        self.drain = drain
        self.watched: dict[int, Watch] = {}
        self.abandoned: list[Held] = []
        self.exhausted = False  # EMQ_MAX_ABANDONED reached: the worker drains and exits non-zero
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._next_at = math.inf  # when the watchdog wakes next (a new deadline wakes it only if sooner)
        self._shortest = IDLE_WAIT  # the shortest limit armed since the last step: how long an idle step sleeps
        self._closed = False
        self.thread = threading.Thread(target=self._run, name="emq-deadlines", daemon=True)

    def replaces(self, replace: Callable[[Held], None]) -> None:
        """Have replace(held) give the slot of a plain job this stops a fresh thread (its own may be stuck)."""
        self.replace = replace

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)

    def enter(self, held: Held, interrupt: Interrupt) -> None:
        """The job's code starts now (on its thread or the loop): arm its limits."""
        held.interrupt = interrupt  # set first: a stop that sees the job running can interrupt it
        held.running = True  # no lock on the way in (every attempt passes here)...
        if held.stopped is not None:  # ...so a stop that came just before sees to it here
            with held.lock:
                _interrupt(held, held.stopped)
        hard, soft = limits(held)
        if hard < math.inf or soft < math.inf:  # _watch, inline: every attempt passes here
            now = time.monotonic()
            at = now + (soft if soft < hard else hard)
            self.watched[id(held)] = Watch(held, now + soft, now + hard)
            if at < self._next_at or at - now < self._shortest:
                self._sooner(now, at)

    def leave(self, held: Held) -> bool:
        """The job's code returned: no limit reaches it any more. True when its outcome is still to report."""
        while True:
            try:
                with held.lock:
                    held.running = False
                    if held.interrupted and not held.is_async:
                        clear_pending()  # a limit raised just as the job returned must not hit the slot
                    mine, held.settled = not held.settled, True
                break
            except BaseException:  # a limit that arrived before the lock was ours: it is spent, leave again
                continue
        if mine:  # a stopped one keeps it: the stop puts its abandon deadline there
            self.watched.pop(id(held), None)  # atomic: the watchdog reads a copy (see _step)
        return mine

    def stop(self, held: Held, kind: type[BaseException]) -> bool:
        """End the attempt now with kind (JobTimeout, Cancelled); False when it had ended already."""
        with held.lock:
            if held.settled:
                return False
            held.settled, held.stopped = True, kind
            _interrupt(held, kind)
        self.report(held, runner.failed(held.job, kind(_reason(held, kind))))
        if not held.is_async:
            self.replace(held)
        now = time.monotonic()
        at = now + max(config.get("EMQ_TIMEOUT_GRACE"), now - held.started)  # as long again as it ran
        self._watch(Watch(held, abandon_at=at, stopped_at=now), now, at)
        log.warning("job id=%s name=%s attempt=%s stopped: %s", held.job.id, held.job.name, held.job.attempt,
                    _reason(held, kind) or kind.__name__)
        return True

    def cancel(self, held: Held, kind: type[BaseException] = Cancelled) -> None:
        """The job was cancelled on the server, or its lease taken (LeaseExpired), as its renewal said:
        tell its code (ctx.cancelled) and stop it. Its outcome goes to the server, which answers stale."""
        held.stop.set()
        self.stop(held, kind)

    def _watch(self, w: Watch, now: float, at: float) -> None:
        """Watch w, next due at. Most jobs end long before a limit that falls after the next wake: they
        only add their watch (atomic). The lock is for a sooner deadline (or a limit shorter than the
        idle sleep), and while the watchdog steps (``_next_at`` inf): it wakes it again."""
        self.watched[id(w.held)] = w
        if at < self._next_at or at - now < self._shortest:
            self._sooner(now, at)

    def _sooner(self, now: float, at: float) -> None:
        """A watch due at may fall before the watchdog's next wake: wake it (``_watch``)."""
        with self._lock:
            if at - now < self._shortest:
                self._shortest = at - now
            sooner = at < self._next_at
            if sooner:
                self._next_at = at
        if sooner:
            self._wake.set()

    def _run(self) -> None:
        while not self._closed:
            self._wake.clear()
            next_at = self._step(time.monotonic())
            self._wake.wait(max(next_at - time.monotonic(), 0.0))

    def _step(self, now: float) -> float:
        """Act on every deadline reached; return when the next one falls."""
        with self._lock:
            self._next_at = math.inf  # a watch added from now on takes the lock and wakes the next step
        due = [w for w in list(self.watched.values()) if w.next_at <= now]  # list(): one atomic copy
        for w in due:
            if w.soft_at <= now:
                w.soft_at = math.inf
                self._soft(w.held)
            if w.hard_at <= now:
                w.soft_at = w.hard_at = math.inf
                self.stop(w.held, JobTimeout)
            if w.abandon_at <= now:
                self._abandon(w)
        with self._lock:  # stored under the lock that _watch compares against: no deadline slips past
            # With nothing to watch, sleep as long as the shortest limit seen lately: a job armed
            # meanwhile with a limit at least that long falls due after this wake, so it need not wake
            # the watchdog (most jobs end in far less than their limit; one wake per batch would cost).
            idle, self._shortest = max(self._shortest, 0.001), IDLE_WAIT
            later = min((w.next_at for w in list(self.watched.values())), default=now + idle)
            self._next_at = min(later, self._next_at)  # one added meanwhile may have set it sooner
            return self._next_at

    def _soft(self, held: Held) -> None:
        with held.lock:
            if not held.settled:
                _interrupt(held, SoftTimeLimit)

    def _abandon(self, w: Watch) -> None:
        with self._lock:
            self.watched.pop(id(w.held), None)
        if not w.held.running:
            return  # it returned within the grace
        self.abandoned = [h for h in self.abandoned if h.running] + [w.held]  # the ones that returned count no more
        stuck, most = len(self.abandoned), config.get("EMQ_MAX_ABANDONED")
        log.warning("job id=%s name=%s: its code has not returned %.3g s after it was stopped; abandoned (%s stuck)",
                    w.held.job.id, w.held.job.name, w.abandon_at - w.stopped_at, stuck)
        if most and stuck >= most and not self.exhausted:
            self.exhausted = True
            log.error("%s job threads are stuck past their time limits (EMQ_MAX_ABANDONED=%s): draining, releasing "
                      "the leases and exiting so that a clean worker process takes over", stuck, most)
            self.drain()


def _reason(held: Held, kind: type[BaseException]) -> str:
    """What stopped an attempt, in words (its error's text)."""
    if kind is JobTimeout:
        return f"attempt {held.job.attempt} ran past its time limit of {limits(held)[0]:g} s"
    if kind is LeaseExpired:
        return f"attempt {held.job.attempt} lost its lease: the job was given to another worker"
    return ""


def _no_slots(held: Held) -> None:
    """No slots run plain jobs under these deadlines: nothing to replace."""


def _interrupt(held: Held, kind: type[BaseException]) -> None:
    """Raise kind inside the job's code if it still runs (the caller holds held.lock)."""
    if held.running and held.interrupt is not None:
        held.interrupted = True
        held.interrupt(kind)
