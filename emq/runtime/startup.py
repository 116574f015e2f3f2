"""How emq_worker and emq_pump meet an unreachable server at start-up: they wait, saying so once.

A server that is away when a worker starts is the same passing condition as one that goes away
while it runs (the worker keeps its jobs and retries), and a fleet often starts before its
Valkey: so both commands log one line naming the server and how to stop, wait, and start once it
answers. ``EMQ_STARTUP_WAIT`` bounds the wait in seconds (0: fail at once with that line). A
configuration that no wait can mend (no EMQ_URL and no embedded server installed) fails at once.
"""

from __future__ import annotations

import faulthandler
import gc
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable

from ..core import config, embedded
from ..core.connection import get_client, guard
from ..errors import ServerUnavailable
from .stop_relay import MainWait, relay

log = logging.getLogger("emq.startup")
MAX_PAUSE = 5.0  # seconds between two tries at most


def wait_for_server(stop: threading.Event | None = None) -> bool:
    """True once the server answers; False when stopped first (SIGINT/SIGTERM); ServerUnavailable past the limit."""
    if not config.get("EMQ_URL") and not embedded.available():
        raise ServerUnavailable(embedded.MISSING)  # nothing to wait for: a package is missing
    if stop is not None:
        return _wait_for_server(stop)
    signals = MainWait()  # SIGTERM and SIGINT end it; the worker and the Pump install their own after
    try:
        return _wait_for_server(signals)
    finally:
        signals.close()


def _wait_for_server(stop: threading.Event | MainWait) -> bool:
    limit = config.get("EMQ_STARTUP_WAIT")
    deadline = None if limit is None else time.monotonic() + float(limit)
    pause, said = 0.1, False
    while True:
        try:
            with guard():
                get_client().ping()
        except ServerUnavailable as exc:
            if deadline is not None and time.monotonic() + pause > deadline:
                raise
            if not said:
                bound = "" if deadline is None else f" for up to {float(limit):g} s (EMQ_STARTUP_WAIT)"
                log.warning("%s Waiting for it%s; Ctrl-C stops.", exc, bound)
                said = True
        else:
            if said:
                log.info("the server answers now; starting")
            return True
        if stop.wait(pause):
            return False
        pause = min(pause * 2, MAX_PAUSE)


# True in a worker process that a supervisor forked (``supervisor``), which passes a stop on as SIGTERM
# and a second one as SIGINT. systemd's default KillMode signals every process of a unit, so such a
# process gets the unit's SIGTERM and its supervisor's: two that must not cut its grace short.
supervised = False


def on_stop_signals(stop: Callable[[], None]) -> None:
    """SIGTERM and SIGINT call stop (in the main thread only: elsewhere Python cannot install handlers).

    In a supervised worker process, SIGTERM asks for the graceful stop and a repeat changes nothing,
    and SIGINT (its supervisor's second stop) cuts the grace short, whatever came before it. stop runs
    on the relay's thread, never inside the handler (``stop_relay`` says why).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if not supervised:
        for sig in (signal.SIGINT, signal.SIGTERM):
            relay(sig, stop)
        return
    asked: list[bool] = []

    def graceful() -> None:
        if not asked:
            asked.append(True)
            stop()

    def hurried() -> None:
        graceful()
        stop()  # a second call: the grace is cut short

    relay(signal.SIGTERM, graceful)
    relay(signal.SIGINT, hurried)


def freeze_heap() -> None:
    """Put every object alive after start-up (Django, the job modules) out of the cyclic GC's reach.

    A full collection walks every tracked object, tens of thousands after a worker's start-up: a
    stall for every job starting meanwhile (docs/reference/performance.md). Start-up's objects live
    as long as the process, so walking them finds nothing; frozen, a collection walks only what came
    after (Instagram's "Dismissing Python Garbage Collection"). Before a fork (``--processes``) it also
    keeps the children's collections from writing to the pages they share with the supervisor.
    """
    gc.collect()  # start-up's garbage first: a frozen object is never freed
    gc.freeze()


# The signal that prints every thread's stack of a process of emq to its stderr, and lets it run on.
STACKS = signal.SIGUSR1


def stacks_on_signal() -> None:
    """``kill -USR1 <pid>`` prints the stack of each thread of this process (Sidekiq's TTIN, Python's
    faulthandler): where a worker that will not stop, or a job that will not end, is stuck. The supervisor
    sends it to a worker process before it kills one for outliving its grace. faulthandler writes from the
    signal handler itself, taking no lock, so a main thread deadlocked on one is still shown."""
    try:
        faulthandler.register(STACKS, file=sys.stderr, all_threads=True, chain=False)
    except (AttributeError, ValueError, OSError, RuntimeError):  # a stderr with no file descriptor: no stacks
        log.debug("no stacks on SIGUSR1: stderr has no file descriptor")

