"""Every job ends: time limits, soft limits, and jobs that raise SystemExit or another BaseException."""

from __future__ import annotations

import math
import threading
import time

import pytest

import emq
from emq.core.engine import Queue
from emq.runtime import exits
from emq.runtime.worker import Worker
from emq.testing import run_until_empty
from tests import jobs, records
from tests.fleet import fleet_for
from tests.procs import server_ms, wait_for


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


def errors_of(job) -> list[str]:
    return [e["error"].split(":", 1)[0] for e in job.errors]


# -- the options ---------------------------------------------------------------------------------


def test_the_time_limit_travels_with_the_job(emq_env, settings):
    """The job's timeout, a per-call one, EMQ_DEFAULT_TIMEOUT, and math.inf or None for no limit."""
    q = Queue("default")
    jobs.sleep_forever.enqueue()  # @emq.job(timeout=1)
    jobs.add.enqueue(1, 1)  # EMQ_DEFAULT_TIMEOUT
    jobs.add.using(timeout=2.5, soft_timeout=1).enqueue(1, 1)
    jobs.add.using(timeout=math.inf).enqueue(1, 1)
    settings.EMQ_DEFAULT_TIMEOUT = None
    jobs.add.enqueue(1, 1)
    claims = q.bclaim(5, "w")
    assert [(c.timeout_ms, c.soft_timeout_ms) for c in claims] == [(1000, 0), (3_600_000, 0), (2500, 1000), (0, 0),
                                                                    (0, 0)]


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": -1}, {"soft_timeout": 0},
                                     {"timeout": 2, "soft_timeout": 2}, {"soft_timeout": math.inf}])
def test_bad_limits_are_refused_where_they_are_given(options):
    with pytest.raises(emq.ConfigurationError, match="timeout"):
        jobs.add.using(**options)


def test_a_soft_limit_above_the_default_time_limit_is_refused_at_enqueue(emq_env, settings):
    settings.EMQ_DEFAULT_TIMEOUT = 1
    with pytest.raises(emq.ConfigurationError, match="must be below its timeout"):
        jobs.add.using(soft_timeout=5).enqueue(1, 1)


# -- in-process (run_until_empty) ------------------------------------------------------------------


def test_python_code_past_its_time_limit_sees_jobtimeout_and_the_attempt_fails(emq_env, tmp_path):
    seen = tmp_path / "seen"
    ref = jobs.spin_forever.enqueue(str(seen))  # timeout=1, max_attempts=1
    started = time.monotonic()
    run_until_empty(concurrency=1)
    job = emq.get_job(ref.id)
    assert (job.state, job.reason, errors_of(job)) == ("dead", "failed", ["emq.errors.JobTimeout"])
    assert "ran past its time limit of 1 s" in job.error
    wait_for(lambda: seen.exists(), what="the job's own except clause ran")
    assert seen.read_text() == "saw JobTimeout\n" and time.monotonic() - started < 5


@pytest.mark.parametrize("job", ["cleans_up", "cleans_up_async"])
def test_a_soft_limit_is_raised_inside_the_job_first_and_it_may_clean_up(emq_env, tmp_path, job):
    notes = tmp_path / "notes"
    ref = getattr(jobs, job).enqueue(str(notes))  # soft_timeout=0.3, timeout=5
    run_until_empty(concurrency=1)
    done = emq.get_job(ref.id)
    assert (done.state, done.result) == ("completed", "cleaned up")
    assert notes.read_text() == "soft limit\n"
    assert 0.25 <= (done.finished - done.started).total_seconds() < 2


@pytest.mark.parametrize("job", ["exits", "exits_async"])
def test_systemexit_fails_the_attempt_and_run_until_empty_returns(emq_env, job):
    """SystemExit is no Exception: by the default retry_on it is dead at once, its path recorded."""
    ref = getattr(jobs, job).enqueue(3)
    after = jobs.add.enqueue_many([((i, 1), {}) for i in range(10)])
    run_until_empty(concurrency=1)
    j = emq.get_job(ref.id)
    assert (j.state, j.attempts, errors_of(j)) == ("dead", 1, ["SystemExit"])
    assert all(emq.get_job(r.id).state == "completed" for r in after)


def test_keyboardinterrupt_and_generatorexit_raised_by_a_job_are_its_failures(emq_env):
    @emq.job
    def interrupts(kind):
        raise {"ki": KeyboardInterrupt, "ge": GeneratorExit}[kind]()

    refs = [interrupts.enqueue("ki"), interrupts.enqueue("ge"), jobs.add.enqueue(1, 1)]
    run_until_empty(concurrency=1)
    assert [errors_of(emq.get_job(r.id)) for r in refs[:2]] == [["KeyboardInterrupt"], ["GeneratorExit"]]
    assert emq.get_job(refs[2].id).state == "completed"


def test_a_worker_reports_the_timeout_at_the_deadline_even_for_code_blocked_in_c(emq_env, settings):
    """In one process: the stuck thread is abandoned after the grace, the slot keeps serving."""
    settings.EMQ_TIMEOUT_GRACE = 0.2
    settings.EMQ_MAX_ABANDONED = 0  # never drain in this test
    q = Queue("default")
    ref = jobs.sleep_forever.using(max_attempts=1).enqueue()
    w = Worker(["default"], concurrency=1, pump=False, park_timeout=0.5)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: q.get_job(ref.id).state == "active", what="the job claimed")
        claimed = int(records.field(q.client, q.keys.job(ref.id), "claimed"))
        wait_for(lambda: q.get_job(ref.id).state == "dead", timeout=5, what="the job dead by its time limit")
        late = q.get_job(ref.id).errors[0]["at"] - (claimed + 1000)
        nxt = jobs.add.enqueue(2, 2)
        wait_for(lambda: q.get_job(nxt.id).state == "completed", timeout=5, what="the slot's fresh thread ran a job")
        wait_for(lambda: len(w.deadlines.abandoned) == 1, timeout=5, what="the stuck thread counted as abandoned")
    finally:
        w.stop()
        t.join(timeout=10)
    print(f"\ntime limit reported {late} ms after the deadline")
    assert 0 <= late <= 500 and not t.is_alive()


def _serving(w: Worker) -> threading.Thread:
    t = threading.Thread(target=w.run)
    t.start()
    return t


@pytest.mark.one_server  # its subject is the worker's threads, not the server
def test_threads_that_overrun_their_limit_by_less_than_the_limit_again_never_recycle_a_worker(emq_env, settings):
    """Jobs blocked in C past their 1 s limit that return 0.4 s later (a sleep, a slow call with its own
    timeout): each attempt ends at its limit and its slot gets a fresh thread, and none counts toward
    recycling (issue #34: 1 % such jobs made a pool churn, 57 exits in 10 minutes). A thread counts as
    abandoned at twice its run when stopped: here 2 s, never reached."""
    settings.EMQ_TIMEOUT_GRACE = 0.1
    settings.EMQ_MAX_ABANDONED = 1
    q = Queue("default")
    late = jobs.sleep_for.using(timeout=1, max_attempts=1).enqueue_many([((1.4,), {}) for _ in range(3)])
    w = Worker(["default"], concurrency=4, pump=False, park_timeout=0.5)
    t = _serving(w)
    try:
        wait_for(lambda: all(q.get_job(r.id).state == "dead" for r in late), timeout=10, what="the limits")
        on_time = jobs.add.enqueue_many([((i, 1), {}) for i in range(20)])
        wait_for(lambda: not w.deadlines.watched, timeout=10, what="every stopped thread's abandon check")
        wait_for(lambda: all(q.get_job(r.id).state == "completed" for r in on_time), what="the jobs behind")
        assert w.deadlines.abandoned == [] and not w.deadlines.exhausted and w.stopping is None
    finally:
        w.stop()
        t.join(timeout=10)
    assert {errors_of(q.get_job(r.id))[0] for r in late} == {"emq.errors.JobTimeout"}


@pytest.mark.one_server  # its subject is the worker's threads, not the server
def test_an_abandoned_thread_counts_toward_recycling_only_while_it_is_stuck(emq_env, settings):
    """EMQ_MAX_ABANDONED = 2: a thread stuck past twice its limit counts, and stops counting once its
    call returns; two stuck at once drain the worker, which returns RECYCLE."""
    settings.EMQ_TIMEOUT_GRACE = 0.1
    settings.EMQ_MAX_ABANDONED = 2
    stuck = jobs.sleep_for.using(timeout=0.5, max_attempts=1)
    w = Worker(["default"], concurrency=2, pump=False, park_timeout=0.5)
    codes = []
    t = threading.Thread(target=lambda: codes.append(w.run()))
    t.start()
    try:
        stuck.enqueue(2.5)
        first = wait_for(lambda: w.deadlines.abandoned and w.deadlines.abandoned[0], timeout=10, what="abandoned")
        wait_for(lambda: not first.running, timeout=10, what="its sleep to end")
        stuck.enqueue(10)
        wait_for(lambda: w.deadlines.abandoned[-1] is not first, timeout=10, what="a second one abandoned")
        assert w.deadlines.abandoned[0] is not first and not w.deadlines.exhausted  # one stuck: the one that returned
        stuck.enqueue(10)
        wait_for(lambda: w.deadlines.exhausted, timeout=10, what="two stuck at once")
        t.join(timeout=20)
    finally:
        w.stop()
        t.join(timeout=10)
    assert codes == [exits.RECYCLE]


# -- real worker processes -------------------------------------------------------------------------


def _claimed_at(q: Queue, job_id: str, attempt: int) -> int:
    """The server ms at which attempt n of a job was claimed (polled while it runs)."""
    def seen():
        h = records.some(q.client, q.keys.job(job_id), "state", "attempts", "claimed")
        return int(h[2]) if h[0] == "active" and h[1] == str(attempt) else None

    return wait_for(seen, timeout=10, every=0.005, what=f"attempt {attempt} running")


@pytest.mark.parametrize("job", ["sleep_forever", "await_forever"])
def test_a_hung_job_is_dead_after_two_timeouts_and_frees_its_slot_each_time(emq_env, fleet, job):
    """timeout=1, max_attempts=2, backoff=(0, 0) on --concurrency 1: the job behind it starts at each deadline.

    EMQ_ASYNC_SLOTS=0 makes an ``async def`` job hold the worker's one slot too (by default async
    jobs run beside the threads, and the job behind would not wait for it at all).
    """
    q = Queue("default")
    began = time.monotonic()
    ref = getattr(jobs, job).enqueue()
    first = jobs.started_at.enqueue()
    fleet.worker("--concurrency", "1", env={"EMQ_ASYNC_SLOTS": "0"})
    deadline_1 = _claimed_at(q, ref.id, 1) + 1000
    deadline_2 = _claimed_at(q, ref.id, 2) + 1000
    second = jobs.started_at.enqueue()
    wait_for(lambda: q.get_job(ref.id).state == "dead", timeout=15, what="the hung job dead")
    took = time.monotonic() - began  # from the enqueue, the worker process's start included
    wait_for(lambda: q.get_job(second.id).state == "completed", timeout=5, what="the job behind it ran")
    dead = q.get_job(ref.id)
    assert (dead.attempts, errors_of(dead)) == (2, ["emq.errors.JobTimeout", "emq.errors.JobTimeout"])
    starts = [q.get_job(first.id).result * 1000 - deadline_1, q.get_job(second.id).result * 1000 - deadline_2]
    print(f"\n{job}: dead after {took:.1f} s; the next job started {starts[0]:.0f} ms and {starts[1]:.0f} ms "
          "after each deadline")
    assert took < 15 and all(0 <= s <= 1500 for s in starts), starts
    assert q.counts().active == 0


def test_sys_exit_is_recorded_and_the_same_worker_completes_ten_more(emq_env, fleet):
    q = Queue("default")
    ref = jobs.exits.enqueue(3)
    more = jobs.pid.enqueue_many([((), {}) for _ in range(10)])
    w = fleet.worker("--concurrency", "1", "--no-pump", "--no-supervise")  # the jobs' pid is its own
    wait_for(lambda: q.counts().completed == 10, timeout=20, what="ten more jobs completed")
    job = q.get_job(ref.id)
    assert (job.state, errors_of(job)) == ("dead", ["SystemExit"]) and job.error.startswith("SystemExit: 3\n")
    assert {q.get_job(r.id).result for r in more} == {w.pid} and w.poll() is None
    assert q.counts().active == 0


def test_a_worker_with_too_many_stuck_threads_drains_and_exits_to_be_recycled(emq_env, fleet):
    """--no-supervise: the worker drains and exits RECYCLE (75) for its process manager to restart it."""
    q = Queue("default")
    env = {"EMQ_TIMEOUT_GRACE": "0.2", "EMQ_MAX_ABANDONED": "2"}
    stuck = jobs.sleep_forever.using(max_attempts=1).enqueue_many([((), {}) for _ in range(2)])
    w = fleet.worker("--concurrency", "2", "--no-pump", "--no-supervise", env=env)
    assert w.wait(timeout=20) == exits.RECYCLE
    log = fleet.log(w)
    assert "2 job threads are stuck past their time limits (EMQ_MAX_ABANDONED=2)" in log, log[-2000:]
    assert [q.get_job(r.id).state for r in stuck] == ["dead", "dead"] and q.counts().active == 0


def test_the_supervisor_replaces_a_worker_that_drained_for_stuck_threads(emq_env, fleet, client):
    from emq.core.keys import registry_workers

    env = {"EMQ_TIMEOUT_GRACE": "0.2", "EMQ_MAX_ABANDONED": "1"}
    sup = fleet.worker("--processes", "2", "--concurrency", "1", "--no-pump", env=env)
    key = registry_workers(emq_env["EMQ_PREFIX"])
    first = wait_for(lambda: (ws := client.smembers(key)) and len(ws) == 2 and ws, timeout=30, what="two workers")
    jobs.sleep_forever.using(max_attempts=1).enqueue()
    wait_for(lambda: len(client.smembers(key) - first) == 1, timeout=20, what="a fresh worker process")
    assert sup.poll() is None and "restarting" in fleet.log(sup)


def test_a_stopped_job_s_late_finish_is_stale(emq_env):
    """The fencing token moved on with the retry: the old attempt's outcome changes nothing."""
    from emq.core.records import Outcome

    q = Queue("default")
    ref = jobs.add.using(max_attempts=2).enqueue(1, 1)
    (c,) = q.bclaim(1, "w")
    assert q.finish([Outcome(c.id, c.token, "failed", "emq.errors.JobTimeout: x", 0)]) == ["ready"]
    q.bclaim(1, "w")
    assert q.finish([Outcome(c.id, c.token, "completed", "2")]) == ["stale"]
    assert q.get_job(ref.id).state == "active" and server_ms(q.client) > 0


def test_limits_that_fall_as_jobs_return_settle_each_attempt_once_and_keep_every_slot(emq_env, settings):
    """300 jobs that end right at their soft and hard limits: each settles once, no slot thread is lost."""
    settings.EMQ_TIMEOUT_GRACE = 0.5
    settings.EMQ_MAX_ABANDONED = 0
    q = Queue("default")
    refs = jobs.busy.using(timeout=0.03, soft_timeout=0.028).enqueue_many([((0.029,), {}) for _ in range(300)])
    w = Worker(["default"], concurrency=4, pump=False, burst=True, park_timeout=0.5)
    t = threading.Thread(target=w.run)
    t.start()
    t.join(timeout=60)
    states = [q.get_job(r.id).state for r in refs]
    c = q.counts()
    kinds = {e.split(":", 1)[0] for r in refs for e in [q.get_job(r.id).error or "completed:"]}
    print(f"\n300 jobs ending at their limits: {states.count('completed')} completed, {states.count('dead')} dead "
          f"({sorted(kinds)}); live slot threads {len(w.slots.threads)}; stale {q.client.hget(q.keys.stats, 'stale')}")
    assert not t.is_alive() and w.jobs.running == 0 and c.active == 0
    assert set(states) <= {"completed", "dead"} and len(w.slots.threads) == 4
    assert kinds <= {"completed", "emq.errors.JobTimeout", "emq.errors.SoftTimeLimit"}
