"""The worker's slots: threads that run plain jobs one after another and report each outcome.

A job stopped by its time limit or a cancel (``deadlines``) retires its thread: the watchdog
reports the outcome and a fresh thread takes the slot at once, while the old one, once the job's
code returns (if ever), leaves without taking more work.

Jobs wait in one ready queue, and a claim's batch wakes one idle thread, the one that slept
last (its stack and frames are still in the caches): a thread that takes a job while more are
ready wakes one more, unless a woken thread has yet to look (``waking``). Jobs that end at once
are all run by the first thread; jobs that block (releasing the GIL) or run long have a thread
each within a wake a job, as if each had been handed its own.

A batch the worker's loop claimed (``watched``) wakes no more than that first thread: the loop
``nudge``s a helper (which wakes more, as above) when it finds jobs still ready, which it looks for
whenever it gets the GIL back (the first thread blocked, or ran past the switch interval) and at
least every HELPER_AFTER seconds (``patience``). A batch of jobs that end at once then costs one
thread's wake, not two or more: each wake is a futex call, a context switch and a GIL hand-off (a
drain of no-op jobs: about 1.7 us of the worker's CPU a job); jobs of a batch that block start at
most HELPER_AFTER later than their first.

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
HELPER_AFTER = 0.001  # seconds jobs of a watched batch may wait in ready before the loop nudges a helper


class Slots:
    """``size`` threads taking jobs from one queue; ``report`` gets each outcome."""

    def __init__(self, size: int, report: Report, deadlines: Deadlines) -> None:
        self.size = size
        self.report = report
        self.deadlines = deadlines
        self.ready: deque[Held | None] = deque()  # jobs no thread has taken yet (None: a thread's end)
        self.idle: list[threading.Lock] = []  # the held locks idle threads sleep on: a release wakes one
        self.waking = False  # a woken thread has yet to look at ready: it wakes the next if need be
        self.chain = True  # whether the woken thread wakes more while more are ready (False: the loop watches)
        self.threads: list[threading.Thread] = []  # the live ones (a retired thread is no longer here)
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def submit(self, held: Held) -> None:
        self.submit_all((held,))

    def submit_all(self, helds: Iterable[Held], watched: bool = False) -> None:
        """Queue a claim's jobs and wake one idle thread for them: it wakes more while more are ready,
        unless the caller watches the batch (``nudge``, ``patience``)."""
        self.ready.extend(helds)
        self._wake(chain=not watched)

    def nudge(self) -> None:
        """Jobs still ready: the thread that has them is blocked or busy, wake a helper (it wakes more).
        Nothing while a woken thread has yet to look: it takes them, and the loop looks again."""
        if self.ready and not self.waking:
            self._wake(chain=True)

    def patience(self, timeout: float) -> float:
        """How long the watching loop may wait before it looks at ready again (``nudge``)."""
        return min(timeout, HELPER_AFTER) if self.ready else timeout

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

    def _wake(self, chain: bool = True) -> None:
        """Wake the idle thread that slept last, unless a woken one has yet to look at ready."""
        if self.waking:
            self.chain = self.chain or chain  # the woken thread wakes more if any waker asked it to
            return
        try:
            lock = self.idle.pop()
        except IndexError:
            return  # every thread is busy: each takes ready work when its job ends
        self.waking, self.chain = True, chain  # before the release: the woken thread reads and clears them
        lock.release()

    def _take(self, lock: threading.Lock, chain: bool) -> tuple[Held | None, bool]:
        """The next ready job, sleeping on lock while there is none, and whether this thread wakes more:
        with chain, it wakes one more thread for the rest."""
        ready = self.ready
        while True:
            try:
                held = ready.popleft()
            except IndexError:
                chain = self._sleep(lock)
                continue
            if chain and ready and held is not None:
                self._wake()
            return held, chain

    def _sleep(self, lock: threading.Lock) -> bool:
        """Sleep until woken; whether to wake more (``chain``: the waker's word, True if no wake came)."""
        self.idle.append(lock)
        if self.ready:  # queued between our look and our listing: its wake may have found no one
            try:
                self.idle.remove(lock)
                return True
            except ValueError:
                pass  # listed and already taken: our release is on its way
        lock.acquire()
        self.waking = False  # first: a wake from now on wakes another thread, and sets chain for both
        return self.chain

    def _run(self) -> None:
        me = threading.current_thread()
        interrupt = functools.partial(raise_in, me)  # one per thread, not per job
        serving: list[Held | None] = [None]  # the job this thread serves, for its leave(): one a thread, not a job
        leave = functools.partial(_leave, self.deadlines, serving)
        lock = threading.Lock()
        lock.acquire()  # held while awake: an idle thread blocks on it until a _wake releases it
        chain = True
        while True:
            held, chain = self._take(lock, chain)
            if held is None:
                return
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
