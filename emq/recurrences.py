"""Recurrence rows are the source of truth: every write reaches Valkey at once and moves one marker.

Limit: writes through the ORM only. ``save``/``delete`` (signals), ``QuerySet.update`` and
``bulk_create`` push the changed rows after commit and bump ``RecurrenceMarker``; a Pump re-syncs
every row at start and whenever the marker moves, which also repairs a push lost to an outage.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import F

from . import conf
from .connection import get_client, guard
from .engine import Queue
from .errors import EmqError
from .jobs import remember_queue
from .keys import registry_queues
from .repeat import Definition, Minted, drop, names, put
from .schedule import Schedule, ScheduleError, from_ms, zone

log = logging.getLogger("emq.recurrences")
CHECK_EVERY = 1.0  # seconds between a Pump's looks at the change marker (one indexed read)


def validate(row: Any) -> None:
    """Raise ValidationError for whatever would stop the Pump from scheduling this row."""
    errors: dict[str, str] = {}
    if row.cron and row.every:
        errors["every"] = "Give either a cron expression or an interval (every), not both."
    elif not row.cron and not row.every:
        errors["cron"] = "Give a cron expression (e.g. '0 3 * * *') or an interval (every)."
    try:
        zone(row.timezone)
    except ScheduleError as exc:
        errors["timezone"] = str(exc)
    if not errors:
        try:
            schedule_of(row)
        except ScheduleError as exc:
            errors["cron" if row.cron else "every"] = str(exc)
    errors.update(_check_job(row.job))
    if not isinstance(row.args, list):
        errors["args"] = "args must be a JSON list, e.g. [1, \"a\"]."
    if not isinstance(row.kwargs, dict):
        errors["kwargs"] = "kwargs must be a JSON object, e.g. {\"n\": 1}."
    if not row.queue or "{" in row.queue or "}" in row.queue:
        errors["queue"] = "A queue name must be non-empty and without braces (they are the hash tag)."
    if errors:
        raise ValidationError(errors)


def _check_job(name: str) -> dict[str, str]:
    from .apps import autodiscover
    from .jobs import registry

    autodiscover()
    if name in registry:
        return {}
    near = sorted(n for n in registry if n.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1])
    hint = f" Did you mean {near[0]!r}?" if near else " Register it with @emq.job in <app>/jobs.py or EMQ_IMPORTS."
    return {"job": f'No job registered as "{name}".{hint}'}


def schedule_of(row: Any) -> Schedule:
    every_ms = int(row.every.total_seconds() * 1000) if row.every else 0
    return Schedule(row.cron.strip(), every_ms, row.timezone)


def definition(row: Any) -> Definition:
    """The Valkey definition of a row (ScheduleError when the row cannot be scheduled)."""
    s = schedule_of(row)
    return Definition(
        name=row.name, job=row.job, cron=s.cron, every_ms=s.every_ms, tz=s.tz, args=tuple(row.args or ()),
        kwargs=dict(row.kwargs or {}), group=row.group, missed=row.missed, key=s.key,
    )


# -- write paths ---------------------------------------------------------------------------


def bump() -> None:
    """Move the change marker (inside the writer's transaction)."""
    from .models import RecurrenceMarker

    if not RecurrenceMarker.objects.filter(pk=1).update(version=F("version") + 1):
        RecurrenceMarker.objects.get_or_create(pk=1, defaults={"version": 1})


def marker() -> int:
    from .models import RecurrenceMarker

    return RecurrenceMarker.objects.filter(pk=1).values_list("version", flat=True).first() or 0


def bulk_write(qs: Any, write: Callable[[], int]) -> int:
    """Run a queryset write, then push the rows it touched (found again by pk) after commit."""
    before = list(qs.values_list("name", "queue"))
    pks = list(qs.values_list("pk", flat=True))
    n = write()
    changed(before, qs.model.objects.filter(pk__in=pks))
    return n


def changed(before: list[tuple[str, str]], rows: Any) -> None:
    """Bump the marker now; push the rows' new state (and drop their old places) after commit."""
    bump()
    transaction.on_commit(lambda: push(before, list(rows)))


def on_save(sender: Any, instance: Any, **kwargs: Any) -> None:
    before = [instance._loaded] if getattr(instance, "_loaded", None) else []
    instance._loaded = (instance.name, instance.queue)
    changed(before, [instance])


def on_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    bump()
    transaction.on_commit(lambda: push([(instance.name, instance.queue)], []))


def push(before: Iterable[tuple[str, str]], rows: Iterable[Any]) -> None:
    """Make Valkey match these rows now; on failure the Pump's re-sync repairs it (marker moved)."""
    try:
        placed = set()
        for row in rows:
            placed.add((row.name, row.queue))
            _place(row)
        for name, queue in set(before) - placed:
            drop(Queue(queue), name)
    except EmqError as exc:
        log.warning("recurrences not pushed to Valkey (%s); the Pump re-syncs them", exc)
    except Exception:  # the row is committed: report, never fail the save; the Pump re-syncs
        log.exception("recurrences not pushed to Valkey; the Pump re-syncs them")


def _place(row: Any) -> None:
    q = Queue(row.queue)
    if not row.enabled:
        drop(q, row.name)
        return
    try:
        d = definition(row)
    except ScheduleError as exc:
        log.error("recurrence %s cannot be scheduled (%s); it mints nothing until fixed", row.name, exc)
        drop(q, row.name)
        return
    remember_queue(q)
    put(q, d)


def run_now(row: Any) -> str:
    """Mint one job of this recurrence at once, outside its schedule; returns the job id."""
    from .repeat import run_now as mint_now

    q = Queue(row.queue)
    remember_queue(q)
    return mint_now(q, definition(row))


# -- the Pump's side -----------------------------------------------------------------------


def resync(queues: Iterable[str] = ()) -> int:
    """Make every queue's recurrences match the rows; returns the marker version it saw first."""
    from .models import Recurrence

    seen = marker()
    wanted: dict[str, dict[str, Definition]] = {}
    for row in Recurrence.objects.filter(enabled=True):
        try:
            wanted.setdefault(row.queue, {})[row.name] = definition(row)
        except ScheduleError as exc:
            log.error("recurrence %s cannot be scheduled (%s); skipped", row.name, exc)
    prefix = conf.get("EMQ_PREFIX")
    with guard():
        known = set(get_client().smembers(registry_queues(prefix)))
    for name in known | set(queues) | set(wanted):
        q = Queue(name)
        mine = wanted.get(name, {})
        for gone in set(names(q)) - set(mine):
            drop(q, gone)
        for d in mine.values():
            remember_queue(q)
            put(q, d)
    return seen


def upsert_declared() -> int:
    """Upsert the recurrences declared in code and in EMQ_RECURRENCES as rows; returns rows written."""
    from .jobs import declared, registry

    items = [
        {"name": name, "job": name, "queue": registry[name].queue, **spec}
        for name, spec in declared.items() if name in registry
    ]
    items += [dict(item) for item in conf.get("EMQ_RECURRENCES")]
    written = 0
    for item in items:
        try:
            written += _upsert(item)
        except (ValidationError, TypeError, ValueError) as exc:
            log.error("declared recurrence %s is invalid and was not saved: %s", item.get("name"), exc)
    return written


def _upsert(item: dict[str, Any]) -> int:
    from .models import Recurrence

    every = item.get("every")
    if every is not None and not isinstance(every, timedelta):
        item["every"] = timedelta(seconds=float(every))
    row = Recurrence.objects.filter(name=item["name"]).first() or Recurrence(name=item["name"])
    before = {f: getattr(row, f, None) for f in item} | {"declared_in_code": row.declared_in_code}
    for field, value in item.items():
        setattr(row, field, value)
    if "cron" in item and "every" not in item:
        row.every = None
    if "every" in item and "cron" not in item:
        row.cron = ""
    row.declared_in_code = True
    if row.pk and before == {f: getattr(row, f) for f in before}:
        return 0
    row.full_clean()
    row.save()
    return 1


def _close_thread_connection() -> None:
    """Close this thread's database connection as the thread ends.

    Django ignores close() on an in-memory SQLite database (a test database), so its handle is
    closed directly; otherwise Python 3.13 reports it unclosed when the thread's state is freed.
    """
    with contextlib.suppress(Exception):  # a thread that never reached the database has nothing to close
        connection.close()
        if connection.connection is not None:
            connection.connection.close()
            connection.connection = None


class RowSync:
    """A Pump's link to the rows, on its own thread so no database call ever delays a mint.

    At start it upserts the declared recurrences and re-syncs every row; then, once a second
    while its Pump leads a queue, it re-syncs when the marker moved and writes the mints'
    read-only fields to the rows. Following Pumps (one in every worker) leave the database
    alone: the save signals already push each change, the marker only repairs a lost push.
    """

    def __init__(self, queues: Iterable[str]) -> None:
        self.queues = list(queues)
        self.seen: int | None = None
        self._lock = threading.Lock()
        self._minted: dict[str, Minted] = {}
        self._last_error = ""

    def start(self) -> None:
        self._guarded(upsert_declared)
        self.check()

    def run(self, stop: threading.Event, leading: Callable[[], bool]) -> None:
        """While leading, look at the marker and record mints every CHECK_EVERY seconds until stop."""
        while not stop.wait(CHECK_EVERY):
            if leading():
                self.check()
            self._guarded(self._write_minted)  # only a leader mints, so only a leader has anything here
        _close_thread_connection()

    def check(self) -> None:
        """Re-sync every row when the marker moved since the last sync."""
        with self._lock:
            self._guarded(self._check)

    def _check(self) -> None:
        if self.seen is None or marker() != self.seen:
            self.seen = resync(self.queues)

    def record(self, minted: Iterable[Minted]) -> None:
        """Queue what the Pump minted for the rows' last_minted_at / next_at (written by run)."""
        with self._lock:
            for m in minted:
                old = self._minted.get(m.name)
                last = m.last_ms if m.last_ms is not None else (old.last_ms if old else None)
                self._minted[m.name] = Minted(m.name, m.created, last, m.next_ms)

    def _write_minted(self) -> None:
        from .models import Recurrence

        with self._lock:
            minted, self._minted = self._minted, {}
        for m in minted.values():
            last = from_ms(m.last_ms) if m.last_ms is not None else None
            Recurrence.objects.record_minted(m.name, last, from_ms(m.next_ms))

    def _guarded(self, step: Callable[[], Any]) -> None:
        try:
            close_old_connections()
            step()
            self._last_error = ""
        except (DatabaseError, EmqError) as exc:
            self._note(exc, "recurrence rows: %s (run migrate?); retrying")
        except Exception as exc:  # the Pump's other duties go on whatever the rows do
            self._note(exc, "recurrence rows cannot be read: %r; retrying")
        finally:
            with contextlib.suppress(Exception):  # nothing to close when the database was never reached
                close_old_connections()

    def _note(self, exc: Exception, message: str) -> None:
        if str(exc) != self._last_error:  # once per distinct error, not once a second
            log.warning(message, exc)
        self._last_error = str(exc)
