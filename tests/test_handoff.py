"""The hand-off of a wake token: a parker claims for the parked loop, or wakes it when it cannot."""

from __future__ import annotations

import threading

import pytest

from emq.runtime.handoff import Handoff
from tests.procs import wait_for


class Loop:
    """What the worker lends a Handoff: a claim that records its sizes, its free slots, its signal."""

    def __init__(self, free: int = 3, fills: bool = False, fails: bool = False) -> None:
        self.free, self.fills, self.fails = free, fills, fails
        self.claimed: list[int] = []
        self.unparked = 0
        self.signal = threading.Event()
        self.handoff = Handoff(self.claim, lambda: self.free, self.signal, self.unpark)

    def claim(self, n: int) -> None:
        if self.fails:
            raise ConnectionError("server away")
        self.claimed.append(n)
        if self.fills:
            self.free = 0

    def unpark(self) -> None:
        self.unparked += 1

    def parked(self, timeout: float = 5.0) -> tuple[threading.Thread, list[bool]]:
        """Park the loop in a thread, as the worker's pass does; the list gets what the park returned."""
        ended: list[bool] = []
        t = threading.Thread(target=lambda: ended.append(self.handoff.park(timeout)), daemon=True)
        t.start()
        wait_for(lambda: not self.handoff.turn.locked(), timeout=5, what="the loop lent its turn")
        return t, ended


def test_a_token_while_the_loop_parks_claims_the_free_slots_and_leaves_the_loop_asleep():
    loop = Loop(free=3)
    t, ended = loop.parked(timeout=2.0)  # long enough that the token comes while it parks
    loop.handoff.token()
    assert loop.claimed == [3] and not loop.signal.is_set() and loop.unparked == 0
    t.join(5)
    assert ended == [True]  # not a quiet park: the idle budget must not skip the next claim


def test_a_token_while_the_loop_is_awake_wakes_it_and_claims_nothing():
    loop = Loop()
    loop.handoff.token()  # the loop holds its turn from the start until it parks
    assert loop.claimed == [] and loop.signal.is_set()


@pytest.mark.parametrize("case", ["stopping", "fails"])
def test_a_parker_that_cannot_claim_wakes_the_loop(case):
    loop = Loop(free=0) if case == "stopping" else Loop(fails=True)
    t, ended = loop.parked()
    loop.handoff.token()
    t.join(5)
    assert loop.claimed == [] and ended == [True]
    assert not loop.handoff.turn.acquire(blocking=False)  # the loop took its turn back


def test_a_claim_that_fills_the_worker_stops_the_parkers():
    """Tokens popped by a full worker would be lost to the others: the burst's baton must reach them."""
    loop = Loop(free=2, fills=True)
    t, _ = loop.parked(timeout=2.0)
    loop.handoff.token()
    assert loop.claimed == [2] and loop.unparked == 1 and not loop.signal.is_set()
    t.join(5)


def test_a_park_that_ends_by_its_timeout_with_no_claim_is_quiet():
    loop = Loop()
    t, ended = loop.parked(timeout=0.05)
    t.join(5)
    assert ended == [False]
