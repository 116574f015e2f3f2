"""Scripts of one slot in pipelined round trips, each closed by a fence on its connection (EMQ_DURABLE).

WAIT and WAITAOF count only their own connection's writes, so each round trip goes to the slot's
primary on one connection, scripts then fence (``owner.on_owner``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import ClusterError

from .owner import on_owner, refresh
from .scripts import REFUSED, RETRY_FOR, current, declared, load, refusal, unknown


def run(client: Any, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]],
        fence: Sequence[Any], ready: Callable[[Any], None] | None = None) -> tuple[list[Any], list[Any]]:
    """Run scripts of one slot in pipelined round trips, each closed by ``fence`` on its connection.

    ``ready(conn)`` sees each round trip's connection before anything is sent on it and may refuse
    (raise): EMQ_DURABLE probes there whether the server can give its guarantee, before any write.

    Returns the scripts' replies and the fence's replies (error replies as exceptions): every
    script reply is covered by one fence reply. A script refused (slot moving) or unknown to
    the server is sent again in a later round trip, with a fence of its own; anything else
    raises. On a cluster the round trip goes to the slot's primary directly, so no redirect
    can move a script to a connection the fence does not cover.
    """
    replies: dict[int, Any] = {}
    fences: list[Any] = []
    pending, source = list(range(len(calls))), set()
    deadline, pause = time.monotonic() + RETRY_FOR, 0.005
    while pending:
        for i in [i for i in pending if i in source and current(calls[i][0]).function]:
            load(client, current(calls[i][0]), calls[i][1][0])  # a function is loaded, never sent as source
            source.discard(i)
        commands = [_command(calls[i], i in source) for i in pending]
        *answers, fenced = on_owner(client, calls[pending[0]][1][0], [*commands, tuple(fence)], ready)
        fences.append(fenced)
        refused = _sort(dict(zip(pending, answers, strict=True)), replies, source)
        if refused:
            if time.monotonic() + pause > deadline:
                raise ClusterError(f"{len(refused)} scripts still refused after {RETRY_FOR} s: the slot never settled")
            refresh(client)
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        pending = [i for i in pending if i not in replies]
    return [replies[i] for i in range(len(calls))], fences


def _sort(answers: dict[int, Any], replies: dict[int, Any], source: set[int]) -> list[int]:
    """File each answer: a reply, a script to send as source next time, or a refusal (returned)."""
    refused = []
    for i, answer in answers.items():
        if unknown(answer):
            source.add(i)  # sent as source next time: a promoted replica starts with an empty script cache
        elif isinstance(answer, REFUSED) and refusal(answer):
            refused.append(i)
        elif isinstance(answer, Exception):
            raise answer
        else:
            replies[i] = answer
    return refused


def _command(call: tuple[str, Sequence[str], Sequence[Any]], by_source: bool) -> tuple[Any, ...]:
    name, keys, args = call
    full = declared(keys)
    s = current(name)
    return ("EVAL", s.source, len(full), *full, *args) if by_source and not s.function else s.command(full, args)
