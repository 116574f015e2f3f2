"""Walk one queue and list every break of the lifecycle's invariants (a test helper, never run in production).

Every job sits in exactly one place, the one its state names: the schedule set (scheduled), a lane
(ready), the lease set (active), done / dead / cancelled, or the waiting set (waiting for parents).
Every id in those places has its job; the lease set and ``held`` hold the same ids; and each group's
active count equals its leased jobs. A script that errored halfway, or quarantined a job wrongly,
breaks one of these.

Cost: it reads *everything* of the queue (SCAN of its keys, every set, every lane, every job's state),
O(jobs + groups) round trips in pages. It is for tests and fault drills on small queues, never for a
live queue of millions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .engine import Queue

# state -> the place it means ("lane" for the lanes)
PLACE = {"scheduled": "scheduled", "ready": "lane", "active": "leases", "completed": "done", "dead": "dead",
         "cancelled": "cancelled", "waiting": "waiting"}


def violations(q: Queue) -> list[str]:
    """Every invariant the queue breaks now, one line each (empty: all hold)."""
    client, k = q.client, q.keys
    where: dict[str, list[str]] = {}
    for place in ("scheduled", "leases", "done", "dead", "cancelled", "waiting"):
        for jid in client.zrange(k.fixed(place), 0, -1):
            where.setdefault(jid, []).append(place)
    lanes = {key[len(k.ns) + len("lane:"):] for key in client.scan_iter(match=_glob(k.ns) + "lane:*", count=1000)}
    problems = [f"lane {g!r} has work but is not in the lane set" for g in lanes - client.smembers(k.lanes)]
    for group in lanes:
        for jid in client.lrange(k.lane(group), 0, -1):
            where.setdefault(jid, []).append("lane")
    jobs = {key[len(k.ns) + len("job:"):] for key in client.scan_iter(match=_glob(k.ns) + "job:*", count=1000)}
    states = _fields(client, [k.job(j) for j in sorted(jobs)], "state", "group")
    for jid, (state, _group) in zip(sorted(jobs), states, strict=True):
        places = where.get(jid, [])
        if len(places) != 1:
            problems.append(f"job {jid} ({state}) is in {len(places)} places: {places or 'none'}")
        elif PLACE.get(state) != places[0]:
            problems.append(f"job {jid} is {state!r} but sits in {places[0]}")
    problems += [f"{places} hold {jid}, which has no job" for jid, places in where.items() if jid not in jobs]
    return problems + _counts(q, client, {j: s for j, s in zip(sorted(jobs), states, strict=True)})


def _counts(q: Queue, client: Any, states: dict[str, tuple]) -> list[str]:
    """The lease set equals held's ids, and each group's active count equals its leased jobs."""
    k = q.keys
    leased = set(client.zrange(k.leases, 0, -1))
    held = client.hgetall(k.held)
    problems = [f"lease of {j} is missing from held" for j in leased - set(held)]
    problems += [f"held has {j}, which holds no lease" for j in set(held) - leased]
    per_group = Counter(held.get(j) or (states.get(j) or (None, None))[1] for j in leased)
    active = {g: int(n) for g, n in client.hgetall(k.active).items()}
    for group in set(per_group) | set(active):
        if per_group.get(group, 0) != active.get(group, 0):
            problems.append(f"group {group!r} counts {active.get(group, 0)} active but holds "
                            f"{per_group.get(group, 0)} leases")
    return problems


def _fields(client: Any, keys: list[str], *names: str) -> list[tuple]:
    out: list[tuple] = []
    for start in range(0, len(keys), 500):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + 500]:
            pipe.hmget(key, *names)
        out += [tuple(r) for r in pipe.execute()]
    return out


def _glob(text: str) -> str:
    """A key prefix as a SCAN pattern (the hash tag's braces are literal; [ ] * ? are escaped)."""
    return "".join("\\" + c if c in "[]*?\\" else c for c in text)
