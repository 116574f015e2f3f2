"""A group's ready ids, as the readers outside the scripts see them.

They sit in the group's list ``lane:<group>``, or, for the one job a batch mint gave a group without
ready work, in the ``solo`` hash (group -> id; ``emq/lua/_counters.lua``): never in both. Read a lane
through these two, never the list alone.
"""

from __future__ import annotations

from typing import Any

from .keys import QueueKeys


def lane_range(client: Any, keys: QueueKeys, group: str, start: int, stop: int) -> list[str]:
    """The ids of a group's lane from start to stop (LRANGE's bounds), its solo included."""
    ids = client.lrange(keys.lane(group), start, stop)
    if ids or start > 0:
        return ids
    solo = client.hget(keys.solo, group)
    return [] if solo is None else [solo]


def lane_len(client: Any, keys: QueueKeys, group: str) -> int:
    """How many ids a group's lane holds (markers of a group in priority mode count as its jobs)."""
    return int(client.llen(keys.lane(group))) + int(client.hexists(keys.solo, group))
