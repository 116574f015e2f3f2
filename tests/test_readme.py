"""Every Python block of the README runs as written, in order, against a real server.

The blocks share one module namespace (as a reader's project would), given only what a block
takes for granted from its surroundings: ``timedelta``, ``timezone`` and the demo app's modules.
On Django 5.2 ``django.tasks`` is the backport's module under that name (the README says so).
"""

from __future__ import annotations

import re
import sys
import types
from datetime import timedelta
from pathlib import Path

import django
import pytest
from django.utils import timezone

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.fixture
def readme_module(monkeypatch):
    """A fresh module the blocks run in, importable by name (jobs and tasks are found by module path)."""
    module = types.ModuleType("readme_examples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    if django.VERSION < (6, 0):
        import django_tasks

        monkeypatch.setitem(sys.modules, "django.tasks", django_tasks)
    from demo import jobs, tasks

    module.__dict__.update(timedelta=timedelta, timezone=timezone, jobs=jobs, tasks=tasks)
    return module


def test_the_readme_has_python_blocks():
    assert len(python_blocks()) >= 1


def test_every_python_block_of_the_readme_runs(emq_env, readme_module):
    from emq.jobs import declared, registry

    try:
        for i, block in enumerate(python_blocks(), 1):
            try:
                exec(compile(block, f"README.md python block {i}", "exec"), readme_module.__dict__)
            except Exception as exc:
                raise AssertionError(f"README.md python block {i} failed: {exc!r}\n{block}") from exc
    finally:  # its jobs and recurrences must not outlive the test (a later Pump would upsert them)
        for name in [n for n in [*declared, *registry] if n.startswith("readme_examples.")]:
            declared.pop(name, None)
            registry.pop(name, None)
