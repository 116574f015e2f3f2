"""Load the Lua scripts of ``emq/lua/`` once and run them by SHA, loading on NOSCRIPT.

Each script is the shared prelude followed by the operation's own file; the header of each
file documents its KEYS, ARGV and reply. Only ``engine.py`` knows a script's argument order.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

LUA_DIR = Path(__file__).with_name("lua")
PRELUDE = "_prelude"


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


def run(client: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """Run one script in one round trip; EVAL (which also caches it) when the server lacks it."""
    s = script(name)
    try:
        return client.evalsha(s.sha, len(keys), *keys, *args)
    except NoScriptError:
        return client.eval(s.source, len(keys), *keys, *args)


def run_many(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]) -> list[Any]:
    """Run several scripts in one pipelined round trip; a script the server lacks is run again alone."""
    if isinstance(client, redis.Redis):
        replies = _send_and_read(client, calls)
    else:
        pipe = client.pipeline(transaction=False)
        for name, keys, args in calls:
            pipe.evalsha(script(name).sha, len(keys), *keys, *args)
        replies = pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
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
        commands = [("EVALSHA", script(name).sha, len(keys), *keys, *args) for name, keys, args in calls]
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
