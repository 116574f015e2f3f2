"""Pause and resume a queue or one group's lane: claimed by nobody meanwhile, the state kept in Valkey."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest
import redis
from django.test.utils import override_settings

import emq
from emq.core import embedded
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import delete_prefix, run_until_empty
from tests import jobs
from tests.fleet import Fleet
from tests.procs import no_new_connection, wait_for


def test_a_paused_queue_is_claimed_by_nobody_and_its_jobs_stay_ready(emq_env):
    q = Queue("default")
    jobs.add.enqueue_many([((i, i), {}) for i in range(3)])
    soon = jobs.add.enqueue_in(0.05, 9, 9)
    lq = emq.queue("default")
    assert lq.pause() is True and lq.pause() is False and lq.paused() is True
    assert q.bclaim(10, "w") == []
    wait_for(lambda: q.tick("pump", 5000, 5000).promoted, what="the due job promoted while paused")
    c = q.counts()
    assert (c.ready, c.active, c.paused, q.get_job(soon.id).state) == (4, 0, True, "ready")
    run_until_empty()  # a burst worker leaves a paused queue's jobs where they are
    q.client.delete(q.keys.wake)
    assert lq.resume() is True and lq.resume() is False and lq.paused() is False
    assert q.client.llen(q.keys.wake) == 1, "resuming wakes parked workers at once"
    assert len(q.bclaim(10, "w")) == 4


def test_a_paused_group_leaves_the_ring_like_a_capped_one(emq_env):
    q, lq = Queue("default"), emq.queue("default")
    jobs.add.using(group="a").enqueue_many([((1, i), {}) for i in range(2)])
    jobs.add.using(group="b").enqueue(2, 0)
    assert lq.pause("a") is True and lq.paused("a") and not lq.paused() and not lq.paused("b")
    assert q.client.lrange(q.keys.ring, 0, -1) == ["b"] and q.paused_groups() == ["a"]
    jobs.add.using(group="a").enqueue(1, 9)  # a paused lane that gets work stays off the ring
    assert q.client.lrange(q.keys.ring, 0, -1) == ["b"]
    assert [c.args[0] for c in q.bclaim(10, "w")] == [2]
    q.client.delete(q.keys.wake)
    assert lq.resume("a") is True and q.client.lrange(q.keys.ring, 0, -1) == ["a"]
    assert q.client.llen(q.keys.wake) == 1
    assert [c.args for c in q.bclaim(10, "w")] == [[1, 0], [1, 1], [1, 9]]


def test_pausing_a_capped_group_and_lifting_the_cap_keeps_it_off_the_ring(emq_env):
    q = Queue("default")
    emq.set_group_limit("default", "g", 1)
    jobs.add.using(group="g").enqueue_many([((1, i), {}) for i in range(3)])
    (c,) = q.bclaim(5, "w")
    emq.queue().pause("g")
    q.finish([Outcome(c.id, c.token, "completed", "2")])  # below its cap again, but paused
    emq.set_group_limit("default", "g", None)
    assert q.client.lrange(q.keys.ring, 0, -1) == [] and q.bclaim(5, "w") == []
    emq.queue().resume("g")
    assert len(q.bclaim(5, "w")) == 2


def test_pause_of_a_partitioned_queue_covers_every_partition_and_a_group_its_own(emq_env, settings):
    settings.EMQ_PARTITIONS = {"clicks": 3}
    lq = emq.queue("clicks")
    assert lq.pause() is True and all(p.paused() for p in lq.partitions) and lq.counts().paused
    assert lq.resume() is True and not any(p.paused() for p in lq.partitions)
    lq.pause("tenant-7")
    assert [p.paused("tenant-7") for p in lq.partitions].count(True) == 1
    assert lq.of_group("tenant-7").paused("tenant-7") and lq.paused("tenant-7")


@pytest.mark.parametrize("partitions", [1, 3])
def test_paused_answers_for_the_queue_and_paused_groups_lists_the_lanes(emq_env, settings, partitions):
    """A paused lane leaves the queue running (paused() is False); paused_groups() names the paused lanes."""
    settings.EMQ_PARTITIONS = {"clicks": partitions}
    lq = emq.queue("clicks")
    lq.pause("tenant-7")
    lq.pause("tenant-9")
    assert (lq.paused(), lq.paused("tenant-7"), lq.paused("tenant-8")) == (False, True, False)
    assert lq.paused_groups() == ["tenant-7", "tenant-9"]
    lq.resume("tenant-7")
    assert lq.paused_groups() == ["tenant-9"]


# -- real worker processes on a server of their own (INFO commandstats must see only them) -----------


def _private_kinds() -> list[str]:
    kinds = ["valkey"]
    if os.environ.get("EMQ_TEST_URL") and shutil.which("redis-server"):
        kinds.append("redis")  # the Redis of EMQ_TEST_URL is shared: a private redis-server of the same build
    return kinds


@pytest.fixture(params=_private_kinds())
def private(request, tmp_path):
    """A server for this test only: the embedded Valkey, or a redis-server when Redis is under test too."""
    folder = tmp_path / request.param
    folder.mkdir()
    if request.param == "valkey":
        url = embedded.start(folder, persist=False)
    else:
        port = embedded._free_port()
        subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                        "--daemonize", "yes", "--dir", str(folder), "--logfile", str(folder / "redis.log")], check=True)
        url = f"redis://127.0.0.1:{port}/0"
        wait_for(lambda: embedded._answers(port), what="redis-server up")
    raw = redis.Redis.from_url(url, decode_responses=True)
    env = {"EMQ_URL": url, "EMQ_PREFIX": f"emqtest-{uuid.uuid4().hex[:10]}", "EMQ_CLUSTER": "false"}
    crew = Fleet(env, folder)
    try:
        with override_settings(**{**env, "EMQ_CLUSTER": False}):
            yield request.param, raw, crew
            delete_prefix(raw, env["EMQ_PREFIX"])
    finally:
        crew.reap()
        try:
            raw.shutdown(nosave=True, now=True)
        except redis.ConnectionError:
            pass


@pytest.mark.timing
def test_a_queue_paused_for_3_s_under_2_workers_starts_nothing_and_resumes_at_once(private):
    """100 ready jobs; parked workers send at most 10 commands meanwhile; resumed, all 100 complete."""
    kind, raw, crew = private
    for _ in range(2):  # Pumps park 60 s: their own idle traffic is test_lanes' business, not this one's
        crew.worker("--concurrency", "4", env={"EMQ_PUMP_PARK": "60"})
    crew.wait_workers(2)
    wait_for(lambda: raw.info("clients")["blocked_clients"] >= 3, timeout=20, what="2 workers parked")
    wait_for(lambda: no_new_connection(raw), timeout=30, what="the workers done starting")
    q, lq = Queue("default"), emq.queue("default")
    lq.pause()
    refs = jobs.nap.enqueue_many([((0.01,), {}) for _ in range(100)])
    raw.config_resetstat()
    time.sleep(3)  # the measurement window itself
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in raw.info("commandstats").items()}
    for mine in ("config|resetstat", "info"):
        calls.pop(mine, None)
    c = q.counts()
    assert (c.ready, c.active, c.completed, int(raw.hget(q.keys.stats, "claimed") or 0)) == (100, 0, 0, 0)
    resumed = time.monotonic()
    assert lq.resume() is True
    wait_for(lambda: q.counts().completed == 100, timeout=30, what="all 100 jobs completed")
    took = time.monotonic() - resumed
    print(f"\n{kind}: paused 3 s with 100 ready jobs under 2 workers: {sum(calls.values())} commands in "
          f"commandstats {calls} (script calls included), 0 started; resumed: all 100 done in {took * 1000:.0f} ms")
    assert sum(calls.values()) <= 10
    assert all(q.get_job(r.id).attempts == 1 for r in refs)
