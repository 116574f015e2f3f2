"""``GET /events/<queue>``: a queue's state changes as Server-Sent Events, from its event stream.

Each change is one event, ``data`` a JSON object (kind, job id, queue, detail, extra, at) and
``id`` the position to resume from (``cursor.py``): a client that reconnects with it as
``Last-Event-ID`` misses nothing the stream still keeps, and gets nothing twice. A quiet stream
sends a comment every EMQ_API_EVENTS_HEARTBEAT seconds (proxies keep it open, and a client that
left is noticed); every response ends after EMQ_API_EVENTS_SECONDS, so a WSGI worker is never held
for long, and the client reconnects (``retry:`` asks for 1 s) where it stopped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse

from ..core import config, events, topology
from ..errors import EmqError
from . import cursor
from .cursor import Position
from .params import queue_name
from .replies import ApiError

RETRY_MS = 1000  # how soon a client reconnects after a stream ends (the SSE "retry:" field)


def stream(request: HttpRequest, queue: str) -> StreamingHttpResponse:
    """Open the stream of a queue from Last-Event-ID (or ?last_event_id=), else from now."""
    queue = queue_name(queue, "the queue in the path")
    if not config.get("EMQ_EVENTS"):
        raise ApiError(409, "EMQ_EVENTS is off: the scripts record no state changes; set EMQ_EVENTS = True "
                            "in the settings of every process that changes jobs (workers, Pumps, web)",
                       code="events_off")
    names = topology.names(queue)
    if len(names) > 1 and config.get("EMQ_CLUSTER"):
        first = quote(names[0], safe="")
        raise ApiError(400, f"queue {queue!r} has {len(names)} partitions, each a slot of the cluster, and one "
                            f"blocking read covers one slot: read each partition (/events/{first} ...) on its own",
                       code="invalid_queue")
    prefix = config.get("EMQ_PREFIX")
    given = request.META.get("HTTP_LAST_EVENT_ID") or request.GET.get("last_event_id")
    try:
        start = cursor.parse(given, len(names)) if given else _now(names, prefix)
    except ValueError as exc:
        raise ApiError(400, str(exc), code="invalid_event_id") from None
    messages = _messages(names, start, prefix)
    body = _each_in_a_thread(messages) if isinstance(request, ASGIRequest) else messages
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
    return response


def _now(names: list[str], prefix: str) -> list[Position]:
    """Positions after the newest entry of each partition (read now, before the answer starts)."""
    ids = events.cursors_of(names, None, prefix)
    return [Position(ids[name]) for name in names]


async def _each_in_a_thread(parts: Iterator[str]) -> AsyncIterator[str]:
    """The stream under ASGI: each blocking read runs in a worker thread, the event loop stays free
    (a sync iterator would be read to its end before a byte is sent)."""
    step = sync_to_async(next, thread_sensitive=False)
    while (part := await step(parts, None)) is not None:
        yield part


def _messages(names: list[str], start: list[Position], prefix: str) -> Iterator[str]:
    """The stream's text: events as they come, comments when quiet, until the response's time is up."""
    seconds, beat = float(config.get("EMQ_API_EVENTS_SECONDS")), float(config.get("EMQ_API_EVENTS_HEARTBEAT"))
    began = time.monotonic()
    quiet_since = began
    at = dict(zip(names, start, strict=True))
    cursors = {name: p.cursor() for name, p in at.items()}
    skip = {name: (p.entry, p.taken) for name, p in at.items() if p.taken is not None}
    yield f"retry: {RETRY_MS}\n: emq events of {', '.join(names)}\n\n"
    while (left := began + seconds - time.monotonic()) > 0:
        block = min(left, beat - (time.monotonic() - quiet_since))
        try:
            batch = events.read(names, cursors, max(int(block * 1000), 1), prefix)
        except EmqError as exc:  # the server went away: end here, the client resumes from its last id
            yield f": {str(exc).splitlines()[0]}\n\n"
            return
        text = "".join(_numbered(batch, at, skip))
        if text:
            yield text
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= beat:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()


def _numbered(batch: list[events.Event], at: dict[str, Position], skip: dict[str, tuple[str, int]]) -> Iterator[str]:
    """One message per change, each with the positions after it; the changes a resumed client had are left out.

    ``skip``: per partition, the entry a client stopped inside and how many of its changes it has.
    """
    sizes = Counter((e.queue, e.stream_id) for e in batch)
    seen: Counter = Counter()
    for e in batch:
        seen[e.queue, e.stream_id] += 1
        n = seen[e.queue, e.stream_id]
        entry, taken = skip.get(e.queue, ("", 0))
        if entry == e.stream_id and n <= taken:
            continue  # delivered before the client reconnected
        at[e.queue] = Position(e.stream_id, None if n == sizes[e.queue, e.stream_id] else n)
        data = {"kind": e.kind, "id": e.id, "queue": e.queue, "detail": e.detail, "extra": e.extra,
                "at": e.at.isoformat() if e.at else None}
        yield f"id: {cursor.render(list(at.values()))}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
