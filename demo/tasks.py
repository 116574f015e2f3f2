"""Demo Django tasks: what a project's ``<app>/tasks.py`` looks like with emq as the TASKS backend."""

from __future__ import annotations

import asyncio

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task(max_attempts=3)
async def word_count(text: str) -> int:
    """Count the words of a text; async, so it waits on the worker's event loop, not in a thread."""
    await asyncio.sleep(0.05)  # stands in for an awaited HTTP call or a database query
    return len(text.split())
