"""A worker's entry in the registry the dashboard reads, refreshed on its own thread.

The entry lives TTL seconds and is refreshed every HEARTBEAT, so a killed worker's entry expires
by itself within TTL; a stopping worker removes it at once.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..core import keys
from ..core.connection import get_client, guard

log = logging.getLogger("emq.worker")
HEARTBEAT = 15  # seconds between refreshes; an idle worker's only steady traffic besides its park
TTL = 3 * HEARTBEAT  # seconds an entry lives without a refresh (the dashboard ages against it)


class Heartbeat:
    """Writes ``info()`` under the worker's key every HEARTBEAT seconds until closed."""

    def __init__(self, prefix: str, worker_id: str, info: Callable[[], dict[str, Any]]) -> None:
        self.prefix = prefix
        self.worker_id = worker_id
        self.info = info
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="emq-heartbeat", daemon=True)

    def start(self, beat: bool = True) -> None:
        if beat:
            self.beat()  # registered before the first claim; a server that is away fails the start
        self.thread.start()

    def beat(self) -> None:
        with guard():
            client = get_client()
            # The entry before the id: a reader drops an id whose entry is missing (core.registry.workers).
            client.set(keys.worker(self.prefix, self.worker_id), json.dumps(self.info()), ex=TTL)
            client.sadd(keys.registry_workers(self.prefix), self.worker_id)

    def close(self) -> None:
        """Stop beating and leave the registry (best effort: the entry expires anyway)."""
        self.stop.set()
        self.thread.join(timeout=2)
        try:
            client = get_client()
            client.srem(keys.registry_workers(self.prefix), self.worker_id)
            client.delete(keys.worker(self.prefix, self.worker_id))
        except Exception:  # leaving: the key expires by itself
            pass

    def _run(self) -> None:
        while not self.stop.wait(HEARTBEAT):
            try:
                self.beat()
            except Exception as exc:  # an outage: the worker's loop reports it; try again next beat
                log.debug("heartbeat failed: %s", exc)


def describe(w: Any) -> dict[str, Any]:
    """A worker's registry entry, as the dashboard lists it."""
    return {"id": w.id, "host": socket.gethostname(), "pid": os.getpid(), "queues": [q.name for q in w.queues],
            "concurrency": w.concurrency, "running": w.running, "processed": w.processed}
