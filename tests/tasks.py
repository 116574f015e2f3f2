"""Django ``@task`` functions the suite runs on emq's backend (found by workers by module path)."""

from __future__ import annotations

import asyncio
import threading

import emq

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task

gate = threading.Event()  # a test opens it to let `wait_for_gate` finish


@task
def add(a: int, b: int) -> int:
    return a + b


@task(max_attempts=2, backoff=(0.0, 0.0))
def explode(message: str) -> None:
    raise ValueError(message)


@task(takes_context=True, max_attempts=3, backoff=(0.0, 0.0))
def second_time_lucky(context) -> int:
    """Fails on its first attempt; returns the attempt it succeeded on."""
    if context.attempt < 2:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return context.attempt


@task
async def nap(seconds: float, value: str) -> str:
    await asyncio.sleep(seconds)
    return value


@task
def wait_for_gate() -> str:
    if not gate.wait(10):
        raise TimeoutError("the test never opened the gate")
    return "through"


@task(group="tenant-7", max_attempts=5, lease=120)
def tenant_report(n: int) -> int:
    return n


@emq.job
async def emq_nap(seconds: float) -> float:
    """An ``async def`` emq job: it runs on the worker's event loop, like an async task."""
    await asyncio.sleep(seconds)
    return seconds


# -- Django's own backend expectations (tests/test_tasks_conformance.py) ------------------------


@task
def noop_task(*args, **kwargs) -> None:
    return None


@task
async def noop_task_async(*args, **kwargs) -> None:
    return None


@task
def calculate_meaning_of_life() -> int:
    return 42


@task(max_attempts=1)
def failing_task_value_error() -> None:
    raise ValueError("This task failed due to ValueError")


@task(max_attempts=1)
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))


@task(max_attempts=1)
def complex_return_value():
    return object()  # not JSON: the attempt fails


@task(takes_context=True)
def get_task_id(context) -> str:
    return context.task_result.id


@task(takes_context=True, max_attempts=3, backoff=(0.0, 0.0))
def lose_first_lease(context, queue: str) -> int:
    """Give its own first attempt back to the queue (as a lost lease would), then finish it anyway."""
    if context.attempt == 1:
        emq.queue(queue).release_lock(context.task_result.id, context.attempt)
    return context.attempt
@task(retry_on=(OSError,), max_attempts=3, backoff=(0.0, 0.0))
def picky(kind: str) -> None:
    """Retried for an OSError only (retry_on), so a ValueError fails the task at once."""
    raise {"os": OSError, "value": ValueError}[kind](kind)


@task(timeout=0.5, max_attempts=1)
def overruns() -> None:
    """Busy past its 0.5 s time limit."""
    while True:
        pass


def _no_second_try(attempt: int, exc: BaseException) -> float | None:
    return None


@task(backoff=_no_second_try, max_attempts=5)
def gives_up() -> None:
    """Its backoff function says "no more tries" at once: FAILED after one attempt of five."""
    raise RuntimeError("once")
