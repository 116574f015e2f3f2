"""The hand-off of a wake token: while the worker's loop parks, the parker that pops a token claims.

Waking the loop to claim costs a thread hop on every job that finds the worker idle: the parker
wakes, sets the loop's signal, and the loop wakes in turn, a delay ``make bench``'s latency phase
shows at its 99th percentile most (docs/reference/performance.md). So the parker claims itself,
on the loop's connection, and the loop sleeps on until an outcome wakes it.

The loop holds its *turn* (a lock) at all times but while it parks: a claim made here never
overlaps one of the loop's, and a parker that finds the turn taken, or the worker stopping, wakes
the loop instead, which claims on its next pass as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("emq.worker")


class Handoff:
    """The loop's turn, and the claims a parker makes for the parked loop."""

    def __init__(self, claim: Callable[[int], object], room: Callable[[], int], signal: threading.Event,
                 unpark: Callable[[], None]) -> None:
        self.claim = claim  # claims up to n jobs, as the loop's pass would (with no outcomes to send)
        self.room = room  # jobs the worker may claim now: its free slots, 0 once it stops
        self.signal = signal  # wakes the loop
        self.unpark = unpark  # the parkers stop popping tokens
        self.turn = threading.Lock()
        self.turn.acquire()  # the loop's from the start: no claim here before its first park
        self.claims = 0  # claims made here during the current park

    def park(self, timeout: float) -> bool:
        """The loop parks until its signal or timeout, lending its turn meanwhile; True unless the park
        ended by its timeout with no claim made here (the idle budget's quiet park)."""
        self.claims = 0
        self.turn.release()
        try:
            woken = self.signal.wait(timeout)
        finally:
            self.turn.acquire()
        return woken or self.claims > 0

    def token(self) -> None:
        """A parker popped a token while the loop parks: claim here, or wake the loop.

        A worker that the claim filled stops parking, as the loop does when it wakes: a token it
        popped then would be lost to the other workers, whom a burst's baton must reach.
        """
        if not self.turn.acquire(blocking=False):
            self.signal.set()  # the loop is awake, or waking: its next pass claims
            return
        try:
            if (n := self.room()) > 0:
                self.claim(n)
                self.claims += 1
                if self.room() <= 0:
                    self.unpark()
                return
        except Exception as exc:  # a server state or a refused call: the loop's pass sees to it
            log.debug("claim on a wake token failed; waking the loop", exc_info=exc)
        finally:
            self.turn.release()
        self.signal.set()  # stopping, or full: the loop sees to it
