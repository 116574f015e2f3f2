"""Recurrence rows are the source of truth: Valkey is made to match the rows it is given.

Limit: writes through the ORM only. ``save``/``delete`` (signals), ``QuerySet.update`` and
``bulk_create`` push the changed rows after commit and bump ``RecurrenceMarker`` (``emq.models``
owns those write paths); a Pump re-syncs every row at start and whenever the marker moves, which
also repairs a push lost to an outage. A recurrence lives in the physical queue its group's jobs go
to (``emq.core.topology``), so the Pumps of a partitioned queue mint it where its workers claim.

This layer sits below ``emq.models`` and never looks a model up: rows, and the store they come
from, are handed in (``tests/test_back_doors.py`` pins it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from ..core import registry, topology
from ..core.engine import Queue
from ..core.logical import LogicalQueue, partitions
from ..errors import EmqError
from . import repeat
from .cron import ScheduleError
from .definitions import definition

log = logging.getLogger("emq.recurrences")

Place = tuple[str, str, str]  # (name, logical queue, group) of a row as it was stored


def placement(queue: str, group: str | None) -> Queue:
    """The physical queue a recurrence of this queue and group lives (and mints) in."""
    return LogicalQueue(queue).of_group(group)


def place_of(row: Any) -> Place:
    return (row.name, row.queue, row.group or "")


# -- Valkey follows the rows ----------------------------------------------------------------


def push(before: Iterable[Place], rows: Iterable[Any]) -> None:
    """Make Valkey match these rows now; on failure the Pump's re-sync repairs it (marker moved)."""
    try:
        placed = set()
        for row in rows:
            placed.add((row.name, placement(row.queue, row.group).name))
            _place(row)
        for name, queue, group in set(before):
            q = placement(queue, group)
            if (name, q.name) not in placed:
                repeat.drop(q, name)
    except EmqError as exc:
        log.warning("recurrences not pushed to Valkey (%s); the Pump re-syncs them", exc)
    except Exception:  # the row is committed: report, never fail the save; the Pump re-syncs
        log.exception("recurrences not pushed to Valkey; the Pump re-syncs them")


def _place(row: Any) -> None:
    q = placement(row.queue, row.group)
    if not row.enabled:
        repeat.drop(q, row.name)
        return
    try:
        d = definition(row)
    except ScheduleError as exc:
        log.error("recurrence %s cannot be scheduled (%s); it mints nothing until fixed", row.name, exc)
        repeat.drop(q, row.name)
        return
    registry.remember_queue(q)
    repeat.put(q, d)


def run_now(row: Any) -> str:
    """Mint one job of this recurrence at once, outside its schedule; returns the job id."""
    q = placement(row.queue, row.group)
    registry.remember_queue(q)
    return repeat.run_now(q, definition(row))


# -- the Pump's side -----------------------------------------------------------------------


class Store(Protocol):
    """The recurrence rows a Pump's row sync reads and writes: ``Recurrence.objects`` (``emq.models``),
    handed in by the command that starts the Pump."""

    model: Any  # the row class, for the declared recurrences' upserts

    def filter(self, *args: Any, **kwargs: Any) -> Any: ...

    def marker(self) -> int: ...

    def record_minted(self, name: str, last: Any, next_at: Any) -> int: ...


def resync(store: Store, queues: Iterable[str] = ()) -> int:
    """Make every queue's recurrences match the rows; returns the marker version it saw first."""
    seen = store.marker()
    wanted: dict[str, dict[str, Any]] = {}
    for row in store.filter(enabled=True):
        try:
            wanted.setdefault(placement(row.queue, row.group).name, {})[row.name] = definition(row)
        except ScheduleError as exc:
            log.error("recurrence %s cannot be scheduled (%s); skipped", row.name, exc)
    logical = registry.known_queues() | {topology.logical(n) for n in [*queues, *wanted]}
    for q in partitions(sorted(logical)):
        mine = wanted.get(q.name, {})
        for gone in set(repeat.names(q)) - set(mine):
            repeat.drop(q, gone)
        for d in mine.values():
            registry.remember_queue(q)
            repeat.put(q, d)
    return seen
