"""The worker's slots: threads that run plain jobs one after another and report each outcome.

A job stopped by its time limit or a cancel (``deadlines``) retires its thread: the watchdog
reports the outcome and a fresh thread takes the slot at once, while the old one, once the job's
code returns (if ever), leaves without taking more work.

Jobs wait in one ready queue, and a claim's batch wakes one idle thread, the one that slept
last (its stack and frames are still in the caches): a thread that takes a job while more are
ready wakes one more, unless a woken thread has yet to look (``waking``). Jobs that end at once
are all run by the first thread; jobs that block (releasing the GIL) or run long have a thread
each within a wake a job, as if each had been handed its own.

``close`` ends every idle thread (one sentinel each) and waits for them, so a worker that ran in
a test or a shell leaves no thread behind; a thread still inside a job (past the stop's grace,
or abandoned) is a daemon and ends with its job or the process.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Iterable

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
        self.ready: deque[Held | None] = deque()  # jobs no thread has taken yet (None: a thread's end)
        self.idle: list[threading.Lock] = []  # the held locks idle threads sleep on: a release wakes one
        self.waking = False  # a woken thread has yet to look at ready: it wakes the next if need be
        self.threads: list[threading.Thread] = []  # the live ones (a retired thread is no longer here)
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def submit(self, held: Held) -> None:
        self.submit_all((held,))

    def submit_all(self, helds: Iterable[Held]) -> None:
        """Queue a claim's jobs and wake one idle thread for them (it wakes more while more are ready)."""
        self.ready.extend(helds)
        self._wake()

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
        self.ready.extend([None] * len(live))
        while self.idle:
            self.idle.pop().release()
        for t in live:
            t.join(timeout)

    def _spawn(self) -> None:
        with self._lock:  # started and listed at once: close() joins only started threads, none after it
            if self._closed:
                return
            t = threading.Thread(target=self._run, name="emq-slot", daemon=True)
            t.start()
            self.threads.append(t)

    def _wake(self) -> None:
        """Wake the idle thread that slept last, unless a woken one has yet to look at ready."""
        if self.waking:
            return
        try:
            lock = self.idle.pop()
        except IndexError:
            return  # every thread is busy: each takes ready work when its job ends
        self.waking = True  # before the release: the woken thread clears it
        lock.release()

    def _take(self, lock: threading.Lock) -> Held | None:
        """The next ready job, sleeping on lock while there is none; wakes one more thread for the rest."""
        ready = self.ready
        while True:
            try:
                held = ready.popleft()
            except IndexError:
                self._sleep(lock)
                continue
            if ready and held is not None and not self.waking:  # _wake's first test, inline: a call a job less
                self._wake()
            return held

    def _sleep(self, lock: threading.Lock) -> None:
        self.idle.append(lock)
        if self.ready:  # queued between our look and our listing: its wake may have found no one
            try:
                self.idle.remove(lock)
                return
            except ValueError:
                pass  # listed and already taken: our release is on its way
        lock.acquire()
        self.waking = False

    def _run(self) -> None:
        me = threading.current_thread()
        interrupt = functools.partial(raise_in, me)  # one per thread, not per job
        serving: list[Held | None] = [None]  # the job this thread serves, for its leave(): one a thread, not a job
        leave = functools.partial(_leave, self.deadlines, serving)
        lock = threading.Lock()
        lock.acquire()  # held while awake: an idle thread blocks on it until a _wake releases it
        while (held := self._take(lock)) is not None:
            try:
                serving[0] = held
                self._serve(held, me, interrupt, leave)
            except BaseException:  # a second limit raised past the first: the watchdog reported it
                pass
            if held.stopped is not None:  # retired: a fresh thread already has this slot
                with self._lock:
                    if me in self.threads:
                        self.threads.remove(me)
                return

    def _serve(self, held: Held, me: threading.Thread, interrupt: Callable[[type[BaseException]], bool],
               leave: Callable[[], None]) -> None:
        """Run held's job; report its outcome unless a limit or a cancel stopped it first (``Deadlines.stop``
        marks it ``stopped``; once ``leave`` settled it, nothing does)."""
        if held.stopped is not None:
            return  # cancelled before it started: its outcome is reported, this thread is retired
        held.thread = me
        self.deadlines.enter(held, interrupt)
        try:
            outcome = runner.execute(held.queue.name, held.job, held.stop, leave, held)
        except BaseException as exc:  # a limit raised around the job's own handler
            outcome = runner.failed(held.job, exc)
            if held.running:  # leave() not reached
                self.deadlines.leave(held)
        if held.stopped is None:
            self.report(held, outcome)


def _leave(deadlines: Deadlines, serving: list[Held | None]) -> None:
    deadlines.leave(serving[0])  # type: ignore[arg-type]
