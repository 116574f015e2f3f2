"""emq's admin: recurrences (rows are the source of truth) and the job dashboard."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from . import recurrences
from .errors import EmqError
from .models import Recurrence
from .schedule import ScheduleError, describe, from_ms, zone


@admin.register(Recurrence)
class RecurrenceAdmin(admin.ModelAdmin):
    list_display = ("name", "schedule", "timezone", "next_three", "last_minted_at", "minted_jobs", "enabled")
    list_filter = ("enabled", "queue", "declared_in_code")
    search_fields = ("name", "job")
    readonly_fields = ("declared_in_code", "last_minted_at", "next_at", "created", "updated")
    actions = ("enable", "disable", "run_now")
    fieldsets = (
        (None, {"fields": ("name", "job", "enabled")}),
        ("Schedule", {"fields": ("cron", "every", "timezone", "missed")}),
        ("Job", {"fields": ("args", "kwargs", "queue", "group")}),
        ("State", {"fields": ("declared_in_code", "last_minted_at", "next_at", "created", "updated")}),
    )

    @admin.display(description="schedule")
    def schedule(self, row: Recurrence) -> str:
        return describe(row.cron, row.every, row.timezone)

    @admin.display(description="next three occurrences")
    @admin.display(description="jobs")
    def minted_jobs(self, row: Recurrence) -> str:
        """Link to the dashboard's list of the jobs this recurrence minted."""
        from .dashboard.views import recurrence_jobs_url

        return format_html('<a href="{}">minted jobs</a>', recurrence_jobs_url(row.queue, row.name))

    def next_three(self, row: Recurrence) -> str:
        if not row.enabled:
            return "—"
        try:
            s = recurrences.schedule_of(row)
            tz = zone(row.timezone)
        except ScheduleError as exc:
            return f"cannot be scheduled: {exc}"
        start = row.next_at if row.next_at and row.next_at > timezone.now() else None
        after = int((start or timezone.now()).timestamp() * 1000)
        times = ([after] if start else []) + s.upcoming(after, 3 - (1 if start else 0))
        shown = ((from_ms(t).astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z"),) for t in times)
        return format_html_join(", ", "{}", shown)

    @admin.action(description="Enable selected recurrences")
    def enable(self, request, queryset) -> None:
        n = queryset.update(enabled=True)
        self.message_user(request, ngettext("%d recurrence enabled.", "%d recurrences enabled.", n) % n)

    @admin.action(description="Disable selected recurrences")
    def disable(self, request, queryset) -> None:
        n = queryset.update(enabled=False)
        self.message_user(request, ngettext("%d recurrence disabled.", "%d recurrences disabled.", n) % n)

    @admin.action(description="Run now (mint one job each, outside the schedule)")
    def run_now(self, request, queryset) -> None:
        ids = []
        for row in queryset:
            try:
                ids.append(recurrences.run_now(row))
            except (EmqError, ScheduleError) as exc:
                self.message_user(request, f"{row.name}: {exc}", messages.ERROR)
        if ids:
            msg = ngettext("%d job minted: %s", "%d jobs minted: %s", len(ids)) % (len(ids), ", ".join(ids))
            self.message_user(request, msg)


# The job dashboard: an admin entry whose pages live in emq/dashboard/.
from .dashboard import admin as _dashboard_admin  # noqa: E402,F401  (registers the dashboard)
