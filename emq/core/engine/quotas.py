"""Quotas of one queue (``set_quota.lua``; checked by the mint scripts through ``_quotas.lua``).

A quota bounds the jobs of a group not yet finished (scheduled, waiting, ready or active): one
group's, each group's ("*"), or the whole queue's (""). The mint scripts count the jobs of a queue
that has quotas and refuse a mint past one; the scripts that end jobs give the count back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..connection import guard
from .base import Ops

QUEUE = ""  # the field of the whole queue's quota (and count)
EACH = "*"  # the field of a quota every group has on its own


class QuotaOps(Ops):
    """Set, clear and read the quotas of one physical queue, and what they count."""

    def set(self, group: str, max_queued: int | None) -> int:
        """At most max_queued unfinished jobs in group ("" the queue, "*" each group); None clears. Returns
        how many quotas the queue has now."""
        return int(self._run("set_quota", [group, "" if max_queued is None else int(max_queued)]))

    def limits(self) -> dict[str, int]:
        """{group: max}; "" is the whole queue's, "*" each group's."""
        with guard():
            return {g: int(v) for g, v in self.client.hgetall(self.keys.quotas).items()}

    def usage(self, groups: Sequence[str]) -> dict[str, tuple[int, int | None]]:
        """{group: (unfinished jobs counted, its quota or None)} for some groups ("" the queue): two reads."""
        if not groups:
            return {}
        with guard():
            counts = self.client.hmget(self.keys.queued, list(groups))
            limits = self.client.hmget(self.keys.quotas, [*groups, EACH])
        each = limits[-1]
        return {g: (int(n or 0), _int(m if m is not None or g == QUEUE else each))
                for g, n, m in zip(groups, counts, limits[:-1], strict=True)}


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Refused:
    """A mint's answer for a job it did not write: its group (None: the whole queue) is at its quota."""

    group: str | None
    quota: int

    @classmethod
    def from_reply(cls, r: list) -> Refused:
        return cls(str(r[0]) or None, int(r[1]))
