"""What the speed work changed: bulk mint order, the raw pipeline, the Pump woken by a short lease."""

from __future__ import annotations

import pytest
import redis

from emq.core.connection import new_client
from emq.core.engine import Queue
from emq.core.records import Claimed, Outcome
from tests import jobs, records


def test_enqueue_many_keeps_each_lane_in_order_and_the_ring_by_first_appearance(emq_env):
    """2,500 jobs over three groups (three mint chunks): claims rotate c, a, b and keep each lane FIFO."""
    groups = ["c", "a", "b"]
    calls = [((i, 0), {}) for i in range(2_500)]
    refs = jobs.add.using(group=lambda i, _: groups[i % 3]).enqueue_many(calls)
    q = Queue("default")
    claimed = []
    while batch := q.bclaim(1_000, "w"):
        claimed.extend(batch)
    assert [c.args[0] % 3 for c in claimed[:6]] == [0, 1, 2, 0, 1, 2]
    for g in range(3):
        assert [c.args[0] for c in claimed if c.args[0] % 3 == g] == list(range(g, 2_500, 3))
    assert {c.id for c in claimed} == {r.id for r in refs}


def test_a_claimed_job_decodes_to_what_its_constructor_builds(emq_env):
    """The claim's decoder skips ``__init__`` (the worker's loop decodes one a job): every field is set,
    equal to a Claimed built the usual way, with arguments and without."""
    jobs.add.enqueue(1, 2)
    jobs.add.using(group="g").enqueue(3, 4)
    for job in Queue("default").bclaim(2, "w"):
        again = Claimed(*(getattr(job, name) for name in Claimed.__dataclass_fields__))
        assert job == again and vars(job) == vars(again)


def test_a_claims_jobs_of_several_functions_and_a_corrupt_one_each_decode_their_own_fields():
    """The decoder decodes a run of jobs with the same lease, attempts, backoff and limits once: a job
    that differs in any of them gets its own, and one that does not decode is quarantined alone."""
    job = ["a", "1", "f", "[]", "{}", "", "30000|3|1,60|5|3600000,0||"]  # lease|attempts|backoff|due|limits|spared|meta
    other = ["b", "2", "g", "[1]", "{}", "g", "1000|5|2,9|6|0,500||"]
    bad = ["c", "3", "f", "[]", "{}", "", "x|3|1,60|7|3600000,0||"]
    limits = ["d", "4", "f", "[]", "{}", "", "30000|3|1,60|8|||"]
    spared = ["e", "5", "f", "[]", "{}", "", "30000|3|1,60|8|3600000,0|3|"]  # 3 claims given back: attempt 2
    decoded = Claimed.from_reply(["10", *job, *other, *bad, *job, *limits, *spared, *job])
    assert [(c.id, c.lease_ms, c.max_attempts, c.backoff, c.timeout_ms, c.soft_timeout_ms) for c in decoded] == [
        ("a", 30000, 3, (1.0, 60.0), 3600000, 0), ("b", 1000, 5, (2.0, 9.0), 0, 500),
        ("c", 1000, 1, (1.0, 1.0), None, 0), ("a", 30000, 3, (1.0, 60.0), 3600000, 0),
        ("d", 30000, 3, (1.0, 60.0), None, 0), ("e", 30000, 3, (1.0, 60.0), 3600000, 0),
        ("a", 30000, 3, (1.0, 60.0), 3600000, 0)]
    assert [c.fault for c in decoded] == ["", "", "lease is not valid (invalid literal for int() with base 10: 'x')",
                                          "", "", "", ""]
    assert [(c.token, c.attempt) for c in decoded[-2:]] == [(5, 2), (1, 1)]  # a run's copy keeps no one's spared


def test_a_claims_joined_fields_arrive_intact_and_a_bar_in_one_faults_only_its_job(emq_env, client):
    """bclaim joins a job's fixed-form fields with "|" (meta last): values set off their defaults, and a
    meta holding "|", decode as stored; a "|" inside backoff faults that job alone, naming backoff."""
    q = Queue("default")
    good, bad = jobs.add.enqueue(1, 2), jobs.add.enqueue(3, 4)
    records.spoil(client, q.keys.job(good.id), {"lease": 4321, "max_attempts": 7, "backoff": "2,60", "due": 1234,
                                                 "timeout": "5000,1000", "meta": '{"t": "a|b||c"}'})
    records.spoil(client, q.keys.job(bad.id), {"backoff": "1|300"})
    claimed = {c.id: c for c in q.bclaim(2, "w")}
    job = claimed[good.id]
    assert (job.args, job.token, job.lease_ms, job.max_attempts, job.backoff) == ([1, 2], 1, 4321, 7, (2.0, 60.0))
    assert (job.due_ms, job.timeout_ms, job.soft_timeout_ms, job.meta) == (1234, 5000, 1000, '{"t": "a|b||c"}')
    assert job.fault == "" and claimed[bad.id].fault.startswith("backoff is not valid")


def test_a_finish_batch_mixes_the_short_and_the_long_item_forms(emq_env, client):
    """A completion with a null result goes as 2 fields (id, token), any other outcome as 5 (finish.lua): a
    batch of both, in any order, an id holding ":" and "|" and a stale token among them, settles each item."""
    q = Queue("default")
    refs = jobs.add.enqueue_many([((i, 0), {}) for i in range(5)])
    odd = jobs.add.using(job_id="odd:1|x").enqueue(9, 9)
    c = {j.id: j for j in q.bclaim(6, "w")}
    a, b, d, e, f = (c[r.id] for r in refs)
    states = q.finish([Outcome(a.id, a.token, "completed", "null"), Outcome(b.id, b.token, "completed", "7"),
                       Outcome(odd.id, c[odd.id].token, "completed", "null"),
                       Outcome(d.id, d.token, "failed", "boom", 0), Outcome(e.id, e.token + 1, "completed", "null"),
                       Outcome(f.id, f.token, "dead", "gone")])
    assert states == ["completed", "completed", "completed", "ready", "stale", "dead"]
    assert (q.get_job(a.id).result, q.get_job(b.id).result, q.get_job(odd.id).state) == (None, 7, "completed")
    assert (q.get_job(d.id).error, q.get_job(e.id).state, q.get_job(f.id).state) == ("boom", "active", "dead")


def test_a_round_trip_survives_a_script_cache_flush(emq_env, client, server_url, embedded_url):
    """The raw pipeline reads every reply after NOSCRIPT and runs the scripts again, loaded."""
    if server_url != embedded_url:
        pytest.skip("SCRIPT FLUSH would hit everyone on a shared server")
    q = Queue("default")
    jobs.add.enqueue_many([((i, 1), {}) for i in range(4)])
    (first,) = q.bclaim(1, "w")
    client.script_flush()
    ex = q.exchange([Outcome(first.id, first.token, "completed", "2")], 3, "w")
    assert ex.states == ["completed"] and len(ex.claimed) == 3 and ex.error is None
    assert q.get_job(first.id).result == 2


def test_a_claim_whose_lease_ends_before_the_pumps_next_tick_wakes_it(emq_env, client):
    """The Pump parks up to EMQ_PUMP_PARK; a lease ending sooner pushes a token on pumpwake."""
    q = Queue("default")
    tick = q.tick("pump-1", ttl_ms=60_000, park_ms=20_000)
    assert tick.leader and tick.park_ms == 20_000
    jobs.add.enqueue(1, 1)
    q.bclaim(1, "w")  # the default 30 s lease ends after the tick planned in 20 s: no wake
    assert client.llen(q.keys.pumpwake) == 0
    jobs.add.using(lease=2).enqueue(1, 2)
    q.bclaim(1, "w")
    assert client.llen(q.keys.pumpwake) == 1


@pytest.mark.parametrize(("waiting", "relayed"), [(False, False), (True, False), (False, True), (True, True)])
def test_the_ticks_one_exists_tells_waiting_jobs_from_relay_entries(emq_env, client, waiting, relayed):
    """tick.lua learns whether jobs wait (1) and relay entries queue (2) from one EXISTS that names the relay list
    twice: an idle queue's tick spends one command on both. Each case decodes to its own: the look at waiting
    jobs runs (here it drops an entry whose job is gone) only when one waits, the relay is counted only when
    it holds entries."""
    q = Queue("default")
    if waiting:
        client.zadd(q.keys.fixed("waiting"), {"default.gone": 1})
    if relayed:
        client.rpush(q.keys.fixed("relay"), "1|a", "2|b")
    tick = q.tick("pump-1", ttl_ms=60_000, park_ms=20_000)
    assert tick.leader and tick.relay == (2 if relayed else 0)
    assert client.zcard(q.keys.fixed("waiting")) == 0


def test_blocking_clients_read_longer_than_they_block(emq_env):
    """redis-py's default 5 s read timeout would cut a longer blocking pop short and reconnect."""
    client = new_client(block=30)
    if isinstance(client, redis.RedisCluster):
        client = client.get_default_node().redis_connection
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 35


@pytest.mark.timing
def test_jobs_of_a_batch_that_block_each_get_a_thread_within_moments(emq_env):
    """A batch wakes one slot thread; jobs that block (releasing the GIL) still each get a thread within
    moments, not one after another (a thread that takes a job while more are ready wakes one more)."""
    import time

    from emq.runtime.worker import Worker

    jobs.sleep_for.enqueue_many([((1.0,), {})] * 5)
    w = Worker(["default"], concurrency=5, batch=5, pump=False, burst=True)
    started = time.monotonic()
    assert w.run() == 0
    assert w.processed == 5 and time.monotonic() - started < 4.0  # one after another: 5 s at least


def test_the_claims_decoder_quarantines_bad_data_and_raises_its_own_bugs(monkeypatch):
    """A field that does not decode (bad JSON, a bad number, the wrong shape) faults its job alone; an
    error of the decoder's own code with good data is raised, not turned into "corrupt" for every job."""
    from emq.core import records

    good = ["a", "1", "f", "[]", "{}", "", "30000|3|1,60|5|3600000,0||"]
    short = ["b", "2", "f", "[]", "{}", "", "30000|3"]  # the joined fields cut short: the wrong shape
    kwargs = ["c", "3", "f", "[]", "[]", "", "30000|3|1,60|5|3600000,0||"]  # kwargs a list, not an object
    decoded = Claimed.from_reply(["10", *good, *short, *kwargs])
    assert [c.fault for c in decoded] == ["", "the claim's joined fields are 2, not 7: '30000|3'",
                                          "kwargs is not valid (not a JSON dict)"]

    def broken(cls):  # stands for a bug in the decoder's own code
        raise TypeError("the decoder's bug")

    monkeypatch.setattr(records, "_new", broken)
    with pytest.raises(TypeError, match="the decoder's bug"):
        Claimed.from_reply(["10", *good])


def test_a_busy_claim_leaves_the_lease_set_a_skiplist_with_no_keel_in_it(emq_env, client):
    """bclaim's keel (``_claim.lua``'s leases_add): a claim of 16 jobs or more adds a member longer than
    zset-max-listpack-value with its leases and removes it in the same call, so the lease set becomes a
    skiplist and stays one as it shrinks; a listpack's ZADD walks the whole set for each new member, which
    made it a busy drain's costliest command (docs/reference/performance.md). Fails when a server stops
    converting on a long member or converts back on shrink, so the figure there no longer holds; and
    whenever the keel is left where a reader would see it."""
    q = Queue("default")
    jobs.add.enqueue_many([((i, 0), {}) for i in range(31)])
    small = q.bclaim(15, "w")
    assert client.object("encoding", q.keys.leases) == "listpack"  # a smaller claim adds no keel
    big = q.bclaim(16, "w")
    assert client.object("encoding", q.keys.leases) == "skiplist"
    assert set(client.zrange(q.keys.leases, 0, -1)) == {c.id for c in small + big}
    states = q.finish([Outcome(c.id, c.token, "completed", "null") for c in (small + big)[:-1]])
    assert states == ["completed"] * 30
    assert client.object("encoding", q.keys.leases) == "skiplist"  # one lease left: still a skiplist
    assert client.zrange(q.keys.leases, 0, -1) == [big[-1].id] and q.counts().active == 1
