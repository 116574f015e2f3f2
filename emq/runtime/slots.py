"""The worker's slots: threads that run plain jobs one after another and report each outcome.

A job stopped by its time limit or a cancel (``deadlines``) retires its thread: the watchdog
reports the outcome and a fresh thread takes the slot at once, while the old one, once the job's
code returns (if ever), leaves without taking more work.

``close`` ends every idle thread (one sentinel each) and waits for them, so a worker that ran in
a test or a shell leaves no thread behind; a thread still inside a job (past the stop's grace,
or abandoned) is a daemon and ends with its job or the process.
"""

from __future__ import annotations

import functools
import queue as stdqueue
import threading
from collections.abc import Callable

from ..core.records import Outcome
from . import runner
from .deadlines import Deadlines
from .held import Held
from .threadexc import raise_in

Report = Callable[[Held, Outcome], None]


class Slots:
    """``size`` threads taking jobs from one queue; ``report`` gets each outcome."""

    def __init__(self, size: int, report: Report, deadlines: Deadlines) -> None:
        self.size = size
        self.report = report
        self.deadlines = deadlines
        self.tasks: stdqueue.SimpleQueue[Held | None] = stdqueue.SimpleQueue()
        self.threads: list[threading.Thread] = []  # the live ones (a retired thread is no longer here)
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def submit(self, held: Held) -> None:
        self.tasks.put(held)

    def replace(self, held: Held) -> None:
        """A limit stopped held's job: retire its thread and start a fresh one for the slot."""
        with self._lock:
            if held.thread in self.threads:
                self.threads.remove(held.thread)
        self._spawn()

    def close(self, timeout: float = 1.0) -> None:
        """Let every live slot thread end once it is idle; wait up to timeout for them."""
        with self._lock:
            self._closed = True
            live = list(self.threads)
        for _ in live:
            self.tasks.put(None)
        for t in live:
            t.join(timeout)

    def _spawn(self) -> None:
        with self._lock:  # started and listed at once: close() joins only started threads, none after it
            if self._closed:
                return
            t = threading.Thread(target=self._run, name="emq-slot", daemon=True)
            t.start()
            self.threads.append(t)

    def _run(self) -> None:
        me = threading.current_thread()
        interrupt = functools.partial(raise_in, me)  # one per thread, not per job
        while (held := self.tasks.get()) is not None:
            try:
                self._serve(held, me, interrupt)
            except BaseException:  # a second limit raised past the first: the watchdog reported it
                pass
            if held.stopped is not None:  # retired: a fresh thread already has this slot
                with self._lock:
                    if me in self.threads:
                        self.threads.remove(me)
                return

    def _serve(self, held: Held, me: threading.Thread, interrupt: Callable[[type[BaseException]], bool]) -> None:
        if held.stopped is not None:
            return  # cancelled before it started: its outcome is reported, this thread is retired
        held.thread = me
        self.deadlines.enter(held, interrupt)
        mine: bool | None = None  # whether this thread reports the outcome (None: leave() not reached)

        def left() -> None:
            nonlocal mine
            mine = self.deadlines.leave(held)

        try:
            outcome = runner.execute(held.queue.name, held.job, held.stop, left, held)
        except BaseException as exc:  # a limit raised around the job's own handler
            outcome = runner.failed(held.job, exc)
            if mine is None:
                left()
        if mine:
            self.report(held, outcome)
