"""Django's Tasks framework end to end on emq: enqueue, run_after, every status, errors, async, priority."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

import emq
from emq.contrib.tasks.compat import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
    task_finished,
    task_started,
)
from emq.core.engine import Queue
from emq.jobs import autodiscover
from emq.testing import assert_enqueued, run_until_empty
from tests import jobs, tasks
from tests.procs import manage, wait_for


@pytest.fixture
def signals():
    """Record (signal name, status) of every task signal sent while the test runs."""
    seen: list[tuple[str, str]] = []
    receivers = {}
    for name, sig in (("enqueued", task_enqueued), ("started", task_started), ("finished", task_finished)):
        receivers[name] = lambda sender, task_result, name=name, **kw: seen.append((name, task_result.status))
        sig.connect(receivers[name], weak=False)
    yield seen
    for name, sig in (("enqueued", task_enqueued), ("started", task_started), ("finished", task_finished)):
        sig.disconnect(receivers[name])


def test_enqueue_then_run_goes_ready_to_successful(emq_env, signals):
    """enqueue mints a job at once; the worker runs it; get_result reads the return value back."""
    result = tasks.add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY and result.id
    assert_enqueued(tasks.add, args=[2, 3])
    assert tasks.add.get_result(result.id).status == TaskResultStatus.READY
    run_until_empty()
    result.refresh()
    assert (result.status, result.return_value, result.attempts) == (TaskResultStatus.SUCCESSFUL, 5, 1)
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.worker_ids[0].count(":") == 2  # emq's worker id, host:pid:suffix
    assert signals == [("enqueued", "READY"), ("started", "RUNNING"), ("finished", "SUCCESSFUL")]


def test_running_status_while_the_task_runs(emq_env):
    """A task on a worker reads RUNNING until it ends."""
    tasks.gate.clear()
    result = tasks.wait_for_gate.enqueue()
    worker = threading.Thread(target=run_until_empty)
    worker.start()
    try:
        wait_for(lambda: tasks.wait_for_gate.get_result(result.id).status == TaskResultStatus.RUNNING, timeout=10)
    finally:
        tasks.gate.set()
        worker.join(20)
    assert tasks.wait_for_gate.get_result(result.id).return_value == "through"


def test_run_after_waits_in_the_schedule_set(emq_env):
    """using(run_after=...) schedules the job on the server's clock; it runs only once due."""
    when = timezone.now() + timedelta(milliseconds=400)
    result = tasks.add.using(run_after=when).enqueue(1, 1)
    job = emq.get_job(result.id)
    assert job.state == "scheduled" and abs((job.due - when).total_seconds()) < 0.002
    assert Queue("default").counts().scheduled == 1
    fetched = tasks.add.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY and fetched.task.run_after is not None
    run_until_empty()
    done = tasks.add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.started_at >= when


def test_failing_task_keeps_each_attempts_error(emq_env, signals):
    """A task that always raises is FAILED after max_attempts, with the exception path and traceback."""
    result = tasks.explode.enqueue("kaboom")
    run_until_empty()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED and result.attempts == 2
    assert [e.exception_class for e in result.errors] == [ValueError, ValueError]
    assert "Traceback" in result.errors[-1].traceback and 'raise ValueError(message)' in result.errors[-1].traceback
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    assert [s for s in signals if s[0] != "enqueued"] == [("started", "RUNNING"), ("started", "RUNNING"),
                                                          ("finished", "FAILED")]


def test_context_attempt_is_emqs_attempt(emq_env):
    """takes_context gets a TaskContext whose attempt counts emq's claims: fails once, then returns 2."""
    result = tasks.second_time_lucky.enqueue()
    run_until_empty()
    result.refresh()
    assert (result.status, result.return_value, result.attempts) == (TaskResultStatus.SUCCESSFUL, 2, 2)
    assert result.errors[0].exception_class is RuntimeError


def test_async_tasks_share_one_loop_and_leave_slots_free(emq_env):
    """Async tasks and async @emq.job jobs of 0.4 s each, 6 in all, overlap on a worker of concurrency 1,
    and a plain job runs meanwhile."""
    results = [tasks.nap.enqueue(0.4, f"v{i}") for i in range(3)]
    refs = tasks.emq_nap.enqueue_many([((0.4,), {})] * 3)
    ref = jobs.add.enqueue(1, 2)
    run_until_empty(concurrency=1)
    assert [tasks.nap.get_result(r.id).return_value for r in results] == [f"v{i}" for i in range(3)]
    assert [emq.get_job(r.id).result for r in refs] == [0.4] * 3
    assert emq.get_job(ref.id).result == 3
    # The span from the first start to the last finish, on the server's clock: the burst worker's own
    # end (it reads the queues twice before it stops) is no part of the jobs' overlap.
    ran = [emq.get_job(r.id) for r in [*results, *refs]]
    span = (max(j.finished for j in ran) - min(j.started for j in ran)).total_seconds()
    assert span < 6 * 0.4, f"async jobs ran one after another ({span:.2f}s)"


def test_priority_heads_its_own_lane_only(emq_env):
    """Priority > 0 jumps its group's waiting work, never another group's turn on the ring."""
    a = tasks.tenant_report.enqueue(1)
    b = tasks.tenant_report.enqueue(2)
    other = tasks.add.enqueue(0, 0)  # default group
    urgent = tasks.tenant_report.using(priority=50).enqueue(3)
    low = tasks.add.using(priority=-20).enqueue(0, 1)
    order = [c.id for c in Queue("default").bclaim(5, "w")]
    assert order == [urgent.id, other.id, a.id, low.id, b.id]
    assert tasks.tenant_report.get_result(urgent.id).task.priority == 50


def test_priority_holds_when_run_after_falls_due(emq_env):
    """A deferred urgent task is promoted to the head of its lane, ahead of work that waited there."""
    waiting = tasks.add.enqueue(1, 1)
    urgent = tasks.add.using(priority=5, run_after=timezone.now() + timedelta(milliseconds=50)).enqueue(2, 2)
    q = Queue("default")
    wait_for(lambda: q.tick("test-pump", 1000, 1000).promoted, timeout=5, what="promotion")
    assert [c.id for c in q.bclaim(2, "w")] == [urgent.id, waiting.id]


def test_task_class_carries_emqs_options(emq_env):
    """@task(group=..., max_attempts=..., lease=...) and .using(group=...) reach the job."""
    job = emq.get_job(tasks.tenant_report.enqueue(1).id)
    assert (job.group, job.max_attempts, job.meta["backend"]) == ("tenant-7", 5, "default")
    assert emq.get_job(tasks.tenant_report.using(group="tenant-8", priority=1).enqueue(2).id).group == "tenant-8"


def test_unknown_ids_raise_does_not_exist(emq_env):
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result("no-such-id")
    ref = jobs.add.enqueue(1, 2)  # an @emq.job job is not a task result
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(ref.id)


def test_worker_process_runs_tasks_of_the_modules_it_imported_at_start(emq_env):
    """A real emq_worker runs a task of a module EMQ_IMPORTS names (imported at start, never on demand)."""
    result = tasks.add.enqueue(20, 22)
    env = {**emq_env, "EMQ_IMPORTS": "tests.jobs,tests.tasks"}
    proc = manage(env, "emq_worker", "--burst", stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert tasks.add.get_result(result.id).return_value == 42


def test_eager_setting_runs_tasks_and_jobs_inline(emq_env, settings, signals):
    settings.EMQ_EAGER = True
    assert tasks.add.enqueue(2, 2).return_value == 4
    assert tasks.explode.enqueue("x").status == TaskResultStatus.FAILED
    assert jobs.add.enqueue(1, 1).id and Queue("default").counts().ready == 0
    with pytest.raises(RuntimeError, match="nope"):
        jobs.always_fails.enqueue("nope")


def test_expired_lease_shows_as_lease_expired_and_ready_again(emq_env):
    """A task whose worker vanished is READY again, its error LeaseExpired, its attempt counted."""
    from emq.errors import LeaseExpired

    result = tasks.add.enqueue(1, 2)
    q = Queue("default")
    (claim,) = q.bclaim(1, "gone-worker")
    q.extend_locks([(claim.id, claim.token)], 50)
    assert tasks.add.get_result(result.id).status == TaskResultStatus.RUNNING
    wait_for(lambda: q.sweep(), timeout=5, what="lease expiry")
    again = tasks.add.get_result(result.id)
    assert (again.status, again.worker_ids) == (TaskResultStatus.READY, ["gone-worker"])
    assert again.errors[0].exception_class is LeaseExpired


def test_async_enqueue_and_get_result(emq_env):
    """aenqueue and aget_result work from async code (a view or a consumer)."""
    import asyncio

    async def roundtrip():
        result = await tasks.add.aenqueue(5, 6)
        return await tasks.add.aget_result(result.id)

    assert asyncio.run(roundtrip()).status == TaskResultStatus.READY


def test_a_payload_naming_a_task_outside_the_projects_modules_never_runs(emq_env, tmp_path, monkeypatch, settings):
    """Data in the server cannot reach code the project does not use: such a job is never imported or run
    (an unknown name; EMQ_UNKNOWN_GRACE = 0 ends it dead at the first worker instead of holding it)."""
    settings.EMQ_UNKNOWN_GRACE = 0
    (tmp_path / "outsider_tasks.py").write_text(
        "import pathlib\n"
        "try:\n    from django.tasks import task\nexcept ImportError:\n    from django_tasks import task\n"
        "@task\ndef boom():\n    pathlib.Path(__file__).with_name('ran').write_text('x')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = jobs.add.using(max_attempts=1).spec((1, 2), {}, "")
    Queue("default").mint([dataclasses.replace(spec, name="outsider_tasks.boom")])
    run_until_empty()
    job = emq.get_job(spec.id)
    assert (job.state, job.reason) == ("dead", "unknown job outsider_tasks.boom") and "NotRegistered" in job.error
    assert 'add "outsider_tasks" to EMQ_IMPORTS' in job.error, job.error  # what to change, said where it shows
    assert "outsider_tasks" not in sys.modules and not (tmp_path / "ran").exists()


TASK_MODULE = ("try:\n    from django.tasks import task\nexcept ImportError:\n    from django_tasks import task\n"
               "@task\ndef double(n):\n    return 2 * n\n")


@pytest.fixture
def new_app(tmp_path, monkeypatch, settings):
    """An installed app ``newapp`` made in tmp_path, with a ``@task`` in the module named; gone after the test."""

    def make(module: str) -> None:
        (tmp_path / "newapp").mkdir()
        (tmp_path / "newapp" / "__init__.py").write_text("")
        (tmp_path / "newapp" / f"{module}.py").write_text(TASK_MODULE)
        monkeypatch.syspath_prepend(str(tmp_path))
        settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "newapp"]

    yield make
    for name in [m for m in sys.modules if m == "newapp" or m.startswith("newapp.")]:
        del sys.modules[name]


def test_a_task_of_an_installed_apps_module_nothing_imported_is_not_imported_either(emq_env, new_app, settings):
    """Being under an installed app is not enough: only a module imported at start-up (or since) runs."""
    settings.EMQ_UNKNOWN_GRACE = 0  # dead at once, not held for a worker that knows the name (test_deploys)
    new_app("reports")
    spec = jobs.add.using(max_attempts=1).spec((1, 2), {}, "")
    Queue("default").mint([dataclasses.replace(spec, name="newapp.reports.double")])
    run_until_empty()
    job = emq.get_job(spec.id)
    assert job.state == "dead" and 'add "newapp.reports" to EMQ_IMPORTS' in job.error, job.error
    assert "newapp.reports" not in sys.modules


def test_autodiscover_imports_each_installed_apps_tasks_module(emq_env, new_app):
    """``<app>/tasks.py`` (Django's convention for @task) is imported at start-up like ``<app>/jobs.py``,
    so a worker runs its tasks without EMQ_IMPORTS."""
    new_app("tasks")
    autodiscover()
    assert "newapp.tasks" in sys.modules
    task = sys.modules["newapp.tasks"].double
    result = task.enqueue(21)
    run_until_empty()
    assert task.get_result(result.id).return_value == 42
