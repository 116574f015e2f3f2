"""Wait for a job's end (or a batch's) without polling: ``JobRef.wait`` and ``wait_async``.

The waiter registers on the server (``flow_wait.lua``: a job that has ended answers at once), then
parks on a blocking pop of ``finished:<id>``, which the end of the job pushes in the same script
that records it. It puts the token back for any other waiter (the list expires with the job's
result). The pop blocks at most ``SLICE`` seconds a call: the shared clients read with redis-py's
5 s socket timeout (which guards every other call against a hung server), so a longer wait is a
pop every 4 s, not a TimeoutError from the socket.

A server that goes away meanwhile (a restart, a failover) is waited out, trying again with a
growing pause (at most MAX_PAUSE), until the wait's own deadline: only an outage that outlasts
the timeout ends the wait, with the ServerUnavailable that says why. A waiter without a timeout
waits the outage out too, as it would wait for the job.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import redis.asyncio

from ..errors import JobNotFound, ServerUnavailable
from . import config
from .connection import guard, server_url
from .engine import Queue

SLICE = 4.0  # seconds one blocking pop may last: under the clients' 5 s socket timeout
FIRST_PAUSE, MAX_PAUSE = 0.05, 1.0  # seconds between two tries while the server is away
SETTLED = frozenset({"completed", "dead", "cancelled", "failed"})  # "failed": a batch that settled with failures
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _ttl_ms() -> int:
    return int(config.get("EMQ_RESULT_TTL") * 1000)


def _registered(q: Queue, job_id: str) -> str:
    state = q.live.watch(job_id, _ttl_ms())
    if state == "missing":
        raise JobNotFound(f"no job or batch {job_id!r} in queue {q.name!r} (prefix {q.keys.prefix!r}) to wait for")
    return state


def _timed_out(q: Queue, job_id: str, timeout: float | None, state: str) -> TimeoutError:
    return TimeoutError(f"{job_id!r} in queue {q.name!r} did not end within {timeout:g} s (it was {state}); "
                        "wait longer, or see the job in the dashboard")


def _slices(deadline: float | None):
    """The timeouts of successive pops (each at most SLICE) until the deadline (time.monotonic)."""
    while True:
        left = SLICE if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        yield max(min(left, SLICE), 0.001)


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + float(timeout)


def _past(deadline: float | None, pause: float) -> bool:
    """Whether a pause now would end after the deadline (never, without one)."""
    return deadline is not None and time.monotonic() + pause >= deadline


def wait_state(q: Queue, job_id: str, timeout: float | None = None) -> str:
    """Block until the job (or batch) has ended; its final state. TimeoutError after timeout seconds.

    An outage of the server shorter than what is left of the timeout is ridden out (see above).
    """
    deadline, pause = _deadline(timeout), FIRST_PAUSE
    while True:
        try:
            return _wait_once(q, job_id, timeout, deadline)
        except ServerUnavailable:
            if _past(deadline, pause):
                raise
            time.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)


def _wait_once(q: Queue, job_id: str, timeout: float | None, deadline: float | None) -> str:
    state = _registered(q, job_id)  # again after an outage: the job may have ended meanwhile
    if state in SETTLED:
        return state
    if timeout is not None and timeout <= 0:
        raise _timed_out(q, job_id, timeout, state)
    key = q.keys.finished(job_id)
    with guard():
        for block in _slices(deadline):
            if (token := q.client.blpop([key], timeout=block)) is not None:
                q.client.rpush(key, token[1])
                return token[1]
    raise _timed_out(q, job_id, timeout, state)


async def wait_state_async(q: Queue, job_id: str, timeout: float | None = None) -> str:
    """``wait_state`` for a coroutine: the blocking pop is awaited on the loop's own connection."""
    deadline, pause = _deadline(timeout), FIRST_PAUSE
    while True:
        try:
            return await _wait_once_async(q, job_id, timeout, deadline)
        except ServerUnavailable:
            if _past(deadline, pause):
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)


async def _wait_once_async(q: Queue, job_id: str, timeout: float | None, deadline: float | None) -> str:
    state = await asyncio.to_thread(_registered, q, job_id)
    if state in SETTLED:
        return state
    if timeout is not None and timeout <= 0:
        raise _timed_out(q, job_id, timeout, state)
    key = q.keys.finished(job_id)
    client = _async_client()
    with guard():
        for block in _slices(deadline):
            if (token := await client.blpop([key], timeout=block)) is not None:
                await client.rpush(key, token[1])
                return token[1]
    raise _timed_out(q, job_id, timeout, state)


def _async_client() -> Any:
    """One asyncio client per event loop (its connections belong to that loop)."""
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        opts = {"decode_responses": True}
        if config.get("EMQ_CLUSTER"):
            client = redis.asyncio.RedisCluster.from_url(server_url(), **opts)
        else:
            client = redis.asyncio.Redis.from_url(server_url(), **opts)
        _async_clients[loop] = client
    return client

