"""Whole-queue walks for tests and fault drills: every job sits where its state says, the counters and
the ring agree with what the queue holds. ``emq.testing`` offers them to users.

Each walk reads the whole queue (SCAN of its keys, every set, lane and job: O(jobs + groups), in
pages): for small queues in tests, never for a live queue of millions. The engine's read methods are
bounded pages; these are the one place that reads everything, and they read jobs and lanes as the
engine does (``stored``, ``lanes``).
"""

from __future__ import annotations

from collections import Counter

from . import lanes, stored
from .engine import Queue

# state -> the place it means ("lane" for the lanes)
PLACE = {"scheduled": "scheduled", "ready": "lane", "active": "leases", "completed": "done", "dead": "dead",
         "cancelled": "cancelled", "waiting": "waiting"}
WALKED = ("scheduled", "ready", "active", "completed", "dead", "cancelled", "waiting")


def queued_ids(q: Queue) -> list[str]:
    """Every id scheduled or ready in a queue: the schedule set, then each lane (a lane in priority mode:
    its zset's members for its markers)."""
    client, k = q.client, q.keys
    ids = client.zrange(k.scheduled, 0, -1)
    for group in client.smembers(k.lanes):
        ids += [i for i in lanes.lane_range(client, k, group, 0, -1) if i != lanes.PMARK]
        ids += client.zrange(lanes.plane(k, group), 0, -1)
    return ids


def violations(q: Queue) -> list[str]:
    """Every invariant the queue breaks now, one line each (empty: all hold)."""
    client, k = q.client, q.keys
    where: dict[str, list[str]] = {}
    for place in ("scheduled", "leases", "done", "dead", "cancelled", "waiting"):
        for jid in client.zrange(k.fixed(place), 0, -1):
            where.setdefault(jid, []).append(place)
    lists = {key[len(k.ns) + len("lane:"):] for key in client.scan_iter(match=glob(k.ns) + "lane:*", count=1000)}
    solos = client.hgetall(k.solo)  # group -> its one ready id, no list (core/lanes.py)
    grouped = lists | set(solos)
    problems = [f"lane {g!r} has work but is not in the lane set" for g in grouped - client.smembers(k.lanes)]
    problems += [f"lane {g!r} has a solo and a list" for g in lists & set(solos)]
    for group in grouped:  # a lane in priority mode: a marker in the list per member of its zset (_prio.lua)
        ids = client.lrange(k.lane(group), 0, -1) + ([solos[group]] if group in solos else [])
        members = client.zrange(lanes.plane(k, group), 0, -1)
        if ids.count(lanes.PMARK) != len(members):
            problems.append(f"lane {group!r} has {ids.count(lanes.PMARK)} priority markers for {len(members)} jobs")
        for jid in [j for j in ids if j != lanes.PMARK] + members:
            where.setdefault(jid, []).append("lane")
    jobs = sorted(job_ids(q))
    states = [(f["state"], f["group"]) for f in _fields(q, jobs, ("state", "group"))]
    for jid, (state, _group) in zip(jobs, states, strict=True):
        places = where.get(jid, [])
        deadline = state == "waiting" and places == ["scheduled", "waiting"]  # a wait for a signal, with a timeout
        if len(places) != 1 and not deadline:
            problems.append(f"job {jid} ({state}) is in {len(places)} places: {places or 'none'}")
        elif not deadline and PLACE.get(state) != places[0]:
            problems.append(f"job {jid} is {state!r} but sits in {places[0]}")
    known = set(jobs)
    problems += [f"{places} hold {jid}, which has no job" for jid, places in where.items() if jid not in known]
    return problems + _counts(q, dict(zip(jobs, states, strict=True)))


def _counts(q: Queue, states: dict[str, tuple]) -> list[str]:
    """held holds every lease of a capped group (and no id without a lease), and each group's active
    count equals its leases in held: only a lease under a cap is counted."""
    client, k = q.client, q.keys
    leased = set(client.zrange(k.leases, 0, -1))
    held, capped = client.hgetall(k.held), set(client.hkeys(k.caps))
    per_group = Counter(held[j] for j in leased if j in held)
    problems = [f"lease of {j} (capped group) is missing from held" for j in leased - set(held)
                if (states.get(j) or (None, None))[1] in capped]
    problems += [f"held has {j}, which holds no lease" for j in set(held) - leased]
    active = {g: int(n) for g, n in client.hgetall(k.active).items()}
    for group in set(per_group) | set(active):
        if per_group.get(group, 0) != active.get(group, 0):
            problems.append(f"group {group!r} counts {active.get(group, 0)} active but holds "
                            f"{per_group.get(group, 0)} leases")
    return problems


def job_ids(q: Queue) -> set[str]:
    """The id of every job hash of a queue (SCAN)."""
    k = q.keys
    return {key[len(k.ns) + len("job:"):] for key in q.client.scan_iter(match=glob(k.ns) + "job:*", count=1000)}


def _fields(q: Queue, ids: list[str], names: tuple[str, ...]) -> list[dict[str, str | None]]:
    out: list[dict[str, str | None]] = []
    for start in range(0, len(ids), 500):
        out += stored.read(q.client, [q.keys.job(i) for i in ids[start : start + 500]], names)
    return out


def walk_counts(q: Queue) -> dict[str, int]:
    """Jobs per state of a physical queue found by reading every job (SCAN): what ``counts()`` must say."""
    found = dict.fromkeys(WALKED, 0)
    for f in _fields(q, sorted(job_ids(q)), ("state",)):
        if f["state"] in found:
            found[f["state"]] += 1
    return found


def ring_problems(q: Queue) -> list[str]:
    """The ring holds each group once and exactly the groups of its membership set, every group whose lane
    can be served is on it, and the lane set names exactly the groups with ready work."""
    client, k = q.client, q.keys
    ring = client.lrange(k.ring, 0, -1)
    problems = [f"a group twice on the ring: {ring}"] if len(ring) != len(set(ring)) else []
    if set(ring) != client.smembers(k.ring_in):
        problems.append("ring and its membership set differ")
    in_lanes = client.smembers(k.lanes)
    held = client.smembers(k.paused_groups)
    for group in in_lanes:
        if lanes.lane_len(client, k, group) == 0:
            problems.append(f"lane {group!r} empty but in the lane set")
        cap = client.hget(k.caps, group)
        serving = group not in held and (cap is None or int(client.hget(k.active, group) or 0) < int(cap))
        if serving and group not in ring:
            problems.append(f"lane {group!r} can be served but is off the ring")
    for key in client.scan_iter(match=glob(k.ns) + "lane:*", count=1000):
        if key.removeprefix(k.lane("")) not in in_lanes:
            problems.append(f"{key} holds work outside the lane set")
    return problems


def glob(text: str) -> str:
    """A key prefix as a SCAN pattern (the hash tag's braces are literal; [ ] * ? are escaped)."""
    return "".join("\\" + c if c in "[]*?\\" else c for c in text)

