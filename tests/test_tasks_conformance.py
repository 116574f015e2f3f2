"""EmqBackend held to Django's expectations of a task backend (``tests/tasks`` in Django and the
django-tasks backport's suite for its Redis-backed backend), where they apply to emq."""

from __future__ import annotations

import dataclasses
import subprocess
from datetime import timedelta

import django
import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from emq.contrib.tasks.compat import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_finished,
)
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import tasks
from tests.procs import manage


def backend():
    return task_backends["default"]


@pytest.mark.parametrize("task", [tasks.noop_task, tasks.noop_task_async])
def test_enqueue_returns_a_ready_result(emq_env, task):
    result = task.enqueue(1, two=3)
    assert (result.status, result.is_finished, result.attempts) == (TaskResultStatus.READY, False, 0)
    assert (result.started_at, result.last_attempted_at, result.finished_at) == (None, None, None)
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value
    assert (result.task, result.args, result.kwargs) == (task, [1], {"two": 3})


def test_enqueue_result_equals_get_result(emq_env):
    """One clock: enqueued_at is the server's time of the mint, as get_result reads it back."""
    result = backend().enqueue(tasks.noop_task, [], {})
    assert result == backend().get_result(result.id)
    assert result.enqueued_at is not None


def test_equal_with_options_run_after_and_priority(emq_env):
    """A task sent through using() (run_after to the microsecond, priority, emq's options) reads back equal."""
    when = timezone.now() + timedelta(hours=1, microseconds=7)
    task = tasks.noop_task.using(run_after=when, priority=7).using(group="g-1", max_attempts=4, backoff=(0.5, 9))
    result = task.enqueue()
    assert result == backend().get_result(result.id)
    assert result.task.run_after == when


def test_async_enqueue_equals_get_result(emq_env):
    result = async_to_sync(backend().aenqueue)(tasks.noop_task, [], {})
    assert result == async_to_sync(backend().aget_result)(result.id)


def test_refresh_changes_nothing_before_a_run(emq_env):
    result = tasks.noop_task.enqueue()
    before = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == before


def test_refresh_after_a_run(emq_env):
    result = backend().enqueue(tasks.calculate_meaning_of_life, (), {})
    run_until_empty()
    assert result.status == TaskResultStatus.READY and result.attempts == 0
    result.refresh()
    assert (result.status, result.is_finished, result.return_value, result.attempts) == (
        TaskResultStatus.SUCCESSFUL, True, 42, 1)
    assert None not in (result.started_at, result.last_attempted_at, result.finished_at)
    assert result.enqueued_at <= result.started_at <= result.finished_at


def test_using_always_returns_a_new_task():
    new = tasks.noop_task.using()
    assert new == tasks.noop_task and new is not tasks.noop_task
    chained = tasks.noop_task.using(run_after=timezone.now()).using(priority=10)
    assert (chained.priority, tasks.noop_task.priority) == (10, 0) and chained.run_after is not None


def test_failed_task_result(emq_env):
    result = tasks.failing_task_value_error.enqueue()
    run_until_empty()
    result.refresh()
    assert (result.status, result.attempts, result.is_finished) == (TaskResultStatus.FAILED, 1, True)
    assert result.errors[0].exception_class is ValueError
    assert result.errors[0].traceback.endswith("ValueError: This task failed due to ValueError\n")
    assert result.enqueued_at <= result.started_at <= result.finished_at


def test_complex_exception_and_return_value(emq_env):
    exc = tasks.complex_exception.enqueue()
    value = tasks.complex_return_value.enqueue()
    run_until_empty()
    exc.refresh()
    value.refresh()
    assert exc.status == TaskResultStatus.FAILED and exc.errors[0].exception_class is ValueError
    assert value.status == TaskResultStatus.FAILED and value._return_value is None


def test_takes_context_sees_its_own_id(emq_env):
    result = tasks.get_task_id.enqueue()
    run_until_empty()
    result.refresh()
    assert result.return_value == result.id


def test_missing_results(emq_env):
    with pytest.raises(TaskResultDoesNotExist):
        backend().get_result("123")
    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(backend().aget_result)("123")


def test_check_passes_and_names_a_missing_app():
    assert list(backend().check()) == []
    with override_settings(INSTALLED_APPS=["django.contrib.contenttypes"]):
        errors = list(task_backends["default"].check())
    assert [e.id for e in errors] == ["emq.E011"] and "'emq'" in errors[0].hint


def test_check_command_reports_it(tmp_path):
    """``manage.py check`` fails when EmqBackend is configured and emq is not installed."""
    settings = tmp_path / "noemq_settings.py"
    # A project that uses tasks imports them; on Django 6 that import registers Django's task checks.
    uses_tasks = "import django.tasks  # noqa\n" if django.VERSION >= (6, 0) else ""
    settings.write_text("from echd_project.settings import *  # noqa\nINSTALLED_APPS.remove('emq')\n"
                        "INSTALLED_APPS.remove('demo')\n" + uses_tasks)
    proc = manage({"PYTHONPATH": str(tmp_path), "DJANGO_SETTINGS_MODULE": "noemq_settings"}, "check",
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "emq.E011" in err, err


def test_started_and_finished_logs(emq_env, caplog):
    logger = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"  # the framework's own logger
    result = tasks.noop_task.enqueue()
    with caplog.at_level("DEBUG", logger=logger):
        run_until_empty()
    lines = [r.getMessage() for r in caplog.records if r.name == logger]
    assert len(lines) == 2 and "state=RUNNING" in lines[0] and "state=SUCCESSFUL" in lines[1]
    assert all(result.id in line for line in lines)


def test_task_finished_once_after_the_server_committed_never_for_a_lost_lease(emq_env):
    """The first attempt loses its lease (its finish is stale): no task_finished for it; the second
    attempt's task_finished comes once, when the server already shows the task SUCCESSFUL."""
    seen = []

    def receiver(sender, task_result, **kwargs):
        stored = backend().get_result(task_result.id)
        seen.append((task_result.status, stored.status, task_result.attempts))

    task_finished.connect(receiver, weak=False)
    try:
        result = tasks.lose_first_lease.enqueue("default")
        run_until_empty(concurrency=1)
    finally:
        task_finished.disconnect(receiver)
    assert seen == [(TaskResultStatus.SUCCESSFUL, TaskResultStatus.SUCCESSFUL, 2)]
    assert backend().get_result(result.id).return_value == 2
    assert Queue("default").client.hget(Queue("default").keys.stats, "stale") == "1"


def test_system_checks_run_clean(emq_env):
    call_command("check")
