"""Run one claimed job in-process and turn how it ended into an Outcome."""

from __future__ import annotations

import asyncio
import inspect
import random
import traceback
from dataclasses import dataclass
from typing import Any

from .encoding import dumps
from .engine import Queue
from .jobs import lookup
from .records import Claimed, Outcome


@dataclass(frozen=True)
class JobContext:
    """What a ``takes_context`` job receives first: who it is and a handle on its own lease."""

    job_id: str
    queue: str
    attempt: int
    token: int
    lease_ms: int

    def extend_lock(self, ms: int | None = None) -> bool:
        """Renew this job's lease for ms (default: its lease length); False once it is lost."""
        return Queue(self.queue).extend_lock(self.job_id, self.token, ms or self.lease_ms)


def backoff_ms(attempt: int, base: float, cap: float) -> int:
    """Exponential backoff with full jitter, capped: uniform(0, min(cap, base * 2**(attempt-1)))."""
    ceiling = min(cap, base * 2 ** max(attempt - 1, 0))
    return int(random.uniform(0, ceiling) * 1000)


def error_text(exc: BaseException) -> str:
    """The exception line first (``module.Type: message``), then the traceback."""
    kind = type(exc)
    path = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    head = f"{path}: {exc}"
    return head + "\n" + "".join(traceback.format_exception(exc))


def execute(queue: str, job: Claimed) -> Outcome:
    """Run the job's function and report completed or failed; never raises."""
    try:
        fn = lookup(job.name)
        args = list(job.args)
        if fn.options.takes_context:
            args.insert(0, JobContext(job.id, queue, job.token, job.token, job.lease_ms))
        result: Any = fn.func(*args, **job.kwargs)
        if result is None:  # the common case, without the awaitable check and the encoder
            return Outcome(job.id, job.token, "completed", "null")
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return Outcome(job.id, job.token, "completed", dumps(result))
    except Exception as exc:  # a job's failure is data: it is recorded and retried, never fatal
        retry = backoff_ms(job.token, *job.backoff)
        return Outcome(job.id, job.token, "failed", error_text(exc), retry)


async def _await(awaitable: Any) -> Any:
    return await awaitable
