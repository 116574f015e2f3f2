"""Counts kept by the scripts, a ring without scans, and retention without traffic (#17).

``counts`` reads the ready counter the scripts keep (``_counters.lua``) instead of walking the
lanes; ``emq.testing.assert_counts_exact`` walks every job hash and the ring to check it.
"""

from __future__ import annotations

import pytest

import emq
from emq.core.engine import KeepOps, Queue
from emq.core.records import Outcome
from emq.testing import assert_counts_exact, check_invariants, run_until_empty, walk_counts
from tests import jobs
from tests.conftest import on_the_cluster
from tests.procs import wait_for


def keep(q: Queue) -> KeepOps:
    return KeepOps(q.name, prefix=q.keys.prefix)


def claim_all(q: Queue, n: int) -> list:
    return q.bclaim(n, "w")


def test_counts_equal_a_walk_after_a_mixed_workload(emq_env):
    """Mint, claim, finish (completed, retried, dead), release, cancel in every state, pause, caps,
    flows, run-now, retry from the dead letters and the stalled sweep: counts always equal a walk."""
    q, lq = Queue("default"), emq.queue("default")
    emq.set_group_limit("default", "capped", 1)
    jobs.add.using(group="capped").enqueue_many([((1, i), {}) for i in range(3)])
    jobs.add.using(group="a").enqueue_many([((2, i), {}) for i in range(5)])
    jobs.add.using(group="b").enqueue_many([((3, i), {}) for i in range(3)])
    later = [jobs.add.using(group="a").enqueue_in(60, 4, i) for i in range(3)]
    parent = jobs.add.using(group="a").enqueue(5, 0)
    child = jobs.add.using(group="c", after=[parent]).enqueue(5, 1)
    lq.pause("b")
    assert_counts_exact("default")
    held = claim_all(q, 6)
    assert len({c.group for c in held if c.group == "capped"}) == 1
    assert_counts_exact("default")
    done, failed, dead, back, cancel_active, *rest = held
    assert q.finish([Outcome(done.id, done.token, "completed", "3"),
                     Outcome(failed.id, failed.token, "failed", "ValueError: x", 0),
                     Outcome(dead.id, dead.token, "dead", "ValueError: y")]) == ["completed", "ready", "dead"]
    assert q.release_lock(back.id, back.token)
    assert_counts_exact("default")
    ready_a = next(i for i in q.client.lrange(q.keys.lane("a"), 0, -1))
    assert q.cancel([ready_a, later[0].id, cancel_active.id, child.id]) == ["ok"] * 4
    assert_counts_exact("default")
    lq.resume("b")
    emq.set_group_limit("default", "capped", None)
    assert q.admin.run_now([later[1].id]) == ["ok"] and q.admin.retry([dead.id]) == ["ok"]
    assert_counts_exact("default")
    for c in rest:  # leases that expire now: the sweep puts them back at the head of their lanes
        q.extend_lock(c.id, c.token, 1)
    wait_for(lambda: q.sweep() or not q.counts().active, timeout=5, what="the sweep reclaimed the expired leases")
    assert_counts_exact("default")
    check_invariants("default")
    run_until_empty()
    assert_counts_exact("default")
    check_invariants("default")
    assert walk_counts("default")["ready"] == 0 and q.counts().ready == 0


def test_a_queue_from_before_counters_is_recounted_in_steps_while_it_changes(emq_env):
    """Counters missing (a queue older than them): counts walks the lanes meanwhile, and recount
    steps interleaved with mints and claims end exact, with the ring's membership set filled."""
    q = Queue("default")
    jobs.add.using(group=lambda a, b: f"g{b % 300}").enqueue_many([((1, i), {}) for i in range(600)])
    q.client.delete(q.keys.counters, q.keys.ring_in)  # as a queue from before them looks
    q.client.rpush(q.keys.ring, "g7")  # and a group twice on the ring, as old and new scripts side by side could
    assert q.counts().ready == 600
    k = keep(q)
    assert k.recount_step(20) is False  # starts the recount
    assert q.client.scard(q.keys.ring_in) == 300
    steps = 0
    while not k.recount_step(20):
        steps += 1
        jobs.add.using(group=f"new{steps}").enqueue(2, steps)
        jobs.add.using(group="g3").enqueue(3, steps)
        q.finish([Outcome(c.id, c.token, "completed", "null") for c in q.bclaim(3, "w")])  # not left to expire
    assert steps > 1 and q.client.hget(q.keys.counters, "mode") == "exact"
    assert not q.client.exists(q.keys.recount_seen)
    assert_counts_exact("default")
    run_until_empty()
    assert_counts_exact("default")


def test_a_fresh_queue_counts_exactly_from_its_first_mint(emq_env):
    q = Queue("default")
    jobs.add.enqueue(1, 2)
    assert q.client.hget(q.keys.counters, "mode") == "exact" and q.counts().ready == 1


def test_a_lane_a_cancel_emptied_leaves_the_ring_when_a_claim_reaches_it_and_turns_stay_fair(emq_env):
    q = Queue("default")
    for g in "abc":
        jobs.add.using(group=g).enqueue_many([((g, i), {}) for i in range(3)])
    b_ids = q.client.lrange(q.keys.lane("b"), 0, -1)
    assert q.cancel(b_ids) == ["ok"] * 3
    assert q.client.lrange(q.keys.ring, 0, -1) == ["a", "b", "c"], "no scan of the ring at the cancel"
    jobs.add.using(group="b").enqueue("b", 9)  # b gets work again: it keeps its turn, never twice on the ring
    assert q.client.lrange(q.keys.ring, 0, -1) == ["a", "b", "c"]
    q.cancel(q.client.lrange(q.keys.lane("b"), 0, -1))
    assert [c.group for c in q.bclaim(6, "w")] == ["a", "c", "a", "c", "a", "c"]
    assert q.client.lrange(q.keys.ring, 0, -1) == [] and q.client.scard(q.keys.ring_in) == 0
    assert_counts_exact("default")


def test_a_group_below_its_cap_again_rejoins_the_ring_once_without_a_scan(emq_env):
    q = Queue("default")
    for g in ("x", "y", "z"):
        emq.set_group_limit("default", g, 1)
        jobs.add.using(group=g).enqueue_many([((g, i), {}) for i in range(3)])
    first = q.bclaim(3, "w")
    assert [c.group for c in first] == ["x", "y", "z"] and q.client.llen(q.keys.ring) == 0
    q.finish([Outcome(c.id, c.token, "completed", "null") for c in (first[1], first[0])])
    assert q.client.lrange(q.keys.ring, 0, -1) == ["y", "x"], "back on the ring in the order they freed"
    assert_counts_exact("default")
    assert [c.group for c in q.bclaim(5, "w")] == ["y", "x"], "one each: at their cap again"
    assert_counts_exact("default")


def test_retention_without_traffic_trims_completed_cancelled_and_dead_within_one_pump_period(emq_env, settings):
    """A quiet queue: nothing finishes after the jobs below, yet the Pump deletes what outlived
    EMQ_RESULT_TTL / EMQ_DEAD_TTL within one park, and keeps at most EMQ_KEEP_DEAD dead jobs."""
    from emq.runtime.pump import Pump

    settings.EMQ_PUMP_PARK = 0.5
    q = Queue("default")
    done = jobs.add.enqueue_many([((1, i), {}) for i in range(20)])
    dead = [jobs.explode.enqueue(i) for i in range(5)]
    gone = jobs.add.enqueue_in(600, 1, 1)
    run_until_empty()
    assert q.cancel([gone.id]) == ["ok"]
    assert (q.counts().completed, q.counts().dead, q.counts().cancelled) == (20, 5, 1)
    settings.EMQ_RESULT_TTL, settings.EMQ_DEAD_TTL, settings.EMQ_KEEP_DEAD = 0.5, 3600, 2
    pump = Pump([q]).start()
    try:
        wait_for(lambda: q.counts().completed == 0 and q.counts().cancelled == 0 and q.counts().dead == 2,
                 timeout=0.5 + 0.5 + 2, what="retention within one Pump period of the results' expiry")
    finally:
        pump.close()
    assert not any(q.client.exists(q.keys.job(r.id)) for r in [*done, gone])
    kept = [r.id for r in dead if q.client.exists(q.keys.job(r.id))]
    assert sorted(kept) == sorted(q.client.zrange(q.keys.dead, 0, -1)) and len(kept) == 2
    assert_counts_exact("default")


def test_retention_deletes_a_bounded_slice_per_call(emq_env, settings):
    settings.EMQ_RESULT_TTL = 0
    q = Queue("default")
    jobs.add.enqueue_many([((1, i), {}) for i in range(30)])
    run_until_empty()
    first = keep(q).retain(limit=10)
    assert (first.completed, first.more) == (10, True) or q.counts().completed == 0  # finish may have trimmed
    while keep(q).retain(limit=10).more:
        pass
    assert q.counts().completed == 0 and not q.client.exists(q.keys.done)


@pytest.mark.slow
@pytest.mark.one_server  # INFO commandstats: the suite's other processes share EMQ_TEST_URL's server
@pytest.mark.timing
def test_counts_take_under_a_millisecond_of_the_server_at_200000_groups(emq_env, client, request):
    """200,000 groups with ready work: counts costs the same as at one (INFO commandstats)."""
    from emq.core.records import MintSpec

    if on_the_cluster(request):
        pytest.skip("INFO commandstats of one node: measured on a single server")

    q = Queue("default")
    for s in range(0, 200_000, 10_000):
        q.mint([MintSpec(f"j{i}", "tests.jobs.add", "[1, 2]", "{}", f"g{i}", "", 1, 30_000, 1, (1.0, 1.0))
                for i in range(s, s + 10_000)])
    assert q.counts().ready == 200_000
    before = client.info("commandstats").get("cmdstat_evalsha", {"usec": 0, "calls": 0})
    for _ in range(20):
        q.counts()
    after = client.info("commandstats")["cmdstat_evalsha"]
    per_call = (after["usec"] - before["usec"]) / (after["calls"] - before["calls"])
    print(f"\ncounts at 200,000 groups: {per_call:.1f} us of the server a call")
    assert per_call <= 1000


def test_a_lane_popped_ahead_gives_its_extra_job_back_and_a_lane_left_empty_leaves_the_ring(emq_env):
    """bclaim pops one id more than it takes: the extra serves the group's next turn or goes back to
    the lane's head (FIFO kept), and a lane that answered fewer leaves the ring and the lane set."""
    q = Queue("default")
    for g, n in (("a", 2), ("b", 1), ("c", 3)):
        jobs.add.using(group=g).enqueue_many([((g, i), {}) for i in range(n)])
    assert [c.args for c in q.bclaim(2, "w")] == [["a", 0], ["b", 0]]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["c", "a"] and q.client.llen(q.keys.lane("a")) == 1
    assert q.client.smembers(q.keys.lanes) == {"a", "c"} == q.client.smembers(q.keys.ring_in)
    assert_counts_exact("default")
    assert [c.args for c in q.bclaim(10, "w")] == [["c", 0], ["a", 1], ["c", 1], ["c", 2]]
    assert not q.client.exists(q.keys.ring, q.keys.ring_in, q.keys.lanes, q.keys.lane("a"), q.keys.lane("c"))
    assert_counts_exact("default")


@pytest.mark.one_server  # INFO commandstats: the suite's other processes share EMQ_TEST_URL's server
def test_a_job_alone_in_its_lane_costs_one_command_more_than_one_of_a_busy_lane(emq_env, client, request):
    """Commands run inside the claim scripts per job (INFO commandstats): 300 one-job groups against
    300 jobs of one group. A lone lane's extra is its own LPOP; the ring and the lane set are written
    once a batch, not once a group (DESIGN rule 8), and uncapped groups keep no active count at all."""
    from emq.core.records import MintSpec

    if on_the_cluster(request):
        pytest.skip("INFO commandstats of one node: measured on a single server")

    def commands_per_job(group_of) -> float:
        q = Queue(f"cost-{group_of(1)}")
        q.mint([MintSpec(f"j{i}", "tests.jobs.add", "[1, 2]", "{}", group_of(i), "", 1, 30_000, 1, (1.0, 1.0))
                for i in range(300)])
        client.config_resetstat()
        while q.bclaim(100, "w"):
            pass
        stats = client.info("commandstats")
        assert not client.exists(q.keys.active, q.keys.held)
        sent = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall")
        return sum(v["calls"] for k, v in stats.items() if k not in sent) / 300

    busy, lone = commands_per_job(lambda i: "one"), commands_per_job(lambda i: f"g{i}")
    print(f"\ncommands a job inside bclaim: one group {busy:.2f}, one-job groups {lone:.2f}")
    assert lone - busy <= 1.1


def test_a_lane_whose_last_job_was_popped_ahead_leaves_the_ring_on_its_next_turn(emq_env):
    """Two groups, one batch of several turns: the group whose second (last) job waited as the spare
    leaves the ring and the lane set when that job is leased, not a batch later."""
    q = Queue("default")
    jobs.add.using(group="a").enqueue_many([(("a", i), {}) for i in range(2)])
    jobs.add.using(group="b").enqueue_many([(("b", i), {}) for i in range(5)])
    assert [c.args for c in q.bclaim(4, "w")] == [["a", 0], ["b", 0], ["a", 1], ["b", 1]]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["b"] and q.client.smembers(q.keys.lanes) == {"b"}
    assert_counts_exact("default")
    assert [c.args for c in q.bclaim(10, "w")] == [["b", 2], ["b", 3], ["b", 4]]
    assert_counts_exact("default")


def test_a_quiet_queue_is_trimmed_again_when_its_oldest_result_expires_not_every_tick(emq_env, settings):
    """The idle budget: retention runs when something can expire (the script says when), at most
    RETAIN_EVERY apart, instead of one script call every Pump tick."""
    import time

    from emq.runtime.upkeep import RETAIN_EVERY, Upkeep

    q, upkeep = Queue("default"), Upkeep()
    upkeep.step(q)
    assert upkeep.retain_at[q.keys.ns] - time.monotonic() == pytest.approx(RETAIN_EVERY, abs=5)
    settings.EMQ_RESULT_TTL = 60
    jobs.add.enqueue(1, 2)
    run_until_empty()
    upkeep = Upkeep()
    upkeep.step(q)
    assert upkeep.retain_at[q.keys.ns] - time.monotonic() == pytest.approx(60, abs=5)


def test_finish_trims_completed_jobs_by_count_and_by_age_as_they_end(emq_env, settings):
    """finish keeps the completed set within EMQ_KEEP_COMPLETED and EMQ_RESULT_TTL as jobs end, hashes
    with them: a busy queue's results do not wait for the Pump's retention."""
    settings.EMQ_KEEP_COMPLETED = 3
    q = Queue("default")
    jobs.add.enqueue_many([((1, i), {}) for i in range(5)])
    claims = claim_all(q, 5)
    assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in claims]) == ["completed"] * 5
    assert q.client.zcard(q.keys.done) == 3, "the count is kept as jobs finish"
    assert sum(q.client.exists(q.keys.job(c.id)) for c in claims) == 3, "trimmed with their hashes"
    settings.EMQ_RESULT_TTL = 0
    jobs.add.enqueue_many([((2, i), {}) for i in range(2)])
    later = claim_all(q, 2)
    assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in later]) == ["completed"] * 2
    assert not q.client.exists(q.keys.done), "what outlived its ttl went in the same finish"
    assert not any(q.client.exists(q.keys.job(c.id)) for c in claims + later)
