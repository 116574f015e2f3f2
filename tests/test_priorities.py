"""Flow control, part three: priorities inside a group's lane; the ring still serves groups in turn."""

from __future__ import annotations

import random

import pytest

import emq
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import violations
from tests import jobs


def claim_all(q: Queue, n: int) -> list:
    got = []
    while len(got) < n:
        batch = q.bclaim(97, "w")
        assert batch, f"ran dry after {len(got)} of {n}"
        got.extend(batch)
    return got


def test_1000_mixed_priorities_in_one_group_run_by_priority_then_fifo(emq_env):
    rng = random.Random(14)
    prios = [rng.choice([-100, -5, 0, 0, 0, 1, 7, 100]) for _ in range(1000)]
    refs = []
    for start in range(0, 1000, 100):  # single calls and chunks, so both mint paths take part
        chunk = prios[start : start + 100]
        if start % 200:
            refs += [jobs.add.using(group="g", priority=p or None).enqueue(start + i, 0) for i, p in enumerate(chunk)]
        else:  # enqueue_many takes one priority a call: runs of equal priorities, each one chunk
            i = 0
            while i < len(chunk):
                j = i
                while j < len(chunk) and chunk[j] == chunk[i]:
                    j += 1
                calls = [((start + k, 0), {}) for k in range(i, j)]
                refs += jobs.add.using(group="g", priority=chunk[i]).enqueue_many(calls)
                i = j
    expected = [r.id for _, _, r in sorted(zip([-p for p in prios], range(1000), refs, strict=True))]
    assert violations(Queue("default")) == []
    got = [c.id for c in claim_all(Queue("default"), 1000)]
    assert got == expected
    assert Queue("default").counts().ready == 0


def test_plain_ids_queued_before_the_first_priority_keep_their_place(emq_env):
    q = Queue("default")
    old = jobs.add.using(group="g").enqueue_many([((i, 0), {}) for i in range(3)])
    low = jobs.add.using(group="g", priority=-1).enqueue(9, 0)
    new = jobs.add.using(group="g").enqueue(10, 0)
    high = jobs.add.using(group="g", priority=3).enqueue(11, 0)
    assert violations(q) == []
    assert [c.id for c in q.bclaim(10, "w")] == [high.id, *(r.id for r in old), new.id, low.id]
    # the lane emptied: the group left priority mode, its next jobs take the plain list again
    assert not q.client.exists(q.keys.ns + "prio")


def test_two_groups_still_alternate(emq_env):
    q = Queue("default")
    a = [jobs.add.using(group="a", priority=p).enqueue(i, 0) for i, p in enumerate([0, 5, -5, 9])]
    b = [jobs.add.using(group="b").enqueue(i, 0) for i in range(4)]
    got = q.bclaim(8, "w")
    assert [c.group for c in got] == ["a", "b"] * 4
    assert [c.id for c in got if c.group == "a"] == [a[3].id, a[1].id, a[0].id, a[2].id]
    assert [c.id for c in got if c.group == "b"] == [r.id for r in b]


def test_retried_and_cancelled_jobs_of_a_priority_lane(emq_env):
    q = Queue("default")
    urgent = jobs.add.using(group="g", priority=50).enqueue(1, 0)
    plain = jobs.add.using(group="g").enqueue(2, 0)
    gone = jobs.add.using(group="g", priority=10).enqueue(3, 0)
    assert emq.cancel(gone.id)
    [c] = q.bclaim(1, "w")
    assert c.id == urgent.id
    assert q.finish([Outcome(c.id, c.token, "failed", "x", 0)]) == ["ready"]  # back by its priority
    assert [c.id for c in q.bclaim(10, "w")] == [urgent.id, plain.id]
    assert q.counts().ready == 0 and q.client.llen(q.keys.lane("g")) == 0


@pytest.mark.parametrize("bad", [101, -101, 1.5, "high", True])
def test_bad_priorities_are_refused(bad):
    with pytest.raises(emq.ConfigurationError, match="priority"):
        jobs.add.using(priority=bad)


def test_the_ready_page_and_enqueued_read_a_priority_lane_in_claim_order(emq_env, db):
    from emq.dashboard.lists import ready
    from emq.testing import enqueued

    plain = jobs.add.using(group="g").enqueue(1, 0)
    low = jobs.add.using(group="g", priority=-3).enqueue(2, 0)
    high = jobs.add.using(group="g", priority=3).enqueue(3, 0)
    assert [r.id for r in ready("default", "g").slice.rows] == [high.id, plain.id, low.id]
    assert [r.id for r in ready("default", "g", start=1).slice.rows] == [plain.id, low.id]
    assert {j.id for j in enqueued(jobs.add)} == {plain.id, low.id, high.id}
