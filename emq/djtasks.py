"""Django's Tasks framework as emq sees it: its names on Django 6 (``django.tasks``) and on the
``django-tasks`` backport (Django 5.2), a TaskResult read from a job, and a task's run on a worker.

A Django Task runs on emq's worker as an emq job registered under the task's module path; the
job's function here builds the TaskResult the task (and the signals) see from the job's hash.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import close_old_connections
from django.utils import timezone

from .encoding import dumps
from .engine import Queue
from .records import Job, from_ms

try:
    from django.tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
except ImportError:  # Django 5.2 LTS: the django-tasks backport
    from django_tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskError
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued, task_finished, task_started

__all__ = [
    "BaseTaskBackend", "InvalidTask", "Task", "TaskContext", "TaskError", "TaskResult", "TaskResultDoesNotExist",
    "TaskResultStatus", "task_enqueued", "task_finished", "task_started",
]

STATUS = {
    "scheduled": TaskResultStatus.READY,
    "ready": TaskResultStatus.READY,
    "active": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "dead": TaskResultStatus.FAILED,
}
STALLED_PATH = "emq.errors.LeaseExpired"
tasks: dict[str, Task] = {}  # module path -> the Task registered under it


def exception_path(line: str) -> str:
    """The importable exception path of an error line as the runner writes it (``Type: message``)."""
    head = line.split(":", 1)[0].strip()
    if head == "stalled":
        return STALLED_PATH
    return head if "." in head else f"builtins.{head}"


def task_errors(job: Job) -> list[TaskError]:
    """One TaskError per failed attempt kept; only the last one has its full traceback."""
    out = []
    last_tb = job.error.split("\n", 1)[1] if job.error and "\n" in job.error else None
    for i, entry in enumerate(job.errors):
        line = entry.get("error", "")
        tb = last_tb if i == len(job.errors) - 1 and last_tb else line
        out.append(TaskError(exception_class_path=exception_path(line), traceback=tb))
    return out


def worker_ids(job: Job) -> list[str]:
    """One worker id per attempt (its length is the attempt count, as Django reads it)."""
    by_attempt = {e.get("attempt"): e.get("worker") for e in job.errors}
    return [by_attempt.get(n) or job.worker or "" for n in range(1, job.attempts + 1)]


def task_of(job: Job) -> Task:
    """The Task a job runs, with the per-call values (priority, queue, run_after, backend) it was sent with."""
    base = tasks.get(job.name)
    if base is None:
        from .jobs import lookup

        lookup(job.name)  # registers the task found by its module path
        base = tasks[job.name]
    meta = job.meta or {}
    return base.using(
        priority=job.priority, queue_name=job.queue, backend=meta["backend"], run_after=from_ms(meta.get("run_after"))
    )


def result_of(job: Job) -> TaskResult:
    """A job's TaskResult: emq's state as a status, its errors, workers and return value."""
    status = STATUS[job.state]
    result = TaskResult(
        task=task_of(job), id=job.id, status=status, enqueued_at=job.created, started_at=job.started,
        finished_at=job.finished if status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED) else None,
        last_attempted_at=job.started, args=job.args, kwargs=job.kwargs, backend=(job.meta or {})["backend"],
        errors=task_errors(job), worker_ids=worker_ids(job),
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", job.result)
    return result


def sender(result: TaskResult) -> type:
    return type(task_backends[result.backend])


# -- a task's run on a worker ---------------------------------------------------------------


def _started(ctx: Any) -> tuple[TaskResult, Job]:
    close_old_connections()
    job = Queue(ctx.queue).get_job(ctx.job_id)
    result = result_of(job)
    task_started.send(sender(result), task_result=result)
    return result, job


def _ended(result: TaskResult, job: Job, exc: BaseException | None) -> None:
    """Send task_finished when the task reached a final status; a retried attempt sends nothing."""
    try:
        if exc is None:
            object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        elif job.attempts - job.stalled >= job.max_attempts:
            object.__setattr__(result, "status", TaskResultStatus.FAILED)
            result.errors.append(failure(exc))
        else:
            return
        object.__setattr__(result, "finished_at", timezone.now())
        task_finished.send(sender(result), task_result=result)
    finally:
        close_old_connections()


def failure(exc: BaseException) -> TaskError:
    """The TaskError Django expects for an exception raised in this process."""
    import traceback

    kind, text = type(exc), "".join(traceback.format_exception(exc))
    return TaskError(exception_class_path=f"{kind.__module__}.{kind.__qualname__}", traceback=text)


def _arguments(task: Task, result: TaskResult, args: tuple) -> tuple:
    return (TaskContext(task_result=result), *args) if task.takes_context else args


def _settle(result: TaskResult, value: Any) -> Any:
    value = json.loads(dumps(value))  # refuse a non-JSON value before reporting success
    object.__setattr__(result, "_return_value", value)
    return value


def job_function(task: Task) -> Callable[..., Any]:
    """The function emq's runner calls for a task: it gets emq's JobContext first."""
    if iscoroutinefunction(task.func):

        async def run_async(ctx: Any, *args: Any, **kwargs: Any) -> Any:
            # Signals and the job read go through a thread: receivers may use the ORM.
            result, job = await sync_to_async(_started)(ctx)
            try:
                value = _settle(result, await task.func(*_arguments(task, result, args), **kwargs))
            except Exception as exc:
                await sync_to_async(_ended)(result, job, exc)
                raise
            await sync_to_async(_ended)(result, job, None)
            return value

        return run_async

    def run(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        result, job = _started(ctx)
        try:
            value = _settle(result, task.func(*_arguments(task, result, args), **kwargs))
        except Exception as exc:
            _ended(result, job, exc)
            raise
        _ended(result, job, None)
        return value

    return run


def run_eager(result: TaskResult) -> TaskResult:
    """EMQ_EAGER: run the task now in this process, as Django's ImmediateBackend does."""
    task, now = result.task, timezone.now()
    for name, value in (("status", TaskResultStatus.RUNNING), ("started_at", now), ("last_attempted_at", now)):
        object.__setattr__(result, name, value)
    result.worker_ids.append("eager")
    task_started.send(sender(result), task_result=result)
    call = async_to_sync(task.func) if iscoroutinefunction(task.func) else task.func
    try:
        _settle(result, call(*_arguments(task, result, tuple(result.args)), **result.kwargs))
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    except Exception as exc:
        result.errors.append(failure(exc))
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
    object.__setattr__(result, "finished_at", timezone.now())
    task_finished.send(sender(result), task_result=result)
    return result
