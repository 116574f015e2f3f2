"""Wait for a job's end (or a batch's) without polling: ``JobRef.wait`` and ``wait_async``.

The waiter registers on the server (``flow_wait.lua``: a job that has ended answers at once), then
parks on a blocking pop of ``finished:<id>``, which the end of the job pushes in the same script
that records it. It puts the token back for any other waiter (the list expires with the job's
result). The pop blocks at most ``SLICE`` seconds a call: the shared clients read with redis-py's
5 s socket timeout (which guards every other call against a hung server), so a longer wait is a
pop every 4 s, not a TimeoutError from the socket.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import redis.asyncio

from ..errors import JobNotFound
from . import config
from .connection import guard, server_url
from .engine import Queue

SLICE = 4.0  # seconds one blocking pop may last: under the clients' 5 s socket timeout
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


def _slices(timeout: float | None):
    """The timeouts of successive pops (each at most SLICE) until ``timeout`` seconds have passed."""
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    while True:
        left = SLICE if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        yield max(min(left, SLICE), 0.001)


def wait_state(q: Queue, job_id: str, timeout: float | None = None) -> str:
    """Block until the job (or batch) has ended; its final state. TimeoutError after timeout seconds."""
    state = _registered(q, job_id)
    if state in SETTLED:
        return state
    if timeout is not None and timeout <= 0:
        raise _timed_out(q, job_id, timeout, state)
    key = q.keys.finished(job_id)
    with guard():
        for block in _slices(timeout):
            if (token := q.client.blpop([key], timeout=block)) is not None:
                q.client.rpush(key, token[1])
                return token[1]
    raise _timed_out(q, job_id, timeout, state)


async def wait_state_async(q: Queue, job_id: str, timeout: float | None = None) -> str:
    """``wait_state`` for a coroutine: the blocking pop is awaited on the loop's own connection."""
    state = await asyncio.to_thread(_registered, q, job_id)
    if state in SETTLED:
        return state
    if timeout is not None and timeout <= 0:
        raise _timed_out(q, job_id, timeout, state)
    key = q.keys.finished(job_id)
    client = _async_client()
    with guard():
        for block in _slices(timeout):
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

