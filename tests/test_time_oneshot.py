"""One-shot scheduling: enqueue_in / enqueue_at become ready on time, on the server's clock."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

import emq
from emq.core.engine import Queue
from emq.runtime.pump import Pump
from tests import jobs
from tests.procs import server_ms, wait_for


@pytest.fixture
def pump(emq_env):
    p = Pump([Queue("default")]).start()
    yield p
    p.close()


def test_enqueue_in_is_scheduled_until_due_on_the_server_clock(emq_env, client):
    before = server_ms(client)
    ref = jobs.add.enqueue_in(timedelta(minutes=5), 1, 2)
    job = emq.get_job(ref.id)
    assert job.state == "scheduled"
    due_ms = int(job.due.timestamp() * 1000)
    assert before + 300_000 <= due_ms <= server_ms(client) + 300_000
    assert client.zscore(Queue("default").keys.scheduled, ref.id) == due_ms


def test_enqueue_at_with_a_naive_datetime_is_refused_saying_so(emq_env, client):
    with pytest.raises(ValueError, match="naive datetime.*pass an aware one"):
        jobs.add.enqueue_at(datetime(2030, 1, 1, 12, 0), 1, 2)
    with pytest.raises(TypeError, match="needs a datetime"):
        jobs.add.enqueue_at("2030-01-01T12:00:00Z", 1, 2)
    assert Queue("default").counts().scheduled == 0


def test_a_due_time_in_the_past_means_ready_now(emq_env):
    ref = jobs.add.enqueue_at(datetime(2000, 1, 1, tzinfo=ZoneInfo("Europe/Berlin")), 1, 2)
    assert emq.get_job(ref.id).state == "ready"
    assert emq.get_job(jobs.add.enqueue_in(-5, 1, 1).id).state == "ready"


def test_enqueue_at_a_time_between_two_milliseconds_is_due_at_the_later_one(emq_env, client):
    """The server keeps whole ms: a due time rounded down would let the job start before the time asked for."""
    at = datetime(2030, 1, 1, 12, 0, 0, 400, tzinfo=ZoneInfo("UTC"))  # 0.4 ms past a whole ms
    ref = jobs.add.enqueue_at(at, 1, 2)
    whole_ms = int(datetime(2030, 1, 1, 12, 0, tzinfo=ZoneInfo("UTC")).timestamp()) * 1000
    assert client.zscore(Queue("default").keys.scheduled, ref.id) == whole_ms + 1
    assert emq.get_job(ref.id).due >= at


def test_enqueue_at_and_in_work_after_using(emq_env):
    at = datetime.now(ZoneInfo("UTC")) + timedelta(hours=1)
    ref = jobs.add.using(queue="mail", group="g1", job_id="later-1").enqueue_at(at, 1, 2)
    job = emq.get_job("later-1", queue="mail")
    assert (ref.queue, job.state, job.group) == ("mail", "scheduled", "g1")
    assert abs(job.due.timestamp() - at.timestamp()) < 0.002
    assert emq.get_job(jobs.add.using(queue="mail").enqueue_in(60, 3, 4).id, queue="mail").state == "scheduled"


@pytest.mark.timing
def test_the_pump_makes_scheduled_jobs_ready_within_10ms_of_due(emq_env, client, pump):
    """Lateness = server time when the promotion's wake token arrives minus the job's due time.

    The Pump is parked (nothing due within its 5 s cap) when each job is minted, so every
    measurement also covers the mint waking the Pump through ``pumpwake``.
    """
    q = Queue("default")
    jobs.add.enqueue_in(timedelta(minutes=10), 0, 0)  # keeps the schedule set non-empty
    late = []
    for i in range(13):
        client.delete(q.keys.wake)
        ref = jobs.add.enqueue_in(0.15 + 0.01 * (i % 3), i, i)
        assert client.blpop([q.keys.wake], timeout=3), "the Pump never promoted the job"
        now = server_ms(client)
        job = q.get_job(ref.id)
        assert job.state == "ready"
        if i:  # the first round warms the Pump's connections up (149 ms once on the cluster)
            late.append(now - int(job.due.timestamp() * 1000))
    print(f"\npump lateness ms: median={statistics.median(late)} max={max(late)} all={late}")
    assert min(late) >= 0
    assert statistics.median(late) <= 10
    # The median is the on-time figure; the bound on the worst catches a Pump that sleeps to its
    # 5 s cap instead of waking for the mint, with room for a loaded CI machine's stalls.
    assert max(late) <= 1000


def test_a_worker_runs_a_scheduled_job_only_once_it_is_due(emq_env, client, pump):
    ref = jobs.add.enqueue_in(0.3, 20, 22)
    q = Queue("default")
    assert q.bclaim(1, "early") == []
    (claim,) = wait_for(lambda: q.bclaim(1, "w"), timeout=5, what="job due")
    job = q.get_job(ref.id)
    assert claim.id == ref.id and job.started >= job.due
