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
