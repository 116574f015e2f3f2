"""Fault suite, tenant quotas: one tenant cannot fill the queue. With max_queued=5 per group, the 6th
enqueue of a group raises QuotaExceeded (naming the queue, the group and the quota) and writes
nothing; another group is unaffected; room returns as jobs finish (completed, dead, cancelled).
"""

from __future__ import annotations

import pytest

import emq
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import check_invariants
from tests import jobs, records


def _finish(q, outcome: str, n: int = 1) -> None:
    claimed = q.bclaim(n, "w")
    q.finish([Outcome(c.id, c.token, outcome, "null" if outcome == "completed" else "boom") for c in claimed])


def _queued(client, q, group: str) -> int:
    return int(client.hget(q.keys.queued, group) or 0)


def test_the_sixth_job_of_a_group_is_refused_and_room_returns_as_jobs_end(emq_env, client):
    q = Queue("default")
    emq.set_quota("default", 5, group="*")
    a = jobs.add.using(group="a")
    refs = [a.enqueue(i, i) for i in range(5)]
    with pytest.raises(emq.QuotaExceeded) as refused:
        a.enqueue(6, 6)
    e = refused.value
    assert (e.queue, e.group, e.quota, e.minted) == ("default", "a", 5, 0)
    assert "group 'a' of queue 'default' is at its quota of 5 jobs not yet finished" in str(e)
    assert q.counts().ready == 5, "nothing written for the refused job"
    assert [jobs.add.using(group="b").enqueue(i, i) for i in range(5)], "another group is unaffected"
    _finish(q, "completed")  # a's first job completes: room for one
    a.enqueue(7, 7)
    with pytest.raises(emq.QuotaExceeded):
        a.enqueue(8, 8)
    q.cancel([refs[1].id])  # cancelled: room again
    a.using(max_attempts=1).enqueue(9, 9)
    with pytest.raises(emq.QuotaExceeded):
        a.enqueue(10, 10)
    assert _queued(client, q, "a") == 5 and _queued(client, q, "b") == 5
    check_invariants(q)


def test_a_dead_job_a_retry_and_a_delete_give_room_back_and_take_it_again(emq_env, client):
    q = Queue("default")
    emq.set_quota("default", 2, group="t")
    t = jobs.add.using(group="t", max_attempts=1)
    t.enqueue(1, 1)
    later = t.enqueue_in(3600, 2, 2)
    (c,) = q.bclaim(1, "w")
    assert q.finish([Outcome(c.id, c.token, "failed", "boom")]) == ["dead"]  # dead: room for one
    assert _queued(client, q, "t") == 1
    assert q.admin.delete([later.id]) == ["ok"]  # a scheduled job deleted: room again
    assert _queued(client, q, "t") == 0
    assert q.admin.retry([c.id]) == ["ok"]  # an operator's retry counts it again (never refused)
    assert _queued(client, q, "t") == 1
    t.enqueue(3, 3)
    with pytest.raises(emq.QuotaExceeded):
        t.enqueue(4, 4)
    check_invariants(q)


def test_enqueue_many_mints_what_fits_and_says_how_many(emq_env, client):
    """Both bulk paths: the plain one (mint_many.lua) and the general one (a unique key: mint.lua)."""
    q = Queue("default")
    emq.set_quota("default", 5, group="*")
    with pytest.raises(emq.QuotaExceeded) as bulk:
        jobs.add.using(group="a").enqueue_many([((i, i), {}) for i in range(8)])
    assert (bulk.value.minted, bulk.value.group, len(bulk.value.refs)) == (5, "a", 5)
    assert "3 job(s) refused, 5 minted" in str(bulk.value)
    with pytest.raises(emq.QuotaExceeded) as general:
        jobs.add.using(group="b", unique_for=60).enqueue_many([((i, i), {}) for i in range(7)])
    assert general.value.minted == 5
    per_group = lambda g: jobs.add.using(group=g)  # noqa: E731
    assert len(jobs.add.enqueue_many([((i, i), {}) for i in range(3)])) == 3  # the default group "_" has room
    assert per_group("c").enqueue(1, 1)
    assert q.counts().ready == 5 + 5 + 3 + 1
    check_invariants(q)


def test_a_whole_queue_quota_and_a_removed_one(emq_env, client):
    q = Queue("default")
    emq.set_quota("default", 3)
    for g in "abc":
        jobs.add.using(group=g).enqueue(1, 1)
    with pytest.raises(emq.QuotaExceeded) as full:
        jobs.add.using(group="d").enqueue(1, 1)
    assert full.value.group is None and "queue 'default' is at its quota of 3" in str(full.value)
    assert emq.quotas("default") == {None: 3}
    emq.set_quota("default", None)
    assert emq.quotas("default") == {}
    jobs.add.using(group="d").enqueue(1, 1)  # no quota: not counted, not refused
    _finish(q, "completed", 4)  # the 3 counted give their counts back, the 4th has none
    assert client.hgetall(q.keys.queued) == {}
    check_invariants(q)


def test_emq_quotas_is_applied_like_the_rate_limits(emq_env, settings):
    from emq.core.rates import apply_limits

    settings.EMQ_QUOTAS = {"default": {"*": 10, "vip": 100, None: 1000}}
    apply_limits(["default"])
    assert emq.quotas("default") == {"*": 10, "vip": 100, None: 1000}
    settings.EMQ_QUOTAS = {"default": {"*": -1}}
    with pytest.raises(emq.ConfigurationError, match=r"EMQ_QUOTAS\['default'\]\['\*'\]"):
        apply_limits(["default"])


def test_flows_and_stalled_deaths_are_counted_and_flows_never_refused(emq_env, client):
    """A flow's jobs count toward the quota but are not refused (a chain cut halfway would leave jobs
    waiting for ever); a job dead as stalled gives its count back."""
    q = Queue("default")
    emq.set_quota("default", 1, group="*")
    parent = jobs.add.enqueue(1, 1)
    child = jobs.add.using(after=[parent]).enqueue(2, 2)
    assert _queued(client, q, "_") == 2 and records.field(client, q.keys.job(child.id), "state") == "waiting"
    with pytest.raises(emq.QuotaExceeded):
        jobs.add.enqueue(3, 3)
    (c,) = q.bclaim(1, "w")
    records.spoil(client, q.keys.job(c.id), {"stalled": 5})  # its next reclaim ends it dead as stalled
    client.zadd(q.keys.leases, {c.id: 1})
    q.sweep()
    assert records.field(client, q.keys.job(c.id), "state") == "dead"
    assert records.field(client, q.keys.job(child.id), "state") == "dead"  # its parent died
    assert _queued(client, q, "_") == 0
    check_invariants(q)


def test_a_queue_without_quotas_counts_nothing(emq_env, client):
    q = Queue("default")
    ref = jobs.add.enqueue(1, 1)
    jobs.add.enqueue_many([((i, i), {}) for i in range(3)])
    assert not client.exists(q.keys.queued) and records.field(client, q.keys.job(ref.id), "quota") is None
    _finish(q, "completed", 4)
    assert not client.exists(q.keys.queued)


@pytest.mark.django_db
def test_the_lanes_page_shows_the_quotas_and_the_groups_at_theirs(emq_env):
    from tests.dashboard_fixtures import make_users, page_url, web_as

    emq.set_quota("default", 2, group="*")
    emq.set_quota("default", 100)
    for _ in range(2):
        jobs.add.using(group="full").enqueue(1, 1)
    jobs.add.using(group="roomy").enqueue(1, 1)
    page = web_as(make_users()["viewer"]).get(page_url("lanes", queue="default"))
    assert page.status_code == 200
    rows = {r.scope: (r.now, r.quota) for r in page.context["quota_rows"]}
    assert rows == {"whole queue": (3, 100), "each group": (None, 2)}
    assert sorted(page.context["quota_groups"]) == [("full", 2, 2), ("roomy", 1, 2)]
    html = page.content.decode()
    assert 'id="emq-quotas"' in html and '<span class="emq-warn">2 / 2</span>' in html


@pytest.mark.parametrize("prio", [False, True])
@pytest.mark.parametrize("quota", [False, True])
@pytest.mark.parametrize("token", [False, True])
def test_a_mint_reads_priorities_quotas_and_the_wake_token_in_one_exists(emq_env, client, prio, quota, token):
    """_mint.lua's mint_flags decodes one count (prio 1, quotas 1, the wake list 3): every combination
    mints right: a priority job first, a quota enforced, one wake token at most."""
    q = Queue("default")
    if prio:
        jobs.add.using(priority=5, group="p").enqueue(0, 0)  # the queue has a group in priority mode
    if quota:
        emq.set_quota("default", 2, group="t")
    client.delete(q.keys.wake)
    if token:
        client.rpush(q.keys.wake, "1")
    t = jobs.add.using(group="t")
    t.enqueue(1, 1)
    t.enqueue_in(60, 2, 2)  # a scheduled mint reads the flags too
    if quota:
        with pytest.raises(emq.QuotaExceeded):
            t.enqueue(3, 3)
    else:
        t.enqueue(3, 3)
    assert client.llen(q.keys.wake) == 1
    assert _queued(client, q, "t") == (2 if quota else 0)
    check_invariants(q)


def test_every_end_gives_the_count_back_once(emq_env, client):
    """Completed, dead, cancelled, dead as stalled, quarantined as corrupt, a waiting job given up: each
    counted job's count goes back once, and a job ended twice by mistake (quarantined after it was
    cancelled) gives nothing back twice."""
    q = Queue("default")
    emq.set_quota("default", 100, group="*")
    t = jobs.add.using(group="t", max_attempts=1)
    refs = [t.enqueue(i, i) for i in range(5)]
    assert _queued(client, q, "t") == 5
    claimed = q.bclaim(3, "w")
    q.finish([Outcome(claimed[0].id, claimed[0].token, "completed", "null"),
              Outcome(claimed[1].id, claimed[1].token, "failed", "boom")])
    records.spoil(client, q.keys.job(claimed[2].id), {"stalled": 9})
    client.zadd(q.keys.leases, {claimed[2].id: 1})
    q.sweep()
    assert _queued(client, q, "t") == 2
    q.cancel([refs[3].id])
    records.spoil(client, q.keys.job(refs[4].id), {"lease": "soon"})  # the claim quarantines it
    assert q.bclaim(1, "w") == []
    assert _queued(client, q, "t") == 0 and client.hgetall(q.keys.queued) == {}
    assert [records.field(client, q.keys.job(r.id), "quota") for r in refs] == [None] * 5
    check_invariants(q)
