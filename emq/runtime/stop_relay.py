"""The stop signals' relay: SIGTERM and SIGINT acted on by a thread of their own, not inside the handler.

Python runs a signal handler on the main thread, between two bytecodes of whatever it was doing. The
worker's main thread is its loop, which holds its wake event's lock at every pass (``Event.clear``,
``Event.wait``); a handler that set that event tried to take the lock its own thread held, and the worker
hung for good (seen in CI: SIGTERM to a worker with three jobs running, and no "stopping:" line in 30 s).
So the handler only writes the signal's number to a pipe (a system call, no lock), and the relay thread
reads it and runs the action: a ``stop`` that takes what locks it likes.

The relay thread blocks the signals it relays, so that the kernel delivers them to the main thread
(a handler's byte on the supervisor's wake-up pipe must come with its handler on the thread that
selects on it). One relay a process: a fork's child has none of its parent's threads and makes its own.
A sleep of the main thread alone (the start-up's wait for the server and the supervisor's loop: the
supervisor forks and must stay one thread) needs no relay: ``MainWait`` selects on its handler's pipe.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import threading
from collections.abc import Callable

log = logging.getLogger("emq.worker")
STOPS = (signal.SIGTERM, signal.SIGINT)  # the signals that stop a process of emq
# Blocked in the relay thread: every signal a process of emq handles, so that none lands there (above).
BLOCKED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2)
_actions: dict[int, Callable[[], None]] = {}  # signal number -> what the relay runs for it
_write_end = -1  # the pipe the handler writes to (-1: none yet, and a write fails harmlessly)
_owner = 0  # the pid whose relay thread reads the pipe


def relay(sig: int, action: Callable[[], None]) -> None:
    """From now on, sig runs action on the relay thread (call it on the main thread: it installs a handler)."""
    _started()
    _actions[sig] = action
    signal.signal(sig, _post)


def _post(sig: int, _frame: object) -> None:
    """The handler: one byte, no lock."""
    try:
        os.write(_write_end, bytes([sig]))
    except OSError:  # full (BlockingIOError): a stop already waits there
        pass


def _started() -> None:
    global _write_end, _owner
    if _owner == os.getpid():
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    _write_end, _owner = write, os.getpid()
    thread = threading.Thread(target=_run, args=(read,), name="emq-stop-relay", daemon=True)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)  # a new thread starts with its creator's mask
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _run(read: int) -> None:
    while data := os.read(read, 64):
        for sig in data:
            action = _actions.get(sig)
            try:
                if action is not None:
                    action()
            except Exception:  # the next signal must still be heard
                log.exception("acting on signal %s failed", sig)


class MainWait:
    """A sleep of the main thread that signals end at once: their handler writes a byte to a pipe the sleep
    selects on. No thread (a process that forks stays one thread) and no lock in the handler. The start-up's
    wait for the server and the supervisor's loop sleep on one; ``stopped`` says whether a stop signal came,
    and note, if given, is called in the handler with each signal's number (it must take no lock)."""

    def __init__(self, sigs: tuple[int, ...] = STOPS, note: Callable[[int], None] | None = None) -> None:
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)
        self.stopped = False
        self._note = note
        for sig in sigs:
            signal.signal(sig, self._post)

    def _post(self, sig: int, _frame: object) -> None:
        if sig in STOPS:
            self.stopped = True
        if self._note is not None:
            self._note(sig)
        try:
            os.write(self._write, b"\0")
        except OSError:  # full: a byte already waits
            pass

    def sleep(self, timeout: float | None) -> None:
        """Until a signal comes or timeout seconds pass (None: no limit); the bytes are read, so that the next
        sleep waits for a signal of its own (a signal after the select and before the read: its handler ran)."""
        select.select([self._read], [], [], timeout)
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass

    def wait(self, timeout: float) -> bool:
        """True once a stop signal came (at once if it came before); False after timeout seconds without."""
        if not self.stopped:
            self.sleep(timeout)
        return self.stopped

    def close(self) -> None:
        """Close the pipe; a signal until the next handler is installed writes nowhere (-1 first: a closed
        descriptor's number may be reused, by a server connection say, before that)."""
        read, write = self._read, self._write
        self._read = self._write = -1
        os.close(read)
        os.close(write)
