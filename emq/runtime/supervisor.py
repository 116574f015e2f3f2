"""``emq_worker --processes N``: N worker processes under one supervisor.

Limit: one machine. Each child is a fork of the supervisor after Django is set up (so it
starts in milliseconds) and runs its own Worker with its own thread pool and connections.
A child that dies (crash, OOM kill, ``kill -9``) is forked again, with a backoff when it
keeps dying at once; a child that exits 0 (a burst worker that drained) is done. SIGTERM or
SIGINT to the supervisor is passed on once to every child (a second one cuts their grace
short); the children live in their own process group so a terminal's Ctrl-C reaches them
only through the supervisor, and they get SIGTERM themselves if the supervisor is killed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal as signals
import time
from collections.abc import Callable

from ..core import connection

log = logging.getLogger("emq.supervisor")
QUICK_DEATH = 2.0  # seconds: a child that dies sooner than this is restarted with a backoff
MAX_BACKOFF = 10.0
PR_SET_PDEATHSIG = 1


class Supervisor:
    """Fork ``processes`` children that each run ``target`` (returns an exit code); keep them up."""

    def __init__(self, target: Callable[[], int], processes: int) -> None:
        if processes < 1:
            raise ValueError(f"processes must be >= 1, not {processes}")
        self.target = target
        self.processes = processes
        self.children: dict[int, int] = {}  # pid -> slot
        self.started: dict[int, float] = {}  # slot -> monotonic start
        self.failures: dict[int, int] = {}  # slot -> quick deaths in a row
        self.stopping = False
        self.pid = os.getpid()

    def run(self) -> int:
        """Supervise until every child has exited for good; returns the exit code."""
        self._install_signals()
        for slot in range(self.processes):
            self._spawn(slot)
        log.info("supervisor %s up: %s worker processes", self.pid, self.processes)
        while self.children:
            pid, status = os.waitpid(-1, 0)  # PEP 475: retried after a signal handler runs
            slot = self.children.pop(pid, None)
            if slot is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            if self.stopping or code == 0:  # stopped, or a burst worker that drained
                continue
            self._restart(slot, pid, code)
        log.info("supervisor %s stopped", self.pid)
        return 0

    def stop(self) -> None:
        """Pass SIGTERM on to every child; the first stop lets them finish within their grace."""
        self.stopping = True
        for pid in list(self.children):
            try:
                os.kill(pid, signals.SIGTERM)
            except ProcessLookupError:
                pass

    def _install_signals(self) -> None:
        for sig in (signals.SIGTERM, signals.SIGINT):
            signals.signal(sig, lambda *_: self.stop())

    def _restart(self, slot: int, pid: int, code: int) -> None:
        lived = time.monotonic() - self.started.get(slot, 0.0)
        self.failures[slot] = self.failures.get(slot, 0) + 1 if lived < QUICK_DEATH else 0
        delay = min(0.1 * 2 ** self.failures[slot], MAX_BACKOFF) if self.failures[slot] else 0.0
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        log.warning("worker process %s died (%s) after %.1fs; restarting in %.1fs", pid, how, lived, delay)
        deadline = time.monotonic() + delay
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, deadline - time.monotonic()))
        if not self.stopping:
            self._spawn(slot)

    def _spawn(self, slot: int) -> None:
        pid = os.fork()
        if pid:
            self.children[pid] = slot
            self.started[slot] = time.monotonic()
            return
        code = 1
        try:
            self._become_child()
            code = self.target()
        except BaseException:
            log.exception("worker process %s failed", os.getpid())
        finally:
            logging.shutdown()
            os._exit(code)

    def _become_child(self) -> None:
        """Reset what the fork copied: signal handlers, the process group, cached clients."""
        for sig in (signals.SIGTERM, signals.SIGINT):
            signals.signal(sig, signals.SIG_DFL)
        os.setpgid(0, 0)
        die_with_parent()
        if os.getppid() != self.pid:  # the supervisor died before the line above took effect
            os._exit(1)
        connection.forget()  # never close: the sockets are the supervisor's too


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when the supervisor dies (best effort elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signals.SIGTERM)
    except (OSError, AttributeError):
        pass
