"""The event stream of a queue (EMQ_EVENTS): every state change, read with a blocking XREAD.

The scripts that change a job's state append the changes of one call as one stream entry
(``_events.lua``); ``events()`` unpacks entries into one ``Event`` per change, in order. The
stream keeps about EMQ_EVENTS_MAX entries (an entry: the changes of one script call).
Limit: a partitioned queue on a cluster is several slots, and one XREAD blocks on one slot:
read each partition (``emq.events("clicks#0")``) in a thread of its own there.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ConfigurationError
from . import config, encrypted, topology
from .connection import get_client, guard
from .records import from_ms

READ = 500  # stream entries read per XREAD at most
STREAM_ID = re.compile(r"[0-9]{1,20}(-[0-9]{1,20})?")
MAX_PART = 2**64 - 1  # each part of a stream id is a 64-bit unsigned number


@dataclass(frozen=True)
class Event:
    """One state change: ``kind`` is minted, ready, scheduled, active, progress, completed, retried,
    dead, cancelled, stalled, waiting (a flow resumed, or a durable job suspended) or batch; ``detail`` and
    ``extra`` say more (see ``_events.lua``)."""

    queue: str  # the physical queue
    kind: str
    id: str  # the job's id (a batch's, for kind "batch")
    detail: Any = None
    extra: Any = None
    at: datetime | None = None  # the server's time of the change
    stream_id: str = ""  # the entry it came in: pass it as since= to go on after it


def _unpack(queue: str, stream_id: str, fields: dict[str, str]) -> list[Event]:
    at = from_ms(stream_id.split("-", 1)[0])
    out = []
    for item in json.loads(fields.get("e", "[]")):
        kind, job_id, *rest = item + [None, None]
        if kind == "progress":  # an encrypted job's note is sealed (core/stored.py)
            rest[1] = encrypted.open_text(rest[1])
        out.append(Event(queue, kind, job_id, rest[0], rest[1], at, stream_id))
    return out


def _start(key: str, since: Any) -> str:
    """The stream id to read after: now (None, "$"), the start ("0"), a time, an Event or an id."""
    if isinstance(since, Event):
        return since.stream_id
    if isinstance(since, datetime):
        return f"{int(since.timestamp() * 1000)}-0"
    if since in (None, "$"):
        last = get_client().xrevrange(key, count=1)
        return last[0][0] if last else "0-0"
    return stream_id(str(since))


def stream_id(text: str) -> str:
    """A stream id given as text (``<ms>-<seq>`` or ``<ms>``), checked; ValueError saying what one is."""
    if not STREAM_ID.fullmatch(text) or any(int(part) > MAX_PART for part in text.split("-")):
        raise ValueError(f"since={text[:60]!r} is not a stream id: give <ms>-<seq> (each part a whole number "
                         "below 2**64), \"0\" for the oldest event kept, or an Event")
    return text


def read(queues: list[str], cursors: dict[str, str], block_ms: int | None, prefix: str) -> list[Event]:
    """One XREAD over the streams of some physical queues after their cursors (updated in place)."""
    keys = {topology.keys_of(prefix, q).events: q for q in queues}
    with guard():
        reply = get_client().xread({k: cursors[q] for k, q in keys.items()}, count=READ, block=block_ms)
    out = []
    for key, entries in reply or []:
        queue = keys[key]
        for stream_id, fields in entries:
            out.extend(_unpack(queue, stream_id, fields))
            cursors[queue] = stream_id
    return out


def cursors_of(queues: list[str], since: Any, prefix: str) -> dict[str, str]:
    """Where to start reading each physical queue's stream (see ``_start``)."""
    with guard():
        return {q: _start(topology.keys_of(prefix, q).events, since) for q in queues}


def events(queue: str | None = None, since: Any = None, timeout: float | None = None,
           prefix: str | None = None) -> Iterator[Event]:
    """Iterate a queue's state changes as they happen (EMQ_EVENTS must be on where they are made).

    ``since``: None (from now), "0" (the oldest kept), a stream id or an ``Event`` (after it), or a
    datetime. Blocks for the next event; with ``timeout`` the iteration ends after that many
    seconds without one.
    """
    name = queue or config.get("EMQ_DEFAULT_QUEUE")
    prefix = prefix or config.get("EMQ_PREFIX")
    queues = topology.names(name)
    if len(queues) > 1 and config.get("EMQ_CLUSTER"):
        raise ConfigurationError(
            f"queue {name!r} has {len(queues)} partitions, each a slot of the cluster, and one blocking read "
            f"covers one slot: read each partition (emq.events({queues[0]!r}), ...) in a thread of its own"
        )
    cursors = cursors_of(queues, since, prefix)
    quiet_until = None if timeout is None else time.monotonic() + timeout
    while True:
        block = 0 if quiet_until is None else max(int((quiet_until - time.monotonic()) * 1000), 1)
        batch = read(queues, cursors, block, prefix)
        if batch:
            yield from batch
            quiet_until = None if timeout is None else time.monotonic() + timeout
        elif quiet_until is not None and time.monotonic() >= quiet_until:
            return
