"""Run one claimed job in-process and turn how it ended into an Outcome.

A plain function runs in a worker's slot thread (``execute``); an ``async def`` job runs as a
coroutine on the worker's event loop (``execute_async``), so it holds no thread while it waits.
"""

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


def is_async(name: str) -> bool:
    """Whether the job is an ``async def``; False when it cannot be found, so its slot records why."""
    try:
        return inspect.iscoroutinefunction(lookup(name).func)
    except Exception:  # unknown name, or a task module that fails to import: execute() reports it
        return False


def _call(queue: str, job: Claimed) -> Any:
    fn = lookup(job.name)
    args = list(job.args)
    if fn.options.takes_context:
        args.insert(0, JobContext(job.id, queue, job.token, job.token, job.lease_ms))
    return fn.func(*args, **job.kwargs)


def _completed(job: Claimed, result: Any) -> Outcome:
    if result is None:  # the common case, without the encoder
        return Outcome(job.id, job.token, "completed", "null")
    return Outcome(job.id, job.token, "completed", dumps(result))


def _failed(job: Claimed, exc: Exception) -> Outcome:
    return Outcome(job.id, job.token, "failed", error_text(exc), backoff_ms(job.token, *job.backoff))


def execute(queue: str, job: Claimed) -> Outcome:
    """Run the job's function and report completed or failed; never raises."""
    try:
        result: Any = _call(queue, job)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return _completed(job, result)
    except Exception as exc:  # a job's failure is data: it is recorded and retried, never fatal
        return _failed(job, exc)


async def execute_async(queue: str, job: Claimed) -> Outcome:
    """Await an ``async def`` job on the running loop and report how it ended; never raises."""
    try:
        return _completed(job, await _call(queue, job))
    except Exception as exc:  # as in execute: recorded and retried
        return _failed(job, exc)


async def _await(awaitable: Any) -> Any:
    return await awaitable
