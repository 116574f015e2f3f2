"""The Lanes page's quotas: each quota, how many unfinished jobs it counts now, and the groups of the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.engine import Queue
from ..core.engine.quotas import EACH, QUEUE


@dataclass(frozen=True)
class QuotaRow:
    group: str  # "" the whole queue, "*" each group
    quota: int
    now: int | None  # jobs not yet finished it counts now (None: "*", counted per group)

    @property
    def scope(self) -> str:
        return "whole queue" if self.group == QUEUE else "each group" if self.group == EACH else f"group {self.group}"

    @property
    def full(self) -> bool:
        return self.now is not None and self.now >= self.quota


def rows(queue: Queue, shown: Sequence[str]) -> tuple[list[QuotaRow], list[tuple[str, int, int]]]:
    """The queue's quotas with their counts, and (group, count, quota) of the groups the page shows that
    a quota bounds: two reads and one of the page's groups, never a walk of every group."""
    limits = queue.quotas.limits()
    if not limits:
        return [], []
    named = sorted(g for g in limits if g != EACH)
    counts = queue.quotas.usage(named)
    quota_rows = [QuotaRow(g, limits[g], counts[g][0]) for g in named]
    if EACH in limits:
        quota_rows.append(QuotaRow(EACH, limits[EACH], None))
    page = queue.quotas.usage(list(dict.fromkeys(shown)))
    return quota_rows, [(g, n, most) for g, (n, most) in page.items() if most is not None]
