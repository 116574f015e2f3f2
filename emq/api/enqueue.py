"""``POST /jobs/``: mint one job of a registered name, its arguments checked as calling it would.

Only names the registry knows are minted (``@emq.job``, and the Django Tasks the adapter finds in
the project's own modules); the process looks for them once, as a worker does at start
(``autodiscover``). Every refusal is a 400 that says what to change; nothing is written then.
"""

from __future__ import annotations

import difflib
import math
import threading
from datetime import datetime
from typing import Any
from urllib.parse import quote

from django.http import HttpRequest, JsonResponse

from ..core.logical import JobRef, LogicalQueue
from ..errors import ConfigurationError, JobNotFound, NotRegistered, PayloadTooLarge
from ..jobs import JobFunction, autodiscover, lookup, registry
from . import options
from .body import read_json
from .params import queue_name
from .replies import ApiError, ok

FIELDS = ("name", "args", "kwargs", "queue", "delay", "at", "options")
_discovered = threading.Event()
_lock = threading.Lock()


def enqueue(request: HttpRequest) -> JsonResponse:
    """Mint the job the body describes: 201 with its id, queue and state (200 when it existed already)."""
    data = read_json(request)
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field(s) {unknown}; a job takes {', '.join(FIELDS)}", code="invalid_body")
    fn = registered(data.get("name"))
    args, kwargs = _arguments(data)
    using = options.parse(data.get("options"))
    if data.get("queue") is not None:
        using["queue"] = queue_name(data["queue"])
    try:
        ref = _mint(fn.using(**using) if using else fn, args, kwargs, data.get("delay"), data.get("at"))
    except PayloadTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    except (TypeError, ValueError, ConfigurationError) as exc:
        raise ApiError(400, str(exc), code="invalid_call") from None
    response = ok({"id": ref.id, "queue": ref.queue, "state": _state(ref), "created": ref.created},
                  201 if ref.created else 200)
    response["Location"] = request.path + quote(ref.id, safe="")  # GET it there (the route "jobs/<id>")
    return response


def registered(name: Any) -> JobFunction:
    """The registered job of that name; 400 naming the likeliest ones meant when there is none."""
    if not isinstance(name, str) or not name:
        raise ApiError(400, '"name" must be the dotted name of a registered job, e.g. "myapp.jobs.send_welcome"',
                       code="unknown_job")
    _discover()
    try:
        return lookup(name)  # type: ignore[return-value]
    except NotRegistered:
        close = difflib.get_close_matches(name, list(registry), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ": register it with @emq.job"
        raise ApiError(400, f"no job registered as {name!r}{hint}", code="unknown_job") from None


def _discover() -> None:
    """Import the project's job modules once per process, as a worker does at start."""
    if not _discovered.is_set():
        with _lock:
            if not _discovered.is_set():
                autodiscover()
                _discovered.set()


def _arguments(data: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    args, kwargs = data.get("args", []), data.get("kwargs", {})
    if not isinstance(args, list):
        raise ApiError(400, f'"args" must be a JSON list of positional arguments, not {type(args).__name__}',
                       code="invalid_body")
    if not isinstance(kwargs, dict):
        raise ApiError(400, f'"kwargs" must be a JSON object of keyword arguments, not {type(kwargs).__name__}',
                       code="invalid_body")
    return args, kwargs


def _mint(fn: JobFunction, args: list, kwargs: dict, delay: Any, at: Any) -> JobRef:
    if delay is not None and at is not None:
        raise ApiError(400, 'give "delay" (seconds from now) or "at" (a time), not both', code="invalid_body")
    if delay is not None:
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < math.inf:
            raise ApiError(400, f'"delay" must be a number of seconds >= 0, not {delay!r}', code="invalid_body")
        return fn.enqueue_in(delay, *args, **kwargs)
    if at is not None:
        return fn.enqueue_at(_when(at), *args, **kwargs)
    return fn.enqueue(*args, **kwargs)


def _when(at: Any) -> datetime:
    """An ISO 8601 time with its offset ("2030-01-01T09:00:00+01:00", "...Z")."""
    try:
        when = datetime.fromisoformat(at) if isinstance(at, str) else None
    except ValueError:
        when = None
    if when is None or when.utcoffset() is None:
        raise ApiError(400, f'"at" must be an ISO 8601 time with its offset, e.g. "2030-01-01T09:00:00Z", '
                            f"not {at!r}", code="invalid_body")
    return when


def _state(ref: JobRef) -> str | None:
    """The job's state as stored now (ready, scheduled, waiting, or further on already); None when it is
    not stored (EMQ_EAGER ran it inline)."""
    try:
        return LogicalQueue(ref.queue).get_job(ref.id).state
    except JobNotFound:
        return None
