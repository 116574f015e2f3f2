"""The jobs a worker runs: started from each claim's batch, counted until their outcomes arrive.

A claim's batch is held as one (``leases``, one lock and one renewal nudge a batch); its plain jobs
go to the slots at once (one wake a batch, see ``slots``), its ``async def`` ones to the worker's
event loop (``aio``), and a job that cannot start ends dead as corrupt while the rest of its batch
goes on. ``room`` is what the threads and the event loop take on next.
"""

from __future__ import annotations

import logging
import time

from ..core import config
from ..core.encrypted import CANNOT_DECRYPT
from ..core.engine import Queue
from ..core.records import Claimed, Outcome
from . import runner
from .aio import Interruptible, LoopThread
from .deadlines import Deadlines
from .held import Held
from .leases import Leases
from .outbox import Outbox
from .slots import Slots

log = logging.getLogger("emq.worker")


class Dispatch:
    """Starts the jobs of each claim and counts them while they run (``running``; ``running_async``
    of them on the event loop) until ``ended``; their outcomes reach ``outbox``."""

    def __init__(self, threads: int, leases: Leases, slots: Slots, aio: LoopThread, deadlines: Deadlines,
                 outbox: Outbox) -> None:
        self.threads = threads
        self.async_slots = config.get("EMQ_ASYNC_SLOTS")
        self.leases = leases
        self.slots = slots
        self.aio = aio
        self.deadlines = deadlines
        self.outbox = outbox
        self.running = self.running_async = 0

    def room(self, extra: int) -> int:
        """Jobs to take on now, extra beyond the threads (a prefetch, less the claims on the wire): any of
        them may be a plain job, so each needs a free thread, or to be one of the extra."""
        room = self.threads + extra
        return max(0, min(room - (self.running - self.running_async), room + self.async_slots - self.running))

    def start(self, q: Queue, jobs: list[Claimed]) -> None:
        """Start the jobs of one claim, held as one batch; one that cannot start ends dead as corrupt."""
        now = time.monotonic()
        helds = [Held(q, job, now) for job in jobs if not job.fault]
        if len(helds) < len(jobs):
            for job in jobs:
                if job.fault:
                    self._corrupt(q, job, job.fault)
        self.leases.hold_all(helds)
        self.running += len(helds)
        asyncs = {name for name in {held.job.name for held in helds} if runner.is_async(name)}  # once a function
        if asyncs:
            helds = self._start_async(q, helds, asyncs)
        if helds:
            self.slots.submit_all(helds)

    def ended(self, helds: list[Held]) -> None:
        """The outcomes of helds arrived: they no longer run, nor hold their leases."""
        self.running -= len(helds)
        self.running_async -= sum([held.is_async for held in helds]) if self.running_async else 0
        self.leases.drop_all(helds)

    def _start_async(self, q: Queue, helds: list[Held], asyncs: set[str]) -> list[Held]:
        """Start the jobs of asyncs (``async def``) on the worker's event loop; the plain ones, for the slots."""
        plain = []
        for held in helds:
            if held.job.name not in asyncs:
                plain.append(held)
                continue
            held.is_async = True
            self.running_async += 1
            try:
                self.aio.submit(self._run_async(held))
            except Exception as exc:
                self._corrupt(q, held.job, exc)
        return plain

    def _corrupt(self, q: Queue, job: Claimed, exc: object) -> None:
        """End a job that cannot start dead as corrupt (an encrypted one no key opens: as "cannot decrypt");
        the rest of its batch goes on."""
        log.error("job id=%s name=%s is corrupt: %s; ending it dead", job.id, job.name, exc)
        kind = "undecryptable" if str(exc).startswith(CANNOT_DECRYPT) else "corrupt"
        self.outbox.keep([(Held(q, job), Outcome(job.id, job.token, kind, str(exc)[:500]))], wake=True)

    async def _run_async(self, held: Held) -> None:
        """An ``async def`` job on the worker's loop, under its limits; its outcome is reported once."""
        mine = False
        deadlines = self.deadlines

        def started(run: Interruptible) -> None:
            deadlines.enter(held, run.interrupt_threadsafe)

        def left() -> None:
            nonlocal mine
            mine = deadlines.leave(held)

        if held.stopped is not None:
            return  # cancelled before it started: its outcome is reported
        outcome = await runner.execute_async(held.queue.name, held.job, held.stop, started, left, held)
        if mine:
            self.outbox.put(held, outcome)
