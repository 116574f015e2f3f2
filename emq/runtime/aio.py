"""One event loop thread per worker: ``async def`` jobs run there side by side, holding no slot thread.

Limit: a coroutine that blocks (sync I/O, a long computation) stalls every other coroutine of
the loop; such work belongs in a plain ``def`` job, which gets a thread of its own. Its time
limit still ends its attempt on time (the watchdog reports it), but its code stops only when
the loop is free again.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Generator
from typing import Any


class Interruptible:
    """Await a job's coroutine so that emq can raise its own exception at the await the job waits in.

    ``interrupt(JobTimeout)`` cancels the task (asyncio cancellation wakes it wherever it waits)
    and turns that CancelledError into the given exception inside the job's coroutine, so an
    ``async def`` job sees ``JobTimeout``, ``SoftTimeLimit`` or ``Cancelled`` as a plain one does.
    """

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.task: asyncio.Task | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pending: BaseException | None = None
        self.done = False

    def interrupt_threadsafe(self, kind: type[BaseException]) -> None:
        """From any thread: raise kind inside the job at its next await (nothing once it ended)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._interrupt, kind)

    def _interrupt(self, kind: type[BaseException]) -> None:
        if self.done or self.task is None:
            return
        self.pending = kind()
        self.task.cancel()

    def __await__(self) -> Generator[Any, Any, Any]:
        self.task, self.loop = asyncio.current_task(), asyncio.get_running_loop()
        value: Any = None
        error: BaseException | None = None
        try:
            while True:
                try:
                    step = self.coro.send(value) if error is None else self.coro.throw(error)
                except StopIteration as stop:
                    return stop.value
                value, error = None, None
                try:
                    value = yield step
                except asyncio.CancelledError as exc:
                    error = self._instead(exc)
                except BaseException as exc:  # thrown in by the task: pass it on to the job
                    error = exc
        finally:
            self.done = True

    def _instead(self, exc: asyncio.CancelledError) -> BaseException:
        """Our own cancellation becomes the pending exception; anyone else's stays a CancelledError."""
        if self.pending is None:
            return exc
        pending, self.pending = self.pending, None
        self.task.uncancel()
        return pending


class LoopThread:
    """An event loop in a daemon thread, started on first use, that runs submitted coroutines."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Schedule coro on the loop; it reports its own outcome."""
        if self.loop is None:
            self._start()
        asyncio.run_coroutine_threadsafe(coro, self.loop)

    def _start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="emq-async", daemon=True)
        self.thread.start()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the loop (coroutines still running are abandoned: their leases come back by sweep)."""
        if self.loop is None:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()
        self.loop = None
