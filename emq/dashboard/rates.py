"""The Lanes page's rate limits: what each limit is and which lanes it holds now; set and remove (change permission)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest

from ..core.engine import Queue
from ..core.engine.rates import EACH, QUEUE


@dataclass(frozen=True)
class RateRow:
    group: str  # "" the whole queue, "*" each group
    limit: int
    per: float  # seconds
    held_until_ms: int | None  # when its hold ends (None: not held now)

    @property
    def scope(self) -> str:
        return "whole queue" if self.group == QUEUE else "each group" if self.group == EACH else f"group {self.group}"


def rows(queue: Queue) -> tuple[list[RateRow], list[tuple[str, int]]]:
    """The queue's limits, and the first 100 holds (a group held by a job's RateLimited may have no limit)."""
    holds = queue.rates.holds()
    held = dict(holds)
    limits = sorted(queue.rates.limits().items())
    return [RateRow(g, n, ms / 1000, held.get(g)) for g, (n, ms) in limits], holds


def set_rate(request: HttpRequest, queue: Queue) -> None:
    group = request.POST.get("group", "").strip()
    try:
        limit, per = int(request.POST.get("limit", "")), float(request.POST.get("per", ""))
        if limit < 1 or not per > 0:
            raise ValueError
    except ValueError:
        messages.error(request, "A rate limit needs a whole number of jobs >= 1 and a window > 0 seconds.")
        return
    queue.rates.set(group, limit, max(int(per * 1000), 1))
    what = RateRow(group, limit, per, None).scope
    messages.success(request, f"Rate limit of {what} in queue {queue.name}: at most {limit} starts per {per:g} s.")


def remove_rate(request: HttpRequest, queue: Queue) -> None:
    group = request.POST.get("group", "").strip()
    queue.rates.set(group, None)
    what = RateRow(group, 0, 0, None).scope
    messages.success(request, f"Removed the rate limit of {what} in queue {queue.name}; a lane it held runs again.")
