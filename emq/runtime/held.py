"""A job this worker holds: its queue, its claim, when it started, how it runs, and how it ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.engine import Queue
from ..core.records import Claimed
from ..jobs import Flag

Interrupt = Callable[[type[BaseException]], None]


def _no_renewer() -> None:
    """Progress of a job no renewer holds yet: nothing to wake."""


@dataclass(eq=False, slots=True)
class Held:
    """A claimed job while it runs here; ``started`` is monotonic.

    Its outcome is reported once: by its code when it returns, or by the watchdog when a time
    limit or a cancel stopped it first (``settled``, decided under ``lock``).
    """

    queue: Queue
    job: Claimed
    started: float = field(default_factory=time.monotonic)
    is_async: bool = False
    stop: Flag = field(default_factory=Flag)  # the job's ctx.cancelled
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    running: bool = False  # its code runs (between Deadlines.enter and leave)
    settled: bool = False  # its outcome was reported
    stopped: type[BaseException] | None = None  # what stopped it before it returned (JobTimeout, Cancelled)
    interrupt: Interrupt | None = None  # raises an exception inside its code (set at enter)
    interrupted: bool = False  # interrupt was called: leave() must drop what has not arrived
    thread: threading.Thread | None = None  # the slot thread running a plain job
    # ctx.progress(): the latest (fraction, note), whether the renewer has yet to send it, and what wakes it.
    progress: tuple[float, str] | None = None
    progress_dirty: bool = False
    nudge: Callable[[], None] = _no_renewer
