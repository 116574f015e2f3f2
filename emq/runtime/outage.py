"""A server state seen from one loop: logged once when it starts and once when it ends, waited out
with jittered backoff (the server is full, loading, read-only, away...; see ``emq.core.faults``).

A worker, its renewers and parkers, and each Pump thread keep one each: a 30 s outage is two log
lines per loop, not one per retry, and many workers coming back do not retry in step. A server at
its memory limit flaps (a call refused, the next one let through as memory dips): the same state
coming back within FLAP seconds of its end is logged at DEBUG, with its end, not as a new outage.
"""

from __future__ import annotations

import logging
import random
import time

FLAP = 10.0  # seconds: the same state again this soon after its end is the same outage, flapping

def backoff(failures: int, base: float = 0.2, cap: float = 5.0) -> float:
    """Seconds to wait after the n-th failure in a row: exponential, capped, jittered to 50-100%."""
    return min(cap, base * 2 ** max(failures - 1, 0)) * random.uniform(0.5, 1.0)


def state_of(exc: BaseException) -> str:
    """The state an error reports (``ServerUnavailable.state``), else its type's name."""
    return getattr(exc, "state", None) or type(exc).__name__


class Outage:
    """One loop's view of the server: ``failed(exc)`` on each error, ``ok()`` on each success."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what
        self.state: str | None = None
        self.since = 0.0
        self.failures = 0
        self.flapping = False  # the current state came back within FLAP s of its end: said at DEBUG
        self.last: tuple[str | None, float] = (None, 0.0)  # the state that ended last, and when

    def failed(self, exc: BaseException, holding: str = "") -> float:
        """Note a failure; log it when the state changed. Returns the seconds to wait before retrying."""
        self.failures += 1
        state = state_of(exc)
        if state != self.state:
            now = time.monotonic()
            if self.state is None:
                self.since = now
            self.flapping = self.last[0] == state and now - self.last[1] < FLAP
            self.state = state
            self.log.log(logging.DEBUG if self.flapping else logging.WARNING,
                         "%s: server %s, retrying with backoff%s: %s", self.what, state, holding, exc)
        return backoff(self.failures)

    def ok(self, resumed: str = "") -> None:
        """Note a success; log the end of the outage once."""
        if self.state is not None:
            now = time.monotonic()
            self.log.log(logging.DEBUG if self.flapping else logging.WARNING, "%s: server back after %.1f s (%s)%s",
                         self.what, now - self.since, self.state, resumed)
            self.last, self.state = (self.state, now), None
        self.failures = 0
