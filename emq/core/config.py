"""emq's settings and their defaults, read at call time through one installed reader.

The core knows no Django: ``emq/conf.py`` installs a reader over ``django.conf.settings`` when
the ``emq`` package is imported, so ``override_settings`` in tests is seen at once. Without a
reader (the core used on its own) every setting has its default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEFAULTS: dict[str, Any] = {
    "EMQ_URL": "",  # redis:// or rediss:// URL; empty = embedded Valkey in EMQ_DATA_DIR
    "EMQ_CLUSTER": False,  # EMQ_URL names a node of a Valkey/Redis Cluster
    "EMQ_PREFIX": "emq",  # first part of every key
    "EMQ_DATA_DIR": None,  # embedded Valkey's folder; default <BASE_DIR>/.emq
    "EMQ_IMPORTS": [],  # modules holding jobs, imported at worker start besides <app>.jobs
    "EMQ_MAX_PAYLOAD": 1024 * 1024,  # bytes of JSON arguments per job
    "EMQ_RESULT_TTL": 24 * 3600,  # seconds a completed job is kept
    "EMQ_KEEP_COMPLETED": 100_000,  # at most this many completed jobs kept per queue (cancelled ones apart)
    "EMQ_DEAD_TTL": 30 * 24 * 3600,  # seconds a dead job is kept in the dead-letter set
    "EMQ_KEEP_DEAD": 100_000,  # at most this many dead jobs kept per queue
    "EMQ_DEFAULT_QUEUE": "default",
    "EMQ_MAX_ATTEMPTS": 3,
    "EMQ_BACKOFF": (1.0, 300.0),  # seconds: base and cap of the exponential, fully jittered delay
    "EMQ_LEASE": 30.0,  # seconds
    "EMQ_MAX_STALLED": 1,  # reclaims of a job before it is dead as "stalled"
    "EMQ_DEFAULT_TIMEOUT": 3600.0,  # seconds an attempt may run (a job's timeout= overrides); None = no limit
    # Seconds a stopped attempt's thread (time limit, cancel) may take to return, at least, before it counts
    # as abandoned (as long again as it had run, when longer): its slot already has a fresh thread, its late
    # finish is fenced off (stale), and the recycle it may lead to drains the worker for up to EMQ_GRACE.
    "EMQ_TIMEOUT_GRACE": 30.0,
    "EMQ_MAX_ABANDONED": 4,  # abandoned threads stuck at once after which a worker drains and exits 75 (0: never)
    "EMQ_GROUP_LIMITS": {},  # {"queue": {"group": cap}}
    "EMQ_RATE_LIMITS": {},  # {"queue": {"group" | "*" | None: "100/60"}}: starts per seconds (core/rates.py)
    "EMQ_QUOTAS": {},  # {"queue": {"group" | "*" | None: max}}: jobs not yet finished per group (core/quotas.py)
    # Seconds a Pump parks at most between ticks. Every duty wakes it anyway (an earlier due time,
    # a lease expiring sooner, a new recurrence), so this bounds idle traffic, not lateness; its
    # lead lasts 2x this without a tick, which bounds how soon a crashed leader is replaced.
    "EMQ_PUMP_PARK": 15.0,
    # Seconds of a server stall (a fork, a slow script, a paused VM) whose expired leases the Pump
    # forgives: each gets one more lease period once the server serves again (tick.lua); 0: none.
    "EMQ_STALL_GRACE": 60.0,
    "EMQ_REPEAT_GRACE": 60.0,  # seconds late an occurrence may be minted before it counts as missed
    "EMQ_REPEAT_CATCHUP": 100,  # most missed occurrences one catch-up mints under missed="all"
    "EMQ_RECURRENCES": [],  # recurrences declared in settings: dicts of Recurrence fields, upserted as rows
    "EMQ_GRACE": 30.0,  # seconds a stopping worker waits for running jobs
    # Seconds a job whose name no worker that claims it knows (new code minted it, old workers run: a rolling
    # deploy) is given back without spending an attempt, from the first time, on the server clock; then dead.
    "EMQ_UNKNOWN_GRACE": 600.0,
    # (first, cap) seconds such a job is held off each time: about as long as it has been unknown so far.
    "EMQ_UNKNOWN_DELAY": (1.0, 60.0),
    # @emq.job's enqueue inside transaction.atomic() mints when it commits, never on rollback (a job's
    # on_commit= overrides it). Off: enqueue returns once the job exists. The Tasks backend has its own
    # OPTIONS["ENQUEUE_ON_COMMIT"], on by default.
    "EMQ_ENQUEUE_ON_COMMIT": False,
    "EMQ_EAGER": False,  # run jobs inline at enqueue, in the caller's process (tests, scripts)
    "EMQ_ASYNC_SLOTS": 100,  # async def jobs a worker runs at once on its event loop, besides its threads
    "EMQ_MASK": None,  # regex of parameter names whose values the dashboard masks; None: emq's default
    # Encryption at rest (emq.core.sealed): every job's arguments, result, error and progress note are
    # stored encrypted (a job's encrypt= overrides it), with EMQ_ENCRYPTION_KEYS: Fernet keys, newest first.
    "EMQ_ENCRYPT": False,
    # The format a new job's record is written in: "1", a hash; "2", one packed value (cheaper to claim and
    # finish; emq/lua/_record.lua). Every release since 0.3 reads both: set "2" once no older process runs.
    "EMQ_RECORD_FORMAT": "1",
    "EMQ_ENCRYPTION_KEYS": [],
    # Enqueue returns only once its jobs survive more than the server's memory (emq.core.durable):
    # "fsync" = in the server's AOF on disk (WAITAOF 1 0), "replica" = on a replica (WAIT 1); "" = off.
    "EMQ_DURABLE": "",
    "EMQ_DURABLE_TIMEOUT": 1.0,  # seconds an enqueue waits for that confirmation before raising NotDurable
    "EMQ_PARTITIONS": {},  # {"queue": k}: k sub-queues queue#0..queue#k-1, one slot each (emq.core.topology)
    "EMQ_LOG_FORMAT": "text",  # "json": one JSON object a line from emq_worker, emq_pump and emq_up
    "EMQ_LOG_COMPLETED": True,  # a worker logs each completed job at INFO with its duration
    "EMQ_METRICS_TOKEN": "",  # bearer token that may read emq.metrics.view besides staff users
    "EMQ_METRICS_PORT": None,  # emq_worker serves its per-worker histograms on this port (--metrics-port)
    # Seconds emq_worker and emq_pump wait for an unreachable server at start-up, saying so once,
    # before they give up (None: wait until it answers or they are stopped; 0: fail at once).
    "EMQ_STARTUP_WAIT": None,
    # Every state change is appended to a capped stream per queue by the script that makes it
    # (emq.events(), the dashboard's live pages): one XADD a script call, off by default.
    "EMQ_EVENTS": False,
    "EMQ_EVENTS_MAX": 10_000,  # stream entries kept per queue, about (XADD MAXLEN ~); an entry: one call's changes
    # The optional HTTP API (emq.api, mounted by the project's urls): bearer tokens by client name,
    # {"deploy-bot": {"token": "...", "scopes": ["read", "enqueue", "control"]}}, and its limits.
    "EMQ_API_TOKENS": {},
    "EMQ_API_MAX_BODY": 1024 * 1024,  # bytes of a request body; a larger one is refused (413) unread
    "EMQ_API_EVENTS_SECONDS": 25.0,  # seconds one event stream lasts before the client reconnects
    "EMQ_API_EVENTS_HEARTBEAT": 10.0,  # seconds of quiet after which an event stream sends a comment line
}

Reader = Callable[[str, Any], Any]
_reader: Reader | None = None
# Values derived from settings on the hot paths (an enqueue's plan, the script for EMQ_EVENTS, the
# client's key) are kept with the epoch they were worked out in, and worked out again once it moved.
# It moves on ``changed`` (Django's ``setting_changed``, which ``emq/conf.py`` connects) and when
# the object the settings are read from is another one (override_settings swaps it, and a setting
# deleted through pytest-django's fixture sends no signal).
epoch = 0
_memo: dict[Any, Any] = {}
_source: Callable[[], Any] | None = None
_seen: Any = None


def install(reader: Reader, source: Callable[[], Any] | None = None) -> None:
    """Read settings through reader(name, default) from now on (``emq/conf.py`` installs Django's);
    source() returns the object they are read from, whose replacement means they changed."""
    global _reader, _source
    _reader, _source = reader, source
    changed()


def get(name: str) -> Any:
    """Return an emq setting: the project's value, else the default."""
    default = DEFAULTS[name]
    return default if _reader is None else _reader(name, default)


def changed() -> None:
    """A setting changed: forget every value derived from settings (``memo``, ``current_epoch``)."""
    global epoch
    _memo.clear()
    epoch += 1


def current_epoch() -> int:
    """The settings' epoch now: a value kept with an older one is stale."""
    global _seen
    source = None if _source is None else _source()
    if source is not _seen:
        _seen = source
        changed()
    return epoch


def memo(key: Any, build: Callable[..., Any], *args: Any) -> Any:
    """``build(*args)``, a value derived from settings, worked out once until a setting changes."""
    current_epoch()
    try:
        return _memo[key]
    except KeyError:
        value = _memo[key] = build(*args)
        return value
