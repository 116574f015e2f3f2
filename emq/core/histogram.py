"""The layout of a window of job statistics (``emq/lua/_jobstats.lua`` writes it), and what it says.

A window is a string of big-endian u32 slots: outcome counts, the longest run and wait, then one count
per latency bucket for runs and one for waits. The buckets are fixed and log-spaced (three a doubling),
so windows add up: a queue's total, a partitioned queue's, ten minutes' out of their minutes are sums.

p50 and p95 come from the buckets: the bucket holding the rank's duration, reported as its geometric
middle (never above the window's max). A bucket spans a ratio of 2^(1/3), so an estimate is within
2^(1/6) - 1 = 12.3 % of the duration at that rank (``ERROR``); durations under 1 ms share bucket 0,
reported as 0 ms.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

COUNTS = ("settled", "completed", "failed", "retried", "dead")  # slots 0..4
RUN_MAX, WAIT_MAX = 5, 6
FIRST_BUCKET = 7  # slot of bucket 0's runs; its waits are the next slot
BUCKETS = 85  # bucket 84 holds everything from 2^(83/3) ms (~58 h) up
PER_DOUBLING = 3
ERROR = 2 ** (1 / (2 * PER_DOUBLING)) - 1  # the relative error bound of a p50 / p95 estimate


def bucket(ms: float) -> int:
    """The bucket of a duration, as ``_jobstats.lua``'s stat_bucket computes it."""
    if ms < 1:
        return 0
    return min(math.floor(math.log(ms) * (PER_DOUBLING / math.log(2))) + 1, BUCKETS - 1)


def middle(b: int) -> float:
    """The duration a bucket stands for: the geometric middle of its bounds (0 for bucket 0)."""
    return 0.0 if b == 0 else 2 ** ((b - 0.5) / PER_DOUBLING)


def decode(raw: bytes | None) -> list[int]:
    """A window's slots (empty when the window holds nothing)."""
    if not raw:
        return []
    return list(struct.unpack(f">{len(raw) // 4}I", raw[: len(raw) // 4 * 4]))


@dataclass(frozen=True)
class Durations:
    """The runs (or waits) of one window: a count per bucket and the longest, in ms."""

    buckets: tuple[int, ...]
    max_ms: int

    @property
    def count(self) -> int:
        return sum(self.buckets)

    def quantile(self, q: float) -> float | None:
        """The duration at quantile q (0 < q <= 1), within ERROR of it; None with no duration."""
        n = self.count
        if not n:
            return None
        rank, seen = max(math.ceil(q * n), 1), 0
        for b, k in enumerate(self.buckets):
            seen += k
            if seen >= rank:
                return min(middle(b), float(self.max_ms)) if b < BUCKETS - 1 else float(self.max_ms)
        return float(self.max_ms)

    @property
    def p50(self) -> float | None:
        return self.quantile(0.50)

    @property
    def p95(self) -> float | None:
        return self.quantile(0.95)


@dataclass(frozen=True)
class Window:
    """The statistics of one job name (or a queue) over one window starting at start_ms (server clock)."""

    start_ms: int
    slots: tuple[int, ...] = ()

    def _slot(self, i: int) -> int:
        return self.slots[i] if i < len(self.slots) else 0

    @property
    def settled(self) -> int:
        return self._slot(0)

    @property
    def completed(self) -> int:
        return self._slot(1)

    @property
    def failed(self) -> int:
        return self._slot(2)

    @property
    def retried(self) -> int:
        return self._slot(3)

    @property
    def dead(self) -> int:
        return self._slot(4)

    @property
    def run(self) -> Durations:
        return Durations(self._buckets(0), self._slot(RUN_MAX))

    @property
    def wait(self) -> Durations:
        return Durations(self._buckets(1), self._slot(WAIT_MAX))

    def _buckets(self, which: int) -> tuple[int, ...]:
        return tuple(self.slots[FIRST_BUCKET + which :: 2])

    def as_dict(self) -> dict:
        """The window as JSON: counts, and p50 / p95 / max of runs and waits in ms (None: no duration)."""
        out: dict = {"start_ms": self.start_ms, **{k: self._slot(i) for i, k in enumerate(COUNTS)}}
        for name, d in (("run", self.run), ("wait", self.wait)):
            out[name] = {"p50": _round(d.p50), "p95": _round(d.p95), "max": d.max_ms if d.count else None}
        return out


def merged(start_ms: int, windows: Iterable[Sequence[int]]) -> Window:
    """One window out of several (partitions, names, minutes): counts add up, the maxima take the largest."""
    out: list[int] = []
    for slots in windows:
        if len(slots) > len(out):
            out.extend([0] * (len(slots) - len(out)))
        for i, v in enumerate(slots):
            out[i] = max(out[i], v) if i in (RUN_MAX, WAIT_MAX) else out[i] + v
    return Window(start_ms, tuple(out))


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)
