"""Sentry for jobs: each attempt a transaction tagged with the job, each failed attempt captured.

On when the application initialised ``sentry_sdk`` (``sentry_sdk.init(...)`` in settings); never
imports it, so a project without Sentry pays one dictionary lookup per attempt.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from ..core.records import Claimed


def enter(queue: str, job: Claimed) -> contextlib.ExitStack | None:
    """Open an isolated scope tagged with the job and a transaction for the attempt; None when off."""
    sdk = sys.modules.get("sentry_sdk")
    if sdk is None or not sdk.is_initialized():
        return None
    stack = contextlib.ExitStack()
    scope = stack.enter_context(sdk.isolation_scope())
    for key, value in (("emq.job_id", job.id), ("emq.job_name", job.name), ("emq.queue", queue),
                       ("emq.attempt", str(job.attempt))):
        scope.set_tag(key, value)
    stack.enter_context(sdk.start_transaction(op="queue.process", name=job.name, source="task"))
    return stack


def leave(stack: contextlib.ExitStack, exc: BaseException | None) -> None:
    """Capture the attempt's exception (inside its scope) and close the transaction."""
    sdk: Any = sys.modules["sentry_sdk"]
    if exc is not None:
        sdk.capture_exception(exc)
        span = sdk.get_current_span()
        if span is not None:
            span.set_status("internal_error")
    stack.close()
