"""emq's settings, read lazily from Django settings with their defaults.

Read through ``conf.get(name)`` at call time, never at import time, so tests that use
``override_settings`` see their values; ``apps.py`` clears cached clients on ``setting_changed``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "EMQ_URL": "",  # redis:// or rediss:// URL; empty = embedded Valkey in EMQ_DATA_DIR
    "EMQ_CLUSTER": False,  # EMQ_URL names a node of a Valkey/Redis Cluster
    "EMQ_PREFIX": "emq",  # first part of every key
    "EMQ_DATA_DIR": None,  # embedded Valkey's folder; default <BASE_DIR>/.emq
    "EMQ_IMPORTS": [],  # modules holding jobs, imported at worker start besides <app>.jobs
    "EMQ_MAX_PAYLOAD": 1024 * 1024,  # bytes of JSON arguments per job
    "EMQ_RESULT_TTL": 24 * 3600,  # seconds a completed job is kept
    "EMQ_KEEP_COMPLETED": 100_000,  # at most this many completed jobs kept per queue
    "EMQ_DEFAULT_QUEUE": "default",
    "EMQ_MAX_ATTEMPTS": 3,
    "EMQ_BACKOFF": (1.0, 300.0),  # seconds: base and cap of the exponential, fully jittered delay
    "EMQ_LEASE": 30.0,  # seconds
    "EMQ_MAX_STALLED": 1,  # reclaims of a job before it is dead as "stalled"
    "EMQ_GROUP_LIMITS": {},  # {"queue": {"group": cap}}
    # Seconds a Pump parks at most between ticks. Every duty wakes it anyway (an earlier due time,
    # a lease expiring sooner, a new recurrence), so this bounds idle traffic, not lateness; its
    # lead lasts 2x this without a tick, which bounds how soon a crashed leader is replaced.
    "EMQ_PUMP_PARK": 15.0,
    "EMQ_REPEAT_GRACE": 60.0,  # seconds late an occurrence may be minted before it counts as missed
    "EMQ_REPEAT_CATCHUP": 100,  # most missed occurrences one catch-up mints under missed="all"
    "EMQ_RECURRENCES": [],  # recurrences declared in settings: dicts of Recurrence fields, upserted as rows
    "EMQ_GRACE": 30.0,  # seconds a stopping worker waits for running jobs
    "EMQ_EAGER": False,  # run jobs inline at enqueue, in the caller's process (tests, scripts)
    "EMQ_ASYNC_SLOTS": 100,  # async def jobs a worker runs at once on its event loop, besides its threads
    "EMQ_PARTITIONS": {},  # {"queue": k}: k sub-queues queue#0..queue#k-1, one slot each (emq.partitions)
}


def get(name: str) -> Any:
    """Return an emq setting: the project's value, else the default."""
    return getattr(settings, name, DEFAULTS[name])
