"""Flow control, part two: rate limits on lanes, exact across workers on the server clock."""

from __future__ import annotations

import json
import threading
import time

import pytest

import emq
from emq.core.connection import get_client
from emq.core.engine import Queue
from emq.runtime.worker import Worker
from emq.testing import check_invariants, run_until_empty, walk_counts
from tests import jobs
from tests.fleet import fleet_for
from tests.procs import server_ms, wait_for


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


def starts(refs) -> list[int]:
    """The server ms each job that started was claimed at, sorted."""
    found = (r.get().started for r in refs)
    return sorted(int(s.timestamp() * 1000) for s in found if s)


def most_in_a_window(times: list[int], per_ms: int) -> int:
    j, most = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - per_ms:
            j += 1
        most = max(most, i - j + 1)
    return most


def in_thread(worker: Worker) -> threading.Thread:
    t = threading.Thread(target=worker.run, daemon=True)
    t.start()
    return t


def test_a_claim_takes_only_the_room_of_a_limited_group(emq_env):
    q = Queue("default")
    emq.set_rate_limit("default", 3, 60, group="slow")
    assert emq.rate_limits("default") == {"slow": (3, 60.0)}
    jobs.add.using(group="slow").enqueue_many([((i, 0), {}) for i in range(10)])
    jobs.add.using(group="fast").enqueue_many([((i, 0), {}) for i in range(10)])
    claimed = q.bclaim(100, "w")
    assert sorted(c.group for c in claimed) == ["fast"] * 10 + ["slow"] * 3
    assert q.bclaim(100, "w") == []  # the held lane left the ring: nothing to claim, no wake left
    assert q.client.llen(q.keys.ring) == 0 and q.client.llen(q.keys.ns + "wake") <= 1
    [(group, until)] = q.rates.holds()
    assert group == "slow" and until - server_ms(q.client) > 55_000
    emq.remove_rate_limit("default", group="slow")  # the hold ends with the limit: back on the ring
    assert len(q.bclaim(100, "w")) == 7


def test_each_group_and_the_whole_queue(emq_env):
    q = Queue("default")
    emq.set_rate_limit("default", 2, 60, group="*")
    jobs.add.using(group="a").enqueue_many([((i, 0), {}) for i in range(5)])
    jobs.add.using(group="b").enqueue_many([((i, 0), {}) for i in range(5)])
    assert sorted(c.group for c in q.bclaim(100, "w")) == ["a", "a", "b", "b"]
    emq.remove_rate_limit("default", group="*")
    emq.set_rate_limit("default", 3, 60)
    assert len(q.bclaim(100, "w")) == 3
    assert q.bclaim(100, "w") == []
    emq.remove_rate_limit("default")
    assert len(q.bclaim(100, "w")) == 3


def test_a_stored_limit_keeps_the_hash_a_hashtable_and_reads_as_written(emq_env):
    q = Queue("default")
    q.client.hset(q.keys.rates, "old", "2,60000")  # as the previous version stored it
    emq.set_rate_limit("default", 3, 60, group="new")
    assert q.client.object("encoding", q.keys.rates) == "hashtable"  # a claim's HMGET looks up, not scans
    assert emq.rate_limits("default") == {"old": (2, 60.0), "new": (3, 60.0)}
    jobs.add.using(group="old").enqueue_many([((i, 0), {}) for i in range(5)])
    jobs.add.using(group="new").enqueue_many([((i, 0), {}) for i in range(5)])
    assert sorted(c.group for c in q.bclaim(100, "w")) == ["new"] * 3 + ["old"] * 2
    emq.remove_rate_limit("default", group="new")
    emq.remove_rate_limit("default", group="old")
    assert not q.client.exists(q.keys.rates)  # no limit left: a claim takes the queue for unlimited


def test_the_pump_puts_a_held_lane_back_when_its_window_frees(emq_env):
    q = Queue("default")
    emq.set_rate_limit("default", 2, 0.5, group="g")
    jobs.add.using(group="g").enqueue_many([((i, 0), {}) for i in range(4)])
    assert len(q.bclaim(10, "w")) == 2
    assert q.bclaim(10, "w") == []
    tick = wait_for(lambda: (t := q.tick("p", 5000, 1000)).park_ms < 1000 and t, timeout=2)  # parks to the hold's end
    wait_for(lambda: q.tick("p", 5000, 1000) and q.client.llen(q.keys.ring) == 1, timeout=2, every=0.05)
    assert tick.leader
    assert q.client.llen(q.keys.ns + "wake") == 1  # parked workers hear of it
    assert len(q.bclaim(10, "w")) == 2


def test_rate_limits_from_settings_are_checked(emq_env, settings):
    settings.EMQ_RATE_LIMITS = {"default": {"api": "100/60", "*": "5/1"}, "mail": "10/1"}
    assert emq.apply_rate_limits() == 3
    assert emq.rate_limits("default") == {"api": (100, 60.0), "*": (5, 1.0)}
    assert emq.rate_limits("mail") == {None: (10, 1.0)}
    settings.EMQ_RATE_LIMITS = {"default": {"api": "fast"}}
    with pytest.raises(emq.ConfigurationError, match="100/60"):
        emq.apply_rate_limits()


@pytest.mark.slow
@pytest.mark.timing
def test_a_group_at_10_per_second_starts_50_in_5_seconds_while_another_drains(emq_env):
    emq.set_rate_limit("default", 10, 1, group="limited")
    limited = jobs.add.using(group="limited").enqueue_many([((i, 0), {}) for i in range(120)])
    free = jobs.add.using(group="free").enqueue_many([((i, 0), {}) for i in range(1000)])
    w = Worker(["default"], concurrency=8, park_timeout=0.5)
    t = in_thread(w)
    try:
        wait_for(lambda: Queue("default").counts().completed >= 1000 + 60, timeout=15, every=0.1)
    finally:
        w.stop()
        t.join(10)
    times = starts(limited)
    first = times[0]
    assert 49 <= sum(1 for s in times if s < first + 5000) <= 50
    assert most_in_a_window(times, 1000) <= 10
    assert max(starts(free)) - first < 3000  # the free group never waited for the limited one


@pytest.mark.slow
def test_three_worker_processes_respect_one_limit(emq_env, fleet):
    limits = json.dumps({"default": {"limited": "10/1"}})
    for _ in range(3):
        fleet.worker("--concurrency", "4", env={"EMQ_RATE_LIMITS": limits})
    fleet.wait_workers(3)
    limited = jobs.add.using(group="limited").enqueue_many([((i, 0), {}) for i in range(60)])
    wait_for(lambda: Queue("default").counts().completed >= 60, timeout=15, every=0.2)
    times = starts(limited)
    assert most_in_a_window(times, 1000) <= 10
    assert 49 <= sum(1 for s in times if s < times[0] + 5000) <= 51


@pytest.mark.slow
def test_parked_workers_stay_quiet_while_a_lane_waits_for_its_window(emq_env, fleet, request):
    if request.node.callspec.params.get("server_url") != "embedded":
        pytest.skip("counted on the commandstats of the session's own server (others share EMQ_TEST_URL)")
    limits = json.dumps({"default": {"limited": "5/4"}})
    for _ in range(3):
        fleet.worker("--concurrency", "4", env={"EMQ_RATE_LIMITS": limits})
    fleet.wait_workers(3)
    jobs.add.using(group="limited").enqueue_many([((i, 0), {}) for i in range(10)])
    wait_for(lambda: Queue("default").counts().completed >= 5, timeout=10, every=0.1)
    client = get_client()
    before = _sent(client)
    time.sleep(2.5)  # the interval measured: the lane waits for its window, nobody should poll
    spent = _sent(client) - before
    assert spent <= 3 * 2.5 * 1 + 6, spent  # ≤ 1 command/s a worker, plus a Pump tick or two and heartbeats
    wait_for(lambda: Queue("default").counts().completed >= 10, timeout=10, every=0.2)


def _sent(client) -> int:
    """Commands clients sent (scripts and blocking pops), not the commands scripts ran inside."""
    stats = client.info("commandstats")
    sent = ("evalsha", "eval", "fcall", "blpop", "bzpopmin", "hset", "expire", "sadd", "zadd")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in sent)


def test_rate_limited_holds_only_its_group_and_spends_no_attempt(emq_env, tmp_path):
    marker = str(tmp_path / "429")
    ref = jobs.rate_limited_once.using(group="api").enqueue(marker, 2.0)
    w = Worker(["default"], concurrency=2, park_timeout=0.5)
    t = in_thread(w)
    try:
        # The worker's finish puts the hold on the server a moment after the job raised: a job of
        # the group enqueued before that may start at once (a free slot claims it), so wait for it.
        hold = wait_for(lambda: get_client().zscore(Queue("default").keys.rhold, "api"), timeout=10,
                        what="the group held")
        raised_at = hold - 2000
        later = jobs.add.using(group="api").enqueue(1, 1)
        other = jobs.add.using(group="other").enqueue(2, 2)
        assert other.wait(timeout=5).state == "completed"
        assert ref.wait(timeout=10).state == "completed"
        later.wait(timeout=5)
    finally:
        w.stop()
        t.join(10)
    job = ref.get()
    assert job.attempts == 1  # the 429 was given back
    assert job.started.timestamp() * 1000 - raised_at >= 2000 - 50
    assert later.get().started.timestamp() * 1000 - raised_at >= 2000 - 50
    assert other.get().started.timestamp() * 1000 - raised_at < 1500


def test_a_limited_queue_turns_its_plain_groups_as_the_others(emq_env):
    """bclaim's inline turn of a plain group (no limit of its own, no hold; _rates.lua's limits are read
    for the whole queue): ring order, the spare of a group with more jobs, priorities, a held group
    still on the ring, and the counters stay exact."""
    q = Queue("default")
    emq.set_rate_limit("default", 1, 60, group="slow")
    for g, n in (("slow", 3), ("a", 1), ("b", 3), ("c", 2), ("p", 1), ("h", 2)):
        jobs.add.using(group=g).enqueue_many([((g, i), {}) for i in range(n)])
    jobs.add.using(group="p", priority=5).enqueue("p", 1)  # p enters priority mode: its lane holds markers
    # A hold on a group still on the ring (a job's RateLimited does this: _holds.rate_limited).
    q.client.zadd(q.keys.rhold, {"h": server_ms(q.client) + 60_000})
    claims = q.bclaim(100, "w")
    assert [(c.args[0], c.args[1]) for c in claims] == [
        ("slow", 0), ("a", 0), ("b", 0), ("c", 0), ("p", 1), ("b", 1), ("c", 1), ("p", 0), ("b", 2),
    ]
    assert q.bclaim(100, "w") == []
    assert q.client.smembers(q.keys.lanes) == {"slow", "h"} and q.client.llen(q.keys.ring) == 0
    assert not q.client.exists(q.keys.ns + "prio"), "p's lane emptied: it left priority mode"
    check_invariants(q)
    assert q.counts().ready == 4 == walk_counts("default")["ready"]  # slow's 2 and the held h's 2


def test_a_burst_worker_waits_for_rate_limited_jobs(emq_env):
    """run_until_empty (a burst worker) ends only once the jobs a rate limit held back have run too."""
    emq.set_rate_limit("default", 2, 1, group="limited")
    refs = jobs.add.using(group="limited").enqueue_many([((i, 0), {}) for i in range(5)])
    started = time.monotonic()
    run_until_empty()
    assert [r.get().state for r in refs] == ["completed"] * 5
    assert time.monotonic() - started < 10  # the holds' length (2 s), not a horizon's
    times = starts(refs)
    assert most_in_a_window(times, 1000) <= 2


def test_a_run_after_a_rate_limit_hold_is_still_the_first_attempt(emq_env, tmp_path):
    """The hold spends no attempt: the run after it counts itself attempt 1 (ctx.attempt, and so the
    backoff, the log line and the trace), though its claim took a new fencing token."""
    ref = jobs.attempt_after_a_hold.enqueue(str(tmp_path / "hit"))
    deadline = time.monotonic() + 10
    while emq.get_job(ref.id).state != "completed" and time.monotonic() < deadline:
        run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.result, job.attempts) == ("completed", 1, 1)
