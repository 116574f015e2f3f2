"""The first complete path of a job: minted -> ready -> claimed under a lease -> finished."""

from __future__ import annotations

import signal
import subprocess

import pytest

import emq
from emq.core.engine import Queue
from emq.core.records import Outcome
from tests import jobs
from tests.procs import manage, server_ms, wait_for


def keys_of(client, prefix):
    return sorted(client.scan_iter(match=f"{prefix}:*"))


def test_enqueue_then_get_job_round_trip(emq_env):
    """A minted job is readable at once with its name, arguments and state."""
    ref = jobs.add.enqueue(2, 3)
    job = emq.get_job(ref.id, queue="default")
    assert (job.name, job.args, job.kwargs, job.state, job.attempts) == ("tests.jobs.add", [2, 3], {}, "ready", 0)
    assert job.created is not None and job.created.tzinfo is not None


def test_calling_the_function_directly_runs_it_in_process():
    assert jobs.add(2, 3) == 5


def test_non_json_argument_names_it_and_writes_nothing(emq_env, client):
    """A value that is not JSON is refused at enqueue, naming the argument; no key is left."""
    with pytest.raises(TypeError, match=r"keyword argument 'b'.*not JSON"):
        jobs.add.enqueue(1, b=object())
    with pytest.raises(TypeError, match=r"argument 1 .*not JSON"):
        jobs.add.enqueue(1, {1, 2})
    with pytest.raises(TypeError, match="not JSON"):
        jobs.add.enqueue(float("nan"), 1)
    assert [k for k in keys_of(client, emq_env["EMQ_PREFIX"]) if ":{" in k] == []


def test_values_json_would_change_are_refused_naming_the_argument(emq_env, client):
    """Arguments round-trip or are refused: no silent key changes, no nesting a worker cannot decode."""
    with pytest.raises(TypeError, match=r"argument 0 .* dict key 1 \(int\).*str\(\)"):
        jobs.add.enqueue({1: "int", "1": "str"}, 1)
    with pytest.raises(TypeError, match=r"keyword argument 'b' .* dict key True \(bool\)"):
        jobs.add.enqueue(1, b={True: 1, None: 2})
    deep: list = []
    for _ in range(990):
        deep = [deep]
    with pytest.raises(TypeError, match=r"argument 0 .* deeper than 100 levels"):
        jobs.add.enqueue(deep, 1)
    with pytest.raises(TypeError, match=r"job_id of tests.jobs.add must be a non-empty string, not 5"):
        jobs.add.using(job_id=5)
    with pytest.raises(emq.ConfigurationError, match=r"lease of tests.jobs.add must be at least 1 second"):
        jobs.add.using(lease=0.0005)
    for delay in (float("inf"), float("nan"), 10**12):
        with pytest.raises(ValueError, match="past what a date can hold"):
            jobs.add.enqueue_in(delay, 1, 1)
    assert [k for k in keys_of(client, emq_env["EMQ_PREFIX"]) if ":{" in k] == []
    ref = jobs.add.enqueue((1, 2), {"k": (3, 4)})  # tuples become lists, as in any JSON
    assert emq.get_job(ref.id).args == [[1, 2], {"k": [3, 4]}]


def test_payload_over_the_cap_is_refused_and_writes_nothing(emq_env, client, settings):
    settings.EMQ_MAX_PAYLOAD = 1000
    with pytest.raises(emq.PayloadTooLarge, match="EMQ_MAX_PAYLOAD"):
        jobs.add.enqueue("x" * 2000, 1)
    assert [k for k in keys_of(client, emq_env["EMQ_PREFIX"]) if ":{" in k] == []


def test_explicit_job_id_makes_enqueue_idempotent(emq_env):
    first = jobs.add.using(job_id="welcome-42").enqueue(1, 1)
    second = jobs.add.using(job_id="welcome-42").enqueue(9, 9)
    assert first == second
    assert emq.get_job("welcome-42").args == [1, 1]
    assert Queue("default").counts().ready == 1


def test_using_options_never_mix_with_job_kwargs(emq_env):
    ref = jobs.touch.using(queue="mail", job_id="t-1").enqueue("/dev/null", text="queue")
    job = emq.get_job(ref.id, queue="mail")
    assert (ref.queue, job.kwargs) == ("mail", {"text": "queue"})
    with pytest.raises(TypeError, match="unknown option"):
        jobs.add.using(urgency=3)  # priority is an option now (#14); this one is not


def test_bclaim_returns_at_most_n_distinct_jobs_with_token_equal_attempts(emq_env):
    jobs.add.enqueue_many([((i, i), {}) for i in range(7)])
    q = Queue("default")
    first = q.bclaim(5, "w1")
    second = q.bclaim(5, "w2")
    ids = [c.id for c in first + second]
    assert len(first) == 5 and len(second) == 2 and len(set(ids)) == 7
    for c in first + second:
        job = q.get_job(c.id)
        assert (job.state, job.attempts, c.token) == ("active", 1, 1)
    assert q.bclaim(5, "w3") == []


def test_finish_with_an_old_token_is_stale_and_changes_nothing(emq_env):
    q = Queue("default")
    ref = jobs.add.enqueue(1, 2)
    (claim,) = q.bclaim(1, "w1")
    q.release_lock(claim.id, claim.token)
    (again,) = q.bclaim(1, "w2")
    assert again.token == claim.token + 1
    before = q.get_job(ref.id)
    assert q.finish([Outcome(ref.id, claim.token, "completed", "3")]) == ["stale"]
    assert q.get_job(ref.id) == before
    assert q.finish([Outcome("nope", 1, "completed", "3")]) == ["missing"]
    assert q.finish([Outcome(ref.id, again.token, "completed", "3")]) == ["completed"]
    assert q.get_job(ref.id).result == 3


def test_finish_settles_each_item_of_a_batch_on_its_own(emq_env):
    q = Queue("default")
    jobs.add.enqueue_many([((i, 0), {}) for i in range(3)])
    a, b, c = q.bclaim(3, "w")
    statuses = q.finish(
        [
            Outcome(a.id, a.token, "completed", "1"),
            Outcome(b.id, b.token + 5, "completed", "1"),
            Outcome(c.id, c.token, "failed", "ValueError: x\ntrace", 0),
        ]
    )
    assert statuses == ["completed", "stale", "ready"]  # each item answers the state the script decided
    assert [q.get_job(x.id).state for x in (a, b, c)] == ["completed", "active", "ready"]


def test_retry_waits_within_the_backoff_window(emq_env):
    """A failed attempt is scheduled at finish time + a delay within [0, min(cap, base*2^(n-1))]."""
    from emq.runtime.runner import backoff_ms

    q = Queue("default")
    ref = jobs.always_fails.enqueue()
    (claim,) = q.bclaim(1, "w")
    delay = backoff_ms(claim.token, *claim.backoff)
    assert 0 <= delay <= 200
    before = server_ms(q.client)  # the finish runs after this, on the same clock
    q.finish([Outcome(ref.id, claim.token, "failed", "RuntimeError: boom", 400)])
    job = q.get_job(ref.id)
    assert job.state == "scheduled" and job.attempts == 1 and job.finished is None  # a retry is no end
    assert round(job.due.timestamp() * 1000) >= before + 400
    assert job.errors[-1]["error"] == "RuntimeError: boom"
    for attempt in range(1, 8):
        ceiling = min(300.0, 1.0 * 2 ** (attempt - 1)) * 1000
        assert all(0 <= backoff_ms(attempt, 1.0, 300.0) <= ceiling for _ in range(50))


def test_dead_after_max_attempts_with_the_error_kept(emq_env):
    q = Queue("default")
    ref = jobs.always_fails.enqueue("kaput")
    for attempt in (1, 2, 3):
        (claim,) = wait_for(lambda: q.bclaim(1, "w") or q.sweep() and False, what="retry due")
        assert claim.token == attempt
        q.finish([Outcome(ref.id, claim.token, "failed", f"RuntimeError: kaput {attempt}\nTraceback...", 0)])
    job = q.get_job(ref.id)
    assert job.state == "dead" and job.attempts == 3
    assert job.error.startswith("RuntimeError: kaput 3")
    assert [e["attempt"] for e in job.errors] == [1, 2, 3]
    assert q.counts().dead == 1


def test_unknown_job_name_dies_at_once_saying_so_without_a_grace(emq_env, settings):
    """With EMQ_UNKNOWN_GRACE = 0 no worker waits for one that knows the name (#17: an unknown name is
    quarantined); by default it is held instead (tests/test_deploys.py)."""
    from emq.core.records import MintSpec

    settings.EMQ_UNKNOWN_GRACE = 0
    q = Queue("default")
    spec = MintSpec("ghost", "gone.module.job", "[]", "{}", "_", "", 2, 30000, 1, (0.0, 0.0))
    q.mint([spec])
    from emq.testing import run_until_empty

    run_until_empty()
    job = q.get_job("ghost")
    assert (job.state, job.reason, job.attempts) == ("dead", "unknown job gone.module.job", 0)  # it never ran
    assert 'no job registered as "gone.module.job"' in job.error


def test_server_down_gives_one_clear_error_with_the_password_masked(settings):
    settings.EMQ_URL = "redis://user:s3cret@127.0.0.1:1/0"
    with pytest.raises(emq.ServerUnavailable) as info:
        jobs.add.enqueue(1, 2)
    message = str(info.value)
    assert "redis://user:***@127.0.0.1:1/0" in message and "s3cret" not in message
    assert "EMQ_URL" in message


def test_burst_worker_process_drains_1000_jobs_none_lost(emq_env):
    """A real emq_worker --burst drains 1,000 jobs, some failing; each ends completed or dead."""
    refs = jobs.fail_if_odd.enqueue_many([((i,), {}) for i in range(1000)])
    proc = manage(emq_env, "emq_worker", "--burst", "--concurrency", "8", stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err[-2000:]
    q = Queue("default")
    states = [q.get_job(r.id).state for r in refs]
    assert states.count("completed") == 500 and states.count("dead") == 500
    assert q.counts().active == 0 and q.counts().ready == 0


def test_a_worker_process_freezes_its_start_up_heap(emq_env):
    """emq_worker moves what start-up left alive (Django, the job modules) out of the cyclic GC's reach,
    so a full collection never walks it again (issue #19: ~80 ms a collection otherwise)."""
    ref = jobs.frozen.enqueue()
    proc = manage(emq_env, "emq_worker", "--burst", stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert Queue("default").get_job(ref.id).result > 10_000


def test_sigterm_during_work_exits_0_and_leaves_nothing_active(emq_env):
    refs = jobs.sleep_for.enqueue_many([((0.3,), {}) for _ in range(12)])
    proc = manage(emq_env, "emq_worker", "--concurrency", "4", stderr=subprocess.PIPE, text=True)
    q = Queue("default")
    wait_for(lambda: q.counts().active >= 4, timeout=15, what="worker busy")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert q.counts().active == 0
    states = {q.get_job(r.id).state for r in refs}
    assert states <= {"completed", "ready"}
