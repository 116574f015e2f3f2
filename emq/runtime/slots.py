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

``resize`` (a concurrency an operator stored, ``runtime.tuning``) starts the threads it adds at once;
the threads it removes end as they next find no job ready (the idle ones at once): the worker claims
for the new size from then on (``Dispatch.room``), so the busy ones soon find none. No job waits for it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from ..core.records import Outcome
from . import runner
from .deadlines import Deadlines
from .held import Held
from .threadexc import raise_in

Report = Callable[[Held, Outcome], None]


class Slots:
    """``size`` threads taking jobs from one queue; ``report`` gets each outcome. Their jobs run under
    ``deadlines``, which come back here for a fresh thread when they stop one (``replace``).

    One job: the threads, past the class size bar because starting, waking, resizing and ending them all
    work on the one list of idle threads under one protocol (``_wake``, ``_sleep``, ``_retire``).
    """

    def __init__(self, size: int, report: Report, deadlines: Deadlines) -> None:
        self.size = size
        self.report = report
        self.deadlines = deadlines
        deadlines.replaces(self.replace)
        self.ready: deque[Held | None] = deque()  # jobs no thread has taken yet (None: a thread's end)
        self.idle: list[threading.Lock] = []  # the held locks idle threads sleep on: a release wakes one
        self.waking = False  # a woken thread has yet to look at ready: it wakes the next if need be
        self.threads: list[threading.Thread] = []  # the live ones (a retired thread is no longer here)
        self.retiring = 0  # threads to end as they go idle (a smaller size)
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

    def resize(self, size: int) -> None:
        """Run size threads from now on: more start at once, fewer end as they go idle (``_retire``)."""
        with self._lock:
            if self._closed:
                return
            self.size = size
            live = len(self.threads) - self.retiring  # the threads not told to end yet
            kept = min(self.retiring, max(size - live, 0))  # threads told to end that may stay after all
            self.retiring += max(live - size, 0) - kept
            spawn = max(size - live - kept, 0)
            fewer = max(live - size, 0)
        for _ in range(spawn):
            self._spawn()
        for _ in range(fewer):  # idle threads look again, and end
            try:
                self.idle.pop().release()
            except IndexError:
                break

    def replace(self, held: Held) -> None:
        """A limit stopped held's job: retire its thread and start a fresh one for the slot."""
        with self._lock:
            if held.thread in self.threads:
                self.threads.remove(held.thread)
        self._spawn()

    def close(self, timeout: float = 0.5) -> None:
        """Let every live slot thread end once it is idle; wait up to timeout for them all.

        One deadline for all, not timeout each: an idle thread ends within moments, and one still
        inside a job past the stop's grace (its lease released) will not end within any timeout, so
        a stop with 30 such jobs must not take 30 timeouts more (an orchestrator's own grace, 30 s
        under Kubernetes, would kill the process first).
        """
        with self._lock:
            self._closed = True
            live = list(self.threads)
        self.ready.extend([None] * len(live))
        while self.idle:
            self.idle.pop().release()
        deadline = time.monotonic() + timeout
        for t in live:
            t.join(max(deadline - time.monotonic(), 0.0))

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
                if self.retiring and self._retire():
                    return None
                self._sleep(lock)
                continue
            if ready and held is not None and not self.waking:  # _wake's first test, inline: a call a job less
                self._wake()
            return held

    def _retire(self) -> bool:
        """Whether this idle thread is one too many (a smaller size): it ends, leaving the list."""
        with self._lock:
            if self.retiring <= 0:
                return False
            self.retiring -= 1
            me = threading.current_thread()
            if me in self.threads:
                self.threads.remove(me)
            return True

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
