"""Schedules as pure functions: the DST rule, `every`, the missed policies, and validation."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from emq.models import Recurrence
from emq.scheduling.cron import Schedule, ScheduleError
from emq.scheduling.repeat import plan
from tests import jobs  # noqa: F401  (registers tests.jobs.add)

BERLIN = ZoneInfo("Europe/Berlin")
SPRING, AUTUMN, SUMMER = (2026, 3, 29), (2026, 10, 25), (2026, 6, 1)


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def local_day(cron: str, day: tuple[int, int, int]) -> list[str]:
    """Every occurrence that falls on one local day in Berlin, as local times with offsets."""
    s = Schedule(cron=cron, tz="Europe/Berlin")
    start, end = ms(datetime(*day, tzinfo=BERLIN)), ms(datetime(*day, tzinfo=BERLIN) + timedelta(days=1))
    out, t = [], s.next_after(start - 1)
    while t < end:
        out.append(datetime.fromtimestamp(t / 1000, BERLIN).strftime("%H:%M%z"))
        t = s.next_after(t)
    return out


def test_daily_0230_runs_once_on_both_berlin_transition_days():
    assert local_day("30 2 * * *", SPRING) == ["03:30+0200"]  # 02:30 does not exist: shifted by the gap
    assert local_day("30 2 * * *", AUTUMN) == ["02:30+0200"]  # 02:30 happens twice: the first one only
    assert local_day("30 2 * * *", SUMMER) == ["02:30+0200"]


def test_hourly_runs_23_times_in_spring_and_25_in_autumn():
    spring, autumn = local_day("0 * * * *", SPRING), local_day("0 * * * *", AUTUMN)
    assert len(spring) == 23 and "02:00+0100" not in spring and spring[2] == "03:00+0200"
    assert len(autumn) == 25 and autumn[2:4] == ["02:00+0200", "02:00+0100"]
    assert len(local_day("0 * * * *", SUMMER)) == 24
    assert len(local_day("*/30 * * * *", AUTUMN)) == 50


def test_every_is_anchored_at_the_epoch_so_any_pump_computes_the_same_instants():
    s = Schedule(every_ms=5000)
    assert s.next_after(1_000_000_001) == 1_000_005_000
    assert s.next_after(1_000_005_000) == 1_000_010_000
    assert s.upcoming(0, 3) == [5000, 10000, 15000]


def test_six_fields_put_seconds_first():
    s = Schedule(cron="*/15 * * * * *", tz="UTC")
    assert s.upcoming(ms(datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC"))), 2)[1] % 60000 == 30000


@pytest.mark.parametrize(
    "policy, minted, skipped",
    [
        ("skip", [96, 97, 98, 99, 100], 5),
        ("once", [95, 96, 97, 98, 99, 100], 4),
        ("all", [93, 94, 95, 96, 97, 98, 99, 100], 2),
    ],
)
def test_missed_policies_decide_what_a_late_pump_mints(policy, minted, skipped):
    """Next was due at 91 s, the Pump is back at 100 s, grace 4 s: 91..95 were missed."""
    p = plan(Schedule(every_ms=1000), 91_000, 100_000, policy, grace_ms=4000, cap=3)
    assert p.mint == [x * 1000 for x in minted]
    assert p.skipped == skipped
    assert p.next_ms == 101_000


def test_an_on_time_occurrence_is_minted_under_every_policy():
    for policy in ("skip", "once", "all"):
        assert plan(Schedule(every_ms=1000), 5000, 5003, policy, 60_000, 100).mint == [5000]


# -- validation -------------------------------------------------------------------------------


def row(**fields) -> Recurrence:
    base = {"name": "r", "job": "tests.jobs.add", "every": timedelta(seconds=10), "timezone": "UTC", "args": [1, 2]}
    return Recurrence(**{**base, **fields})


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"cron": "0 0 31 2 *", "every": None}, "cron", "never matches"),
        ({"cron": "0 0 30 2 *", "every": None}, "cron", "never matches"),
        ({"cron": "61 * * * *", "every": None}, "cron", "invalid cron"),
        ({"cron": "every day", "every": None}, "cron", "fields"),
        ({"cron": "* * * * * * *", "every": None}, "cron", "fields"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
        ({"job": "tests.jobs.nope"}, "job", 'No job registered as "tests.jobs.nope"'),
        ({"job": "add"}, "job", "Did you mean"),
        ({"cron": "0 3 * * *"}, "every", "not both"),
        ({"every": None}, "cron", "Give a cron expression"),
        ({"every": timedelta(milliseconds=10)}, "every", "at least 1 second"),
        ({"args": {"a": 1}}, "args", "JSON list"),
        ({"queue": "{x}"}, "queue", "braces"),
    ],
)
@pytest.mark.timing
def test_bad_input_is_a_validation_error_within_50ms(fields, field, message):
    row().clean()  # warm: jobs discovered, croniter imported
    started = time.perf_counter()
    with pytest.raises(ValidationError) as info:
        row(**fields).clean()
    took = (time.perf_counter() - started) * 1000
    assert message in " ".join(info.value.message_dict[field])
    assert took < 50, f"validation took {took:.1f} ms"


def test_a_schedule_refuses_bad_input_itself_for_the_pump_too():
    with pytest.raises(ScheduleError, match="never matches"):
        Schedule(cron="0 0 31 2 *")
    with pytest.raises(ScheduleError, match="not both"):
        Schedule(cron="* * * * *", every_ms=1000)


@pytest.mark.django_db
def test_the_admin_form_shows_the_validation_error(admin_client):
    data = {
        "name": "bad", "job": "tests.jobs.add", "cron": "0 0 31 2 *", "timezone": "UTC", "args": "[1, 2]",
        "kwargs": "{}", "queue": "default", "group": "", "enabled": "on", "missed": "skip",
    }
    response = admin_client.post("/admin/emq/recurrence/add/", data)
    assert response.status_code == 200
    assert "never matches" in response.content.decode()
    assert not Recurrence.objects.exists()
    data["cron"], data["name"] = "0 3 * * *", "good"
    assert admin_client.post("/admin/emq/recurrence/add/", data).status_code == 302
    assert Recurrence.objects.get(name="good").cron == "0 3 * * *"


def test_a_very_long_outage_is_bounded_and_keeps_the_on_time_occurrences():
    """A day of a 1 s recurrence missed: the scan is bounded, the newest are still caught up."""
    day = 86_400_000
    p = plan(Schedule(every_ms=1000), 1000, day, "all", grace_ms=5000, cap=10)
    assert p.mint == [day - 15000 + i * 1000 for i in range(16)]  # 10 newest missed + 6 on time
    assert p.more_skipped and p.skipped >= 10_000  # a lower bound of what was skipped, flagged by more_skipped
    assert p.next_ms == day + 1000  # the schedule goes on after now, not after the last occurrence scanned
    once = plan(Schedule(every_ms=1000), 1000, day, "once", grace_ms=5000, cap=10)
    assert once.mint[0] == day - 6000


def test_the_admin_says_the_schedule_in_words():
    from emq.scheduling.cron import describe

    assert describe("30 2 * * *", None, "Europe/Berlin") == "daily at 02:30 (Europe/Berlin)"
    assert describe("0 9 * * 1", None, "UTC") == "weekly on Monday at 09:00 (UTC)"
    assert describe("*/5 * * * *", None, "UTC") == "cron */5 * * * * (UTC)"
    assert describe("", timedelta(seconds=3), "UTC") == "every 3 seconds"
    assert describe("", timedelta(hours=1), "UTC") == "every hour"
