"""The Pump: promotes due jobs, reclaims expired leases and mints recurrences, per queue.

Limit: one queue per thread; one Pump leads each queue through a short lease (the others
stay idle and take over when it lapses). The leader parks on the queue's ``pumpwake`` list
until its next duty on the server clock, at most EMQ_PUMP_PARK seconds; a mint that brings
the earliest due time forward wakes it. Every step is idempotent, so any number may run.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence

from . import conf
from .connection import new_client
from .engine import Queue
from .errors import ServerUnavailable

log = logging.getLogger("emq.pump")
PRECISE_MS = 150  # the last ms before a duty are waited locally (see Pump._park)


class Pump:
    """Supervised Pump threads for some queues; an exception in a tick is logged, never fatal."""

    def __init__(
        self,
        queues: Sequence[Queue],
        *,
        stop: threading.Event | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.queues = list(queues)
        self.stop = stop or threading.Event()
        # Called after a tick made jobs ready: a Pump inside a worker wakes its own loop at once,
        # a thread hop sooner than the wake token its Metronome also receives.
        self.on_ready = on_ready
        self.id = f"pump:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.park_ms = int(conf.get("EMQ_PUMP_PARK") * 1000)
        self.threads: list[threading.Thread] = []
        self.clients: list = []

    def start(self) -> Pump:
        """Run one thread per queue in the background."""
        for q in self.queues:
            client = new_client()
            self.clients.append(client)
            t = threading.Thread(target=self.run_queue, args=(q, client), name=f"emq-pump-{q.name}", daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def close(self) -> None:
        """Stop every thread and give up the lead so another Pump takes over at once."""
        self.stop.set()
        for q in self.queues:
            self._resign(q)
        for c in self.clients:
            try:
                c.connection_pool.disconnect()
            except Exception:  # the blocking pop of a Pump thread may be reading this socket
                pass
        for t in self.threads:
            t.join(timeout=2)

    def _resign(self, q: Queue) -> None:
        try:
            if q.client.get(q.keys.leader) == self.id:
                q.client.delete(q.keys.leader)
        except Exception:  # best effort: the lead lapses by itself within its TTL
            pass

    def run_queue(self, q: Queue, client) -> None:
        """Tick forever; park between ticks; survive any error in one tick."""
        failures = 0
        while not self.stop.is_set():
            try:
                self._park(q, client, self.step(q))
                failures = 0
            except Exception as exc:
                if self.stop.is_set():
                    return
                failures += 1
                if isinstance(exc, ServerUnavailable):
                    log.error("pump %s: %s", q.name, exc)
                else:
                    log.exception("pump tick of queue %s failed; going on", q.name)
                self.stop.wait(min(0.5 * failures, 5.0))

    def step(self, q: Queue) -> tuple[bool, int]:
        """One tick of one queue: returns (leader, ms to park)."""
        tick = q.tick(self.id, ttl_ms=3 * self.park_ms, park_ms=self.park_ms)
        if tick.promoted or tick.reclaimed:
            log.debug("pump %s: promoted=%s reclaimed=%s", q.name, tick.promoted, tick.reclaimed)
            if self.on_ready:
                self.on_ready()
        if tick.leader and tick.repeat_due:
            from . import repeat

            repeat.mint_due(q)
            return True, 0
        return tick.leader, tick.park_ms

    def _park(self, q: Queue, client, park: tuple[bool, int]) -> None:
        leader, ms = park
        if ms <= 0:
            return
        if not leader:
            self.stop.wait(ms / 1000)
            return
        # A blocking pop times out on the server's clock tick (hz 10: up to 100 ms late), which
        # would make every delayed job that late. So block only until PRECISE_MS before the
        # duty and wait the rest here, to the millisecond. Limit: a job minted during that
        # last stretch and due before the duty starts up to PRECISE_MS late.
        deadline = time.monotonic() + ms / 1000
        if ms > PRECISE_MS and client.blpop([q.keys.pumpwake], timeout=(ms - PRECISE_MS) / 1000):
            return
        self.stop.wait(max(0.0, deadline - time.monotonic()))


def run_forever(queue_names: Sequence[str]) -> None:
    """Run a Pump in the foreground until the process is stopped (``manage.py emq_pump``)."""
    pump = Pump([Queue(n) for n in queue_names]).start()
    try:
        pump.stop.wait()
    finally:
        pump.close()
