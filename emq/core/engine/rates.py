"""Rate limits of one queue (``set_rate.lua``; enforced by ``bclaim.lua`` through ``_rates.lua`` and ``_holds.lua``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..connection import guard
from .base import Ops

QUEUE = ""  # the field of a whole-queue limit
EACH = "*"  # the field of a limit every group has on its own
WIDE = "\0wide"  # not a limit: its long value keeps the hash a hashtable (set_rate.lua)


class RateOps(Ops):
    """Set, clear and read the rate limits and holds of one physical queue."""

    def set(self, group: str, limit: int | None, per_ms: int = 0) -> None:
        """At most limit starts in any window of per_ms (group "" the queue, "*" each group); None clears."""
        self._run("set_rate", [group, "" if limit is None else f"{int(limit)},{int(per_ms)}"])

    def limits(self) -> dict[str, tuple[int, int]]:
        """{group: (limit, per ms)}; "" is the whole queue's, "*" each group's."""
        raw = self._read(lambda c: c.hgetall(self.keys.rates))
        return {g: (int(s.split(",")[0]), int(s.split(",")[1])) for g, s in raw.items() if g != WIDE}

    def holds(self, count: int = 100) -> list[tuple[str, int]]:
        """The groups held now (by a full window or a job's RateLimited), soonest freed first, with the ms it ends."""
        raw = self._read(lambda c: c.zrange(self.keys.rhold, 0, count - 1, withscores=True))
        return [(g, int(ms)) for g, ms in raw]

    def _read(self, call: Callable[[Any], Any]) -> Any:
        with guard():
            return call(self.client)
