"""Test helpers for projects that use emq: an isolated key prefix on a real server, a drain, asserts.

    # conftest.py
    pytest_plugins = ["emq.testing"]            # fixtures emq_isolated (and emq_server_url to override)

    def test_signup_sends_welcome(emq_isolated):
        signup("ada@example.com")
        assert_enqueued(send_welcome, args=["ada@example.com"])
        run_until_empty()                       # drain in-process, like a burst worker

    class SignupTests(EmqTestMixin, TestCase):  # the same for unittest / Django TestCase
        ...

``EMQ_EAGER = True`` (or ``with eager():``) runs jobs inline at enqueue instead, for projects that
want no worker in their tests; jobs then skip emq's lifecycle (no retries, leases or results).
"""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from django.test.utils import override_settings

try:
    import pytest
except ImportError:  # pytest is optional: the mixin and the helpers work without it
    pytest = None

from .core import keys
from .core.connection import get_client
from .core.lanes import lane_len, lane_range
from .core.logical import LogicalQueue


def delete_prefix(client: Any, prefix: str) -> int:
    """Delete every key under ``prefix:`` (SCAN, never FLUSHALL); returns how many went."""
    gone = 0
    batch: list[str] = []
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            gone += _delete(client, batch)
            batch = []
    if batch:
        gone += _delete(client, batch)
    return gone


def _delete(client: Any, keys: list[str]) -> int:
    # One key a call: on a cluster the keys of different queues live in different slots.
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.delete(key)
    return sum(pipe.execute())


@contextlib.contextmanager
def isolated(url: str | None = None, prefix: str | None = None) -> Iterator[str]:
    """Use a fresh key prefix (and optionally another server) inside the block; clean up after."""
    prefix = prefix or f"emqtest-{uuid.uuid4().hex[:10]}"
    overrides: dict[str, Any] = {"EMQ_PREFIX": prefix}
    if url is not None:
        overrides["EMQ_URL"] = url
    with override_settings(**overrides):
        try:
            yield prefix
        finally:
            delete_prefix(get_client(), prefix)


def eager() -> Any:
    """Run jobs inline at enqueue inside the block (``override_settings(EMQ_EAGER=True)``)."""
    return override_settings(EMQ_EAGER=True)


class EmqTestMixin:
    """For unittest and Django test cases: each test gets a fresh key prefix on a real server.

    ``emq_url`` picks the server (None: the configured one); ``self.emq_prefix`` is the prefix.
    """

    emq_url: str | None = None
    emq_prefix: str = ""

    def setUp(self) -> None:
        super().setUp()
        self.emq_prefix = self.enterContext(isolated(url=self.emq_url))


if pytest is not None:

    @pytest.fixture
    def emq_server_url() -> str | None:
        """The server ``emq_isolated`` uses; None means the configured one. Override it in a conftest."""
        return None

    @pytest.fixture
    def emq_isolated(emq_server_url: str | None) -> Iterator[str]:
        """A fresh key prefix on a real server for one test; its keys are deleted after. Yields the prefix."""
        with isolated(url=emq_server_url) as prefix:
            yield prefix


def run_until_empty(queues: Sequence[str] | None = None, *, concurrency: int = 4) -> None:
    """Run jobs in-process like a burst worker until nothing is ready, active or due within 5 s."""
    from .runtime.worker import Worker

    Worker(queues, concurrency=concurrency, burst=True, park_timeout=0.5).run()


def _identity(job: Any, queue: str | None) -> tuple[str, str]:
    """The stored name and the queue of an ``@emq.job`` function or a Django ``@task``."""
    if hasattr(job, "module_path"):
        return job.module_path, queue or job.queue_name
    return job.name, queue or job.queue


def enqueued(job: Any, queue: str | None = None) -> list:
    """The jobs of one job function (``@emq.job`` or Django ``@task``) now scheduled or ready in its queue."""
    name, queue = _identity(job, queue)
    found = []
    client = get_client()
    for q in LogicalQueue(queue).partitions:
        ids = client.zrange(q.keys.scheduled, 0, -1)
        for group in client.smembers(q.keys.lanes):  # a lane in priority mode: markers + a zset (_prio.lua)
            ids += [i for i in lane_range(client, q.keys, group, 0, -1) if i != PMARK]
            ids += client.zrange(q.keys.ns + keys.PLANE + group, 0, -1)
        found += [q.get_job(i) for i in ids]
    return [j for j in found if j.name == name]


def assert_enqueued(job: Any, args: Sequence[Any] | None = None, kwargs: dict | None = None, queue: str | None = None):
    """Assert a job of this function waits in its queue (with these arguments, when given)."""
    jobs = enqueued(job, queue)
    name, queue = _identity(job, queue)
    matching = [
        j for j in jobs
        if (args is None or j.args == list(args)) and (kwargs is None or j.kwargs == kwargs)
    ]
    if not matching:
        seen = ", ".join(f"args={j.args} kwargs={j.kwargs}" for j in jobs) or "none"
        raise AssertionError(f"no job {name} enqueued in {queue!r} with args={args} kwargs={kwargs}; seen: {seen}")
    return matching[0]


def check_invariants(queue: Any) -> None:
    """Assert that every job of a queue sits in exactly one place, the one its state names, and that
    each capped group's active count equals its leased jobs (``emq.core.invariants``).

    ``queue`` is a name, ``emq.queue(...)`` or a physical queue; every partition is walked. It reads
    the whole queue (SCAN of its keys, every set, lane and job: O(jobs + groups) in pages): a helper
    for tests and fault drills on small queues, never for a live queue of millions.
    """
    if isinstance(queue, str):
        queue = LogicalQueue(queue)
    parts = getattr(queue, "partitions", [queue])
    problems = [f"{q.name}: {p}" for q in parts for p in violations(q)]
    if problems:
        raise AssertionError(f"{len(problems)} invariant(s) broken:\n" + "\n".join(problems[:50]))


# -- the walk behind check_invariants ---------------------------------------------------------
PMARK = "\0p"  # _prio.lua's marker: a lane's entry that stands for the first job of its priority zset
# state -> the place it means ("lane" for the lanes)
PLACE = {"scheduled": "scheduled", "ready": "lane", "active": "leases", "completed": "done", "dead": "dead",
         "cancelled": "cancelled", "waiting": "waiting"}


def violations(q: Any) -> list[str]:
    """Every invariant the queue breaks now, one line each (empty: all hold)."""
    client, k = q.client, q.keys
    where: dict[str, list[str]] = {}
    for place in ("scheduled", "leases", "done", "dead", "cancelled", "waiting"):
        for jid in client.zrange(k.fixed(place), 0, -1):
            where.setdefault(jid, []).append(place)
    lists = {key[len(k.ns) + len("lane:"):] for key in client.scan_iter(match=_glob(k.ns) + "lane:*", count=1000)}
    solos = client.hgetall(k.solo)  # group -> its one ready id, no list (emq/core/lanes.py)
    lanes = lists | set(solos)
    problems = [f"lane {g!r} has work but is not in the lane set" for g in lanes - client.smembers(k.lanes)]
    problems += [f"lane {g!r} has a solo and a list" for g in lists & set(solos)]
    for group in lanes:  # a lane in priority mode: a marker in the list per member of its zset (_prio.lua)
        ids = client.lrange(k.lane(group), 0, -1) + ([solos[group]] if group in solos else [])
        members = client.zrange(k.ns + keys.PLANE + group, 0, -1)
        if ids.count(PMARK) != len(members):
            problems.append(f"lane {group!r} has {ids.count(PMARK)} priority markers for {len(members)} jobs")
        for jid in [j for j in ids if j != PMARK] + members:
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


def _counts(q: Any, client: Any, states: dict[str, tuple]) -> list[str]:
    """held holds every lease of a capped group (and no id without a lease), and each group's active
    count equals its leases in held: only a lease under a cap is counted."""
    k = q.keys
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


WALKED = ("scheduled", "ready", "active", "completed", "dead", "cancelled", "waiting")


def walk_counts(queue: str) -> dict[str, int]:
    """Jobs per state of a queue found by reading every job hash (SCAN): what ``counts()`` must say.

    O(jobs): for tests. The states are those ``emq.queue(queue).counts()`` reports.
    """
    client = get_client()
    found = dict.fromkeys(WALKED, 0)
    for q in LogicalQueue(queue).partitions:
        keys = list(client.scan_iter(match=_glob(q.keys.ns) + "job:*", count=1000))
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, "state")
        for state in pipe.execute():
            if state in found:
                found[state] += 1
    return found


def assert_counts_exact(queue: str) -> None:
    """Assert a queue's counts equal a walk of its jobs, and its ring and lane sets are consistent:
    the ring holds each group once and exactly the groups of its membership set, every group whose
    lane can be served is on it, and the lane set names exactly the groups with ready work."""
    client = get_client()
    walked = walk_counts(queue)
    counts = LogicalQueue(queue).counts()
    told = {state: getattr(counts, state) for state in WALKED}
    assert told == walked, f"counts of {queue!r} {told} differ from a walk of its jobs {walked}"
    for q in LogicalQueue(queue).partitions:
        ring = client.lrange(q.keys.ring, 0, -1)
        assert len(ring) == len(set(ring)), f"{q.name}: a group twice on the ring: {ring}"
        assert set(ring) == client.smembers(q.keys.ring_in), f"{q.name}: ring and its membership set differ"
        lanes = client.smembers(q.keys.lanes)
        held = client.smembers(q.keys.paused_groups)
        for group in lanes:
            assert lane_len(client, q.keys, group) > 0, f"{q.name}: lane {group!r} empty but in the lane set"
            cap = client.hget(q.keys.caps, group)
            serving = group not in held and (cap is None or int(client.hget(q.keys.active, group) or 0) < int(cap))
            assert not serving or group in ring, f"{q.name}: lane {group!r} can be served but is off the ring"
        for key in client.scan_iter(match=_glob(q.keys.ns) + "lane:*", count=1000):
            assert key.removeprefix(q.keys.lane("")) in lanes, f"{q.name}: {key} holds work outside the lane set"
