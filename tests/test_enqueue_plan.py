"""The one-by-one enqueue's fast path: a plan per job function, the lean mint_one.lua, the idle
connections of core/wire.py. It writes what the general path writes, sees settings at once, and
survives a connection the server closed."""

from __future__ import annotations

import re

import pytest
from redis.exceptions import ResponseError

from emq.core import scripts, wire
from emq.core import stored as record
from emq.core.engine import Queue
from emq.jobs import plan
from emq.testing import check_invariants
from tests import jobs, records

VARYING = ("created", "due")  # server times: the two jobs are minted a moment apart


def stored(client, q: Queue, job_id: str) -> dict:
    h = records.fields(client, q.keys.job(job_id))
    return {k: v for k, v in h.items() if k not in VARYING}


def test_a_planned_enqueue_writes_the_job_mint_lua_writes(emq_env, client):
    """The same call through the plan (mint_one.lua) and through a bulk chunk (mint.lua): equal records, counts."""
    fn = jobs.for_tenant.using(max_attempts=5, lease=7, timeout=9, soft_timeout=3)
    one = fn.enqueue(1, 10)
    assert plan.of(fn) is not None and one.created and one.enqueued_at is not None
    bulk = fn.enqueue_many([((1, 10), {}), ((2, 20), {})])
    q = Queue("default")
    assert stored(client, q, one.id) == stored(client, q, bulk[0].id)
    assert stored(client, q, one.id)["group"] == "tenant-1"
    counts = q.counts()
    assert counts.ready == 3 and counts.groups_on_ring == 2
    claimed = q.bclaim(10, "w")  # the ring alternates groups: tenant-1's lane holds both of its jobs in order
    assert [c.id for c in claimed] == [one.id, bulk[1].id, bulk[0].id]
    check_invariants(q)


def test_a_planned_enqueue_of_a_later_job_is_scheduled(emq_env):
    """enqueue_in takes the plan too: the job waits in the schedule set, not in a lane."""
    fn = jobs.add.using(queue="later")
    ref = fn.enqueue_in(60, 1, 2)
    assert plan.of(fn) is not None
    assert Queue("later").counts().scheduled == 1 and ref.get().state == "scheduled"
    check_invariants(Queue("later"))


def test_a_caller_chosen_id_keeps_its_job(emq_env):
    """job_id through the plan: the second enqueue finds the first job and mints nothing."""
    fn = jobs.add.using(job_id="only-once")
    first, second = fn.enqueue(1, 2), fn.enqueue(3, 4)
    assert plan.of(fn) is not None
    assert (first.created, second.created) == (True, False)
    assert first.get().args == [1, 2] and Queue("default").counts().ready == 1


def test_the_plan_follows_the_settings(emq_env, settings):
    """A setting changed after the first enqueue applies to the next one: the plan is worked out again."""
    first = jobs.add.enqueue(1, 2)
    settings.EMQ_MAX_ATTEMPTS = 7
    settings.EMQ_DEFAULT_QUEUE = "elsewhere"
    second = jobs.add.enqueue(1, 2)
    assert (first.queue, first.get().max_attempts) == ("default", 3)
    assert (second.queue, second.get().max_attempts) == ("elsewhere", 7)


def test_the_general_path_keeps_what_the_plan_does_not_cover(emq_env, settings):
    """Unique jobs, partitions and EMQ_EAGER get no plan; their enqueues behave as before."""
    assert plan.of(jobs.add.using(unique_for=60)) is None
    settings.EMQ_PARTITIONS = {"clicks": 2}
    assert plan.of(jobs.add.using(queue="clicks")) is None
    refs = [jobs.add.using(unique_for=60).enqueue(1, 2) for _ in range(2)]
    assert refs[0].id == refs[1].id and refs[1].created is False


def test_mint_one_refuses_a_uniqueness_spec(emq_env, client):
    """mint_one.lua is for plain jobs: given a unique job's spec it writes nothing and says why."""
    fn = jobs.add.using(unique_for=60)
    spec = fn.spec((1, 2), {}, "")
    q = Queue("default")
    with pytest.raises(ResponseError, match="no uniqueness spec"):
        q.mint_one(record.mint_row(spec))
    assert not client.exists(q.keys.job(spec.id)) and q.counts().ready == 0


@pytest.mark.one_server  # CLIENT KILL TYPE normal would cut the suite's other processes off EMQ_TEST_URL
def test_an_enqueue_after_the_server_closed_its_connection_succeeds(emq_env, client):
    """The idle connection the last enqueue used was closed by the server (CLIENT KILL, a restart):
    the next enqueue finds it closed before sending and reconnects, as the pool would."""
    jobs.add.enqueue(1, 2)
    if not client.__dict__.get(wire.IDLE):
        pytest.skip("a cluster client exchanges through its nodes' clients")
    killed = client.client_kill_filter(_type="normal", skipme=True)
    assert killed >= 1
    assert jobs.add.enqueue(3, 4).created
    assert Queue("default").counts().ready == 2


def test_a_forked_child_never_reuses_the_parents_connections(emq_env, client):
    """After a fork the idle connections are the parent's: an exchange takes a fresh one from the pool."""
    jobs.add.enqueue(1, 2)
    held = client.__dict__.get(wire.IDLE)
    if not held:
        pytest.skip("a cluster client exchanges through its nodes' clients")
    before = set(held[1])
    wire._forked()  # what os.register_at_fork runs in a child
    jobs.add.enqueue(3, 4)
    assert not before & set(client.__dict__[wire.IDLE][1])
    for conn in before:  # the "parent's" connections: closed here, as a real child would never see them
        conn.disconnect()


def test_a_planned_enqueue_is_one_script_call(emq_env, client, server_url, embedded_url):
    """Once planned, an enqueue sends one FCALL (mint_one runs as a Valkey Function) and nothing else:
    every other command counted is one mint_one.lua makes, and no SADD (the queue registry is written
    once, when the plan is made)."""
    if server_url != embedded_url:
        pytest.skip("INFO commandstats counts everyone's commands on a shared server")
    jobs.add.enqueue(0, 0)
    before = _calls(client)
    for i in range(50):
        jobs.add.enqueue(i, i)
    moved = {k: v - before.get(k, 0) for k, v in _calls(client).items() if v != before.get(k, 0) and k != "info"}
    inside = {c.lower() for c in re.findall(r"redis\.call\('(\w+)'", scripts.script("mint_one").source)}
    assert moved.pop("fcall") == 50
    assert set(moved) <= inside and "sadd" not in moved, moved


def _calls(client) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in client.info("commandstats").items()}
