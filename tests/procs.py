"""Real worker processes for tests about processes: signals, kills, several workers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEST_SECRET_KEY = "test-only-key-for-the-suites-worker-processes-not-a-secret"


def manage(env: dict, *args: str, **popen) -> subprocess.Popen:
    """Start ``manage.py <args>`` against the test's server and prefix.

    The process gets an empty database unless env names one: its Pump must not sync the
    developer's recurrence rows into the test's prefix.
    """
    full = {**os.environ, "DATABASE_URL": "sqlite://:memory:", "EMQ_IMPORTS": "tests.jobs", **env}
    full.setdefault("SECRET_KEY", TEST_SECRET_KEY)  # DEBUG is off: the settings refuse the development key
    full["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=full, **popen)


def wait_for(condition: Callable[[], object], timeout: float = 10.0, every: float = 0.01, what: str = "") -> object:
    """Poll condition until it is truthy or the deadline passes (then fail, saying what)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(every)


def expire(q, claimed, ms: int = 1) -> None:
    """Make the leases of claimed jobs run out ms from now (leases shorter than 1 s are refused at enqueue)."""
    q.extend_locks([(c.id, c.token) for c in claimed], ms)


def server_ms(client) -> int:
    """The server's clock in ms (on a cluster, a primary's: the nodes of one machine share a clock)."""
    import redis

    if isinstance(client, redis.RedisCluster):
        sec, usec = client.time(target_nodes=client.get_primaries()[0])
    else:
        sec, usec = client.time()
    return sec * 1000 + usec // 1000


@contextlib.contextmanager
def running(worker: Any) -> Iterator[Any]:
    """An in-process Worker run on a thread for the block; stopped, and its thread joined, after it."""
    t = threading.Thread(target=worker.run, daemon=True)
    t.start()
    try:
        yield worker
    finally:
        worker.stop()
        t.join(timeout=10)


def no_new_connection(raw: Any) -> bool:
    """True when no client connected to a private server in half a second (its INFO commandstats, reset here):
    on a loaded machine a worker's later threads (its Pump, its cancel subscriber) connect after it first
    parks. The half second is what is measured, so wait on it with ``wait_for``, not instead of it."""
    raw.config_resetstat()
    time.sleep(0.5)
    return "cmdstat_hello" not in raw.info("commandstats")
