"""Recurrence rows are the source of truth: every write reaches Valkey at once and moves one marker.

Limit: writes through the ORM only. ``save``/``delete`` (signals), ``QuerySet.update`` and
``bulk_create`` push the changed rows after commit and bump ``RecurrenceMarker``; a Pump re-syncs
every row at start and whenever the marker moves, which also repairs a push lost to an outage.
A recurrence lives in the physical queue its group's jobs go to (``emq.core.topology``), so the
Pumps of a partitioned queue mint it where its workers claim.

The models are looked up through ``django.apps`` (this layer sits below ``emq.models``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.apps import apps
from django.db import transaction
from django.db.models import F

from ..core import registry, topology
from ..core.engine import Queue
from ..errors import EmqError
from . import repeat
from .cron import ScheduleError
from .definitions import definition

log = logging.getLogger("emq.recurrences")

Place = tuple[str, str, str]  # (name, logical queue, group) of a row as it was stored


def model(name: str) -> Any:
    return apps.get_model("emq", name)


def placement(queue: str, group: str | None) -> Queue:
    """The physical queue a recurrence of this queue and group lives (and mints) in."""
    return Queue(topology.of_group(queue, group))


def place_of(row: Any) -> Place:
    return (row.name, row.queue, row.group or "")


# -- write paths ---------------------------------------------------------------------------


def bump() -> None:
    """Move the change marker (inside the writer's transaction)."""
    marker_model = model("RecurrenceMarker")
    if not marker_model.objects.filter(pk=1).update(version=F("version") + 1):
        marker_model.objects.get_or_create(pk=1, defaults={"version": 1})


def marker() -> int:
    return model("RecurrenceMarker").objects.filter(pk=1).values_list("version", flat=True).first() or 0


def bulk_write(qs: Any, write: Callable[[], int]) -> int:
    """Run a queryset write, then push the rows it touched (found again by pk) after commit."""
    before = list(qs.values_list("name", "queue", "group"))
    pks = list(qs.values_list("pk", flat=True))
    n = write()
    changed(before, qs.model.objects.filter(pk__in=pks))
    return n


def changed(before: list[Place], rows: Any) -> None:
    """Bump the marker now; push the rows' new state (and drop their old places) after commit."""
    bump()
    transaction.on_commit(lambda: push(before, list(rows)))


def on_save(sender: Any, instance: Any, **kwargs: Any) -> None:
    before = [instance._loaded] if getattr(instance, "_loaded", None) else []
    instance._loaded = place_of(instance)
    changed(before, [instance])


def on_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    bump()
    transaction.on_commit(lambda: push([place_of(instance)], []))


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


def resync(queues: Iterable[str] = ()) -> int:
    """Make every queue's recurrences match the rows; returns the marker version it saw first."""
    seen = marker()
    wanted: dict[str, dict[str, Any]] = {}
    for row in model("Recurrence").objects.filter(enabled=True):
        try:
            wanted.setdefault(placement(row.queue, row.group).name, {})[row.name] = definition(row)
        except ScheduleError as exc:
            log.error("recurrence %s cannot be scheduled (%s); skipped", row.name, exc)
    logical = registry.known_queues() | {topology.logical(n) for n in [*queues, *wanted]}
    for name in topology.expand(sorted(logical)):
        q = Queue(name)
        mine = wanted.get(name, {})
        for gone in set(repeat.names(q)) - set(mine):
            repeat.drop(q, gone)
        for d in mine.values():
            registry.remember_queue(q)
            repeat.put(q, d)
    return seen
