"""A group's ready ids, as the readers outside the scripts see them.

They sit in the group's list ``lane:<group>``, or, for the one job a batch mint gave a group without
ready work, in the ``solo`` hash (group -> id; ``emq/lua/_solo.lua``): never in both. A group in
priority mode (``emq/lua/_prio.lua``) keeps a marker PMARK in its list for each job of its zset
``plane:<group>``. Read a lane through these, never the list alone (the engine's reads and the
audit of ``emq.testing`` do).
"""

from __future__ import annotations

from typing import Any

from .keys import PLANE, QueueKeys

PMARK = "\0p"  # _prio.lua's marker in a lane: it stands for the first member of the group's priority zset


def lane_range(client: Any, keys: QueueKeys, group: str, start: int, stop: int) -> list[str]:
    """The ids of a group's lane from start to stop (LRANGE's bounds), its solo included; markers as they are."""
    ids = client.lrange(keys.lane(group), start, stop)
    if ids or start > 0:
        return ids
    solo = client.hget(keys.solo, group)
    return [] if solo is None else [solo]


def lane_len(client: Any, keys: QueueKeys, group: str) -> int:
    """How many ids a group's lane holds (markers of a group in priority mode count as its jobs)."""
    return int(client.llen(keys.lane(group))) + int(client.hexists(keys.solo, group))


def prioritized(client: Any, keys: QueueKeys, group: str, start: int, ids: list[str]) -> list[str]:
    """A lane page (from position start) with its priority markers read: the k-th marker of the list stands
    for the k-th member of the group's priority zset (each claim of a marker takes the zset's first)."""
    marks = [n for n, i in enumerate(ids) if i == PMARK]
    if not marks:
        return ids
    before = len(client.lpos(keys.lane(group), PMARK, count=0, maxlen=start) or []) if start else 0
    members = client.zrange(plane(keys, group), before, before + len(marks) - 1)
    out = list(ids)
    for n, member in zip(marks, members, strict=False):
        out[n] = member
    return out


def plane(keys: QueueKeys, group: str) -> str:
    """The priority zset of a group in priority mode."""
    return keys.ns + PLANE + group
