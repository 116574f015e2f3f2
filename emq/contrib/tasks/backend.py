"""``emq.backends.EmqBackend``: Django's Tasks framework (``@task``) on emq's engine.

    TASKS = {"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default", "mail"],
                         "OPTIONS": {"max_attempts": 5, "backoff": (1.0, 300.0), "lease": 30.0}}}

An adapter, not a second engine: ``enqueue`` mints an emq job named by the task's module path in
the emq queue named by ``queue_name``; ``run_after`` goes to the schedule set; emq's worker runs it
with retries, backoff, leases and the stalled sweep, and ``get_result`` reads the job back.

Priority (-100..100) keeps lanes fair: it orders work only inside the task's own group (lane),
never across groups, which the ring still serves in turn. Inside the group, higher priority runs
first and equal priorities run in the order they became ready (O(log n), ``_prio.lua``), the same
meaning as ``@emq.job``'s ``.using(priority=n)``.

emq's own options come through ``task_class`` (Django 6.1's ``@task(**kwargs)``, and the backport):
``@task(group="tenant-7", max_attempts=5, backoff=(1, 60), lease=120, timeout=600, retry_on=(IOError,))``
(``encrypt=True`` too, or ``"encrypt": True`` in OPTIONS: encryption at rest),
or ``.using(group=..., timeout=...)``. ``retry_on`` and a backoff function belong to the task (the
worker reads them from the task it imports), so ``.using`` does not take them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.apps import apps
from django.core import checks
from django.db import transaction

from ...core import config, locate, registry, topology
from ...core.encoding import dumps
from ...core.logical import JobRef
from ...core.records import Job
from ...jobs import JobFunction, Options
from ...jobs import registry as jobs
from ...jobs.function import ms_up
from ...jobs.options import FUNCTION_ONLY, Backoff, check, waits_for_commit
from ...runtime.signals import job_finished
from . import bridge
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
)

EMQ_TASK_OPTIONS = (*bridge.EMQ_OPTIONS, "retry_on")  # retry_on: read by the worker from the task itself
# OPTIONS key, the backport's name: inside transaction.atomic(), mint when it commits (default True)
ON_COMMIT = "ENQUEUE_ON_COMMIT"


@dataclass(frozen=True, slots=True, kw_only=True)
class EmqTask(Task):
    """A Django Task that also carries emq's options; None means the backend's OPTIONS, then emq's settings."""

    group: str | Callable[..., str] | None = None
    max_attempts: int | None = None
    backoff: Backoff | None = None
    lease: float | None = None
    timeout: float | None = None  # seconds an attempt may run (math.inf: no limit)
    soft_timeout: float | None = None  # seconds until emq.SoftTimeLimit is raised inside the task
    retry_on: tuple[type[BaseException], ...] | None = None  # exceptions retried; others fail the task at once
    encrypt: bool | None = None  # arguments, result and errors stored encrypted (None: OPTIONS, then EMQ_ENCRYPT)

    def using(self, *, group=None, max_attempts=None, backoff=None, lease=None, timeout=None, soft_timeout=None,
              **django: Any) -> EmqTask:
        """Django's ``using`` plus emq's per-call options: always a new task, for the calls made through it."""
        task = Task.using(self, **django)
        emq = {"group": group, "max_attempts": max_attempts, "backoff": backoff, "lease": lease, "timeout": timeout,
               "soft_timeout": soft_timeout}
        changes = {k: v for k, v in emq.items() if v is not None}
        return dataclasses.replace(task, **changes) if changes else task


class EmqBackend(BaseTaskBackend):
    """Run Django Tasks on emq's worker: defer, async tasks, results and priority all supported."""

    task_class = EmqTask
    supports_defer = True  # run_after becomes the job's due time in the schedule set
    supports_async_task = True  # async def tasks run on the worker's event loop
    supports_get_result = True  # results are the jobs' hashes, kept for EMQ_RESULT_TTL
    supports_priority = True  # orders its group's lane only; never reorders groups (see the module doc)

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        check(task.module_path, {**self._emq_options(task), "queue": task.queue_name})

    def _emq_options(self, task: Task) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k in EMQ_TASK_OPTIONS}
        for name in EMQ_TASK_OPTIONS:
            value = getattr(task, name, None)
            if value is not None:
                opts[name] = value
        return opts

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Mint the task's job (ready now, or scheduled at run_after); inside ``transaction.atomic()``,
        when the transaction commits (OPTIONS["ENQUEUE_ON_COMMIT"], on by default), never on rollback.

        The result (its id, READY) is returned at once: the id is chosen before the mint. Its
        ``enqueued_at`` is the server's time of the mint, filled in once the job exists.
        """
        self.validate_task(task)
        result = TaskResult(
            task=task, id="", status=TaskResultStatus.READY, enqueued_at=None, started_at=None, finished_at=None,
            last_attempted_at=None, args=list(args), kwargs=dict(kwargs), backend=self.alias, errors=[], worker_ids=[],
        )
        if config.get("EMQ_EAGER"):
            object.__setattr__(result, "id", f"eager-{id(result):x}")
            return self._when_committed(partial(bridge.run_eager, result), result)
        per_call = {k: v for k, v in self._emq_options(task).items()
                    if k not in FUNCTION_ONLY and not (k == "backoff" and callable(v))}
        fn = register_task(task).using(queue=task.queue_name, **per_call)
        run_after = None if task.run_after is None else ms_up(task.run_after)
        spec = fn.spec(args, kwargs, "" if run_after is None else f"@{run_after}")  # arguments checked now
        spec = dataclasses.replace(spec, priority=task.priority, meta=dumps(bridge.meta_of(task)))
        (spec,), mint = fn.placed([spec])  # the final id (a partitioned queue marks it), before the mint
        object.__setattr__(result, "id", spec.id)
        return self._when_committed(partial(self._mint, mint, result), result)

    def _when_committed(self, act: Callable[[], Any], result: TaskResult) -> TaskResult:
        """Run act now, or when the default database's transaction commits (dropped on rollback)."""
        if waits_for_commit(self.options.get(ON_COMMIT, True)):
            transaction.on_commit(act)
        else:
            act()
        return result

    def _mint(self, mint: Callable[[], list[JobRef]], result: TaskResult) -> None:
        (ref,) = mint()
        # The server's time of the mint, as get_result reads it back from the job: one clock.
        object.__setattr__(result, "enqueued_at", ref.enqueued_at)
        task_enqueued.send(type(self), task_result=result)

    def get_result(self, result_id: str) -> TaskResult:
        """Read the task's job: READY, RUNNING, SUCCESSFUL or FAILED, with errors and return value."""
        job = self._find(result_id)
        if job is None or not (job.meta or {}).get("backend"):
            raise TaskResultDoesNotExist(f"no task result {result_id!r} in queues {sorted(self._queue_names())}")
        return bridge.result_of(job)

    def _queue_names(self) -> set[str]:
        return set(self.queues) if self.queues else registry.known_queues()

    def _find(self, result_id: str) -> Job | None:
        """The task's job, found by its id alone (``core.locate``), in one of this backend's queues."""
        found = locate.find([result_id], whole=True)[result_id]
        mine = [q for q in found.queues if not self.queues or topology.logical(q.name) in self.queues]
        return found.job(mine[0]) if mine else None

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        errors = []
        if not apps.is_installed("emq"):
            errors.append(checks.Error(
                f"{type(self).__name__} is configured as TASKS[{self.alias!r}], but the emq app is not installed",
                hint="Add 'emq' to INSTALLED_APPS", id="emq.E011",
            ))
        unknown = sorted(set(self.options) - {*EMQ_TASK_OPTIONS, ON_COMMIT})
        if unknown:
            errors.append(checks.Error(
                f"TASKS[{self.alias!r}]['OPTIONS'] has unknown key(s) {unknown}; emq knows "
                f"{[*EMQ_TASK_OPTIONS, ON_COMMIT]}", id="emq.E010",
            ))
        if not isinstance(self.options.get(ON_COMMIT, True), bool):
            errors.append(checks.Error(
                f"TASKS[{self.alias!r}]['OPTIONS']['{ON_COMMIT}'] must be True or False, "
                f"not {self.options[ON_COMMIT]!r}", id="emq.E012",
            ))
        return errors


def register_task(task: Task) -> JobFunction:
    """Register the emq job that runs a Django Task, under the task's module path."""
    job_finished.connect(bridge.on_job_finished, dispatch_uid="emq-tasks-finished")
    name = task.module_path
    known = jobs.get(name)
    if known is None or bridge.tasks.get(name) is None or bridge.tasks[name].func is not task.func:
        bridge.tasks[name] = task
        options = Options(takes_context=True, **_task_policy(task))
        known = jobs[name] = JobFunction(bridge.job_function(task), name, options)
    return known


def _task_policy(task: Task) -> dict[str, Any]:
    """What a worker reads from the task itself: retry_on and a backoff function (task, then backend OPTIONS)."""
    try:
        defaults = task_backends[task.backend].options
    except Exception:  # an alias this process does not configure: the task's own values only
        defaults = {}
    out = {}
    for name in ("retry_on", "backoff"):
        value = getattr(task, name, None)
        value = defaults.get(name) if value is None else value
        if value is not None and (name == "retry_on" or callable(value)):
            out[name] = value
    return out


def resolve_task(name: str) -> JobFunction | None:
    """Find a Task by its module path in a module this process has imported, and register it; else None.

    Never an import: a worker imported the project's code at start-up (installed apps, what they
    import, each app's ``tasks`` module, EMQ_IMPORTS; ``jobs.autodiscover``), and a Task is run
    only from there. Wagtail's search tasks, in ``modelsearch.tasks`` under the app ``wagtail.search``,
    are found because the app imports them; a payload naming a module nothing imported ends dead
    as NotRegistered, so data in the server never makes a worker import code.
    """
    module, _, attr = name.rpartition(".")
    found = getattr(sys.modules.get(module), attr, None)
    return register_task(found) if isinstance(found, Task) else None


__all__ = ["EmqBackend", "EmqTask", "InvalidTask", "register_task", "resolve_task"]
