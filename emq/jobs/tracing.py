"""OpenTelemetry for jobs: a PRODUCER span at enqueue whose W3C trace context travels in the
job's ``meta``, and a CONSUMER span around each attempt on the worker, child of (and linked to)
the enqueuing span.

Nothing here imports OpenTelemetry on its own: tracing is on when the application imported
``opentelemetry.trace`` (configuring a tracer provider does) and set a real provider. Otherwise
each call costs a dictionary lookup, and a project without OpenTelemetry installed pays nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..core.records import Claimed, MintSpec

SYSTEM = "emq"  # messaging.system
META_KEY = "trace"  # the key of a job's meta that carries the W3C trace context
ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # a provider named by the environment


def _trace() -> Any:
    """``opentelemetry.trace`` when a real tracer provider is configured, else None (never imports it)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    # Nothing set yet: the public getter would also read the environment on each call, the larger
    # part of an attempt's cost here (redis-py imports the API, so this runs in every worker).
    if getattr(trace, "_TRACER_PROVIDER", False) is None and not ENV_PROVIDER:
        return None
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    return trace


def on() -> bool:
    """Whether enqueues are traced now (an enqueue without tracing skips the span's context manager)."""
    return _trace() is not None


@contextlib.contextmanager
def producer(name: str, queue: str, first_id: str, count: int) -> Iterator[dict[str, str] | None]:
    """Run an enqueue of count jobs inside a PRODUCER span; yields the carrier for their meta (None: off)."""
    trace = _trace()
    if trace is None:
        yield None
        return
    from opentelemetry import propagate

    attributes: dict[str, Any] = {"messaging.system": SYSTEM, "messaging.operation.type": "send",
                                  "messaging.destination.name": queue, "emq.job.name": name}
    if count == 1:
        attributes["messaging.message.id"] = first_id
    else:
        attributes["messaging.batch.message_count"] = count
    tracer = trace.get_tracer("emq")
    with tracer.start_as_current_span(f"emq enqueue {name}", kind=trace.SpanKind.PRODUCER, attributes=attributes):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield carrier


def stamped(specs: list[MintSpec], carrier: dict[str, str] | None) -> list[MintSpec]:
    """The specs with the trace context added to each one's meta (unchanged when tracing is off)."""
    if not carrier:
        return specs
    return [replace(s, meta=json.dumps({**(json.loads(s.meta) if s.meta else {}), META_KEY: carrier})) for s in specs]


def consumer(queue: str, job: Claimed) -> Any:
    """A CONSUMER span context manager for one attempt, or None when tracing is off."""
    trace = _trace()
    if trace is None:
        return None
    from opentelemetry import propagate

    carrier = _carrier(job.meta)
    parent = propagate.extract(carrier) if carrier else None
    links = []
    if parent is not None:
        context = trace.get_current_span(parent).get_span_context()
        if context.is_valid:
            links.append(trace.Link(context))
    attributes = {
        "messaging.system": SYSTEM, "messaging.operation.type": "process", "messaging.destination.name": queue,
        "messaging.message.id": job.id, "emq.job.id": job.id, "emq.job.name": job.name, "emq.queue": queue,
        "emq.attempt": job.attempt, "emq.group": job.group,
    }
    return trace.get_tracer("emq").start_as_current_span(
        f"emq run {job.name}", context=parent, kind=trace.SpanKind.CONSUMER, links=links, attributes=attributes,
        record_exception=False, set_status_on_exception=False,
    )


def failed(span: Any, exc: BaseException) -> None:
    """Record a failed attempt's exception on its span and mark the span as an error."""
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def _carrier(meta: str) -> dict[str, str] | None:
    if not meta or META_KEY not in meta:
        return None
    try:
        value = json.loads(meta).get(META_KEY)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, dict) else None
