"""The registry of job functions, looked up by their stable dotted name, and how jobs are found.

Workers run only registered jobs. An adapter (the django.tasks backend) plugs a *resolver* in,
so a name the registry lacks can still be found (a Task by its module path): the registry
imports no adapter.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from django.apps import apps
from django.utils.module_loading import module_has_submodule

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
        raise NotRegistered(f'no job registered as "{name}"')
    return found


def autodiscover() -> list[str]:
    """Import every installed app's ``jobs`` module and each of EMQ_IMPORTS; returns what was imported."""
    imported = []
    for app in apps.get_app_configs():
        if module_has_submodule(app.module, "jobs"):
            importlib.import_module(f"{app.name}.jobs")
            imported.append(f"{app.name}.jobs")
    for module in config.get("EMQ_IMPORTS"):
        importlib.import_module(module)
        imported.append(module)
    return imported
