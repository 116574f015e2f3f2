"""A recurrence row as the Pump sees it: its checks, its schedule and its Valkey definition."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from ..core import topology
from ..errors import ConfigurationError, NotRegistered
from ..jobs import JobFunction, arguments, autodiscover, lookup, registry
from .cron import Schedule, ScheduleError, zone
from .repeat import Definition


def validate(row: Any) -> None:
    """Raise ValidationError for whatever would stop the Pump from scheduling this row."""
    errors: dict[str, str] = {}
    if row.cron and row.every:
        errors["every"] = "Give either a cron expression or an interval (every), not both."
    elif not row.cron and not row.every:
        errors["cron"] = "Give a cron expression (e.g. '0 3 * * *') or an interval (every)."
    try:
        zone(row.timezone)
    except ScheduleError as exc:
        errors["timezone"] = str(exc)
    if not errors:
        try:
            schedule_of(row)
        except ScheduleError as exc:
            errors["cron" if row.cron else "every"] = str(exc)
    errors.update(_check_job(row.job))
    if not isinstance(row.args, list):
        errors["args"] = "args must be a JSON list, e.g. [1, \"a\"]."
    if not isinstance(row.kwargs, dict):
        errors["kwargs"] = "kwargs must be a JSON object, e.g. {\"n\": 1}."
    if not errors.keys() & {"job", "args", "kwargs"}:
        errors.update(_check_arguments(row))
    try:
        topology.check_name(row.queue)
    except ConfigurationError as exc:
        errors["queue"] = str(exc)
    if errors:
        raise ValidationError(errors)


def known_job(name: str) -> JobFunction | None:
    """The job a recurrence names, as this process finds it (registry, then adapters), or None."""
    try:
        return lookup(name)
    except NotRegistered:
        return None


def _check_arguments(row: Any) -> dict[str, str]:
    fn = known_job(row.job)
    try:
        arguments.check(row.job, fn.func, fn.options.takes_context, row.args, row.kwargs)
    except TypeError as exc:
        return {"args": f"{exc}. Give args and kwargs the job takes."}
    return {}


def _check_job(name: str) -> dict[str, str]:
    autodiscover()
    if known_job(name) is not None:
        return {}
    near = sorted(n for n in registry if n.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1])
    hint = f" Did you mean {near[0]!r}?" if near else " Register it with @emq.job in <app>/jobs.py or EMQ_IMPORTS."
    return {"job": f'No job registered as "{name}".{hint}'}


def schedule_of(row: Any) -> Schedule:
    every_ms = int(row.every.total_seconds() * 1000) if row.every else 0
    return Schedule(row.cron.strip(), every_ms, row.timezone)


def definition(row: Any) -> Definition:
    """The Valkey definition of a row (ScheduleError when the row cannot be scheduled)."""
    s = schedule_of(row)
    return Definition(
        name=row.name, job=row.job, cron=s.cron, every_ms=s.every_ms, tz=s.tz, args=tuple(row.args or ()),
        kwargs=dict(row.kwargs or {}), group=row.group, missed=row.missed, key=s.key,
    )
