"""The Metronome: a worker with nothing to claim parks on its queues' wake lists.

Mint, promotion, release and reclaim push one token; a blocking pop returns it at once, so
an idle worker sends no polling traffic. Each queue lives in its own cluster slot, so there
is one parker thread a queue (no multi-key blocking call across slots); a token popped while
the worker parks claims for it at once (``handoff``), else it wakes the worker loop through a
shared Event. A claim that leaves work behind pushes a token again (the baton), so a burst
spreads over every parked worker; a token a parker pops after its worker stopped parking is
pushed back for the next one. The pop's timeout only bounds how
long a parker stays blocked: the worker loop times its own duties (renewals, heartbeat).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..core.connection import disconnect, new_client
from ..core.engine import Queue
from .handoff import Handoff
from .outage import Outage

log = logging.getLogger("emq.metronome")


class Metronome:
    """Parker threads, one per queue, that block only while the worker asks them to."""

    def __init__(self, queues: Sequence[Queue], signal: threading.Event, timeout: float = 10.0,
                 claim: Callable[[int], object] | None = None, room: Callable[[], int] | None = None) -> None:
        self.queues = list(queues)
        self.signal = signal
        # With claim and room (the worker's), a token popped while parking claims at once (handoff).
        self.handoff = Handoff(claim, room, signal, self.unpark) if claim and room else None
        self.timeout = timeout
        self.parking = threading.Event()
        self.closed = False
        # Each parker's own connection, made by its thread (a cluster client connects as it is built: a node
        # away at that moment is an outage the thread rides out, not an error of the worker's start).
        self.clients: list[Any] = [None] * len(self.queues)
        self.threads = [
            threading.Thread(target=self._park_loop, args=(i, q), name=f"emq-park-{q.name}", daemon=True)
            for i, q in enumerate(self.queues)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def park(self) -> None:
        """Let the parkers block: the worker found nothing to claim."""
        self.parking.set()

    def unpark(self) -> None:
        self.parking.clear()

    def wait(self, timeout: float) -> bool:
        """Wait while parked for the signal (``Handoff.park``: whether the park was not quiet)."""
        return self.handoff.park(timeout) if self.handoff else self.signal.wait(timeout)

    def close(self) -> None:
        """Stop the parkers, cutting any blocking pop short by closing its connection."""
        self.closed = True
        self.parking.set()
        for c in self.clients:
            if c is None:
                continue
            try:
                disconnect(c)
            except Exception:  # closing a socket another thread reads may raise; it is closed anyway
                pass
        for t in self.threads:
            if t.is_alive():
                t.join(timeout=2)

    def _park_loop(self, i: int, q: Queue) -> None:
        outage = Outage(log, f"parking on {q.name}")
        while not self.closed:
            self.parking.wait()
            if self.closed:
                return
            try:
                client = self.clients[i] or self._connect(i)
                token = client.blpop([q.keys.wake], timeout=self.timeout)
            except Exception as exc:
                if self.closed:
                    return
                outage.failed(exc)  # logged once a state; the worker's loop retries its claims itself
                self.signal.wait(random.uniform(0.5, 1.0))
                continue
            outage.ok()
            if not token:
                continue
            if self.closed:
                self.signal.set()
            elif self.parking.is_set():
                (self.handoff.token if self.handoff else self.signal.set)()
            else:
                self._pass_on(q, token[1])

    def _connect(self, i: int) -> Any:
        client = self.clients[i] = new_client(block=self.timeout)
        if self.closed:  # close() ran while it connected: it did not see this one
            disconnect(client)
        return client

    def _pass_on(self, q: Queue, token: str) -> None:
        """Put back a token popped after the worker stopped parking, so a parked worker gets it.

        The pop began while this worker was idle, but it has since claimed and may be full:
        keeping the token would break the chain that spreads a burst over all idle workers.
        Pushed on the shared client: a stopping worker closes the parker's own connection (to cut
        its pop short), and the token must still reach the next worker.
        """
        try:
            q.client.lpush(q.keys.wake, token)
        except Exception as exc:  # the worker still claims on its next pass; only the baton is late
            log.warning("passing a wake token on in %s failed: %s", q.name, exc)
