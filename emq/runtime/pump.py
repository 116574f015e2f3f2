"""The Pump: promotes due jobs, reclaims expired leases, mints recurrences and forwards parents'
outcomes to jobs waiting in other queues (``emq.core.flows``), per queue.

Limit: one queue per thread; one Pump leads each queue through a short lease (the others
stay idle and take over when it lapses). The leader parks until its next duty, at most
EMQ_PUMP_PARK seconds; a mint that brings the earliest due time forward pushes the queue's
``pumpwake`` list, which wakes it. Every step is idempotent, so any number may run.

Why a local timer: the server answers a blocking pop's *timeout* only on its cron tick (every
100 ms at the default ``hz 10``), so parking on BLPOP alone makes due jobs up to 100 ms late.
The leader therefore sleeps on a local timer for the park time the tick computed on the server
clock (to the microsecond: a park counted in whole milliseconds wakes up to 1 ms late), while a
waker thread blocks on ``pumpwake`` and cuts the sleep short.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..core import config, flows
from ..core.connection import disconnect, new_client
from ..core.engine import Queue
from ..core.logical import partitions
from ..core.ticks import Tick
from ..errors import ServerUnavailable
from ..scheduling import repeat
from .outage import Outage
from .stop_relay import relay
from .upkeep import Upkeep

log = logging.getLogger("emq.pump")
FOLLOW_MS = 5000  # a Pump that does not lead asks for the lead this often (at most)


def lead_ttl_ms() -> int:
    """How long a Pump's lead lasts without a tick: 2x its park, so a crashed leader is replaced soon."""
    return int(2 * config.get("EMQ_PUMP_PARK") * 1000)


class Rows(Protocol):
    """What a Pump asks of the recurrence rows, when it is given them (``emq.scheduling.rowsync.RowSync``).

    The commands that start a Pump build it and hand it in: the runtime never reaches the database.
    A Pump without one still mints the recurrences Valkey holds; it only leaves the rows alone.
    """

    def start(self, queues: Iterable[str]) -> None:
        """Bring Valkey in line with the rows once, before the Pump's first tick."""

    def run(self, stop: threading.Event, leading: Callable[[], bool]) -> None:
        """Follow the rows on the Pump's own thread until stop."""

    def record(self, minted: Iterable[repeat.Minted]) -> None:
        """Note what the Pump minted, for the rows' read-only fields."""


class Pump:
    """Supervised Pump threads for some queues; an exception in a tick is logged, never fatal."""

    def __init__(
        self,
        queues: Sequence[Queue],
        *,
        rows: Rows | None = None,
        stop: threading.Event | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.queues = list(queues)
        self.stop = stop or threading.Event()
        # Called after a tick made jobs ready: a Pump inside a worker wakes its own loop at once,
        # a thread hop sooner than the wake token its Metronome also receives.
        self.on_ready = on_ready
        self.id = f"pump:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.park_ms = int(config.get("EMQ_PUMP_PARK") * 1000)
        self.threads: list[threading.Thread] = []
        self.tickers: list[threading.Thread] = []
        self.wakers: list[Waker] = []
        self.rows = rows
        self.upkeep = Upkeep()  # counters of queues from before them, retention of finished jobs
        self.planned: dict[str, float] = {}  # queue -> monotonic time its last tick planned the next

    def start(self) -> Pump:
        """Sync the recurrence rows (when given them), then run one thread per queue in the background."""
        if self.rows is not None:
            self.rows.start([q.name for q in self.queues])
            sync = threading.Thread(
                target=self.rows.run, args=(self.stop, self.leads), name="emq-pump-rows", daemon=True
            )
            sync.start()
            self.threads.append(sync)
        for q in self.queues:
            waker = Waker(q, self.stop, self.park_ms / 1000)
            self.wakers.append(waker)
            ticker = threading.Thread(target=self.run_queue, args=(q, waker), name=f"emq-pump-{q.name}", daemon=True)
            ticker.start()
            self.tickers.append(ticker)
            t = threading.Thread(target=waker.run, args=(q,), name=f"emq-pumpwake-{q.name}", daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def leads(self) -> bool:
        """Whether this Pump leads at least one of its queues now."""
        return any(w.leading.is_set() for w in self.wakers)

    def close(self) -> None:
        """Stop every thread and give up the lead so another Pump takes over at once."""
        self.stop.set()
        for w in self.wakers:
            w.event.set()
        for t in self.tickers:  # first, so no tick takes the lead again after the resign
            t.join(timeout=2)
        for q in self.queues:
            self._resign(q)
        for w in self.wakers:
            w.disconnect()
        for t in self.threads:
            t.join(timeout=2)

    def _resign(self, q: Queue) -> None:
        try:
            q.resign(self.id)
        except Exception:  # best effort: the lead lapses by itself within its TTL
            pass

    def run_queue(self, q: Queue, waker: Waker) -> None:
        """Tick forever; park between ticks; survive any error in one tick."""
        outage = Outage(log, f"pump {q.name}")  # a server state: one line when it starts, one when it ends
        while not self.stop.is_set():
            try:
                waker.event.clear()
                park = self.step(q)
                outage.ok()
                self._park(waker, park)
            except Exception as exc:
                if self.stop.is_set():
                    return
                if not isinstance(exc, ServerUnavailable):
                    log.exception("pump tick of queue %s failed; going on", q.name)
                self.stop.wait(outage.failed(exc))

    def step(self, q: Queue) -> tuple[bool, float]:
        """One tick of one queue: returns (leader, seconds to park)."""
        sent = time.monotonic()
        # How late this Pump itself is (a slow thread, a long step before): the tick must not take that for
        # a server stall (tick.lua).
        late = sent - self.planned.get(q.name, sent)
        tick = q.tick(self.id, ttl_ms=lead_ttl_ms(), park_ms=self.park_ms, late_ms=int(max(late, 0.0) * 1000))
        duty_at = self.planned[q.name] = _duty_at(tick, sent)
        if tick.stall_ms and tick.graced:
            log.warning("pump %s: the server stood still for %.1f s; %s lease(s) that ran out meanwhile get one more "
                        "lease period (EMQ_STALL_GRACE=%ss)", q.name, tick.stall_ms / 1000, tick.graced,
                        config.get("EMQ_STALL_GRACE"))
        if tick.promoted or tick.reclaimed:
            log.debug("pump %s: promoted=%s reclaimed=%s", q.name, tick.promoted, tick.reclaimed)
            if self.on_ready:
                self.on_ready()
        if tick.leader and tick.far:
            flows.recheck(q, tick.far)  # waiting jobs whose parents live in other queues
        if tick.leader and tick.relay and flows.forward(q):
            return True, 0  # more to forward: tick again at once
        if tick.leader and tick.repeat_due:
            minted = repeat.mint_due(q)
            if self.rows is not None:
                self.rows.record(minted)
            return True, 0
        if tick.leader and self.upkeep.step(q):
            return True, 0  # more to recount or trim: tick again at once
        if tick.leader:
            return True, max(duty_at - time.monotonic(), 0.0)
        return False, min(tick.park_ms, FOLLOW_MS) / 1000

    def _park(self, waker: Waker, park: tuple[bool, float]) -> None:
        leader, seconds = park
        if leader:
            waker.leading.set()
        else:
            waker.leading.clear()
        if seconds > 0:
            (waker.event if leader else self.stop).wait(seconds)


def _duty_at(tick: Tick, sent: float) -> float:
    """When the tick's next duty falls, in this process's monotonic seconds (the tick was sent at sent).

    The tick read the server's clock between sent and its reply. The server's TIME is this host's
    wall clock when the server runs here, which places that read to the microsecond and saves the
    reply's way back. A placing outside that window (a server elsewhere, whose clock differs) is
    not trusted: the reply's arrival stands, which is never early (an early wake costs a tick). The
    wall clock is read first, so that the placing errs late.
    """
    wall = time.time()
    received = time.monotonic()
    read = received - (wall - tick.now_us / 1e6)
    park = (tick.park_ms * 1000 - tick.now_us % 1000) / 1e6  # from the read, not from its millisecond
    return (read if sent <= read <= received else received) + park


class Waker:
    """Blocks on a queue's ``pumpwake`` list while its Pump leads, and wakes the parked Pump."""

    def __init__(self, q: Queue, stop: threading.Event, timeout: float) -> None:
        # Its own connection for the blocking pop, made by its thread (a cluster client connects as it is
        # built: a node away then is an outage the thread rides out, not an error of the Pump's start).
        self.client: Any = None
        self.stop = stop
        # At most the park: an idle leader then sends one blocking pop a park (the client's socket
        # timeout is longer, see connection.new_client); close() cuts it short by disconnecting.
        self.timeout = timeout
        self.event = threading.Event()
        self.leading = threading.Event()  # only the leader pops: a follower would steal its tokens
        self.outage = Outage(log, f"pump {q.name}: waiting on pumpwake")

    def run(self, q: Queue) -> None:
        while not self.stop.is_set():
            if not self.leading.wait(1.0):
                continue
            try:
                client = self.client or self._connect()
                token = client.blpop([q.keys.pumpwake], timeout=self.timeout)
                if token and not self.leading.is_set():
                    client.rpush(q.keys.pumpwake, token[1])  # the lead moved on: hand it over
                elif token:
                    self.event.set()
            except Exception as exc:
                if self.stop.is_set():
                    return
                self.outage.failed(exc)
                self.stop.wait(random.uniform(0.5, 1.0))
            else:
                self.outage.ok()

    def _connect(self) -> Any:
        client = self.client = new_client(block=self.timeout)
        if self.stop.is_set():  # the Pump closed while this connected: it did not see this one
            disconnect(client)
        return client

    def disconnect(self) -> None:
        """Close its connection, cutting a blocking pop short."""
        if self.client is not None:
            try:
                disconnect(self.client)
            except Exception:  # the blocking pop of its thread may be reading this socket
                pass


def run_forever(queue_names: Sequence[str], *, rows: Rows | None = None,
                announce: Callable[[str], None] = log.info) -> None:
    """Run a Pump in the foreground until SIGTERM/SIGINT (``manage.py emq_pump``)."""
    pump = Pump(partitions(queue_names), rows=rows)
    for sig in (signal.SIGTERM, signal.SIGINT):
        relay(sig, pump.stop.set)  # not inside the handler: it would wait for the lock stop.wait holds
    pump.start()
    announce(f"pump {pump.id} running for {', '.join(queue_names)}")
    try:
        while not pump.stop.wait(3600):
            pass
    finally:
        pump.close()
