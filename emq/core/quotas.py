"""Tenant quotas: at most so many jobs not yet finished per group, set one by one or from ``EMQ_QUOTAS``.

A quota bounds a group's jobs that are scheduled, waiting, ready or active: a mint past it raises
``QuotaExceeded`` and writes nothing for the jobs refused (``enqueue_many`` mints what fits). It
applies to one group, to each group on its own (``"*"``), or to the whole queue (group None). The
mint scripts check it in O(1) a job and only in a queue that has quotas (``_quotas.lua``). On a
partitioned queue a group's quota lives in its group's partition; a ``"*"`` or whole-queue quota
applies in each partition. Jobs minted before a queue's first quota are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError, QuotaExceeded
from .engine import Queue
from .engine.quotas import EACH, QUEUE, Refused
from .limits import configured
from .logical import LogicalQueue


def set_quota(queue: str, max_queued: int | None, group: str | None = None) -> None:
    """At most max_queued jobs not yet finished in one group, each group ("*"), or the queue (group None);
    max_queued None removes that quota."""
    if max_queued is not None and (isinstance(max_queued, bool) or int(max_queued) < 0):
        raise ValueError(f"quota of {queue!r} must be a number of jobs >= 0, or None to remove it, not {max_queued!r}")
    if group == QUEUE:
        raise ValueError("group must be a group's name, '*' for each group, or None for the whole queue")
    lq = LogicalQueue(queue)
    for q in lq.partitions if group in (None, EACH) else [lq.of_group(group)]:
        q.quotas.set(QUEUE if group is None else str(group), max_queued)


def quotas(queue: str) -> dict[str | None, int]:
    """{group ("*": each group, None: the whole queue): max jobs not yet finished} of a queue."""
    found: dict[str | None, int] = {}
    for q in LogicalQueue(queue).partitions:
        for group, most in q.quotas.limits().items():
            found[None if group == QUEUE else group] = most
    return found


def apply_quotas(queue_names: Iterable[str] | None = None) -> int:
    """Write EMQ_QUOTAS ({"queue": {"group" | "*" | None: max}}) to the server; returns how many."""
    applied = 0
    for queue_name, groups in configured("EMQ_QUOTAS", '{"queue": {"*": 10000}}', queue_names):
        if isinstance(groups, int):  # "queue": 10000 bounds the whole queue
            groups = {None: groups}
        if not isinstance(groups, Mapping):
            raise ConfigurationError(f"EMQ_QUOTAS[{queue_name!r}] must map groups to quotas, not {groups!r}")
        for group, most in groups.items():
            try:
                set_quota(queue_name, most, None if group in (None, "") else str(group))
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"EMQ_QUOTAS[{queue_name!r}][{group!r}]: {exc}") from None
            applied += 1
    return applied


def exceeded(queue: str, refused: Sequence[Refused], minted: Sequence[Any]) -> QuotaExceeded:
    """The error for a call some of whose jobs a quota refused (the first refusal names the quota)."""
    first = refused[0]
    return QuotaExceeded(queue, first.group, first.quota, len(minted), len(refused), list(minted))


def usage(queue: str, groups: Sequence[str]) -> dict[str, tuple[int, int | None]]:
    """{group ("" the queue): (jobs not yet finished that quotas count, its quota or None)} of one
    physical queue (the dashboard's Lanes page)."""
    return Queue(queue).quotas.usage(groups)
