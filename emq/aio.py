"""One event loop thread per worker: ``async def`` jobs run there side by side, holding no slot thread.

Limit: a coroutine that blocks (sync I/O, a long computation) stalls every other coroutine of
the loop; such work belongs in a plain ``def`` job, which gets a thread of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any


class LoopThread:
    """An event loop in a daemon thread, started on first use, that runs submitted coroutines."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    def submit(self, coro: Coroutine[Any, Any, Any], done: Callable[[Any], None]) -> None:
        """Schedule coro on the loop; done(result) is called on the loop thread when it ends."""
        if self.loop is None:
            self._start()
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        future.add_done_callback(lambda f: done(f.result()))

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
