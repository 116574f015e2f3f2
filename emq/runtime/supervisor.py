"""``emq_worker``: worker processes under one supervisor that keeps them up (``--processes N``; one by default).

Limit: one machine. Each child is a fork of the supervisor after Django is set up (so it
starts in milliseconds) and runs its own Worker with its own thread pool and connections.
A child that dies (crash, OOM kill, ``kill -9``) or drains to shed stuck job threads
(``exits.RECYCLE``) is forked again, with a backoff when it keeps dying at once; a child that
exits 0 (a burst worker that drained) is done, and one that finds a setting wrong as it starts
(``exits.CONFIG``) stops them all: every restart would fail the same, and the command exits 1.

SIGTERM or SIGINT to the supervisor is passed on to every child: the first as SIGTERM, which starts
their graceful stop (running jobs get the grace, then are released), a second as SIGINT, which cuts
their grace short. A child takes a repeated SIGTERM as the same stop (``startup.on_stop_signals``):
systemd signals every process of its unit, the children too. A child still there STOP_MARGIN after
its grace is asked for its threads' stacks (they go to the log) and killed, and the supervisor exits
``exits.UNCLEAN`` (its jobs come back through the sweep). The children live in their own process
group, so a terminal's Ctrl-C reaches them only through the supervisor, and they get SIGTERM
themselves if the supervisor is killed.

The supervisor sleeps in one ``select`` on a pipe that the signal handlers write to
(``stop_relay.MainWait``, as the start-up's wait for the server): a child's death (SIGCHLD), a stop
signal or its next deadline (a restart after its backoff, a stop's kill) wakes it; it never polls.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import signal as signals
import time
from collections.abc import Callable

from ..core import connection
from ..errors import ConfigurationError
from . import exits, startup
from .stop_relay import STOPS, MainWait

log = logging.getLogger("emq.supervisor")
QUICK_DEATH = 2.0  # seconds: a child that dies sooner than this is restarted with a backoff
MAX_BACKOFF = 10.0
# Seconds a stopping child gets past its grace: releasing its leases and closing its threads take
# about one (``Worker.run``); past this it is stuck, and killed.
STOP_MARGIN = 10.0
# Seconds between asking a late child for its stacks (``startup.STACKS``) and killing it: they are written
# from its signal handler as soon as the kernel delivers the signal, in well under a second.
STACKS_WAIT = 1.0
PR_SET_PDEATHSIG = 1


class Supervisor:
    """Fork ``processes`` children that each run ``target`` (returns an exit code); keep them up.
    ``grace`` is the children's stop grace, in seconds (the kill after it: STOP_MARGIN).

    One job: keeping the children up, past the class size bar because forking, reaping, restarting with
    a backoff and passing stop signals on all read and write the same table of children and their
    slots, from one select loop; split up, each part would reach into that table.
    """

    def __init__(self, target: Callable[[], int], processes: int, grace: float = 30.0) -> None:
        if processes < 1:
            raise ValueError(f"processes must be >= 1, not {processes}")
        self.target = target
        self.processes = processes
        self.grace = grace
        self.children: dict[int, int] = {}  # pid -> slot
        self.started: dict[int, float] = {}  # slot -> monotonic start
        self.failures: dict[int, int] = {}  # slot -> quick deaths in a row
        self.due: dict[int, float] = {}  # slot -> monotonic time its restart is due (after a backoff)
        self.asked = self.passed = 0  # stop signals received, and passed on to the children
        self.kill_at = math.inf  # monotonic time a stopping child is asked for its stacks, then killed
        self.dumped = False  # the late children were asked for their stacks (``_kill_late``)
        self.code = exits.STOPPED
        self.pid = os.getpid()
        self._signals: MainWait | None = None  # what the loop sleeps on (``_listen``)

    @property
    def stopping(self) -> bool:
        return self.asked > 0

    def run(self) -> int:
        """Supervise until every child has exited for good; returns the exit code (``exits``)."""
        self._listen()
        try:
            for slot in range(self.processes):
                self._spawn(slot)
            noun = "worker process" if self.processes == 1 else "worker processes"
            log.info("supervisor %s up: %s %s (restarted if they die)", self.pid, self.processes, noun)
            while self.children or (self.due and not self.stopping):
                self._wait()
                self._pass_stops()
                self._reap()
                self._restart_due()
                self._kill_late()
        finally:
            self._unlisten()
        log.info("supervisor %s stopped", self.pid)
        return self.code

    def stop(self) -> None:
        """Stop the children (from a signal handler: the loop passes it on); a second call cuts their grace short."""
        self.asked += 1

    def _pass_stops(self) -> None:
        """Pass each stop asked on to the children (the first as SIGTERM, the next as SIGINT: ``startup``),
        and set when they are killed if still there."""
        while self.passed < self.asked:
            self.passed += 1
            margin = self.grace + STOP_MARGIN if self.passed == 1 else STOP_MARGIN
            self.kill_at = min(self.kill_at, time.monotonic() + margin)
            self.due.clear()  # no restart after a stop
            self._signal_all(signals.SIGTERM if self.passed == 1 else signals.SIGINT)

    def _reap(self) -> None:
        """Collect the children that ended (only ours: a pid of someone else's is never waited for)."""
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                self._ended(self.children.pop(pid), pid, os.waitstatus_to_exitcode(status))

    def _ended(self, slot: int, pid: int, code: int) -> None:
        if self.stopping:
            if code not in (exits.STOPPED, exits.RECYCLE, exits.CONFIG):
                log.error("worker process %s ended with %s while stopping", pid, exits.describe(code))
                self.code = exits.UNCLEAN
            return
        if code == exits.STOPPED:  # a burst worker that drained
            return
        if code == exits.CONFIG:
            log.error("worker process %s cannot start (said above); not restarted: stopping", pid)
            self.stop()
            self.code = exits.FAILED
            return
        lived = time.monotonic() - self.started.get(slot, 0.0)
        self.failures[slot] = self.failures.get(slot, 0) + 1 if lived < QUICK_DEATH else 0
        delay = min(0.1 * 2 ** self.failures[slot], MAX_BACKOFF) if self.failures[slot] else 0.0
        log.warning("worker process %s died (%s) after %.1fs; restarting in %.1fs", pid, exits.describe(code),
                    lived, delay)
        self.due[slot] = time.monotonic() + delay

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot, at in list(self.due.items()):
            if at <= now and not self.stopping:
                del self.due[slot]
                self._spawn(slot)

    def _kill_late(self) -> None:
        """Kill the children still there past their grace and STOP_MARGIN: first their stacks, so the log
        says where each was stuck (``startup.stacks_on_signal``), then SIGKILL STACKS_WAIT later."""
        if not self.children or time.monotonic() < self.kill_at:
            return
        if not self.dumped:
            log.error("worker process(es) %s still running %gs after the stop's grace: killed; their jobs return "
                      "when their leases expire (the stack of each thread follows)", sorted(self.children),
                      STOP_MARGIN)
            self._signal_all(startup.STACKS)
            self.dumped, self.kill_at = True, time.monotonic() + STACKS_WAIT
            return
        self._signal_all(signals.SIGKILL)
        self.code, self.kill_at = exits.UNCLEAN, math.inf

    def _signal_all(self, sig: int) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _wait(self) -> None:
        """Sleep until a signal (a child's death, a stop) or the next deadline."""
        if self.passed < self.asked:
            return  # a stop came while the loop was busy: pass it on first
        at = min([self.kill_at, *self.due.values()])
        timeout = None if at == math.inf else max(at - time.monotonic(), 0.0)
        assert self._signals is not None
        self._signals.sleep(timeout)

    def _listen(self) -> None:
        """Have SIGCHLD, SIGTERM and SIGINT wake the loop (the stops are counted, and acted on there)."""
        self._signals = MainWait((signals.SIGCHLD, *STOPS), note=self._signalled)

    def _signalled(self, sig: int) -> None:
        """In the handler: a stop is counted (the loop passes it on); a child's death only wakes the loop."""
        if sig in STOPS:
            self.stop()

    def _unlisten(self) -> None:
        signals.signal(signals.SIGCHLD, signals.SIG_DFL)
        self._close_signals()

    def _close_signals(self) -> None:
        if self._signals is not None:
            self._signals.close()
            self._signals = None

    def _spawn(self, slot: int) -> None:
        pid = os.fork()
        if pid:
            self.children[pid] = slot
            self.started[slot] = time.monotonic()
            return
        code = exits.FAILED
        try:
            self._become_child()
            code = self.target()
        except ConfigurationError as exc:  # a setting only the worker reads (EMQ_RATE_LIMITS...): said once
            log.error("%s", exc)
            code = exits.CONFIG
        except BaseException:
            log.exception("worker process %s failed", os.getpid())
        finally:
            logging.shutdown()
            os._exit(code)

    def _become_child(self) -> None:
        """Reset what the fork copied: signal handlers and the wake-up pipe, the process group, cached clients."""
        for sig in (*STOPS, signals.SIGCHLD):
            signals.signal(sig, signals.SIG_DFL)
        self._close_signals()
        os.setpgid(0, 0)
        startup.supervised = True
        die_with_parent()
        if os.getppid() != self.pid:  # the supervisor died before the line above took effect
            os._exit(exits.FAILED)
        connection.forget()  # never close: the sockets are the supervisor's too


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when the supervisor dies (best effort elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signals.SIGTERM)
    except (OSError, AttributeError):
        pass
