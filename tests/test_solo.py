"""Solo lanes: a batch mint's lone job waits in the solo hash, not in a list key of its own
(``emq/lua/_solo.lua``). Every reader of a lane sees it, a second job turns it into the list's
first entry, and lanes minted as lists (one group a mint, or before solos existed) work as before."""

from __future__ import annotations

import emq
from emq.core.engine import KeepOps, Queue
from emq.core.records import Outcome
from emq.dashboard import lists, queries
from emq.testing import check_invariants, walk_counts
from tests import jobs


def keep(q: Queue) -> KeepOps:
    return KeepOps(q.name, prefix=q.keys.prefix)


def lone(tenants, n: int = 0) -> list:
    """One job each for several tenants, in one mint: each tenant without ready work gets a solo."""
    return jobs.for_tenant.enqueue_many([((t, n), {}) for t in tenants])


def solos(q: Queue) -> dict:
    return q.client.hgetall(q.keys.solo)


def claimed(q: Queue, n: int) -> list:
    return [(c.group, c.args[1]) for c in q.bclaim(n, "w")]


def exact(q: Queue, ready: int) -> None:
    check_invariants(q)
    assert q.counts().ready == ready == walk_counts("default")["ready"]


def test_a_batch_of_lone_groups_mints_solos_and_claims_take_them(emq_env):
    q = Queue("default")
    lone(range(5))
    assert set(solos(q)) == {f"tenant-{t}" for t in range(5)}
    assert not list(q.client.scan_iter(match=q.keys.lane("*"))), "no list key for a lone job"
    assert q.client.scard(q.keys.lanes) == 5 and q.client.llen(q.keys.ring) == 5
    exact(q, 5)
    assert claimed(q, 3) == [("tenant-0", 0), ("tenant-1", 0), ("tenant-2", 0)]
    assert set(solos(q)) == {"tenant-3", "tenant-4"}
    exact(q, 2)
    assert claimed(q, 10) == [("tenant-3", 0), ("tenant-4", 0)]
    assert not q.client.exists(q.keys.solo, q.keys.lanes, q.keys.ring, q.keys.ring_in)
    exact(q, 0)


def test_a_second_job_turns_a_solo_into_the_head_of_a_list(emq_env):
    q = Queue("default")
    first = lone([1, 2, 3])
    second = jobs.for_tenant.enqueue(1, 1)  # one job, one group: lane_push
    lone([2, 4], n=1)  # a batch: tenant-2 has its solo, tenant-4 gets one
    assert set(solos(q)) == {"tenant-3", "tenant-4"}
    assert q.client.lrange(q.keys.lane("tenant-1"), 0, -1) == [first[0].id, second.id]
    exact(q, 6)
    assert claimed(q, 10) == [("tenant-1", 0), ("tenant-2", 0), ("tenant-3", 0), ("tenant-4", 1),
                              ("tenant-1", 1), ("tenant-2", 1)]
    exact(q, 0)


def test_a_solo_group_getting_a_job_of_another_priority_serves_by_priority(emq_env):
    q = Queue("default")
    lone([1, 2])
    jobs.for_tenant.using(priority=5).enqueue(1, 1)  # its marker goes to the head, the solo after it
    jobs.for_tenant.using(priority=-5).enqueue(2, 1)  # its marker goes to the tail, after the solo
    assert not solos(q)
    exact(q, 4)
    assert claimed(q, 10) == [("tenant-1", 1), ("tenant-2", 0), ("tenant-1", 0), ("tenant-2", 1)]
    assert not q.client.exists(q.keys.ns + "prio")
    exact(q, 0)


def test_cancel_of_a_solo_job_empties_its_lane(emq_env):
    q = Queue("default")
    refs = lone([1, 2, 3])
    assert q.cancel([refs[1].id]) == ["ok"]
    assert set(solos(q)) == {"tenant-1", "tenant-3"} and "tenant-2" not in q.client.smembers(q.keys.lanes)
    exact(q, 2)
    assert claimed(q, 10) == [("tenant-1", 0), ("tenant-3", 0)]  # the emptied group left the ring
    assert not q.client.exists(q.keys.ring, q.keys.ring_in, q.keys.lanes)


def test_pause_resume_and_a_cap_of_a_solo_group(emq_env):
    q, lq = Queue("default"), emq.queue()
    lone([1, 2, 3])
    assert lq.pause("tenant-2") is True
    assert claimed(q, 10) == [("tenant-1", 0), ("tenant-3", 0)]
    assert solos(q) == {"tenant-2": q.client.hget(q.keys.solo, "tenant-2")}
    exact(q, 1)
    assert lq.resume("tenant-2") is True and q.client.lrange(q.keys.ring, 0, -1) == ["tenant-2"]
    lone([4, 5])
    emq.set_group_limit("default", "tenant-4", 1)  # a cap: every group takes the full visit (pop)
    got = q.bclaim(10, "w")
    assert [(c.group, c.args[1]) for c in got] == [("tenant-2", 0), ("tenant-4", 0), ("tenant-5", 0)]
    lone([4, 6], n=1)  # tenant-4 is at its cap: its new solo stays off the ring
    assert set(solos(q)) == {"tenant-4", "tenant-6"}
    assert claimed(q, 10) == [("tenant-6", 1)]
    exact(q, 1)
    c = next(c for c in got if c.group == "tenant-4")
    q.finish([Outcome(c.id, c.token, "completed", "1")])  # below its cap again: back on the ring
    assert claimed(q, 10) == [("tenant-4", 1)] and not solos(q)
    exact(q, 0)


def test_lists_of_one_job_from_before_solos_and_a_recount_see_both(emq_env):
    """A lane minted one group a mint is a list of one id, as every lane was before solos."""
    q = Queue("default")
    for t in range(3):
        jobs.for_tenant.enqueue(t, 0)
    lone(range(3, 6))
    assert len(solos(q)) == 3 and len(list(q.client.scan_iter(match=q.keys.lane("*")))) == 3
    q.client.delete(q.keys.counters, q.keys.ring_in)  # counters missing: counts walk, recount.lua counts
    assert q.counts().ready == 6
    k = keep(q)
    assert k.recount_step(2) is False  # starts the recount
    jobs.for_tenant.enqueue(3, 1)  # a change to a group the recount has not seen: a solo turned list
    lone([6, 7])
    while not k.recount_step(2):
        pass
    exact(q, 9)
    assert sorted(claimed(q, 10)) == sorted([(f"tenant-{t}", 0) for t in range(8)] + [("tenant-3", 1)])
    exact(q, 0)


def test_the_dashboard_shows_a_solo_group_as_a_lane_of_one(emq_env):
    q = Queue("default")
    [a, _] = lone([1, 2])
    rows = {row.group: row for row in queries.lanes("default").ring}
    assert rows["tenant-1"].depth == 1 and rows["tenant-1"].oldest_ms is not None
    page = lists.ready("default", "tenant-1")
    assert [row.id for row in page.slice.rows] == [a.id] and page.slice.total == 1
    assert q.client.hget(q.keys.solo, "tenant-1") == a.id
