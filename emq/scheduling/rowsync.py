"""A Pump's link to the recurrence rows: declared rows upserted, re-syncs when the marker moves.

It runs on its own thread so no database call ever delays a mint (see ``RowSync``). The commands
that start a Pump build it with the rows' store and hand it in: the runtime knows no rows exist.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, connections

from ..core import config
from ..errors import EmqError
from ..jobs import declared, registry
from .cron import from_ms
from .repeat import Minted
from .rows import Store, resync

log = logging.getLogger("emq.recurrences")
CHECK_EVERY = 1.0  # seconds between a leading Pump's looks at the change marker (one indexed read)
# Seconds between looks at most while the rows cannot be read (no table: not migrated; database away).
# A failed read holds the GIL for milliseconds (the error raised through Django's wrappers): once a second,
# it delayed the jobs that started meanwhile (docs/reference/performance.md). The pause doubles from
# CHECK_EVERY up to this.
BACKOFF_MAX = 30.0


def upsert_declared(store: Store) -> int:
    """Upsert the recurrences declared in code and in EMQ_RECURRENCES as rows; returns rows written."""
    items = [
        {"name": name, "job": name, "queue": registry[name].queue, **spec}
        for name, spec in declared.items() if name in registry
    ]
    items += [dict(item) for item in config.get("EMQ_RECURRENCES")]
    written = 0
    for item in items:
        try:
            written += _upsert(store, item)
        except (ValidationError, TypeError, ValueError) as exc:
            log.error("declared recurrence %s is invalid and was not saved: %s", item.get("name"), exc)
    return written


def _upsert(store: Store, item: dict[str, Any]) -> int:
    every = item.get("every")
    if every is not None and not isinstance(every, timedelta):
        item["every"] = timedelta(seconds=float(every))
    row = store.filter(name=item["name"]).first() or store.model(name=item["name"])
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


def _close_stale() -> None:
    """``close_old_connections``, but never inside a transaction: ``start`` runs in its caller's thread, which
    may be a test's (``emq.testing.run_until_empty`` in a TestCase), and Django closes a connection whose
    autocommit differs from its settings', so the test's transaction went with it (PostgreSQL said so)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


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

    def __init__(self, store: Store) -> None:
        self.store = store
        self.queues: list[str] = []
        self.seen: int | None = None
        self._lock = threading.Lock()
        self._minted: dict[str, Minted] = {}
        self._last_error = ""
        self.pause = CHECK_EVERY  # seconds until the next look; doubles while they fail

    def start(self, queues: Iterable[str]) -> None:
        """Upsert the declared recurrences and re-sync every row, for the Pump of these (physical) queues."""
        self.queues = list(queues)
        self._guarded(lambda: upsert_declared(self.store))
        self.check()

    def run(self, stop: threading.Event, leading: Callable[[], bool]) -> None:
        """While leading, look at the marker and record mints every CHECK_EVERY seconds until stop (less
        often while the rows cannot be read: ``BACKOFF_MAX``)."""
        while not stop.wait(self.pause):
            read = self.check() if leading() else True
            wrote = self._guarded(self._write_minted)  # only a leader mints, so only a leader has anything here
            self.pause = CHECK_EVERY if read and wrote else min(self.pause * 2, BACKOFF_MAX)
        _close_thread_connection()

    def check(self) -> bool:
        """Re-sync every row when the marker moved since the last sync; False when the rows cannot be read."""
        with self._lock:
            return self._guarded(self._check)

    def _check(self) -> None:
        if self.seen is None or self.store.marker() != self.seen:
            self.seen = resync(self.store, self.queues)

    def record(self, minted: Iterable[Minted]) -> None:
        """Queue what the Pump minted for the rows' last_minted_at / next_at (written by run)."""
        with self._lock:
            for m in minted:
                old = self._minted.get(m.name)
                last = m.last_ms if m.last_ms is not None else (old.last_ms if old else None)
                self._minted[m.name] = Minted(m.name, m.created, last, m.next_ms)

    def _write_minted(self) -> None:
        with self._lock:
            minted, self._minted = self._minted, {}
        for m in minted.values():
            last = from_ms(m.last_ms) if m.last_ms is not None else None
            self.store.record_minted(m.name, last, from_ms(m.next_ms))

    def _guarded(self, step: Callable[[], Any]) -> bool:
        try:
            _close_stale()
            step()
            self._last_error = ""
            return True
        except (DatabaseError, EmqError) as exc:
            self._note(exc, "recurrence rows: %s (run migrate?); retrying")
        except Exception as exc:  # the Pump's other duties go on whatever the rows do
            self._note(exc, "recurrence rows cannot be read: %r; retrying")
        finally:
            with contextlib.suppress(Exception):  # nothing to close when the database was never reached
                _close_stale()
        return False

    def _note(self, exc: Exception, message: str) -> None:
        if str(exc) != self._last_error:  # once per distinct error, not once a second
            log.warning(message, exc)
        self._last_error = str(exc)
