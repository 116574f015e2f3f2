"""Load the Lua scripts of ``emq/lua/`` once and run them by SHA, loading on NOSCRIPT.

Each script is two lines, then the helper files the operation includes (``includes.py``, in
load order), then the operation's own file; the header of each file documents its KEYS, ARGV and
reply. Only ``emq.core.engine`` calls ``run``: it alone knows a script's argument order.

The two lines: ``local EVENTS_MAX = <n>`` (EMQ_EVENTS: 0, events off), so the scripts that record
state changes append them to the queue's event stream inside the same call (``_events.lua``), on
and off being two sources with two SHAs (no ARGV, key or command changes); and ``local ns =
KEYS[1]``, the queue's namespace ``<prefix>:{<queue>}:``: every key a script touches is ns ..
suffix, so all of them share the queue's hash tag (each operation's header lists KEYS[1] only).

On a cluster, every script also declares KEYS[2], a key of its queue's slot that is never
read or written (``keys.guard``). With two declared keys that do not exist, a node whose slot is being
migrated refuses the script before it runs (ASK, then TRYAGAIN on the target) instead of
running it against half the queue's keys; ``run`` retries such refusals with a short backoff
until the migration ends. A refused script did nothing, so the retry is safe.

The worker's claim and finish, and the lean mint of one job, run as Valkey Functions (FCALL,
``functions.py``): loaded once on the node that serves the queue's slot, on "Function not found", as a
script is on NOSCRIPT.
``fenced.run`` closes each pipelined round trip with one more command on the same connection
(WAIT / WAITAOF for EMQ_DURABLE, which count only their own connection's writes).
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import AskError, ClusterError, MovedError, NoScriptError, OutOfMemoryError, TryAgainError

from . import config, functions, includes
from .keys import guard
from .owner import on_owner
from .wire import exchange as _exchange
from .wire import stream as _stream

LUA_DIR = Path(__file__).parent.parent / "lua"  # emq/lua: one operation a file, helpers in _*.lua
# Refusals that mean "the script did not run, the slot is moving": retried, up to RETRY_FOR seconds.
# ClusterError is what redis-py raises once its own redirect budget (a few ms of TRYAGAIN) is spent.
REFUSED = (TryAgainError, AskError, MovedError, ClusterError)
RETRY_FOR = 30.0
RECORD_FORMATS = ("1", "2")  # what EMQ_RECORD_FORMAT may name: a hash a job, or one packed value (_record.lua)


@dataclass(frozen=True)
class Script:
    """One operation: its name, full source (its helpers included) and SHA1; for one of
    ``functions.FUNCTIONS``, its FCALL name and library source too."""

    name: str
    source: str
    sha: str
    function: str = ""  # "": run by EVALSHA
    library: str = ""

    def command(self, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, ...]:
        """The command that runs it: FCALL for a function, else EVALSHA."""
        if self.function:
            return ("FCALL", self.function, len(keys), *keys, *args)
        return ("EVALSHA", self.sha, len(keys), *keys, *args)


@functools.cache
def script(name: str, events_max: int = 0, record_format: str = "1") -> Script:
    """Return the script for one operation, e.g. ``script("bclaim")``; events_max > 0 records events;
    record_format: the format a new job's record is written in (EMQ_RECORD_FORMAT, _record.lua)."""
    if record_format not in RECORD_FORMATS:
        raise ValueError(f"EMQ_RECORD_FORMAT is {record_format!r}: use one of {', '.join(RECORD_FORMATS)}")
    body = (LUA_DIR / f"{name}.lua").read_text()
    parts = [f"local EVENTS_MAX = {int(events_max)}", f"local RECORD_FORMAT = '{record_format}'", "local ns = KEYS[1]"]
    parts += [(LUA_DIR / f"{h}.lua").read_text() for h in includes.helpers(name, LUA_DIR)]
    helpers = "\n".join(parts)
    oom = name in functions.ALLOW_OOM_OPS  # runs on a full server (functions.py): a shebang, as a function a flag
    source = (functions.ALLOW_OOM if oom else "") + "\n".join([helpers, body])
    sha = hashlib.sha1(source.encode()).hexdigest()
    if name not in functions.FUNCTIONS:
        return Script(name, source, sha)
    function = functions.name_of(name, sha)
    return Script(name, source, sha, function, functions.library(function, helpers, body, oom))


def current(name: str) -> Script:
    """The script as the settings want it now: with events when EMQ_EVENTS is on."""
    return config.memo(("script", name), _current, name)


def _current(name: str) -> Script:
    record_format = str(config.get("EMQ_RECORD_FORMAT"))
    if not config.get("EMQ_EVENTS"):
        return script(name, 0, record_format)
    return script(name, max(int(config.get("EMQ_EVENTS_MAX")), 1), record_format)


def names() -> list[str]:
    """Every operation in ``emq/lua/``, the engine's whole list of atomic state changes."""
    return sorted(p.stem for p in LUA_DIR.glob("*.lua") if not p.stem.startswith("_"))


def declared(keys: Sequence[str]) -> list[str]:
    """The KEYS a script is called with: the queue's namespace, then its slot guard."""
    return [keys[0], guard(keys[0]), *keys[1:]]


def run(client: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """Run one script in one round trip; retry while its slot migrates; EVAL when the server lacks it."""
    s = current(name)
    full = declared(keys)
    deadline = time.monotonic() + RETRY_FOR
    pause = 0.005
    while True:
        try:
            return _once(client, s, full, args)
        except REFUSED as exc:
            if time.monotonic() + pause > deadline or not refusal(exc):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _once(client: Any, s: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    if s.function:
        try:
            return _fcall(client, s, keys, args)
        except redis.ResponseError as exc:
            if not functions.missing(exc):
                raise
        try:
            load(client, s, keys[0])
        except OutOfMemoryError:  # a full server refuses FUNCTION LOAD: the same body as a flagged script
            return client.eval(s.source, len(keys), *keys, *args)
        return _fcall(client, s, keys, args)
    try:
        return client.evalsha(s.sha, len(keys), *keys, *args)
    except NoScriptError:
        return client.eval(s.source, len(keys), *keys, *args)


def _fcall(client: Any, s: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """FCALL on a plain client, or on a cluster's node for the slot (redis-py follows its redirects, as
    for EVALSHA; left to find the node itself it would ask a node for FCALL's keys first)."""
    if isinstance(client, redis.RedisCluster):
        return client.execute_command(*s.command(keys, args), target_nodes=client.get_node_from_key(keys[0]))
    return client.execute_command(*s.command(keys, args))


def load(client: Any, s: Script, key: str) -> None:
    """FUNCTION LOAD a function's library on the node that serves key's slot."""
    reply = on_owner(client, key, [("FUNCTION", "LOAD", s.library)])[0]
    if not functions.loaded(reply):
        raise reply


def refusal(exc: Exception) -> bool:
    return not isinstance(exc, ClusterError) or "TTL exhausted" in str(exc)


def unknown(reply: Any) -> bool:
    """Whether a reply says the server lacks the script (NOSCRIPT) or the function ("Function not
    found"): it did not run; load it (or send its source) and run it again."""
    return isinstance(reply, NoScriptError) or functions.missing(reply)


def _again(reply: Any) -> bool:
    """Whether a script's reply says it did not run and may simply run again (missing, or its slot moving)."""
    return unknown(reply) or (isinstance(reply, REFUSED) and refusal(reply))


def run_many(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]],
             raise_on_error: bool = True, meanwhile: Callable[[], None] | None = None,
             also: Sequence[tuple[Any, ...]] = ()) -> list[Any]:
    """Run several scripts in one pipelined round trip; a script refused or missing is run again alone.

    An error reply raises, unless raise_on_error is False: then it is returned in its place (the
    server may refuse one script of the round trip and run the next, e.g. at maxmemory).
    ``meanwhile`` is called once the scripts are on the wire, before their replies are read: client
    work that overlaps the server's (it must not raise). ``also``: plain commands of other slots
    sent after the scripts in the same round trip (each to its key's node on a cluster), whose
    replies, errors too, are dropped: hints a reader checks (``idindex``)."""
    if isinstance(client, redis.Redis):
        replies = _send_and_read(client, calls, meanwhile, also)[: len(calls)]
    else:
        pipe = client.pipeline(transaction=False)
        for name, keys, args in calls:
            full = declared(keys)
            # Not pipe.evalsha(): a cluster pipeline blocks that method. Routed to the slot's node here:
            # left to itself, the pipeline asks its default node where each EVALSHA goes (COMMAND GETKEYS,
            # one more round trip each), and fails for as long as that node is down (a failover).
            node = client.get_node_from_key(full[0])
            pipe.execute_command(*current(name).command(full, args), target_nodes=node)
        for command in also:
            pipe.execute_command(*command, target_nodes=client.get_node_from_key(command[1]))
        if meanwhile is not None:
            meanwhile()
        replies = pipe.execute(raise_on_error=False)[: len(calls)]
    return _settled(client, calls, replies, raise_on_error=raise_on_error)


def run_stream(client: Any, calls: Iterable[tuple[str, Sequence[str], Sequence[Any]]], depth: int,
               each: Callable[[int, Any], None] | None = None) -> list[Any]:
    """Run scripts in order, up to depth of them on the wire at once (``wire.stream``); their replies.

    ``each(i, reply)`` is called for each script that ran, as its reply is read: client work that
    overlaps the server's on the scripts still on the wire (it must not raise). A script refused
    or missing is run again alone, as in ``run_many``; any other error reply stops the sending of
    the rest and raises once the scripts already sent have answered. A cluster client runs them
    in ``run_many`` round trips of depth scripts."""
    calls = list(calls)
    told = each or (lambda i, reply: None)
    if not isinstance(client, redis.Redis):
        replies = [r for i in range(0, len(calls), depth) for r in run_many(client, calls[i : i + depth])]
        for i, reply in enumerate(replies):
            told(i, reply)
        return replies
    replies: list[Any] = []
    failed: list[Exception] = []

    def commands():
        for name, keys, args in calls:
            if failed:
                return
            full = declared(keys)
            yield current(name).command(full, args)

    def read(reply: Any) -> None:
        if not isinstance(reply, Exception):
            told(len(replies), reply)
        elif not _again(reply):
            failed.append(reply)
        replies.append(reply)

    _stream(client, commands(), depth, read)
    return _settled(client, calls, replies, told)


def _settled(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]], replies: list[Any],
             told: Callable[[int, Any], None] | None = None, raise_on_error: bool = True) -> list[Any]:
    """Run again alone, in order, the scripts whose replies say they did not run (``told`` of each
    new reply); raise another error reply, or leave it in its place when raise_on_error is False."""
    for i, reply in enumerate(replies):
        if _again(reply):
            replies[i] = run(client, *calls[i])
            if told is not None:
                told(i, replies[i])
        elif isinstance(reply, Exception) and raise_on_error:
            raise reply
    return replies


def run_one(client: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """``run_many`` of one script (an error reply raises), without its loops on a plain client."""
    if not isinstance(client, redis.Redis):
        return run_many(client, [(name, keys, args)])[0]
    full = declared(keys)
    reply = _exchange(client, [current(name).command(full, args)])[0]
    if unknown(reply):
        return run(client, name, keys, args)
    if isinstance(reply, Exception):
        raise reply
    return reply


def _send_and_read(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]],
                   meanwhile: Callable[[], None] | None = None, also: Sequence[tuple[Any, ...]] = ()) -> list[Any]:
    """A pipeline without redis-py's Pipeline object: on the worker's hot path (a round trip
    every ~10 jobs) building, executing and resetting one cost more CPU than the jobs did."""
    commands = [current(name).command(declared(keys), args) for name, keys, args in calls]
    return _exchange(client, [*commands, *also] if also else commands, meanwhile)


def send_on(line: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]) -> None:
    """Send scripts on a held connection (``wire.Line``) and leave their replies to ``read_on``."""
    line.send([current(name).command(declared(keys), args) for name, keys, args in calls])


def read_on(line: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]) -> list[Any]:
    """The replies of the oldest scripts sent on line (errors as values); one missing runs again alone,
    once every request in flight is read (the client's connection is free for it then)."""
    replies = line.read()
    if any(map(_again, replies)):
        line.settle()
        replies = _settled(line.client, calls, replies, raise_on_error=False)
    return replies
