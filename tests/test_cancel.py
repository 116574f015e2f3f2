"""Cancel a scheduled, ready or running job: it ends cancelled, never runs or is stopped, counts stay right."""

from __future__ import annotations

import time

import pytest

import emq
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import run_until_empty
from tests import jobs, records
from tests.fleet import fleet_for
from tests.procs import wait_for


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


def stat(q: Queue, name: str) -> int:
    return int(q.client.hget(q.keys.stats, name) or 0)


def active_of(q: Queue, group: str) -> int:
    return int(q.client.hget(q.keys.active, group) or 0)


# -- cancel a job that waits ---------------------------------------------------------------------


def test_a_cancelled_scheduled_job_leaves_the_schedule_and_never_runs(emq_env, tmp_path):
    runs = tmp_path / "runs"
    q = Queue("default")
    ref = jobs.touch.enqueue_in(0.2, str(runs))
    assert emq.cancel(ref.id) is True
    c = q.counts()
    assert (c.scheduled, c.ready, c.cancelled, c.next_due_ms) == (0, 0, 1, None)
    job = q.get_job(ref.id)
    assert (job.state, job.error, job.errors[-1]["error"]) == ("cancelled", "emq.errors.Cancelled: cancelled",
                                                             "emq.errors.Cancelled: cancelled")
    wait_for(lambda: q.tick("pump", 5000, 5000).now_us > (job.created.timestamp() + 0.3) * 1e6, what="due passed")
    run_until_empty()
    assert not runs.exists() and q.get_job(ref.id).state == "cancelled"


def test_a_cancelled_ready_job_leaves_its_lane_and_the_ring_stays_right(emq_env, tmp_path):
    """Cancel the middle of a lane (order kept), then a lane's only job: its lane leaves the lane set at
    once and the ring when a claim comes round to it (no scan of the ring), and ready stays exact."""
    runs = tmp_path / "runs"
    q = Queue("default")
    a, b, c = (jobs.touch.using(group="g").enqueue(str(runs), t) for t in "abc")
    lone = jobs.touch.using(group="lone").enqueue(str(runs), "lone")
    assert q.cancel([b.id, lone.id]) == ["ok", "ok"]
    assert q.client.lrange(q.keys.lane("g"), 0, -1) == [a.id, c.id]
    assert q.client.smembers(q.keys.lanes) == {"g"} and not q.client.exists(q.keys.lane("lone"))
    counts = q.counts()
    assert (counts.ready, counts.cancelled) == (2, 2)
    run_until_empty()
    assert q.client.lrange(q.keys.ring, 0, -1) == [] and q.client.scard(q.keys.ring_in) == 0
    assert sorted(runs.read_text().split()) == ["a", "c"]
    assert q.counts().cancelled == 2 and stat(q, "cancelled") == 2


def test_cancelling_a_finished_or_unknown_job_answers_false_and_changes_nothing(emq_env):
    q = Queue("default")
    done, dead = jobs.add.enqueue(1, 1), jobs.always_fails.using(max_attempts=1).enqueue()
    run_until_empty()
    before = {r.id: records.fields(q.client, q.keys.job(r.id)) for r in (done, dead)}
    assert emq.cancel(done.id) is False and done.cancel() is False and emq.cancel("nope") is False
    assert emq.queue().cancel_many([dead.id, "nope", done.id]) == ["dead", "missing", "completed"]
    assert {r.id: records.fields(q.client, q.keys.job(r.id)) for r in (done, dead)} == before
    ref = jobs.add.enqueue_in(60, 1, 1)
    assert ref.cancel() is True and ref.cancel() is False and ref.get().state == "cancelled"


def test_cancelled_jobs_are_kept_and_trimmed_like_completed_ones(emq_env, settings):
    settings.EMQ_KEEP_COMPLETED = 2
    q = Queue("default")
    refs = [jobs.add.enqueue_in(60, 1, i) for i in range(5)]
    for r in refs:
        emq.cancel(r.id)
    kept = set(q.client.zrange(q.keys.cancelled, 0, -1))
    assert len(kept) == 2 and {r.id for r in refs if q.client.exists(q.keys.job(r.id))} == kept
    assert q.admin.delete([kept.pop()]) == ["ok"] and q.counts().cancelled == 1


def test_cancel_many_routes_ids_to_their_partitions(emq_env, settings):
    settings.EMQ_PARTITIONS = {"clicks": 3}
    refs = jobs.add.using(queue="clicks").enqueue_many([((i, i), {}) for i in range(6)])
    assert emq.queue("clicks").cancel_many([r.id for r in refs] + ["nope"]) == ["ok"] * 6 + ["missing"]
    assert emq.queue("clicks").counts().cancelled == 6
    assert emq.cancel(refs[0].id, queue="clicks") is False


def test_a_cancelled_task_reads_failed_with_the_cancelled_exception_path(emq_env):
    from tests import tasks

    result = tasks.add.using(run_after=None).enqueue(1, 2)
    assert emq.cancel(result.id) is True
    read = tasks.add.get_result(result.id)
    assert read.status == "FAILED" and [e.exception_class_path for e in read.errors] == ["emq.errors.Cancelled"]


# -- cancel a job that runs --------------------------------------------------------------------


def test_an_active_job_is_cancelled_at_once_and_its_late_finish_is_stale(emq_env):
    """Against the server: lease gone, group's active count down, extend says cancelled, finish stale."""
    q = Queue("default")
    emq.set_group_limit("default", "capped", 1)
    ref = jobs.add.using(group="capped").enqueue(1, 1)
    waiting = jobs.add.using(group="capped").enqueue(2, 2)
    (c,) = q.bclaim(5, "w")
    assert (c.id, active_of(q, "capped"), q.client.lrange(q.keys.ring, 0, -1)) == (ref.id, 1, [])
    q.client.delete(q.keys.wake)
    assert emq.cancel(ref.id) is True
    assert active_of(q, "capped") == 0 and q.client.lrange(q.keys.ring, 0, -1) == ["capped"]
    assert q.client.llen(q.keys.wake) == 1, "the capped group's freed slot wakes parked workers"
    assert q.client.zscore(q.keys.leases, ref.id) is None
    assert q.extend_locks([(ref.id, c.token), (ref.id, c.token + 1)], 1000) == ["cancelled", "stale"]
    assert q.finish([Outcome(ref.id, c.token, "completed", "2")]) == ["stale"]
    assert q.get_job(ref.id).state == "cancelled" and stat(q, "stale") == 1
    (nxt,) = q.bclaim(5, "w")
    assert nxt.id == waiting.id
    counts = q.counts()
    assert (counts.active, counts.ready, counts.cancelled) == (1, 0, 1)


@pytest.mark.timing  # the capped group's next job starts within 0.5 s of the cancel: a wake across processes
@pytest.mark.parametrize("job", ["until_cancelled", "until_cancelled_async"])
def test_a_running_job_sees_cancelled_and_its_capped_group_gets_its_slot_back(emq_env, fleet, tmp_path, job):
    """A real worker: the code sees ctx.cancelled and Cancelled within one renewal (lease 0.6 s: 0.2 s)."""
    notes = tmp_path / "notes"
    q = Queue("default")
    fleet.worker("--concurrency", "2", env={"EMQ_GROUP_LIMITS": '{"default": {"capped": 1}}'})
    fleet.wait_workers(1)
    ref = getattr(jobs, job).using(group="capped").enqueue(str(notes))
    behind = jobs.started_at.using(group="capped").enqueue()
    wait_for(lambda: notes.exists() and "started 1" in notes.read_text(), timeout=10, what="the job running")
    assert q.get_job(behind.id).state == "ready" and active_of(q, "capped") == 1
    cancelled_at = time.time()
    assert emq.cancel(ref.id) is True
    wait_for(lambda: "Cancelled cancelled=True" in notes.read_text(), timeout=5, what="the code saw the cancel")
    seen = time.time() - cancelled_at
    wait_for(lambda: q.get_job(behind.id).state == "completed", timeout=5, what="the capped group's next job ran")
    slot = q.get_job(behind.id).result - cancelled_at
    print(f"\n{job}: the capped group's next job started {slot * 1000:.0f} ms after the cancel; "
          f"the cancelled code saw it within {seen * 1000:.0f} ms")
    assert slot < 0.5, "the capped group's slot came back at the cancel, not when the worker heard of it"
    wait_for(lambda: stat(q, "stale") == 1, timeout=5, what="the late finish answered stale")
    job = q.get_job(ref.id)
    counts = q.counts()
    assert (job.state, job.attempts) == ("cancelled", 1)
    assert (counts.active, counts.ready, counts.completed, counts.cancelled) == (0, 0, 1, 1)
    assert stat(q, "completed") == 1 and active_of(q, "capped") == 0


def test_a_job_cancelled_before_its_slot_took_it_never_runs_and_the_slots_stay_whole(emq_env, tmp_path):
    """The renewal hears of the cancel while the job still waits for a thread: it is never started."""
    import threading

    from emq.runtime.worker import Worker

    notes = tmp_path / "notes"
    w = Worker(["default"], concurrency=1, pump=False, park_timeout=0.5)
    blocker = jobs.until_cancelled.enqueue(str(notes))  # holds the one thread until cancelled
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: notes.exists(), what="the first job running")
        held = next(iter(w.leases._held.values()))
        from emq.core.records import Claimed
        from emq.runtime.held import Held

        waiting = Held(held.queue, Claimed("x", 1, "tests.jobs.touch", [str(notes), "ran"], {}, 1000, 1, (0, 0)))
        w.jobs.running += 1
        w.slots.submit(waiting)  # queued behind the busy thread, as a claimed job would be
        w.deadlines.cancel(waiting)
        assert emq.cancel(blocker.id) is True
        wait_for(lambda: "Cancelled" in notes.read_text(), what="the first job stopped")
        wait_for(lambda: w.jobs.running == 0, what="both outcomes reported")
        wait_for(lambda: len([x for x in w.slots.threads if x.is_alive()]) == 1, what="one live slot thread")
    finally:
        w.stop()
        t.join(timeout=10)
    assert "ran" not in notes.read_text() and len(w.slots.threads) <= 1
