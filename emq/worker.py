"""The worker: claims jobs in batches, runs them on a thread pool, finishes them in batches.

One loop thread talks to the server; each pass finishes what completed and claims up to
the free slots in one pipelined round trip per queue, renews every held lease together
every lease/3, and parks on the Metronome when there is nothing to claim.
"""

from __future__ import annotations

import logging
import os
import queue as stdqueue
import signal as signals
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import conf, partitions, runner
from .aio import LoopThread
from .api import apply_group_limits
from .connection import get_client, guard
from .engine import Queue
from .errors import ServerUnavailable
from .jobs import remember_queue
from .keys import registry_workers
from .keys import worker as worker_key
from .metronome import Metronome
from .pump import Pump
from .records import Claimed, Outcome

log = logging.getLogger("emq.worker")
BURST_HORIZON_MS = 5000  # a burst worker waits for retries due this soon
# Seconds between heartbeats (the registry entry lives 3x as long). Each also runs one claim, a
# safety net should a wake token ever be lost; with the Pump that is an idle worker's whole
# traffic, kept under 1 command/s (see bench/).
HEARTBEAT = 15


@dataclass
class Held:
    """A job this worker runs: its queue, claim and start time (monotonic)."""

    queue: Queue
    job: Claimed
    started: float = field(default_factory=time.monotonic)
    is_async: bool = False


class Worker:
    """``manage.py emq_worker``: run jobs of some queues until stopped (or drained, in burst mode)."""

    def __init__(
        self,
        queues: Sequence[str] | None = None,
        *,
        concurrency: int = 10,
        batch: int | None = None,
        burst: bool = False,
        pump: bool = True,
        grace: float | None = None,
        park_timeout: float = 30.0,
    ) -> None:
        self.queues = [Queue(n) for n in partitions.expand(queues or [conf.get("EMQ_DEFAULT_QUEUE")])]
        self.concurrency = max(1, concurrency)
        self.batch = max(1, batch or self.concurrency)
        self.burst = burst
        self.grace = conf.get("EMQ_GRACE") if grace is None else grace
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.signal = threading.Event()
        self.tasks: stdqueue.SimpleQueue = stdqueue.SimpleQueue()
        self.outcomes: stdqueue.SimpleQueue = stdqueue.SimpleQueue()
        self.held: dict[tuple[str, str], Held] = {}
        self.running = 0
        self.running_async = 0  # of running: async def jobs on the event loop, holding no thread
        self.async_slots = conf.get("EMQ_ASYNC_SLOTS")
        self.aio = LoopThread()
        self.stopping: float | None = None  # monotonic time the stop was asked
        self.metronome = Metronome(self.queues, self.signal, park_timeout)
        self.pump = Pump(self.queues, on_ready=self.signal.set) if pump else None
        self.processed = 0
        self.pending: list = []  # outcomes not yet accepted by the server (during an outage)
        self.outage = 0
        self._rr = 0
        self._next_renew = 0.0
        self._next_beat = 0.0
        self._quiet = False  # the last park ended by its timeout, not by a token or an outcome
        self._next_recheck = 0.0

    # -- lifecycle -------------------------------------------------------------------------

    def run(self) -> int:
        """Work until stopped (or, in burst mode, until drained); returns the exit code."""
        self._install_signals()
        for q in self.queues:
            remember_queue(q)
        apply_group_limits(q.name for q in self.queues)
        for _ in range(self.concurrency):
            threading.Thread(target=self._slot, name="emq-slot", daemon=True).start()
        self.metronome.start()
        if self.pump:
            self.pump.start()
        log.info("worker %s up: queues=%s concurrency=%s", self.id, [q.name for q in self.queues], self.concurrency)
        try:
            while not self._pass():
                pass
        finally:
            self.aio.close()
            self.metronome.close()
            if self.pump:
                self.pump.close()
            self._unregister()
        log.info("worker %s stopped after %s jobs", self.id, self.processed)
        return 0

    def stop(self) -> None:
        """Stop claiming; running jobs get the grace period (a second call cuts it short)."""
        if self.stopping is not None:
            self.grace = 0
        self.stopping = time.monotonic()
        self.signal.set()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signals.SIGTERM, signals.SIGINT):
            signals.signal(sig, lambda *_: self.stop())

    # -- the loop --------------------------------------------------------------------------

    def _pass(self) -> bool:
        """One pass of the loop; True when the worker is done."""
        self.signal.clear()
        outcomes = self.pending + self._collect()
        self.pending = []
        free = 0 if self.stopping is not None else self._free()
        try:
            claimed = self._exchange(outcomes, free)
            now = time.monotonic()
            if now >= self._next_renew:
                self._renew()
            if now >= self._next_beat:
                self._heartbeat()
        except ServerUnavailable as exc:
            return self._outage(exc)
        self.outage = 0
        if self.stopping is not None:
            return self._stop_pass()
        if claimed:
            return False
        if self._free() <= 0:
            self.signal.wait(self._until_duty())
            return False
        if self.running == 0 and self.burst and self._drained():
            return True
        # Free slots and nothing ready: park until a wake token, an outcome or the next duty.
        self.metronome.park()
        self._quiet = not self.signal.wait(min(self._until_duty(), 1.0) if self.burst else self._until_duty())
        self.metronome.unpark()
        return False

    def _skip_claim(self) -> bool:
        """After a park that no token ended, nothing became visible: skip the claim (idle budget).

        Every change that makes work visible pushes a wake token, so a timeout means there is
        nothing to claim; a claim once a minute anyway guards against a token lost with a parker.
        """
        quiet, self._quiet = self._quiet, False
        if not quiet or self.burst or time.monotonic() >= self._next_recheck:
            self._next_recheck = time.monotonic() + 60
            return False
        return True

    def _outage(self, exc: Exception) -> bool:
        """The server is unreachable: keep running jobs and their outcomes, retry with backoff."""
        self.outage += 1
        log.error("%s (retry %s)", exc, self.outage)
        if self.stopping is not None and time.monotonic() - self.stopping >= self.grace:
            return True
        self.signal.wait(min(0.2 * 2**self.outage, 5.0))
        return False

    def _stop_pass(self) -> bool:
        if self.running == 0:
            return True
        if time.monotonic() - self.stopping >= self.grace:
            self._release_all()
            return True
        self.signal.wait(0.05)
        return False

    def _free(self) -> int:
        """Jobs to claim now: any of them may be a plain job, so each needs a free thread."""
        threads = self.concurrency - (self.running - self.running_async)
        return max(0, min(threads, self.concurrency + self.async_slots - self.running))

    def _until_duty(self) -> float:
        return max(0.0, min(self._next_renew, self._next_beat) - time.monotonic())

    def _collect(self) -> list[tuple[Queue, Outcome]]:
        out = []
        while True:
            try:
                held, outcome = self.outcomes.get_nowait()
            except stdqueue.Empty:
                return out
            self.running -= 1
            self.running_async -= held.is_async
            self.held.pop((held.queue.name, held.job.id), None)
            out.append((held, outcome))

    def _exchange(self, outcomes: list, free: int) -> int:
        """Finish what ended and claim up to free slots: one round trip per queue touched."""
        by_queue: dict[str, list] = {}
        for held, outcome in outcomes:
            by_queue.setdefault(held.queue.name, []).append((held, outcome))
        if self._skip_claim() and not outcomes:
            free = 0
        claimed = 0
        n = len(self.queues)
        self._rr = (self._rr + 1) % n
        for q in self.queues[self._rr :] + self.queues[: self._rr]:
            done = by_queue.get(q.name, [])
            want = min(free - claimed, self.batch)
            if not done and want <= 0:
                continue
            try:
                statuses, jobs = q.finish_and_claim([o for _, o in done], max(want, 0), self.id)
            except ServerUnavailable:
                for items in by_queue.values():  # not yet accepted: offered again next pass
                    self.pending.extend(items)
                raise
            by_queue.pop(q.name, None)
            self._log_outcomes(done, statuses)
            for job in jobs:
                self._dispatch(q, job)
            if jobs:  # a lease shorter than those already held must be renewed sooner
                soonest = time.monotonic() + min(j.lease_ms for j in jobs) / 3000
                self._next_renew = min(self._next_renew, soonest)
            claimed += len(jobs)
        return claimed

    def _dispatch(self, q: Queue, job: Claimed) -> None:
        held = Held(q, job)
        self.held[(q.name, job.id)] = held
        self.running += 1
        if self._next_renew == 0.0 or len(self.held) == 1:
            self._next_renew = time.monotonic() + job.lease_ms / 3000
        if runner.is_async(job.name):
            held.is_async = True
            self.running_async += 1
            self.aio.submit(runner.execute_async(q.name, job), lambda outcome: self._report(held, outcome))
        else:
            self.tasks.put(held)

    def _slot(self) -> None:
        """A pool thread: run jobs one after another, report each outcome to the loop."""
        while True:
            held = self.tasks.get()
            self._report(held, runner.execute(held.queue.name, held.job))

    def _report(self, held: Held, outcome: Outcome) -> None:
        self.outcomes.put((held, outcome))
        self.signal.set()

    def _log_outcomes(self, done: list, statuses: list[str]) -> None:
        # A completed job is logged at DEBUG, and only when enabled: at 10,000+ jobs/s a line
        # per success costs the loop thread more than the job itself (see bench/).
        debug = log.isEnabledFor(logging.DEBUG)
        self.processed += len(done)
        for (held, o), status in zip(done, statuses, strict=True):
            if status == "ok" and o.outcome == "completed" and not debug:
                continue
            ms = int((time.monotonic() - held.started) * 1000)
            job = held.job
            if status != "ok":
                log.warning("job id=%s name=%s state=%s attempt=%s ms=%s", job.id, job.name, status, job.token, ms)
            elif o.outcome == "completed":
                log.debug("job id=%s name=%s state=completed attempt=%s ms=%s", job.id, job.name, job.token, ms)
            else:
                state = "scheduled" if job.token < job.max_attempts else "dead"
                line = o.value.split("\n", 1)[0]
                log.warning(
                    "job id=%s name=%s state=%s attempt=%s ms=%s error=%s", job.id, job.name, state, job.token, ms, line
                )

    # -- leases, heartbeat, shutdown -------------------------------------------------------

    def _renew(self) -> None:
        """Renew every held lease, one round trip per queue; drop the ones this worker lost."""
        if not self.held:
            self._next_renew = time.monotonic() + 3600
            return
        by: dict[tuple[str, int], list[Held]] = {}
        for h in self.held.values():
            by.setdefault((h.queue.name, h.job.lease_ms), []).append(h)
        for (_, lease_ms), helds in by.items():
            statuses = helds[0].queue.extend_locks([(h.job.id, h.job.token) for h in helds], lease_ms)
            for h, status in zip(helds, statuses, strict=True):
                if status != "ok":
                    log.warning("job id=%s name=%s lost its lease (%s)", h.job.id, h.job.name, status)
                    self.held.pop((h.queue.name, h.job.id), None)
        shortest = min(h.job.lease_ms for hs in by.values() for h in hs)
        self._next_renew = time.monotonic() + shortest / 3000

    def _release_all(self) -> None:
        """Give back the jobs still running after the grace period, so they run again at once."""
        by: dict[str, list[Held]] = {}
        for h in self.held.values():
            by.setdefault(h.queue.name, []).append(h)
        for helds in by.values():
            helds[0].queue.release_locks([(h.job.id, h.job.token) for h in helds])
            log.warning("released %s job(s) still running after %ss grace", len(helds), self.grace)
        self.held.clear()

    def _heartbeat(self) -> None:
        import json

        info = {
            "id": self.id, "host": socket.gethostname(), "pid": os.getpid(),
            "queues": [q.name for q in self.queues], "concurrency": self.concurrency,
            "running": self.running, "processed": self.processed,
        }
        prefix = self.queues[0].keys.prefix
        with guard():
            client = get_client()
            if self._next_beat == 0.0:
                client.sadd(registry_workers(prefix), self.id)
            client.set(worker_key(prefix, self.id), json.dumps(info), ex=3 * HEARTBEAT)
        self._next_beat = time.monotonic() + HEARTBEAT

    def _unregister(self) -> None:
        prefix = self.queues[0].keys.prefix
        try:
            client = get_client()
            client.srem(registry_workers(prefix), self.id)
            client.delete(worker_key(prefix, self.id))
        except Exception:  # leaving: the key expires by itself
            pass

    def _drained(self) -> bool:
        for q in self.queues:
            c = q.counts()
            if c.ready or c.active:
                return False
            if c.next_due_ms is not None and c.next_due_ms - c.now_ms <= BURST_HORIZON_MS:
                return False
        return True
