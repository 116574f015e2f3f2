"""Load the Lua scripts of ``emq/lua/`` once and run them by SHA, loading on NOSCRIPT.

Each script is the shared prelude followed by the operation's own file; the header of each
file documents its KEYS, ARGV and reply. Only ``engine.py`` knows a script's argument order.

On a cluster, every script also declares KEYS[2], a key of its queue's slot that is never
written (``keys.guard``). With two declared keys that do not exist, a node whose slot is being
migrated refuses the script before it runs (ASK, then TRYAGAIN on the target) instead of
running it against half the queue's keys; ``run`` retries such refusals with a short backoff
until the migration ends. A refused script did nothing, so the retry is safe.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import AskError, ClusterError, MovedError, NoScriptError, ResponseError, TryAgainError

from .keys import guard

LUA_DIR = Path(__file__).with_name("lua")
PRELUDE = "_prelude"
# Refusals that mean "the script did not run, the slot is moving": retried, up to RETRY_FOR seconds.
# ClusterError is what redis-py raises once its own redirect budget (a few ms of TRYAGAIN) is spent.
REFUSED = (TryAgainError, AskError, MovedError, ClusterError)
RETRY_FOR = 30.0


@dataclass(frozen=True)
class Script:
    """One operation: its name, full source (prelude included) and SHA1."""

    name: str
    source: str
    sha: str


@functools.cache
def script(name: str) -> Script:
    """Return the script for one operation, e.g. ``script("bclaim")``."""
    prelude = (LUA_DIR / f"{PRELUDE}.lua").read_text()
    body = (LUA_DIR / f"{name}.lua").read_text()
    source = prelude + "\n" + body
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


def names() -> list[str]:
    """Every operation in ``emq/lua/``, the engine's whole list of atomic state changes."""
    return sorted(p.stem for p in LUA_DIR.glob("*.lua") if p.stem != PRELUDE)


def declared(keys: Sequence[str]) -> list[str]:
    """The KEYS a script is called with: the queue's namespace, then its slot guard."""
    return [keys[0], guard(keys[0]), *keys[1:]]


def run(client: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """Run one script in one round trip; retry while its slot migrates; EVAL when the server lacks it."""
    s = script(name)
    full = declared(keys)
    deadline = time.monotonic() + RETRY_FOR
    pause = 0.005
    while True:
        try:
            return _once(client, s, full, args)
        except REFUSED as exc:
            if time.monotonic() + pause > deadline or not _refusal(exc):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _once(client: Any, s: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    try:
        return client.evalsha(s.sha, len(keys), *keys, *args)
    except NoScriptError:
        return client.eval(s.source, len(keys), *keys, *args)


def _refusal(exc: Exception) -> bool:
    return not isinstance(exc, ClusterError) or "TTL exhausted" in str(exc)


def run_many(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]) -> list[Any]:
    """Run several scripts in one pipelined round trip; a script refused or missing is run again alone."""
    if isinstance(client, redis.Redis):
        replies = _send_and_read(client, calls)
    else:
        pipe = client.pipeline(transaction=False)
        for name, keys, args in calls:
            full = declared(keys)
            # Not pipe.evalsha(): a cluster pipeline blocks that method, yet routes the raw command by its key.
            pipe.execute_command("EVALSHA", script(name).sha, len(full), *full, *args)
        replies = pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError) or (isinstance(reply, REFUSED) and _refusal(reply)):
            replies[i] = run(client, *calls[i])
        elif isinstance(reply, Exception):
            raise reply
    return replies


def _send_and_read(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]) -> list[Any]:
    """A pipeline without redis-py's Pipeline object: on the worker's hot path (a round trip
    every ~10 jobs) building, executing and resetting one cost more CPU than the jobs did."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        commands = []
        for name, keys, args in calls:
            full = declared(keys)
            commands.append(("EVALSHA", script(name).sha, len(full), *full, *args))
        conn.send_packed_command(conn.pack_commands(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as exc:  # read every reply, so the connection stays in step
                replies.append(exc)
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)
    return replies
