"""What every list page shares: its filters read from the query, its pager, and its "all that match" bar.

A list is one of a queue's lists of jobs (``engine.bulk.LISTS``); its page is a tab of the dashboard
(Leases shows the list ``active``, a lane's Ready page the list ``ready``). The time range of each list is
on the time its set is sorted by (TIME_OF): the index the engine reads, never a scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from ..core import registry, topology
from ..core.engine.bulk import ACTIONS
from ..core.engine.filters import Filters, iso
from .scan import Slice

LIST_OF = {"leases": "active", "ready": "ready", "waiting": "waiting", "scheduled": "scheduled", "stalled": "stalled",
           "completed": "completed", "dead": "dead", "cancelled": "cancelled"}
# What the time range of a list is on: the score of its set (ready: each job's due time, read, not indexed).
TIME_OF = {"waiting": "Minted", "scheduled": "Due", "ready": "Due", "active": "Lease expires", "stalled": "Reclaimed",
           "completed": "Finished", "dead": "Died", "cancelled": "Cancelled"}
LABELS = {"retry": "Retry", "run_now": "Run now", "cancel": "Cancel", "delete": "Delete", "move": "Move"}
ORDER = ("retry", "run_now", "cancel", "delete", "move")


def filters_of(request: HttpRequest) -> Filters:
    """The page's filters; a time that does not parse is said in a message and left out."""
    try:
        return Filters.from_query(request.GET)
    except ValueError as exc:
        messages.warning(request, f"{exc}. The list is shown without that bound.")
        query = request.GET.copy()
        for k in ("since", "until"):
            try:
                Filters.from_query({k: query.get(k, "")})
            except ValueError:
                query[k] = ""
        return Filters.from_query(query)


def pager(tab: str, s: Slice, keep: dict[str, str], url: Callable[..., str]) -> dict[str, str | None]:
    """Next / previous / first links: by offset, or by the cursor a filtered page ended at."""
    if s.filtered:
        return {"next_url": url(tab, after=s.cursor, **keep) if s.cursor else None, "prev_url": None,
                "first_url": url(tab, **keep) if s.at else None}
    return {
        "next_url": url(tab, pos=s.next, **keep) if s.next is not None else None,
        "prev_url": url(tab, pos=s.prev, **keep) if s.prev is not None else None,
        "first_url": url(tab, **keep) if s.start else None,
    }


def bulk(of: str, s: Slice, filters: Filters, targets: list[str]) -> dict[str, Any]:
    """The "all that match" bar of a list: its actions (move: when another queue is known to move to) and,
    when it is known without reading the jobs, how many match (the time range alone is the set's index)."""
    actions = [(a, LABELS[a]) for a in ORDER if of in ACTIONS[a].lists and (a != "move" or targets)]
    if of == "ready":  # the queue's ready counter, or one lane's length; nothing else is known unread
        exact = s.total if filters == Filters(group=filters.group) else None
    else:
        exact = None if filters.content else s.total
    return {"list": of, "actions": actions, "exact": exact, "targets": targets if ("move", LABELS["move"]) in actions
            else []}


def targets(queue: str, limit: int = 200) -> list[str]:
    """The queues a list's jobs may move to: the registry's (logical names, a move places each job in a
    partition), the queue itself left out."""
    own = topology.logical(queue)
    return sorted(q for q in registry.known_queues() if q != own)[:limit]


def local_time(ms: int | None) -> str:
    """Epoch ms as a datetime-local input's value (UTC, to the minute or second)."""
    return "" if ms is None else iso(ms).rstrip("Z")
