"""``GET /queues/``: each known queue's jobs per state, a page of queues in one round trip."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from ..core import config, topology
from ..core.engine import counts_of
from ..core.logical import partitions
from ..core.records import Counts, from_ms
from ..core.registry import known_queues
from .params import whole
from .replies import ok

PAGE = 100  # queues a page by default
MAX_PAGE = 500
STATES = ("waiting", "scheduled", "ready", "active", "completed", "dead", "cancelled")


def counts(request: HttpRequest) -> JsonResponse:
    """The registry's queues, sorted by name, from ``?offset=`` (``?limit=`` of them) with their counts."""
    offset = whole(request, "offset", 0, 0, 10**9)
    limit = whole(request, "limit", PAGE, 1, MAX_PAGE)
    prefix = config.get("EMQ_PREFIX")
    names = sorted(known_queues(prefix))
    page = names[offset : offset + limit]
    physical = {name: topology.names(name) for name in page}
    found = counts_of(partitions([p for parts in physical.values() for p in parts], prefix=prefix))
    rows, i = [], 0
    for name, parts in physical.items():
        rows.append(_row(name, len(parts), Counts.summed(found[i : i + len(parts)])))
        i += len(parts)
    nxt = offset + limit if offset + limit < len(names) else None
    return ok({"queues": rows, "total": len(names), "next_offset": nxt})


def _row(name: str, partitions: int, c: Counts) -> dict[str, Any]:
    due = from_ms(c.next_due_ms)
    return {"name": name, "partitions": partitions, "paused": c.paused, **{s: getattr(c, s) for s in STATES},
            "next_due": due.isoformat() if due else None}
