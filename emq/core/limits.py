"""Per-group concurrency caps: set one, or write all of ``EMQ_GROUP_LIMITS`` to the server."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import ConfigurationError
from . import config, topology
from .logical import LogicalQueue


def set_group_limit(queue_name: str, group: str, limit: int | None) -> None:
    """Cap the active jobs of one group in one queue; None lifts the cap."""
    LogicalQueue(queue_name).set_group_limit(group, limit)


def configured(setting: str, shape: str, queue_names: Iterable[str] | None) -> Iterator[tuple[str, Any]]:
    """(queue, its entry) of a {"queue": {...}} setting, for the queues named (None: all of them).

    One reader for EMQ_GROUP_LIMITS and EMQ_RATE_LIMITS, so both refuse a malformed value alike."""
    limits = config.get(setting) or {}
    if not isinstance(limits, dict):
        raise ConfigurationError(f"{setting} must be {shape}, not {limits!r}")
    wanted = None if queue_names is None else {topology.logical(n) for n in queue_names}
    for queue_name, entry in limits.items():
        if wanted is None or queue_name in wanted:
            yield queue_name, entry


def apply_group_limits(queue_names: Iterable[str] | None = None) -> int:
    """Write EMQ_GROUP_LIMITS ({"queue": {"group": cap}}) to the server; returns how many were set."""
    applied = 0
    for queue_name, groups in configured("EMQ_GROUP_LIMITS", '{"queue": {"group": cap}}', queue_names):
        if not isinstance(groups, dict):
            raise ConfigurationError(f"EMQ_GROUP_LIMITS[{queue_name!r}] must map group names to caps, not {groups!r}")
        for group, limit in groups.items():
            try:
                set_group_limit(queue_name, str(group), limit)
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"EMQ_GROUP_LIMITS[{queue_name!r}][{group!r}]: {exc}") from None
            applied += 1
    return applied
