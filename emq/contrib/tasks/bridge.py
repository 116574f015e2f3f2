"""A Django Task's run on emq: the TaskResult read from a job, the run on a worker, the signals.

A Django Task runs on emq's worker as an emq job registered under the task's module path; the
job's function here builds the TaskResult the task (and ``task_started``) see from the job's
hash. ``task_finished`` is sent from emq's ``job_finished`` signal, after the server recorded
the outcome and with the state its finish script decided (never a guess of the retry rule).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import traceback
from collections.abc import Callable
from datetime import datetime
from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import close_old_connections
from django.utils import timezone

from ...core.encoding import dumps
from ...core.logical import partition
from ...core.records import Job, from_ms
from ...core.topology import logical
from ...jobs import lookup
from .compat import (
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    task_backends,
    task_finished,
    task_started,
)

STATUS = {
    "scheduled": TaskResultStatus.READY,
    "ready": TaskResultStatus.READY,
    "active": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "dead": TaskResultStatus.FAILED,
    "cancelled": TaskResultStatus.FAILED,  # its error is emq.errors.Cancelled
}
STALLED_PATH = "emq.errors.LeaseExpired"
# EmqTask's per-call fields besides Django's, kept on the job so get_result's task equals enqueue's
EMQ_OPTIONS = ("group", "max_attempts", "backoff", "lease", "timeout", "soft_timeout", "encrypt")
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


def meta_of(task: Task) -> dict[str, Any]:
    """What a task's job keeps besides its arguments, so ``task_of`` rebuilds an equal Task.

    ``run_after`` is kept exactly (the job's due time is in ms); emq's own options too, except a
    callable group or backoff, which the task registered under the module path still has.
    """
    emq = {name: getattr(task, name, None) for name in EMQ_OPTIONS}
    for name in ("group", "backoff"):  # a function stays with the task registered under the module path
        if callable(emq[name]):
            del emq[name]
    for name in ("timeout", "soft_timeout"):  # math.inf (no limit) is not JSON
        if emq[name] == math.inf:
            emq[name] = "inf"
    return {"backend": task.backend, "run_after": None if task.run_after is None else task.run_after.isoformat(),
            "takes_context": task.takes_context, "emq": emq}


def task_of(job: Job) -> Task:
    """The Task a job runs, with the per-call values (priority, queue, run_after, backend, options) it was sent with."""
    base = tasks.get(job.name)
    if base is None:
        lookup(job.name)  # registers the task found by its module path
        base = tasks[job.name]
    meta = job.meta or {}
    task = base.using(priority=job.priority, queue_name=logical(job.queue), backend=meta["backend"])
    emq = dict(meta.get("emq") or {})
    if emq.get("backoff") is not None:
        emq["backoff"] = tuple(emq["backoff"])
    for name in ("timeout", "soft_timeout"):
        if emq.get(name) == "inf":
            emq[name] = math.inf
    return dataclasses.replace(task, run_after=_when(meta.get("run_after")),
                               **{k: v for k, v in emq.items() if hasattr(task, k)})


def _when(value: Any) -> datetime | None:
    """A run_after as kept in meta: an ISO datetime (or server ms, from jobs minted before)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return from_ms(value)


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


def backend_class(result: TaskResult) -> type:
    return type(task_backends[result.backend])


# -- a task's run on a worker ---------------------------------------------------------------


def _started(ctx: Any) -> TaskResult:
    close_old_connections()
    result = result_of(partition(ctx.queue).get_job(ctx.job_id))
    task_started.send(backend_class(result), task_result=result)
    return result


def on_job_finished(sender: Any, *, queue: str, job: Any, state: str, **kwargs: Any) -> None:
    """Send ``task_finished`` once a task's job ended for good (completed or dead), as the server says."""
    if state not in ("completed", "dead") or job.name not in tasks:
        return
    result = result_of(partition(queue).get_job(job.id))
    task_finished.send(backend_class(result), task_result=result)


def failure(exc: BaseException) -> TaskError:
    """The TaskError Django expects for an exception raised in this process."""
    kind, text = type(exc), "".join(traceback.format_exception(exc))
    return TaskError(exception_class_path=f"{kind.__module__}.{kind.__qualname__}", traceback=text)


def _arguments(task: Task, result: TaskResult, args: tuple) -> tuple:
    return (TaskContext(task_result=result), *args) if task.takes_context else args


def _settle(result: TaskResult, value: Any) -> Any:
    value = json.loads(dumps(value))  # refuse a non-JSON value before reporting success
    object.__setattr__(result, "_return_value", value)
    return value


def job_function(task: Task) -> Callable[..., Any]:
    """The function emq's runner calls for a task: it gets emq's JobContext first.

    Its signature is the task's (after the context), so enqueue checks a task's arguments too.
    """
    run = _async_run(task) if iscoroutinefunction(task.func) else _sync_run(task)
    try:
        sig = inspect.signature(task.func)
    except (TypeError, ValueError):  # nothing to check against
        return run
    params = list(sig.parameters.values())
    context = [] if task.takes_context else [inspect.Parameter("emq_context", inspect.Parameter.POSITIONAL_ONLY)]
    run.__signature__ = sig.replace(parameters=context + params)
    return run


def _async_run(task: Task) -> Callable[..., Any]:
    async def run_async(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        # Signals and the job read go through a thread: receivers may use the ORM.
        result = await sync_to_async(_started)(ctx)
        try:
            return _settle(result, await task.func(*_arguments(task, result, args), **kwargs))
        finally:
            await sync_to_async(close_old_connections)()

    return run_async


def _sync_run(task: Task) -> Callable[..., Any]:
    def run(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        result = _started(ctx)
        try:
            return _settle(result, task.func(*_arguments(task, result, args), **kwargs))
        finally:
            close_old_connections()

    return run


def run_eager(result: TaskResult) -> TaskResult:
    """EMQ_EAGER: run the task now in this process, as Django's ImmediateBackend does."""
    task, now = result.task, timezone.now()
    for name, value in (("status", TaskResultStatus.RUNNING), ("started_at", now), ("last_attempted_at", now)):
        object.__setattr__(result, name, value)
    result.worker_ids.append("eager")
    task_started.send(backend_class(result), task_result=result)
    call = async_to_sync(task.func) if iscoroutinefunction(task.func) else task.func
    try:
        _settle(result, call(*_arguments(task, result, tuple(result.args)), **result.kwargs))
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    except Exception as exc:
        result.errors.append(failure(exc))
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
    object.__setattr__(result, "finished_at", timezone.now())
    task_finished.send(backend_class(result), task_result=result)
    return result
