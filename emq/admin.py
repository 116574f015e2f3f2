"""emq's admin: recurrences (rows are the source of truth) and the job dashboard."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from .dashboard import masking
from .errors import EmqError
from .jobs import autodiscover
from .models import Recurrence
from .scheduling import rows
from .scheduling.cron import ScheduleError, describe, from_ms, zone
from .scheduling.definitions import known_job, schedule_of


class RecurrenceForm(forms.ModelForm):
    """Secret arguments show masked (kwargs by name, args by their parameter's name); a mask left
    as it is keeps the stored value, so editing other fields never overwrites a secret."""

    class Meta:
        model = Recurrence
        fields = "__all__"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            names = masking.parameter_names(self.instance.job)
            self.initial["kwargs"] = masking.Masked().value(self.instance.kwargs or {})
            self.initial["args"] = [masking.Masked().value(v, names[i] if i < len(names) else None)
                                    for i, v in enumerate(self.instance.args or [])]

    def clean_kwargs(self) -> dict:
        value, stored = self.cleaned_data["kwargs"], self.instance.kwargs or {}
        if isinstance(value, dict):
            return {k: stored.get(k, v) if v == masking.MASK else v for k, v in value.items()}
        return value

    def clean_args(self) -> list:
        value, stored = self.cleaned_data["args"], self.instance.args or []
        if isinstance(value, list):
            return [stored[i] if v == masking.MASK and i < len(stored) else v for i, v in enumerate(value)]
        return value


@admin.register(Recurrence)
class RecurrenceAdmin(admin.ModelAdmin):
    form = RecurrenceForm
    list_display = ("name", "job_name", "schedule", "timezone", "next_three", "last_minted_at", "minted_jobs",
                    "enabled")
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

    def changelist_view(self, request, extra_context=None):
        autodiscover()  # the list says which jobs this project knows: import them first
        return super().changelist_view(request, extra_context)

    @admin.display(description="job", ordering="job")
    def job_name(self, row: Recurrence) -> str:
        """The job's name, or a warning when no job of that name is known (the Pump skips it)."""
        if known_job(row.job) is None:
            return format_html('<strong class="errornote" title="{}">job not found</strong> {}',
                               "No @emq.job or task of this name: the Pump skips its occurrences.", row.job)
        return row.job

    @admin.display(description="schedule")
    def schedule(self, row: Recurrence) -> str:
        return describe(row.cron, row.every, row.timezone)

    @admin.display(description="jobs")
    def minted_jobs(self, row: Recurrence) -> str:
        """Link to the dashboard's list of the jobs this recurrence minted."""
        from .dashboard.views import recurrence_jobs_url

        return format_html('<a href="{}">minted jobs</a>', recurrence_jobs_url(row.queue, row.name))

    @admin.display(description="next three occurrences")
    def next_three(self, row: Recurrence) -> str:
        if not row.enabled:
            return "—"
        try:
            s = schedule_of(row)
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
    def run_now(self, request, queryset) -> TemplateResponse | None:
        disabled = [row for row in queryset if not row.enabled]
        if disabled and request.POST.get("confirmed") != "yes":
            return self._confirm_run_now(request, queryset, disabled)
        ids = []
        for row in queryset:
            try:
                ids.append(rows.run_now(row))
            except (EmqError, ScheduleError) as exc:
                self.message_user(request, f"{row.name}: {exc}", messages.ERROR)
        if ids:
            msg = ngettext("%d job minted: %s", "%d jobs minted: %s", len(ids)) % (len(ids), ", ".join(ids))
            self.message_user(request, msg)
        return None

    def _confirm_run_now(self, request, queryset, disabled: list[Recurrence]) -> TemplateResponse:
        """Ask before minting a job of a disabled recurrence (Django's delete-selected pattern)."""
        context = {
            **self.admin_site.each_context(request),
            "title": "Run disabled recurrences now?",
            "opts": self.model._meta,
            "rows": list(queryset),
            "disabled": disabled,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/emq/recurrence/run_now_confirmation.html", context)


# The job dashboard: an admin entry whose pages live in emq/dashboard/.
from .dashboard import admin as _dashboard_admin  # noqa: E402,F401  (registers the dashboard)
