"""The registry of job functions, looked up by their stable dotted name, and how jobs are found.

Workers run only registered jobs. An adapter (the django.tasks backend) plugs a *resolver* in,
so a name the registry lacks can still be found (a Task by its module path): the registry
imports no adapter.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from django.utils.module_loading import autodiscover_modules

from ..core import config
from ..errors import NotRegistered


class Registered(Protocol):
    """What the registry holds: a ``JobFunction`` (emq.jobs.function), named here by its shape so
    this module, which the function module imports, imports nothing back."""

    func: Callable[..., Any]
    name: str
    options: Any


registry: dict[str, Registered] = {}
declared: dict[str, dict[str, Any]] = {}  # job name -> {"cron": ...} or {"every": ...}; upserted as rows by a Pump
SUBMODULES = ("jobs", "tasks")  # each installed app's modules a worker imports at start-up
Resolver = Callable[[str], "Registered | None"]
_resolvers: list[Resolver] = []


def add_resolver(resolver: Resolver) -> None:
    """Let an adapter find jobs the registry lacks (called with the name; None when not its own)."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def lookup(name: str) -> Registered:
    """The registered job of that name, or NotRegistered saying so."""
    found = registry.get(name)
    for resolve in _resolvers:
        if found is not None:
            break
        found = resolve(name)
    if found is None:
        raise NotRegistered(f'no job registered as "{name}"; {HOW_TO_REGISTER.format(module=_module_of(name))}')
    return found


HOW_TO_REGISTER = (
    "a worker runs the jobs and Django tasks of the modules it imported at start-up (each installed app's "
    'jobs and tasks modules, what they import, and EMQ_IMPORTS): add "{module}" to EMQ_IMPORTS'
)


def _module_of(name: str) -> str:
    return name.rpartition(".")[0] or name


def autodiscover() -> None:
    """Import every installed app's ``jobs`` and ``tasks`` modules (as the admin finds ``admin`` modules)
    and each of EMQ_IMPORTS. ``tasks`` is where Django's Tasks framework puts ``@task`` functions by
    convention: a worker runs a task only from a module imported by now (contrib/tasks ``resolve_task``)."""
    autodiscover_modules(*SUBMODULES)
    for module in config.get("EMQ_IMPORTS"):
        importlib.import_module(module)
