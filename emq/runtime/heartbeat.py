"""A worker's entry in the registry the dashboard reads, refreshed on its own thread, which also brings the
worker the settings operators store for it (``emq.core.overrides``).

The entry lives TTL seconds and is refreshed every HEARTBEAT, so a killed worker's entry expires
by itself within TTL; a stopping worker removes it at once. Between two beats the thread blocks on the
worker's wake list, not on a timer: a stored change pushes a token there, so the worker reads the settings
at once (well within 2 s), and an idle worker sends no more than before: the pop and the entry's refresh
every HEARTBEAT (where it sent the refresh and a SADD), and a read of the settings every SETTINGS_EVERY beats
besides, in case a token was lost (a worker killed between its pop and its read).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core import keys, overrides, registry
from ..core.connection import disconnect, get_client, new_client
from ..jobs import registry as jobs_registry

log = logging.getLogger("emq.worker")
HEARTBEAT = 15  # seconds between refreshes; an idle worker's only steady traffic besides its park
TTL = 3 * HEARTBEAT  # seconds an entry lives without a refresh (the dashboard ages against it)
SETTINGS_EVERY = 20  # beats between two reads of the stored settings that no token asked for (5 min)
STARTED = time.time()  # this process's start, for the entry's uptime


class Heartbeat:
    """Writes ``info()`` under the worker's key every HEARTBEAT seconds until closed; hands the settings
    stored for the worker to ``on_settings`` at its first beat and whenever they change."""

    def __init__(self, prefix: str, worker_id: str, info: Callable[[], dict[str, Any]],
                 on_settings: Callable[[overrides.Override], None] | None = None) -> None:
        self.prefix = prefix
        self.worker_id = worker_id
        self.info = info
        self.on_settings = on_settings
        self.stop = threading.Event()
        self.client: Any = None  # its own connection, for the blocking pop (made at start)
        self.thread = threading.Thread(target=self._run, name="emq-heartbeat", daemon=True)
        self.beats = 0

    def start(self, beat: bool = True) -> None:
        if beat:
            self.beat()  # registered before the first claim; a server that is away fails the start
        self.client = new_client(block=HEARTBEAT)
        self.thread.start()

    def beat(self, settings: bool = True, client: Any = None) -> None:
        """Refresh the entry; with settings, read the stored ones and hand over what applies to this worker.
        client: the connection to use (the shared one by default: a beat from another thread, the loop's)."""
        stored = registry.beat(self.prefix, self.worker_id, self.info(), TTL, settings and self.on_settings is not None,
                               client)
        if stored is not None and self.on_settings is not None:
            self.on_settings(overrides.effective(self.worker_id, overrides.parse(stored)))

    def close(self) -> None:
        """Stop beating and leave the registry (best effort: the entry expires anyway)."""
        self.stop.set()
        if self.client is not None:
            try:
                disconnect(self.client)  # cuts the blocking pop short
            except Exception:  # closing a socket another thread reads may raise; it is closed anyway
                pass
        if self.thread.is_alive():
            self.thread.join(timeout=2)
        try:
            client = get_client()
            client.srem(keys.registry_workers(self.prefix), self.worker_id)
            client.delete(keys.worker(self.prefix, self.worker_id), keys.worker_wake(self.prefix, self.worker_id))
        except Exception:  # leaving: the key expires by itself
            pass

    def _run(self) -> None:
        unread = False  # a token popped whose settings were not read yet (the read failed)
        while not self.stop.is_set():
            try:
                woken = bool(self.client.blpop([keys.worker_wake(self.prefix, self.worker_id)], timeout=HEARTBEAT))
            except Exception as exc:  # an outage (or the close): the beat below tries, then a pause
                if self.stop.is_set():
                    return
                log.debug("heartbeat wait failed: %s", exc)
                woken = False
                self.stop.wait(HEARTBEAT / 3)
            if self.stop.is_set():
                return
            self.beats += 1
            unread = unread or woken
            try:
                # On the thread's own connection, idle between its pops: on the shared one, a beat at the moment of
                # the Pump's tick (both on one period from the start) made the pool open a second connection.
                self.beat(settings=unread or self.beats % SETTINGS_EVERY == 0, client=self.client)
                unread = False
            except Exception as exc:  # an outage: the worker's loop reports it; try again next beat
                log.debug("heartbeat failed: %s", exc)


def rss_bytes() -> int | None:
    """This process's resident memory now (Linux /proc), or None where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def describe(worker_id: str, queues: Sequence[str], concurrency: int, running: int, processed: int,
             **extra: Any) -> dict[str, Any]:
    """A worker's registry entry, as the dashboard and ``emq workers`` list it; "jobs": the job names it
    knows, which ``emq status`` and the dashboard compare with the names of held jobs (``core.unknown``)."""
    # The package's version, written in emq/__init__.py, which an import from here would make an upward edge of
    # the layers; loaded it is, before any module of it.
    version = getattr(sys.modules.get("emq"), "__version__", None)
    return {"id": worker_id, "host": socket.gethostname(), "pid": os.getpid(), "version": version,
            "queues": list(queues), "concurrency": concurrency, "running": running, "processed": processed,
            "rss": rss_bytes(), "started": int(STARTED), "jobs": sorted(jobs_registry), **extra}
