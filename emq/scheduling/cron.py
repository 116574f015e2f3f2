"""Schedules: when a recurrence's occurrences fall, as pure functions of epoch milliseconds.

A cron expression is read on the wall clock of its time zone (croniter on naive local times),
then each wall time is mapped to real instants by the DST rule (see the README):

- a wall time that does not exist (spring forward) runs shifted forward by the gap: 02:30 → 03:30;
- a wall time that occurs twice (fall back) runs once, at its first occurrence — unless the
  expression's minute or hour field is a wildcard (``*``, ``*/n``): those follow real time, so an
  hourly job runs 23 times on the spring day and 25 times on the autumn day (Vixie cron's rule).

``every`` is a fixed interval anchored at the Unix epoch, so any two Pumps compute the same instants.
Limit: a never-matching expression is found by searching at most MAX_YEARS years ahead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, croniter

MAX_YEARS = 9  # Feb 29 can be 8 years away (2096 -> 2104); anything rarer is "never"
MIN_EVERY_MS = 1000
NEAR = timedelta(hours=3)  # wider than any DST shift: closer than this to a transition, look around it


class ScheduleError(ValueError):
    """A cron expression, interval or time zone that cannot be scheduled."""


def zone(name: str) -> ZoneInfo:
    """The IANA time zone of that name, or ScheduleError saying so."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ScheduleError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Berlin' or 'UTC'") from None


@dataclass(frozen=True)
class Schedule:
    """A cron expression in a time zone, or a fixed interval in ms (exactly one of the two)."""

    cron: str = ""
    every_ms: int = 0
    tz: str = "UTC"

    def __post_init__(self) -> None:
        if bool(self.cron) == bool(self.every_ms):
            raise ScheduleError("give either a cron expression or an interval (every), not both and not neither")
        if self.every_ms and self.every_ms < MIN_EVERY_MS:
            raise ScheduleError(f"every must be at least {MIN_EVERY_MS // 1000} second")
        zone(self.tz)
        if self.cron:
            self._check_cron()

    @property
    def key(self) -> str:
        """A short fingerprint: a changed schedule re-arms its recurrence, anything else does not."""
        raw = json.dumps([self.cron, self.every_ms, self.tz])
        return hashlib.sha1(raw.encode()).hexdigest()[:12]

    @cached_property
    def fields(self) -> list[str]:
        return self.cron.split()

    @cached_property
    def _seconds(self) -> bool:
        return len(self.fields) == 6

    @cached_property
    def _follows_real_time(self) -> bool:
        minute, hour = (self.fields[1], self.fields[2]) if self._seconds else (self.fields[0], self.fields[1])
        return minute.startswith("*") or hour.startswith("*")

    def _iter(self, start: datetime) -> croniter:
        return croniter(
            self.cron, start, max_years_between_matches=MAX_YEARS, second_at_beginning=self._seconds
        )

    def _check_cron(self) -> None:
        if len(self.fields) not in (5, 6):
            raise ScheduleError(
                f"cron {self.cron!r} has {len(self.fields)} fields; give 5 (minute hour day month weekday) "
                "or 6 (seconds first)"
            )
        try:
            self._iter(datetime(2026, 1, 1)).get_next(datetime)
        except CroniterBadDateError:
            raise ScheduleError(f"cron {self.cron!r} never matches (no date within {MAX_YEARS} years)") from None
        except (CroniterBadCronError, ValueError, KeyError) as exc:
            raise ScheduleError(f"invalid cron {self.cron!r}: {exc}") from None

    def next_after(self, after_ms: int) -> int:
        """The first occurrence strictly after after_ms (epoch ms)."""
        if self.every_ms:
            return (after_ms // self.every_ms + 1) * self.every_ms
        return self._cron_next(after_ms)

    def upcoming(self, after_ms: int, n: int) -> list[int]:
        """The next n occurrences after after_ms."""
        out: list[int] = []
        for _ in range(n):
            after_ms = self.next_after(after_ms)
            out.append(after_ms)
        return out

    def _cron_next(self, after_ms: int) -> int:
        tz = zone(self.tz)
        after = datetime.fromtimestamp(after_ms / 1000, tz)
        shift = _shift(after)
        wall = after.replace(tzinfo=None, fold=0) - shift
        it = self._iter(wall)
        best: int | None = None
        best_wall: datetime | None = None
        while True:
            try:
                cand = it.get_next(datetime)
            except CroniterBadDateError:
                raise ScheduleError(f"cron {self.cron!r} has no occurrence after {after.isoformat()}") from None
            if best_wall is not None and cand > best_wall + shift:
                return best
            for ms in self._instants(cand, tz):
                if ms > after_ms and (best is None or ms < best):
                    best, best_wall = ms, cand

    def _instants(self, wall: datetime, tz: ZoneInfo) -> list[int]:
        """The real instants of one wall time under the DST rule (0, 1 or 2 of them)."""
        first = wall.replace(tzinfo=tz, fold=0)
        second = wall.replace(tzinfo=tz, fold=1)
        ms = [_ms(first)]
        if first.utcoffset() != second.utcoffset() and self._follows_real_time and _exists(second):
            ms.append(_ms(second))
        return ms


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _exists(dt: datetime) -> bool:
    """Whether an aware wall time really occurs (it is not in a spring-forward gap)."""
    back = datetime.fromtimestamp(dt.timestamp(), dt.tzinfo)
    return back.replace(tzinfo=None) == dt.replace(tzinfo=None)


def _shift(at: datetime) -> timedelta:
    """How far the zone's UTC offset moves within NEAR of at (zero away from DST transitions)."""
    before = datetime.fromtimestamp((at - NEAR).timestamp(), at.tzinfo).utcoffset()
    after = datetime.fromtimestamp((at + NEAR).timestamp(), at.tzinfo).utcoffset()
    return abs(after - before)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def describe(cron: str, every: timedelta | None, tz: str) -> str:
    """The schedule in words, for the admin ("daily at 02:30 (Europe/Berlin)", "every 5 minutes")."""
    if every:
        return f"every {_duration(every)}"
    return f"{_cron_words(cron.split()) or 'cron ' + cron} ({tz})"


def _cron_words(f: list[str]) -> str:
    """Words for the common shapes of a 5-field expression; "" for anything else."""
    if len(f) != 5 or f[2:4] != ["*", "*"]:
        return ""
    minute, hour, dow = f[0], f[1], f[4]
    if minute.isdigit() and hour == "*" and dow == "*":
        return f"hourly at minute {int(minute)}"
    if not (minute.isdigit() and hour.isdigit()):
        return "every minute" if f == ["*"] * 5 else ""
    at = f"{int(hour):02d}:{int(minute):02d}"
    if dow == "*":
        return f"daily at {at}"
    days = {str(i): d for i, d in enumerate(("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                               "Saturday", "Sunday"))}
    return f"weekly on {days[dow]} at {at}" if dow in days else ""


def _duration(d: timedelta) -> str:
    s = int(d.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s % size == 0 and s >= size:
            n = s // size
            return f"{n} {unit}{'s' if n != 1 else ''}" if n != 1 else unit
    return f"{s} second{'s' if s != 1 else ''}" if s != 1 else "second"
