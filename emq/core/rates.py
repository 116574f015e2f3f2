"""Rate limits across every worker: set one, or write all of ``EMQ_RATE_LIMITS`` to the server.

A limit says "at most ``limit`` jobs start in any window of ``per`` seconds", counted on the
server's clock by the claim script, so it holds across every worker process and machine. It
applies to one group's lane, to each group on its own (group ``"*"``), or to the whole queue
(no group). On a partitioned queue a group's limit lives in its group's partition; a whole-queue
or ``"*"`` limit applies in each partition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import ConfigurationError
from .engine import Queue
from .engine.rates import EACH, QUEUE
from .limits import apply_group_limits, configured
from .logical import LogicalQueue
from .quotas import apply_quotas

SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*$")  # "100/60": 100 starts per 60 seconds


def _partitions(queue: str, group: str | None) -> list[Queue]:
    lq = LogicalQueue(queue)
    return lq.partitions if group in (None, EACH) else [lq.of_group(group)]


def set_rate_limit(queue: str, limit: int | None, per: float = 1.0, group: str | None = None) -> None:
    """At most limit job starts in any window of per seconds, in one group, each group ("*"), or the queue
    (group None); limit None removes that limit."""
    if limit is not None and (int(limit) < 1 or not float(per) > 0):
        raise ValueError(f"rate limit of {queue!r} must be limit >= 1 per > 0 seconds, not {limit!r}/{per!r}")
    if group == QUEUE:
        raise ValueError("group must be a group's name, '*' for each group, or None for the whole queue")
    for q in _partitions(queue, group):
        q.rates.set(QUEUE if group is None else str(group), limit, max(int(float(per) * 1000), 1))


def remove_rate_limit(queue: str, group: str | None = None) -> None:
    """Remove the rate limit of a group, of each group ("*"), or of the whole queue (None)."""
    set_rate_limit(queue, None, group=group)


def rate_limits(queue: str) -> dict[str | None, tuple[int, float]]:
    """{group (None: the whole queue): (limit, per seconds)} of a queue, over its partitions."""
    found: dict[str | None, tuple[int, float]] = {}
    for q in LogicalQueue(queue).partitions:
        for group, (limit, per_ms) in q.rates.limits().items():
            found[None if group == QUEUE else group] = (limit, per_ms / 1000)
    return found


def parse(spec: str | tuple[int, float]) -> tuple[int, float]:
    """ "100/60" or (100, 60) -> (100, 60.0)."""
    if isinstance(spec, tuple | list) and len(spec) == 2:
        return int(spec[0]), float(spec[1])
    m = SPEC.match(str(spec))
    if not m:
        raise ConfigurationError(f'a rate limit is "<limit>/<seconds>", e.g. "100/60", not {spec!r}')
    return int(m[1]), float(m[2])


def apply_rate_limits(queue_names: Iterable[str] | None = None) -> int:
    """Write EMQ_RATE_LIMITS ({"queue": {"group" | "*" | None: "100/60"}}) to the server; returns how many."""
    applied = 0
    for queue_name, groups in configured("EMQ_RATE_LIMITS", '{"queue": {"group": "100/60"}}', queue_names):
        if isinstance(groups, str | tuple):  # "queue": "100/60" limits the whole queue
            groups = {None: groups}
        if not isinstance(groups, dict):
            raise ConfigurationError(f"EMQ_RATE_LIMITS[{queue_name!r}] must map groups to limits, not {groups!r}")
        for group, spec in groups.items():
            limit, per = parse(spec)
            try:
                set_rate_limit(queue_name, limit, per, None if group in (None, "") else str(group))
            except ValueError as exc:
                raise ConfigurationError(f"EMQ_RATE_LIMITS[{queue_name!r}][{group!r}]: {exc}") from None
            applied += 1
    return applied


def apply_limits(queue_names: list[str]) -> None:
    """Write EMQ_GROUP_LIMITS, EMQ_RATE_LIMITS and EMQ_QUOTAS of these queues to the server (a worker or
    Pump starting)."""
    apply_group_limits(queue_names)
    apply_rate_limits(queue_names)
    apply_quotas(queue_names)
