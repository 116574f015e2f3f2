"""``emq.backends.EmqBackend``: Django's Tasks framework (``@task``) on emq's engine.

    TASKS = {"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default", "mail"],
                         "OPTIONS": {"max_attempts": 5, "backoff": (1.0, 300.0), "lease": 30.0}}}

An adapter, not a second engine: ``enqueue`` mints an emq job named by the task's module path in
the emq queue named by ``queue_name``; ``run_after`` goes to the schedule set; emq's worker runs it
with retries, backoff, leases and the stalled sweep, and ``get_result`` reads the job back.

Priority (-100..100) keeps lanes fair: it orders work only inside the task's own group (lane),
never across groups, which the ring still serves in turn. A task with priority > 0 joins the head
of its group's lane whenever it becomes ready (at enqueue, or when its ``run_after`` falls due), so
it runs before that group's waiting work (newest urgent first); priority <= 0 joins the tail (FIFO).
Past that sign the number is kept on the job and the result but does not order further.

emq's own options come through ``task_class`` (Django 6.1's ``@task(**kwargs)``, and the backport):
``@task(group="tenant-7", max_attempts=5, backoff=(1, 60), lease=120)``, or ``.using(group=...)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core import checks
from django.utils import timezone
from django.utils.module_loading import import_string

from . import conf, djtasks, keys
from .connection import get_client, guard
from .djtasks import BaseTaskBackend, InvalidTask, Task, TaskResult, TaskResultDoesNotExist, TaskResultStatus
from .encoding import dumps
from .engine import Queue
from .jobs import JobFunction, Options, _check, registry
from .records import Job

EMQ_TASK_OPTIONS = ("group", "max_attempts", "backoff", "lease")


@dataclass(frozen=True, slots=True, kw_only=True)
class EmqTask(Task):
    """A Django Task that also carries emq's options; None means the backend's OPTIONS, then emq's settings."""

    group: str | Callable[..., str] | None = None
    max_attempts: int | None = None
    backoff: tuple[float, float] | None = None
    lease: float | None = None

    def using(self, *, group=None, max_attempts=None, backoff=None, lease=None, **django: Any) -> EmqTask:
        """Django's ``using`` plus emq's options, for the calls made through the copy."""
        task = Task.using(self, **django) if django else self
        emq = {"group": group, "max_attempts": max_attempts, "backoff": backoff, "lease": lease}
        changes = {k: v for k, v in emq.items() if v is not None}
        return dataclasses.replace(task, **changes) if changes else task


class EmqBackend(BaseTaskBackend):
    """Run Django Tasks on emq's worker: defer, async tasks, results and priority all supported."""

    task_class = EmqTask
    supports_defer = True  # run_after becomes the job's due time in the schedule set
    supports_async_task = True  # async def tasks run on the worker's event loop
    supports_get_result = True  # results are the jobs' hashes, kept for EMQ_RESULT_TTL
    supports_priority = True  # > 0 heads its group's lane; never reorders groups (see the module doc)

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        _check(task.module_path, {**self._emq_options(task), "queue": task.queue_name})

    def _emq_options(self, task: Task) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k in EMQ_TASK_OPTIONS}
        for name in EMQ_TASK_OPTIONS:
            value = getattr(task, name, None)
            if value is not None:
                opts[name] = value
        return opts

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Mint the task's job (ready now, or scheduled at run_after); it exists when this returns."""
        self.validate_task(task)
        result = TaskResult(
            task=task, id="", status=TaskResultStatus.READY, enqueued_at=None, started_at=None, finished_at=None,
            last_attempted_at=None, args=list(args), kwargs=dict(kwargs), backend=self.alias, errors=[], worker_ids=[],
        )
        if conf.get("EMQ_EAGER"):
            object.__setattr__(result, "id", f"eager-{id(result):x}")
            return djtasks.run_eager(result)
        fn = register_task(task).using(queue=task.queue_name, **self._emq_options(task))
        run_after = None if task.run_after is None else int(task.run_after.timestamp() * 1000)
        spec = fn.spec(args, kwargs, "" if run_after is None else f"@{run_after}")
        meta = {"backend": self.alias, "run_after": run_after, "takes_context": task.takes_context}
        fn.mint_now([dataclasses.replace(spec, priority=task.priority, meta=dumps(meta))])
        object.__setattr__(result, "id", spec.id)
        object.__setattr__(result, "enqueued_at", timezone.now())
        djtasks.task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """Read the task's job: READY, RUNNING, SUCCESSFUL or FAILED, with errors and return value."""
        job = self._find(result_id)
        if job is None or not (job.meta or {}).get("backend"):
            raise TaskResultDoesNotExist(f"no task result {result_id!r} in queues {sorted(self._queue_names())}")
        return djtasks.result_of(job)

    def _queue_names(self) -> set[str]:
        if self.queues:
            return set(self.queues)
        with guard():
            return set(get_client().smembers(keys.registry_queues(conf.get("EMQ_PREFIX"))))

    def _find(self, result_id: str) -> Job | None:
        """Look the id up in every queue of this backend in one pipelined round trip."""
        queues = [Queue(n) for n in sorted(self._queue_names())]
        with guard():
            pipe = get_client().pipeline(transaction=False)
            for q in queues:
                pipe.hgetall(q.keys.job(result_id))
            hashes = pipe.execute()
        for q, h in zip(queues, hashes, strict=True):
            if h:
                return Job.from_hash(q.name, result_id, h)
        return None

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        unknown = sorted(set(self.options) - set(EMQ_TASK_OPTIONS))
        if unknown:
            return [checks.Error(
                f"TASKS[{self.alias!r}]['OPTIONS'] has unknown key(s) {unknown}; emq knows {list(EMQ_TASK_OPTIONS)}",
                id="emq.E010",
            )]
        return []


def register_task(task: Task) -> JobFunction:
    """Register the emq job that runs a Django Task, under the task's module path."""
    name = task.module_path
    known = registry.get(name)
    if known is None or djtasks.tasks.get(name) is None or djtasks.tasks[name].func is not task.func:
        djtasks.tasks[name] = task
        known = registry[name] = JobFunction(djtasks.job_function(task), name, Options(takes_context=True))
    return known


def resolve_task(name: str) -> JobFunction | None:
    """Find a Task by its module path (as Django's own Task pickling does) and register it; else None."""
    try:
        found = import_string(name)
    except ImportError:
        return None
    return register_task(found) if isinstance(found, Task) else None


__all__ = ["EmqBackend", "EmqTask", "InvalidTask", "register_task", "resolve_task"]
