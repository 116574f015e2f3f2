"""The retry policy: how the exception that ended an attempt becomes the outcome finish takes.

One decision point, fed by the exception (Dramatiq's ``retry_when``, BullMQ's
``UnrecoverableError``): ``emq.Discard`` is dead now, ``emq.Retry`` picks its delay, an exception
outside the job's ``retry_on`` is dead now, and a backoff function may say "no more". Whether a
"failed" attempt is retried or dead because its attempts ran out is the finish script's rule alone.

A job whose name this worker does not know is no failure of the job: in a rolling deploy new code
mints names old workers lack, so it is given back without spending an attempt (``unknown``) until
EMQ_UNKNOWN_GRACE has passed on the server's clock, for a worker that knows it. A durable job that
slept or waits (``jobs.steps.Suspended``) is no failure either: its run ends "suspended", no attempt spent.
"""

from __future__ import annotations

import logging
import random
import traceback

from ..core import config
from ..core.records import Claimed, Outcome
from ..errors import Discard, NotRegistered, RateLimited, Retry
from ..jobs import Options
from ..jobs.options import retry_on_tuple
from ..jobs.steps import Suspended

log = logging.getLogger("emq.worker")
RETRY_ON = (Exception,)  # what a job retries unless its retry_on says otherwise


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


def outcome_of(job: Claimed, exc: BaseException, options: Options | None) -> Outcome:
    """The outcome of an attempt that raised exc, by its job's policy (options None: the defaults)."""
    if isinstance(exc, Suspended):  # a sleep or a wait: the run ends, the job goes on (finish.lua, _suspend.lua)
        return Outcome(job.id, job.token, "suspended", exc.spec)
    text = error_text(exc)
    if isinstance(exc, RateLimited):  # not an attempt: back in its lane, its group held (finish.lua)
        return Outcome(job.id, job.token, "ratelimited", text, int(exc.retry_in * 1000))
    if isinstance(exc, Discard):
        return Outcome(job.id, job.token, "discarded", text)
    if isinstance(exc, NotRegistered) and options is None:  # no such job here: held for a worker that knows it
        return unknown(job, text)
    if isinstance(exc, Retry) and exc.delay is not None:
        return Outcome(job.id, job.token, "failed", text, int(exc.delay * 1000))
    retry_on = RETRY_ON if options is None or options.retry_on is None else retry_on_tuple(job.name, options.retry_on)
    if not isinstance(exc, Retry) and not isinstance(exc, retry_on):
        return Outcome(job.id, job.token, "dead", text)
    delay = _delay_ms(job, exc, options)
    if delay is None:
        return Outcome(job.id, job.token, "dead", text)
    return Outcome(job.id, job.token, "failed", text, delay)


def unknown(job: Claimed, text: str) -> Outcome:
    """The outcome of a job whose name this worker does not know: given back, held off, for the grace."""
    first, cap = (max(int(s * 1000), 0) for s in config.get("EMQ_UNKNOWN_DELAY"))
    grace = max(int(config.get("EMQ_UNKNOWN_GRACE") * 1000), 0)
    return Outcome(job.id, job.token, "unknown", f"{grace},{cap}|{text}", first)


def _delay_ms(job: Claimed, exc: BaseException, options: Options | None) -> int | None:
    """ms before the retry: the job's backoff function when it has one (None: no retry), else its jitter."""
    backoff = None if options is None else options.backoff
    if callable(backoff):
        try:
            seconds = backoff(job.attempt, exc)
        except Exception:  # a broken backoff must not lose the outcome: fall back to the jittered one
            log.exception("backoff of job %s failed; using its (base, cap) backoff", job.name)
        else:
            return None if seconds is None else max(int(float(seconds) * 1000), 0)
    return backoff_ms(job.attempt, *job.backoff)
