"""What a redis-py error says about the server: a state to wait out, or a fault of the call itself.

The one place that reads redis-py's exceptions. A *state* (full, read-only, busy, loading, moving,
unreachable) is the server's for now, not the caller's: enqueue raises it as ``ServerFull`` or
``ServerUnavailable`` with what to do, and workers and Pumps back off and resume by themselves.
Anything else (a script error, a wrong type) is a fault of the call and propagates as it is, but
for what the server refuses in EMQ_URL itself (``misconfigured``: a password, a database number):
no wait mends those, so they are said at once and never waited on as an unreachable server.
"""

from __future__ import annotations

import redis
from redis import exceptions as rx

# state -> what an operator does about it (appended to the error's message)
STATES = {
    "full": "the server is at maxmemory (noeviction) and refuses writes: raise maxmemory, or drain or purge jobs",
    "readonly": "the server is a read-only replica (a failover under way?): point EMQ_URL at the primary",
    "busy": "the server is busy running a long script: wait for it, or SCRIPT KILL it",
    "loading": "the server is loading its data set after a restart: wait for it",
    "moving": "the queue's slot is moving between cluster nodes: wait for the migration",
    "noscript": "the server lost its script cache mid-call: the next call loads the scripts again",
    "unreachable": "start the server or set EMQ_URL to one that runs",
}

# what the server refuses in EMQ_URL -> what to do (no wait mends it)
MISCONFIGURED = {
    "auth": "authentication failed: check the user and password in EMQ_URL (or the server's requirepass/ACL)",
    "db": "the server has no database of that number (its `databases` setting, 16 by default: 0 to 15): "
          "use a lower number in EMQ_URL, or raise `databases`",
}

_CONNECTION = (redis.ConnectionError, redis.TimeoutError, rx.ClusterDownError, rx.SlotNotCoveredError,
               rx.MasterDownError)


def classify(exc: BaseException) -> str | None:
    """The server state an error reports, or None when it is a fault of the call itself."""
    if isinstance(exc, rx.OutOfMemoryError):
        return "full"
    if isinstance(exc, rx.BusyLoadingError):  # a ConnectionError subclass: before the generic case
        return "loading"
    if isinstance(exc, rx.ReadOnlyError):
        return "readonly"
    if isinstance(exc, (rx.TryAgainError, rx.AskError, rx.MovedError)):
        return "moving"
    if isinstance(exc, rx.NoScriptError):
        return "noscript"
    if isinstance(exc, _CONNECTION):
        return "unreachable"
    if isinstance(exc, rx.ResponseError):
        return _by_prefix(str(exc))
    if isinstance(exc, rx.RedisClusterException) and "connect" in str(exc):
        return "unreachable"  # a cluster client's way of saying no node answers
    return None


def misconfigured(exc: BaseException) -> str | None:
    """"auth" or "db" when the server refuses what EMQ_URL gives it (also as a cluster client's cause), else None."""
    for e in (exc, exc.__cause__):
        if isinstance(e, (rx.AuthenticationError, rx.AuthenticationWrongNumberOfArgsError)):
            return "auth"
        if isinstance(e, rx.ResponseError) and "DB index is out of range" in str(e):
            return "db"
    return None


def _by_prefix(message: str) -> str | None:
    """Errors redis-py has no class for, or that a script passes on as its own (``script: ...``)."""
    head = message.split(" ", 1)[0].upper()
    return {"OOM": "full", "BUSY": "busy", "LOADING": "loading", "READONLY": "readonly",
            "TRYAGAIN": "moving", "MASTERDOWN": "unreachable"}.get(head)


def advice(state: str) -> str:
    """What to do about a state, for an error message or a log line."""
    return STATES.get(state, "")
