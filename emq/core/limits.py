"""Per-group concurrency caps: set one, or write all of ``EMQ_GROUP_LIMITS`` to the server."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ConfigurationError
from . import config, topology
from .logical import LogicalQueue


def set_group_limit(queue_name: str, group: str, limit: int | None) -> None:
    """Cap the active jobs of one group in one queue; None lifts the cap."""
    LogicalQueue(queue_name).set_group_limit(group, limit)


def apply_group_limits(queue_names: Iterable[str] | None = None) -> int:
    """Write EMQ_GROUP_LIMITS ({"queue": {"group": cap}}) to the server; returns how many were set."""
    limits = config.get("EMQ_GROUP_LIMITS") or {}
    if not isinstance(limits, dict):
        raise ConfigurationError(f'EMQ_GROUP_LIMITS must be {{"queue": {{"group": cap}}}}, not {limits!r}')
    wanted = None if queue_names is None else {topology.logical(n) for n in queue_names}
    applied = 0
    for queue_name, groups in limits.items():
        if wanted is not None and queue_name not in wanted:
            continue
        if not isinstance(groups, dict):
            raise ConfigurationError(f"EMQ_GROUP_LIMITS[{queue_name!r}] must map group names to caps, not {groups!r}")
        for group, limit in groups.items():
            try:
                set_group_limit(queue_name, str(group), limit)
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"EMQ_GROUP_LIMITS[{queue_name!r}][{group!r}]: {exc}") from None
            applied += 1
    return applied
