"""A running worker's settings: what it started with and what operators stored for it since
(``emq.core.overrides``). The heartbeat's thread posts what the server holds; the worker's loop takes the
changes between two passes (``Worker._retune``), so every part it changes is the loop's alone meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.overrides import Override


@dataclass(frozen=True)
class Change:
    """What to change now (None: that setting stays), and the stored selectors it comes from."""

    concurrency: int | None
    queues: tuple[str, ...] | None
    paused: bool | None
    sources: tuple[str, ...]


class Tuning:
    """The settings in effect (``concurrency``, ``queues``, ``paused``) and the last ones posted."""

    def __init__(self, concurrency: int, queues: Sequence[str], signal: threading.Event) -> None:
        self.started = (concurrency, tuple(queues))  # the command line's, which a cleared setting returns to
        self.concurrency, self.queues, self.paused = concurrency, tuple(queues), False
        self.sources: tuple[str, ...] = ()  # the selectors of the stored settings in effect
        self.signal = signal  # wakes the worker's loop
        self.pending = False  # a posted setting differs from those in effect: the loop takes it next pass
        self._posted: Override | None = None
        self._lock = threading.Lock()

    def post(self, stored: Override) -> None:
        """The settings the server holds for this worker now (the heartbeat's thread)."""
        with self._lock:
            self._posted = stored
            if self._wanted(stored) != (self.concurrency, self.queues, self.paused):
                self.pending = True
                self.signal.set()

    def take(self) -> Change | None:
        """The changes posted since the last take (the loop's thread), now in effect here; None: none."""
        with self._lock:
            posted, self._posted, self.pending = self._posted, None, False
        if posted is None:
            return None
        concurrency, queues, paused = self._wanted(posted)
        change = Change(concurrency if concurrency != self.concurrency else None,
                        queues if queues != self.queues else None,
                        paused if paused != self.paused else None, posted.sources)
        self.concurrency, self.queues, self.paused, self.sources = concurrency, queues, paused, posted.sources
        if change.concurrency is None and change.queues is None and change.paused is None:
            return None
        return change

    def _wanted(self, stored: Override) -> tuple[int, tuple[str, ...], bool]:
        return stored.concurrency or self.started[0], stored.queues or self.started[1], bool(stored.paused)
