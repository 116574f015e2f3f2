"""Outcomes on their way to the server: reported by job threads, sent by the worker's loop.

An outcome the server has not accepted (it was unreachable) stays here and is offered again on
the next pass, so an outage loses no result; the fencing token makes a late one harmless.
"""

from __future__ import annotations

import threading
from collections import deque

from ..core.records import Outcome
from .held import Held

Item = tuple[Held, Outcome]


class Outbox:
    """A thread-safe inbox of fresh outcomes plus the ones an outage sent back; ``signal`` wakes the loop."""

    def __init__(self, signal: threading.Event) -> None:
        self.signal = signal
        self._arrived: deque[Item] = deque()  # append and popleft are atomic: no lock between threads
        self._pending: list[Item] = []

    def put(self, held: Held, outcome: Outcome) -> None:
        """Called from a slot thread, the event loop or the watchdog when a job ended: wakes the loop."""
        self._arrived.append((held, outcome))
        if not self.signal.is_set():  # put first: the loop clears a set signal before it reads the outbox
            self.signal.set()

    def arrived(self) -> list[Item]:
        """Every outcome reported since the last call (the loop counts these as no longer running)."""
        arrived = self._arrived
        return [arrived.popleft() for _ in range(len(arrived))]  # one reported meanwhile waits for the next call

    def take_pending(self) -> list[Item]:
        pending, self._pending = self._pending, []
        return pending

    def keep(self, items: list[Item], wake: bool = False) -> None:
        """Offer these again on the next pass (the server did not accept them); wake: make that pass now."""
        self._pending.extend(items)
        if wake:
            self.signal.set()

    def __len__(self) -> int:
        return len(self._pending)
