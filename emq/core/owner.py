"""Commands sent to the node that serves a key's slot (the client itself off a cluster), and the slot
map read again when that node is gone: ``scripts`` loads a function library there, ``fenced`` closes a
round trip there."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import redis

from .wire import exchange as _exchange


def on_owner(client: Any, key: str, commands: Sequence[tuple[Any, ...]],
             ready: Callable[[Any], None] | None = None) -> list[Any]:
    """``_exchange`` with the node that serves key's slot (the client itself off a cluster); ``ready`` as
    ``wire.exchange`` takes it."""
    if not isinstance(client, redis.RedisCluster):
        return _exchange(client, commands, ready=ready)
    try:
        return _exchange(client.get_redis_connection(client.get_node_from_key(key)), commands, ready=ready)
    except (redis.ConnectionError, redis.TimeoutError):
        refresh(client)  # the node died: the next call asks the others who serves the slot now
        raise


def refresh(client: Any) -> None:
    """Re-read a cluster's slot map (a slot moved, a node died); best effort, the caller retries or raises."""
    if isinstance(client, redis.RedisCluster):
        with contextlib.suppress(redis.RedisError, redis.exceptions.RedisClusterException):
            client.nodes_manager.initialize()
