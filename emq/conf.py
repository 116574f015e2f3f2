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
    # Seconds a Pump parks at most between ticks; its lead lasts 3x this without a tick, so a
    # crashed leader is replaced within that. Every duty wakes it anyway (earlier due time,
    # earlier lease expiry), so this bounds idle traffic, not lateness (see bench/).
    "EMQ_PUMP_PARK": 20.0,
    "EMQ_GRACE": 30.0,  # seconds a stopping worker waits for running jobs
}


def get(name: str) -> Any:
    """Return an emq setting: the project's value, else the default."""
    return getattr(settings, name, DEFAULTS[name])
