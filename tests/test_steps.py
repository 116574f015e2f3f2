"""Durable steps and sleeps (DESIGN rule 12): a step runs once for its job, whatever later runs do; a
sleep ends the run and gives the slot back without spending an attempt; a stale attempt's step is refused."""

from __future__ import annotations

import time

import pytest

import emq
from emq.core.engine import JournalOps, Queue
from emq.errors import LeaseExpired
from emq.jobs.context import JobContext
from emq.runtime.worker import Worker
from emq.testing import check_invariants, run_until_empty
from tests import durable_jobs as dj
from tests import jobs
from tests.fleet import fleet_for
from tests.procs import running, wait_for

IMPORTS = "tests.jobs,tests.durable_jobs"


def test_a_step_runs_once_and_a_failed_attempt_keeps_the_steps_before_it(emq_env, tmp_path):
    """Step two fails the first attempt; the retry returns step one from the journal and runs step two again."""
    notes = tmp_path / "notes"
    ref = dj.flaky_steps.enqueue(str(notes))
    run_until_empty()
    job = ref.get()
    assert (job.state, job.result, job.attempts) == ("completed", 2, 2)
    assert dj.lines(notes) == ["one", "two", "two"]
    assert [(s.name, s.kind, s.result) for s in job.steps] == [("one", "step", "one"), ("two", "step", 2)]
    assert all(s.finished is not None for s in job.steps)
    check_invariants("default")


def test_a_name_used_twice_in_one_run_is_an_error(emq_env):
    ref = dj.twice.enqueue()
    run_until_empty()
    job = ref.get()
    assert job.state == "dead" and "used twice in one run" in job.error


def test_a_stale_attempt_cannot_write_a_step(emq_env):
    """Once the lease is lost and the job claimed again, the old attempt's step is refused (fencing)."""
    q = Queue("default")
    jobs.add.enqueue(1, 2)
    (first,) = q.bclaim(1, "w1")
    assert q.release_locks([(first.id, first.token)]) == ["ok"]
    (second,) = q.bclaim(1, "w2")
    old = JobContext(first.id, q.name, first.token, first.token, 1000)
    with pytest.raises(LeaseExpired):
        old.step("charge", lambda: "charged twice")
    new = JobContext(second.id, q.name, second.token, second.token, 1000)
    assert new.step("charge", lambda: "charged") == "charged"
    assert JournalOps(q.name).put(first.id, first.token, "@s:x", "1") == ("stale", "")
    assert [s.result for s in q.get_job(first.id).steps] == ["charged"]


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for({**emq_env, "EMQ_IMPORTS": IMPORTS, "EMQ_PUMP_PARK": "0.2"}, tmp_path)


@pytest.mark.slow
def test_three_steps_killed_in_the_third_runs_only_the_third_again(emq_env, fleet, tmp_path):
    """kill -9 of the worker inside step three: after the lease is reclaimed, steps one and two are not run
    again, step three is, and the job completes."""
    notes, marker = tmp_path / "notes", tmp_path / "died"
    ref = dj.three_steps.enqueue(str(notes), str(marker))
    first = fleet.worker("--concurrency", "1", "--no-supervise")  # a supervisor would restart the child
    assert first.wait(timeout=30) == -9  # killed (SIGKILL) inside step three
    assert dj.lines(notes) == ["one", "two", "three"]
    fleet.worker("--concurrency", "1", "--no-supervise")
    wait_for(lambda: ref.get().state == "completed", timeout=30, what="the job completed after the reclaim")
    job = ref.get()
    assert dj.lines(notes) == ["one", "two", "three", "three"]
    assert job.result == ["one", "two", "three"] and job.stalled == 1
    assert [s.name for s in job.steps] == ["one", "two", "three"]


@pytest.mark.timing
def test_a_sleep_frees_the_slot_and_spends_no_attempt(emq_env, tmp_path):
    """On a worker of concurrency 1, a job enqueued after a sleeping one starts while it sleeps; the
    sleeper (max_attempts=1) then wakes, its step not run again, and completes."""
    notes, other = tmp_path / "notes", tmp_path / "other"
    sleeper = dj.sleeper.enqueue(str(notes), 1.5)
    with running(Worker(["default"], concurrency=1, park_timeout=0.5)):
        wait_for(lambda: sleeper.get().state == "scheduled", what="the sleeper asleep")
        started = time.monotonic()
        after = jobs.touch.enqueue(str(other), "ran")
        wait_for(lambda: after.get().state == "completed", what="the second job done while the first sleeps")
        assert time.monotonic() - started < 1.0 and sleeper.get().state == "scheduled"
        wait_for(lambda: sleeper.get().state == "completed", timeout=10, what="the sleeper awake and done")
    job = sleeper.get()
    assert (job.result, job.attempts) == ("awake", 1)
    assert dj.lines(notes) == ["before", "after"]
    assert [(s.name, s.kind) for s in job.steps] == [("before", "step"), ("1", "sleep")]
    assert job.steps[1].until is not None


def test_a_one_attempt_job_sleeps_three_times_and_waits_once(emq_env, tmp_path):
    notes = tmp_path / "notes"
    ref = dj.naps_then_waits.enqueue(str(notes))
    with running(Worker(["default"], concurrency=2, park_timeout=0.5)):
        wait_for(lambda: ref.get().state == "waiting", timeout=10, what="the job waiting for its signal")
        assert emq.signal(ref.id, "go", {"ok": 1}) is True
        wait_for(lambda: ref.get().state == "completed", timeout=10, what="the job done")
    job = ref.get()
    assert job.result == {"go": {"ok": 1}} and job.attempts == 1 and job.max_attempts == 1
    assert dj.lines(notes) == ["nap-0", "nap-1", "nap-2", "done"]
    assert [s.kind for s in job.steps] == ["step", "sleep", "step", "sleep", "step", "sleep", "signal"]
    assert emq.signal(ref.id, "go") is False  # ended: nothing takes it


def test_each_run_has_the_time_limit_not_the_whole_job(emq_env, tmp_path):
    notes = tmp_path / "notes"
    ref = dj.longer_than_its_limit.enqueue(str(notes))
    run_until_empty()
    assert ref.get().state == "completed" and dj.lines(notes) == ["first", "second"]


def test_an_async_job_awaits_its_steps(emq_env, tmp_path):
    notes = tmp_path / "notes"
    ref = dj.async_steps.enqueue(str(notes))
    run_until_empty()
    assert ref.get().result == 3 and dj.lines(notes) == ["fetch"]


def test_cancel_pause_and_retention_apply_to_suspended_jobs(emq_env, settings, client, tmp_path):
    """A sleeping job is cancelled like a scheduled one; a paused queue keeps a woken job until resumed; a
    trimmed durable job leaves nothing behind (its journal is in its hash)."""
    q = Queue("default")
    sleeping = dj.sleeper.enqueue(str(tmp_path / "a"), 3600)
    run_until_empty()
    assert sleeping.get().state == "scheduled" and emq.cancel(sleeping.id) is True
    assert (q.counts().scheduled, sleeping.get().state) == (0, "cancelled")

    waiting = dj.waits.enqueue("go")
    run_until_empty()
    assert waiting.get().state == "waiting"
    assert q.pause() is True
    assert emq.signal(waiting.id, "go", 1) is True
    run_until_empty()  # a paused queue: nothing claimed
    assert waiting.get().state == "ready"
    assert q.resume() is True
    run_until_empty()
    assert waiting.get().state == "completed"

    settings.EMQ_KEEP_COMPLETED = 0
    trimmed = dj.flaky_steps.enqueue(str(tmp_path / "b"))
    run_until_empty()
    dj.sleeper.enqueue(str(tmp_path / "c"), 0)  # its completion trims the completed set down to none
    run_until_empty()
    assert not [k for k in client.scan_iter(match=f"{emq_env['EMQ_PREFIX']}*") if trimmed.id in k]
    check_invariants("default")


def test_misuse_is_a_clear_error(emq_env, settings):
    """A durable call inside a step, a result over EMQ_MAX_PAYLOAD, a payload that is not JSON."""
    settings.EMQ_MAX_PAYLOAD = 1024
    inside, huge = dj.sleeps_in_a_step.enqueue(), dj.huge_step.enqueue()
    run_until_empty()
    assert "ctx.sleep inside step 'outer'" in inside.get().error
    assert "PayloadTooLarge" in huge.get().error and "step 'big'" in huge.get().error
    assert huge.get().steps == ()
    with pytest.raises(emq.PayloadTooLarge):
        emq.signal(inside.id, "x", "y" * 2048)
