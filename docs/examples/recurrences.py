"""Recurrences: declared in code, as rows, in settings; the DST rule checked (run by tests/test_docs_examples.py)."""

# --8<-- [start:decorator]
from datetime import timedelta

import emq


@emq.job(cron="0 3 * * *")  # every day at 03:00 in settings.TIME_ZONE
def nightly_cleanup() -> None:
    ...


@emq.job(every=timedelta(minutes=10))  # 00:00, 00:10, 00:20 … (UTC), whatever the time zone
def refresh_rates() -> None:
    ...
# --8<-- [end:decorator]


@emq.job
def weekly_report(customer: str) -> None:
    ...


# --8<-- [start:settings]
EMQ_RECURRENCES = [
    {"name": "hourly-stock-sync", "job": "shop.jobs.sync_stock", "cron": "5 * * * *", "timezone": "UTC"},
    {"name": "heartbeat", "job": "shop.jobs.ping", "every": 30},  # every: seconds, or a timedelta
]
# --8<-- [end:settings]


def example_row() -> None:
    # --8<-- [start:row]
    from emq.models import Recurrence

    row = Recurrence(
        name="weekly-report-acme",
        job=weekly_report.name,        # the job's registered name, e.g. "reports.jobs.weekly_report"
        cron="30 8 * * mon",           # Mondays at 08:30 …
        timezone="Europe/Berlin",      # … on Berlin's wall clock, in summer and in winter
        kwargs={"customer": "acme"},
        missed="once",                 # after an outage: one catch-up job, not one per missed week
    )
    row.full_clean()                   # the admin's checks: cron, time zone, job, arguments
    row.save()                         # reaches Valkey when the transaction commits
    # --8<-- [end:row]
    assert Recurrence.objects.get(name="weekly-report-acme").enabled


def example_dst() -> None:
    # --8<-- [start:dst]
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from emq.scheduling.cron import Schedule  # the Pump's own arithmetic

    berlin = ZoneInfo("Europe/Berlin")

    def runs(cron: str, start: datetime, until: datetime) -> list[str]:
        schedule, after, out = Schedule(cron, tz="Europe/Berlin"), int(start.timestamp() * 1000) - 1, []
        while (after := schedule.next_after(after)) < until.timestamp() * 1000:
            out.append(datetime.fromtimestamp(after / 1000, berlin).strftime("%a %d %H:%M %Z"))
        return out

    spring = runs("30 2 * * *", datetime(2026, 3, 28, tzinfo=berlin), datetime(2026, 3, 31, tzinfo=berlin))
    print(spring)  # ['Sat 28 02:30 CET', 'Sun 29 03:30 CEST', 'Mon 30 02:30 CEST']
    autumn = runs("30 2 * * *", datetime(2026, 10, 24, tzinfo=berlin), datetime(2026, 10, 27, tzinfo=berlin))
    print(autumn)  # ['Sat 24 02:30 CEST', 'Sun 25 02:30 CEST', 'Mon 26 02:30 CET']
    hourly = [runs("0 * * * *", datetime(2026, m, d, tzinfo=berlin), datetime(2026, m, d + 1, tzinfo=berlin))
              for m, d in ((3, 29), (10, 25))]
    print([len(day) for day in hourly])  # [23, 25]
    # --8<-- [end:dst]
    assert spring == ["Sat 28 02:30 CET", "Sun 29 03:30 CEST", "Mon 30 02:30 CEST"]
    assert autumn == ["Sat 24 02:30 CEST", "Sun 25 02:30 CEST", "Mon 26 02:30 CET"]
    assert [len(day) for day in hourly] == [23, 25]
