"""The jobs a worker holds, and the renewal that keeps their leases: one thread per queue.

Each queue's renewer renews every lease it holds there in one round trip, every lease/3 of the
shortest lease held, on its own thread and its own clock: a queue whose script is being retried
(a slot migrating on a cluster, up to 30 s) never delays the renewals of another queue, nor the
worker's loop. A job found cancelled, or whose lease was found lost ("stale": the sweep gave it to
another worker, "missing"), is dropped and ``on_cancel`` stops its code (``deadlines``: with
``Cancelled``, or ``LeaseExpired``): a lost attempt must not run on beside the one that took it
over, and whatever it reports late is refused as stale, so nothing it does counts twice.
A cancel is pushed to the worker as well (``cancels``: within milliseconds, without polling); the
renewal is the backstop when a push is lost.

Progress (``ctx.progress``) rides on the renewal: a job's first report since the last one sent
brings the queue's renewal forward to at most PROGRESS_EVERY after the previous progress write,
and the renewal stores the latest value of every job that reported, in the same round trip. So a
job may report a million times and cost at most one write a second. A report the renewal has not
sent when the job returns goes in the round trip of its finish, before it (``take_progress``).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from ..core import sealed
from ..core.engine import Queue
from ..core.engine.live import Progress
from ..errors import Cancelled, LeaseExpired
from ..jobs import secrets
from .cancels import CancelListener
from .held import Held
from .outage import Outage

log = logging.getLogger("emq.worker")
RETRY_AFTER = 1.0  # seconds before a renewal that failed (server unreachable) is tried again
PROGRESS_EVERY = 1.0  # seconds between two progress writes of a queue's renewer, at least


class Leases:
    """The held jobs of a worker, each its own key (by identity: no key built a job), and their renewers."""

    def __init__(self, queues: Sequence[Queue],
                 on_cancel: Callable[[Held, type[BaseException]], None] | None = None) -> None:
        self.on_cancel = on_cancel
        self._held: dict[Held, Held] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._renewers = {q.name: Renewer(q, self, self._stop) for q in queues}
        self._listener = CancelListener(queues, self.heard) if on_cancel is not None else None

    def __len__(self) -> int:
        return len(self._held)

    def start(self) -> None:
        for r in self._renewers.values():
            r.thread.start()
        if self._listener is not None:
            self._listener.start()

    def serve(self, queues: Sequence[Queue]) -> None:
        """Renew the leases of these queues too (a worker told to claim from them): a renewer each, started."""
        for q in queues:
            if q.name not in self._renewers:
                r = self._renewers[q.name] = Renewer(q, self, self._stop)
                r.thread.start()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        self._stop.set()
        for r in self._renewers.values():
            r.wake.set()
        for r in self._renewers.values():
            r.thread.join(timeout=2)

    def hold(self, held: Held) -> None:
        with self._lock:
            self._held[held] = held
        renewer = self._renewers[held.queue.name]
        held.nudge = renewer.progressed
        renewer.nudge(held.job.lease_ms)

    def drop(self, held: Held) -> None:
        with self._lock:
            self._held.pop(held, None)

    def hold_all(self, helds: list[Held]) -> None:
        """Hold the jobs of one claim (one queue): one lock and one renewal nudge a batch, not a job."""
        if not helds:
            return
        renewer = self._renewers[helds[0].queue.name]
        progressed = renewer.progressed  # one bound method a batch
        held, lease_ms = self._held, helds[0].job.lease_ms
        with self._lock:
            for h in helds:
                held[h] = h
                h.nudge = progressed
                if h.job.lease_ms < lease_ms:
                    lease_ms = h.job.lease_ms
        renewer.nudge(lease_ms)

    def drop_all(self, helds: list[Held]) -> None:
        held = self._held
        with self._lock:
            for h in helds:
                held.pop(h, None)

    def of_queue(self, name: str) -> list[Held]:
        with self._lock:
            return [h for h in self._held.values() if h.queue.name == name]

    def lose(self, held: Held, status: str) -> None:
        if not self._let_go(held):
            return  # it ended meanwhile: its own finish crossed the renewal, no lease was lost
        log.warning("job id=%s name=%s lost its lease (%s): stopping it", held.job.id, held.job.name, status)
        if self.on_cancel is not None:
            self.on_cancel(held, LeaseExpired)

    def cancelled(self, held: Held) -> None:
        """The server cancelled a job held here (a renewal said so, or the push did): stop it, once."""
        if not self._let_go(held):
            return  # it ended, or the other way told first
        log.info("job id=%s name=%s was cancelled while it ran: stopping it", held.job.id, held.job.name)
        if self.on_cancel is not None:
            self.on_cancel(held, Cancelled)

    def heard(self, queue: str, items: list[tuple[str, int]]) -> None:
        """The push of a cancel (``cancels``): stop the jobs of these (id, token) that are held here."""
        wanted = set(items)
        for h in self.of_queue(queue):
            if (h.job.id, h.job.token) in wanted:
                self.cancelled(h)

    def _let_go(self, held: Held) -> bool:
        """Drop held on a renewal's answer; False when it was no longer held. A renewal takes its list
        of jobs, then its round trip; a job that ended meanwhile was dropped, then finished on the
        loop's own connection, possibly before the renewal ran: its answer (stale, missing) is the
        finish's doing, not a lost lease (such warnings came by the dozen in long drains under load)."""
        with self._lock:
            return self._held.pop(held, None) is not None

    def release_all(self, grace: float) -> None:
        """Give back every job still held (running past the grace), so they run again at once."""
        with self._lock:
            helds, self._held = list(self._held.values()), {}
        by: dict[str, list[Held]] = {}
        for h in helds:
            by.setdefault(h.queue.name, []).append(h)
        for group in by.values():
            group[0].queue.release_locks([(h.job.id, h.job.token) for h in group])
            log.warning("released %s job(s) still running after %ss grace", len(group), grace)


class Renewer:
    """Renews one queue's leases held by this worker, every lease/3 of the shortest one."""

    def __init__(self, q: Queue, leases: Leases, stop: threading.Event) -> None:
        self.q = q
        self.leases = leases
        self.stop = stop
        self.wake = threading.Event()
        self.due = math.inf  # monotonic time of the next renewal
        self.progress_at = -math.inf  # monotonic time of the last progress write
        self.thread = threading.Thread(target=self.run, name=f"emq-renew-{q.name}", daemon=True)
        self.outage = Outage(log, f"renewing leases in {q.name}")  # one line per state, not per retry

    def nudge(self, lease_ms: int) -> None:
        """A job with this lease is now held: renew no later than lease/3 from now."""
        due = time.monotonic() + lease_ms / 3000
        if due < self.due:
            self.due = due
            self.wake.set()

    def progressed(self) -> None:
        """A held job reported progress: renew (and write it) within PROGRESS_EVERY of the last write."""
        due = max(time.monotonic(), self.progress_at + PROGRESS_EVERY)
        if due < self.due:
            self.due = due
            self.wake.set()

    def run(self) -> None:
        while not self.stop.is_set():
            delay = self.due - time.monotonic()
            if delay > 0:
                self.wake.wait(min(delay, 3600.0))
                self.wake.clear()
                continue
            self.due = math.inf
            try:
                self.renew()
            except Exception as exc:  # the server is away or refusing: try again soon, never die
                self.outage.failed(exc)
                self.due = min(self.due, time.monotonic() + RETRY_AFTER * random.uniform(0.5, 1.0))
            else:
                self.outage.ok()

    def renew(self) -> None:
        """One round trip per lease length held in this queue; drop the leases found lost."""
        by: dict[int, list[Held]] = {}
        for h in self.leases.of_queue(self.q.name):
            by.setdefault(h.job.lease_ms, []).append(h)
        progress = take_progress([h for helds in by.values() for h in helds])
        if progress:
            self.progress_at = time.monotonic()
        for lease_ms, helds in by.items():
            try:
                statuses = self.q.live.renew([(h.job.id, h.job.token) for h in helds], lease_ms, progress)
            except Exception:
                for h in helds:  # not sent: the next renewal sends it
                    h.progress_dirty = h.progress_dirty or any(p[0] == h.job.id for p in progress)
                raise
            progress = []
            for h, status in zip(helds, statuses, strict=True):
                if status == "cancelled":
                    self.leases.cancelled(h)
                elif status != "ok":
                    self.leases.lose(h, status)
        if by:
            self.due = min(self.due, time.monotonic() + min(by) / 3000)


def take_progress(helds: Iterable[Held]) -> list[Progress]:
    """The latest progress of the jobs that reported since the last write (cleared before it is read), each
    note's secrets masked (once a second at most a job: never in the job's own loop), an encrypted job's sealed."""
    out = []
    for h in helds:
        if h.progress_dirty:
            h.progress_dirty = False
            fraction, note = h.progress
            note = secrets.in_text(note)
            out.append((h.job.id, h.job.token, fraction, sealed.seal(note) if h.job.sealed and note else note))
    return out
