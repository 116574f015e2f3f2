"""A Django Task enqueued inside ``transaction.atomic()`` is minted when the transaction commits
(``TASKS[...]["OPTIONS"]["ENQUEUE_ON_COMMIT"]``, on by default), never on rollback; its TaskResult,
id and all, is returned at once. Wagtail enqueues its index tasks from ``post_save`` inside a
transaction: a worker must not read the row before the commit (tests/test_wagtail.py, end to end)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

import emq
from emq.contrib.tasks.compat import TaskResultStatus, task_backends, task_enqueued
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import tasks

pytestmark = pytest.mark.usefixtures("transactional_db")  # atomic blocks that really commit


class Boom(Exception):
    pass


@pytest.fixture
def enqueued():
    """The ids task_enqueued was sent for, in order."""
    seen: list[str] = []

    def receiver(sender, task_result, **kwargs):
        seen.append(task_result.id)

    task_enqueued.connect(receiver, weak=False)
    yield seen
    task_enqueued.disconnect(receiver)


def tasks_backend(queues=("default",), **options):
    """The default alias on EmqBackend with these QUEUES and OPTIONS (the backend object is made anew)."""
    return override_settings(TASKS={"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": list(queues),
                                                "OPTIONS": options}})


def test_inside_a_transaction_the_job_is_minted_at_commit_with_the_id_returned_before(emq_env, enqueued):
    with transaction.atomic():
        result = tasks.add.enqueue(20, 22)
        assert (result.status, result.enqueued_at) == (TaskResultStatus.READY, None) and result.id
        assert Queue("default").counts().ready == 0 and enqueued == []
    assert emq.get_job(result.id).args == [20, 22] and enqueued == [result.id]
    assert result.enqueued_at == emq.get_job(result.id).created  # filled in by the mint, on the server's clock
    run_until_empty()
    assert tasks.add.get_result(result.id).return_value == 42


def test_rollback_mints_nothing_and_sends_no_signal(emq_env, enqueued):
    with pytest.raises(Boom), transaction.atomic():
        tasks.add.enqueue(1, 2)
        tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(3, 4)
        raise Boom
    counts = Queue("default").counts()
    assert (counts.ready, counts.scheduled, enqueued) == (0, 0, [])


def test_a_rolled_back_savepoint_drops_only_its_own_tasks(emq_env):
    with transaction.atomic():
        kept = tasks.add.enqueue(1, 1)
        with pytest.raises(Boom), transaction.atomic():
            dropped = tasks.add.enqueue(2, 2)
            raise Boom
    assert emq.get_job(kept.id).state == "ready"
    with pytest.raises(emq.JobNotFound):
        emq.get_job(dropped.id)


def test_outside_a_transaction_the_job_exists_when_enqueue_returns(emq_env, enqueued):
    result = tasks.add.enqueue(1, 2)
    assert result.enqueued_at is not None and emq.get_job(result.id).state == "ready" and enqueued == [result.id]


def test_enqueue_on_commit_false_mints_at_once_inside_a_transaction(emq_env):
    with tasks_backend(ENQUEUE_ON_COMMIT=False), transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert result.enqueued_at is not None and Queue("default").counts().ready == 1


def test_arguments_are_refused_at_the_call_not_at_commit(emq_env):
    with transaction.atomic(), pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)


def test_eager_runs_the_task_at_commit(emq_env, settings):
    settings.EMQ_EAGER = True
    with transaction.atomic():
        result = tasks.add.enqueue(2, 3)
        assert result.status == TaskResultStatus.READY
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 5)


def test_the_backend_check_knows_the_option_and_refuses_a_non_boolean():
    with tasks_backend(ENQUEUE_ON_COMMIT=False):
        assert list(task_backends["default"].check()) == []
    with tasks_backend(ENQUEUE_ON_COMMIT="yes"):
        errors = list(task_backends["default"].check())
    assert [e.id for e in errors] == ["emq.E012"] and "True or False" in errors[0].msg


def test_the_id_returned_inside_the_transaction_is_the_jobs_on_a_partitioned_queue(emq_env, settings):
    """A partition marks a generated id: the result's id is the final one before the mint."""
    settings.EMQ_PARTITIONS = {"clicks": 3}
    with tasks_backend(queues=("default", "clicks")):
        with transaction.atomic():
            result = tasks.add.using(queue_name="clicks").enqueue(2, 3)
        run_until_empty(["clicks"])
        assert tasks.add.get_result(result.id).return_value == 5
