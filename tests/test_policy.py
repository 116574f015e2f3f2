"""The retry policy (retry_on, Discard, Retry, a backoff function) and mistakes caught at enqueue."""

from __future__ import annotations

import pytest

import emq
from emq.core.engine import Queue
from emq.runtime import policy
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import server_ms


def errors_of(job) -> list[str]:
    return [e["error"].split(":", 1)[0] for e in job.errors]


# -- retry policy ------------------------------------------------------------------------------


def test_retry_on_retries_the_listed_exceptions_and_buries_any_other_at_once(emq_env):
    """retry_on=(OSError,), max_attempts=4: an OSError is tried 4 times, a ValueError once."""
    retried, other = jobs.raises.enqueue("os"), jobs.raises.enqueue("value")
    timeout = jobs.raises.enqueue("timeout")
    run_until_empty(concurrency=2)
    a, b, c = (emq.get_job(r.id) for r in (retried, other, timeout))
    assert (a.state, a.attempts, errors_of(a)) == ("dead", 4, ["OSError"] * 4)
    assert (b.state, b.attempts, b.reason, errors_of(b)) == ("dead", 1, "failed", ["ValueError"])
    assert (c.state, c.attempts) == ("dead", 1), "a JobTimeout follows retry_on like any exception"


def test_retry_on_defaults_to_exception(emq_env):
    ref = jobs.always_fails.using(max_attempts=2, backoff=(0, 0)).enqueue()
    run_until_empty()
    assert emq.get_job(ref.id).attempts == 2


def test_discard_is_dead_at_once_with_its_reason(emq_env):
    ref = jobs.discards.enqueue("the account is gone")  # max_attempts=5
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts, job.reason) == ("dead", 1, "discarded")
    assert job.error.startswith("emq.errors.Discard: the account is gone")


def test_retry_delay_is_the_server_now_plus_the_delay(emq_env):
    """Raised in attempt 1 of 2: scheduled at the server's now + 30 s, within ±50 ms."""
    q = Queue("default")
    ref = jobs.retries_in.enqueue(30)
    (claim,) = q.bclaim(1, "w")
    outcome = policy.outcome_of(claim, emq.Retry(delay=30), jobs.retries_in.options)
    before = server_ms(q.client)
    assert q.finish([outcome]) == ["scheduled"]
    after = server_ms(q.client)
    due = q.client.zscore(q.keys.scheduled, ref.id)
    print(f"\nRetry(delay=30): due {due - before - 30_000:+.0f} ms from the server's now + 30 s")
    assert before + 30_000 - 50 <= due <= after + 30_000 + 50
    job = q.get_job(ref.id)
    assert (job.state, job.attempts, errors_of(job)) == ("scheduled", 1, ["emq.errors.Retry"])


def test_a_worker_schedules_retry_at_the_finish_script_s_now_plus_the_delay(emq_env):
    ref = jobs.retries_in.enqueue(30)
    run_until_empty()  # a burst worker does not wait 30 s: it leaves the retry scheduled
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts) == ("scheduled", 1)
    assert job.due.timestamp() * 1000 - job.errors[0]["at"] == 30_000  # one server clock read, in the script


def test_retry_counts_as_an_attempt_and_is_dead_at_max_attempts(emq_env):
    ref = jobs.retries_in.enqueue(0.01)  # max_attempts=2
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts, errors_of(job)) == ("dead", 2, ["emq.errors.Retry"] * 2)


def test_retry_without_a_delay_uses_the_backoff(emq_env):
    q = Queue("default")
    jobs.add.using(backoff=(40, 40)).enqueue(1, 1)
    (claim,) = q.bclaim(1, "w")
    outcome = policy.outcome_of(claim, emq.Retry(), jobs.add.options)
    assert (outcome.outcome, 0 <= outcome.retry_ms <= 40_000) == ("failed", True)


def test_a_backoff_function_picks_each_delay_and_none_ends_the_retries(emq_env, tmp_path):
    """backoff(attempt, exc) -> 0.01 x attempt, then None at attempt 3: dead after 3 of 10 attempts."""
    notes = tmp_path / "notes"
    q = Queue("default")
    ref = jobs.backs_off.enqueue(str(notes))
    (claim,) = q.bclaim(1, "w")
    first = policy.outcome_of(claim, RuntimeError("x"), jobs.backs_off.options)
    assert (first.outcome, first.retry_ms) == ("failed", 10)
    q.release_lock(claim.id, claim.token)
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts, job.max_attempts) == ("dead", 3, 10)
    assert notes.read_text().count("attempt") == 2  # the first attempt was claimed by hand above


def test_a_broken_backoff_function_falls_back_to_the_jittered_backoff(emq_env):
    def broken(attempt, exc):
        raise ZeroDivisionError

    @emq.job(backoff=broken)
    def flaky():
        raise RuntimeError

    q = Queue("default")
    flaky.enqueue()
    (claim,) = q.bclaim(1, "w")
    outcome = policy.outcome_of(claim, RuntimeError("x"), flaky.options)
    assert outcome.outcome == "failed" and 0 <= outcome.retry_ms <= 300_000


def test_policy_options_cannot_change_per_call_and_are_checked(emq_env):
    with pytest.raises(emq.ConfigurationError, match="cannot change per call"):
        jobs.add.using(retry_on=(OSError,))
    with pytest.raises(emq.ConfigurationError, match="cannot change per call"):
        jobs.add.using(backoff=lambda attempt, exc: 1)
    with pytest.raises(emq.ConfigurationError, match="cannot change per call"):
        jobs.backs_off.using(backoff=(1, 2))
    with pytest.raises(emq.ConfigurationError, match="retry_on of .* must be exception classes"):
        emq.job(retry_on=("OSError",))(lambda: None)
    one = emq.job(retry_on=OSError)(lambda: None)
    assert one.options.retry_on is OSError


# -- mistakes caught at enqueue -----------------------------------------------------------------


def test_enqueue_checks_the_arguments_against_the_signature_and_writes_nothing(emq_env, client):
    """As calling the function would: too few, too many, unknown keyword; nothing reaches the server."""
    for args, kwargs, why in [((1,), {}, "missing a required argument: 'b'"), ((1, 2, 3), {}, "too many positional"),
                              ((1, 2), {"c": 3}, "unexpected keyword argument 'c'")]:
        with pytest.raises(TypeError, match=why):
            jobs.add.enqueue(*args, **kwargs)
    with pytest.raises(TypeError, match=r"tests\.jobs\.add\(a, b\)"):
        jobs.add.enqueue_many([((1, 2), {}), ((1,), {})])
    with pytest.raises(TypeError, match="missing"):
        jobs.add.enqueue_in(5, 1)
    assert not [k for k in client.scan_iter(match=f"{emq_env['EMQ_PREFIX']}:*") if ":{" in k]
    jobs.add.enqueue(1, b=2)
    jobs.hold_first.enqueue("/dev/null", "t")  # takes_context: the context is not the caller's to pass
    jobs.touch.enqueue("/dev/null", text="y")
    assert Queue("default").counts().ready == 3


def test_a_signature_python_cannot_read_is_not_checked(emq_env):
    job = emq.job(print)  # a builtin: inspect.signature may fail, nothing is refused
    job.enqueue("anything", 1, 2, sep="")
    assert Queue("default").counts().ready == 1


def test_tasks_arguments_are_checked_too(emq_env):
    from tests import tasks

    with pytest.raises(TypeError, match="missing a required argument: 'b'"):
        tasks.add.enqueue(1)
    with pytest.raises(TypeError, match="too many positional"):
        tasks.second_time_lucky.enqueue(1)  # takes_context: the context is the worker's to pass
    assert tasks.add.enqueue(1, 2).status == "READY" and tasks.second_time_lucky.enqueue().status == "READY"


def test_task_options_retry_on_and_timeout_pass_through_the_tasks_backend(emq_env):
    from tests import tasks

    retried, failed, slow = tasks.picky.enqueue("os"), tasks.picky.enqueue("value"), tasks.overruns.enqueue()
    once = tasks.gives_up.enqueue()
    run_until_empty(concurrency=2)
    assert len(tasks.gives_up.get_result(once.id).errors) == 1 and emq.get_job(once.id).max_attempts == 5
    a, b, c = tasks.picky.get_result(retried.id), tasks.picky.get_result(failed.id), tasks.overruns.get_result(slow.id)
    assert [e.exception_class_path for e in a.errors] == ["builtins.OSError"] * 3
    assert [e.exception_class_path for e in b.errors] == ["builtins.ValueError"]
    assert [e.exception_class_path for e in c.errors] == ["emq.errors.JobTimeout"]
    assert {a.status, b.status, c.status} == {"FAILED"}
    limited = tasks.add.using(timeout=7, soft_timeout=2).enqueue(1, 2)
    claims = {x.id: x for x in Queue("default").bclaim(5, "w")}
    assert (claims[limited.id].timeout_ms, claims[limited.id].soft_timeout_ms) == (7000, 2000)


def test_a_wrong_arity_job_never_reaches_a_worker(emq_env):
    """Before: accepted, retried 3 times on a worker and buried. Now: refused at the call, nothing minted."""
    with pytest.raises(TypeError):
        jobs.add.enqueue(1)
    q = Queue("default")
    c = q.counts()
    assert (c.ready, c.scheduled, c.dead, q.client.hget(q.keys.stats, "minted")) == (0, 0, 0, None)
