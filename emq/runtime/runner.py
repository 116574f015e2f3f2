"""Run one claimed job in-process and turn how it ended into an Outcome.

A plain function runs in a worker's slot thread (``execute``); an ``async def`` job runs as a
coroutine on the worker's event loop (``execute_async``), so it holds no thread while it waits.
Whatever the job raises, ``SystemExit`` and ``KeyboardInterrupt`` included, is its attempt's
failure (``policy``), never the worker's. Each attempt runs inside its context (``observe``: log
fields, a trace span, ``job_started``, Sentry).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..core import encrypted, sealed
from ..core.encoding import dumps
from ..core.frozen import _new
from ..core.records import Claimed, Outcome
from ..jobs import Flag, JobContext, JobFunction, Options, lookup
from ..jobs.context import current
from . import observe
from .aio import Interruptible
from .policy import backoff_ms, error_text, outcome_of

__all__ = ["backoff_ms", "error_text", "execute", "execute_async", "failed", "is_async"]


def is_async(name: str) -> bool:
    """Whether the job is an ``async def``; False when it cannot be found, so its slot records why."""
    try:
        return _is_coroutine(lookup(name).func)
    except Exception:  # unknown name, or a task module that fails to import: execute() reports it
        return False


@functools.lru_cache(maxsize=1024)
def _is_coroutine(func: Callable[..., Any]) -> bool:
    """Asked once per function, not once per attempt (inspect unwraps partials and methods each time)."""
    return inspect.iscoroutinefunction(func)


def _call(fn: JobFunction, queue: str, job: Claimed, stop: Flag | None, sink: Any) -> Any:
    """Call the job's function (``fn``, looked up by the caller) with its context when it takes one."""
    if fn.options.takes_context:
        ctx = JobContext.of_claim(queue, job, stop or Flag(), sink)
        current.set(ctx)  # current_job() is this context, its journal the run's (the caller resets it)
        return fn.func(ctx, *job.args, **job.kwargs)
    return fn.func(*job.args, **job.kwargs)


_DONE = {"id": "", "token": 0, "outcome": "completed", "value": "null", "retry_ms": 0, "exc": None}


def _completed(job: Claimed, result: Any) -> Outcome:
    """The outcome of an attempt that returned result (one a job, on the slot's thread): its own fresh dict
    filled with a completed one's fields, then the job's set (cheaper than a dict display)."""
    outcome = _new(Outcome)
    values = outcome.__dict__  # frozen.built's work in place: no dict to make and set as __dict__
    values.update(_DONE)
    values["id"], values["token"] = job.id, job.token
    if result is not None:
        values["value"] = encrypted.seal_result(dumps(result)) if job.sealed else dumps(result)
    return outcome


def _options(name: str) -> Options | None:
    try:
        return lookup(name).options
    except Exception:  # an unknown job fails by the default policy
        return None


SEALED_ERRORS = ("failed", "dead", "discarded")  # outcomes whose value is the error text finish stores


def failed(job: Claimed, exc: BaseException) -> Outcome:
    """How an attempt that raised exc ends, by its job's retry policy (exc kept for traces and Sentry; a
    suspension is no error of the job's, so it keeps none); an encrypted job's error text sealed (its
    message or traceback may quote its arguments)."""
    outcome = outcome_of(job, exc, _options(job.name))
    if outcome.outcome == "suspended":
        return outcome
    if job.sealed and outcome.outcome in SEALED_ERRORS:
        return dataclasses.replace(outcome, value=sealed.seal(outcome.value), exc=exc)
    return dataclasses.replace(outcome, exc=exc)


def execute(queue: str, job: Claimed, stop: Flag | None = None, leave: Callable[[], None] | None = None,
            sink: Any = None) -> Outcome:
    """Run one attempt inside its context and report how it ended; never raises. ``stop`` is its
    ctx.cancelled, ``sink`` takes its progress.

    ``leave`` is called the moment the job's code returned, before the outcome is built: a time
    limit may interrupt the job, never the reporting of how it ended. ``emq.current_job()`` is
    the attempt while its code runs. One function, not three a job: this is every attempt's path.
    """
    attempt = observe.begin(queue, job)
    error: BaseException | None = None
    running = current.set((queue, job, stop or Flag(), sink))
    try:
        fn = lookup(job.name)  # _call's plain case inline: every attempt's path
        if fn.options.takes_context:
            result: Any = _call(fn, queue, job, stop, sink)
        else:
            result = fn.func(*job.args, **job.kwargs)
        if result is not None and inspect.isawaitable(result):  # None: most jobs, without the check
            result = asyncio.run(_await(result))
    except BaseException as exc:  # a job's failure is data, SystemExit included: recorded, never fatal
        error = exc
    finally:
        if leave is not None:
            leave()
        current.reset(running)
    outcome = _completed(job, result) if error is None else failed(job, error)
    observe.end(attempt, outcome)
    return outcome


async def execute_async(
    queue: str, job: Claimed, stop: Flag | None = None, started: Callable[[Interruptible], None] | None = None,
    leave: Callable[[], None] | None = None, sink: Any = None,
) -> Outcome:
    """Await one ``async def`` attempt inside its context; never raises (see ``_execute_async``)."""
    attempt = observe.begin(queue, job)
    outcome = await _execute_async(queue, job, stop, started, leave, sink)
    observe.end(attempt, outcome)
    return outcome


async def _execute_async(
    queue: str, job: Claimed, stop: Flag | None, started: Callable[[Interruptible], None] | None,
    leave: Callable[[], None] | None, sink: Any,
) -> Outcome:
    """Await an ``async def`` job on the running loop and report how it ended; never raises.

    ``started`` gets the handle that raises a time limit or a cancel inside the job; ``leave`` is
    called as in ``execute``. The coroutine runs in its own task, so ``current_job()`` is its own.
    """
    error: BaseException | None = None
    current.set((queue, job, stop or Flag(), sink))
    try:
        run = Interruptible(_call(lookup(job.name), queue, job, stop, sink))
        if started is not None:
            started(run)
        result = await run
    except BaseException as exc:  # as in execute: recorded, never fatal
        error = exc
    finally:
        if leave is not None:
            leave()
    return _completed(job, result) if error is None else failed(job, error)


async def _await(awaitable: Any) -> Any:
    return await awaitable
