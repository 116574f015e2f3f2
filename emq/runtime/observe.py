"""What surrounds each attempt on a worker: the log context, ``job_started``, an OpenTelemetry
span and a Sentry transaction.

``begin`` runs in the thread (or coroutine) that runs the job, before its function; ``end`` after
it, with the outcome. Tracing and Sentry join only when the application set them up, so a plain
worker pays a context variable and two dictionary lookups per attempt.
"""

from __future__ import annotations

import logging
import sys
from contextvars import Token
from typing import Any

from ..core.records import Claimed, Outcome
from ..jobs import tracing
from . import logs, sentry, signals

log = logging.getLogger("emq.worker")


class Attempt:
    """One attempt's open parts, closed by ``end``."""

    __slots__ = ("token", "span_cm", "span", "sentry")

    def __init__(self, token: Any) -> None:
        self.token = token
        self.span_cm: Any = None
        self.span: Any = None
        self.sentry: Any = None


def begin(queue: str, job: Claimed) -> Attempt | Token:
    """Enter the attempt's context and tell ``job_started``'s receivers (their errors are logged).

    Returns what ``end`` takes: the log context's token alone when no span or Sentry scope opened
    (an Attempt a job would be most of a plain worker's cost here)."""
    token = logs.current.set((job.id, job.name, queue, job.token - job.spared))  # job.attempt, inline
    if _plain():
        return token
    attempt = None
    cm = tracing.consumer(queue, job)
    if cm is not None:
        attempt = Attempt(token)
        attempt.span_cm, attempt.span = cm, cm.__enter__()
    scope = sentry.enter(queue, job)
    if scope is not None:
        attempt = attempt or Attempt(token)
        attempt.sentry = scope
    if signals.job_started.receivers:
        for receiver, err in signals.job_started.send_robust(None, queue=queue, job=job, attempt=job.attempt):
            if isinstance(err, Exception):
                log.error("job_started receiver %r failed: %s", receiver, err, exc_info=err)
    return token if attempt is None else attempt


def _plain(modules: dict = sys.modules) -> bool:
    """No tracer provider set (what ``tracing._trace`` looks at first), Sentry not imported, no job_started
    receiver: nothing but the log context to open (lookups here, not the three calls that find it out)."""
    trace = modules.get("opentelemetry.trace")
    return ((trace is None or (getattr(trace, "_TRACER_PROVIDER", False) is None and not tracing.ENV_PROVIDER))
            and "sentry_sdk" not in modules and not signals.job_started.receivers)


def end(attempt: Attempt | Token, outcome: Outcome) -> None:
    """Record the outcome's exception on the span and in Sentry; leave the attempt's context."""
    if type(attempt) is not Attempt:
        logs.current.reset(attempt)  # type: ignore[arg-type]
        return
    if attempt.sentry is not None:
        sentry.leave(attempt.sentry, outcome.exc)
    if attempt.span_cm is not None:
        if outcome.exc is not None:
            tracing.failed(attempt.span, outcome.exc)
        attempt.span_cm.__exit__(None, None, None)
    logs.current.reset(attempt.token)
