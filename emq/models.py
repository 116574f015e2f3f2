"""emq's models: recurrences (the source of truth for Repeat) and the dashboard's admin entry."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F

from .scheduling import rows
from .scheduling.definitions import validate
from .scheduling.rowsync import RowSync


def default_timezone() -> str:
    return settings.TIME_ZONE or "UTC"


class RecurrenceQuerySet(models.QuerySet):
    """The recurrence rows as a Pump's row sync reads them (``Recurrence.objects`` is handed to it:
    ``emq.scheduling`` sits below the models), and bulk writes that bypass save() yet still reach
    Valkey and move the change marker.

    ``bulk_update`` goes through ``update``; ``delete`` sends post_delete for each row.
    """

    def update(self, **kwargs):
        before = list(self.values_list("name", "queue", "group"))
        pks = list(self.values_list("pk", flat=True))
        n = super().update(**kwargs)
        changed(before, self.model.objects.filter(pk__in=pks))  # found again by pk: the write may move them
        return n

    def bulk_create(self, objs, *args, **kwargs):
        made = super().bulk_create(objs, *args, **kwargs)
        changed([], self.filter(name__in=[o.name for o in made]))
        return made

    def record_minted(self, name: str, last, next_at) -> int:
        """Write the Pump's read-only fields without moving the marker (nothing a Pump must re-read)."""
        fields = {"next_at": next_at}
        if last is not None:
            fields["last_minted_at"] = last
        return models.QuerySet.update(self.filter(name=name), **fields)

    def marker(self) -> int:
        """The change marker's version (0 before the first write): a Pump re-syncs when it moves."""
        return RecurrenceMarker.objects.filter(pk=1).values_list("version", flat=True).first() or 0


class Recurrence(models.Model):
    """A recurrence: every occurrence of its schedule is minted as a fresh job by the Pump."""

    class Missed(models.TextChoices):
        SKIP = "skip", "skip: only the next future occurrence"
        ONCE = "once", "once: one catch-up job"
        ALL = "all", "all: each missed occurrence, up to a cap"

    name = models.CharField(max_length=200, unique=True)
    job = models.CharField(max_length=300, help_text="a registered job's name, e.g. myapp.jobs.report")
    cron = models.CharField(max_length=120, blank=True, help_text="5 fields, or 6 with seconds first")
    every = models.DurationField(null=True, blank=True, help_text="a fixed interval, instead of cron")
    timezone = models.CharField(max_length=64, default=default_timezone, help_text="IANA time zone")
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    queue = models.CharField(max_length=100, default="default")
    group = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    missed = models.CharField(max_length=8, choices=Missed.choices, default=Missed.SKIP)
    declared_in_code = models.BooleanField(default=False, editable=False)
    last_minted_at = models.DateTimeField(null=True, blank=True, editable=False)
    next_at = models.DateTimeField(null=True, blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = RecurrenceQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_db(cls, db, field_names, values, **kwargs):
        """Remember where the row was loaded from, so a save can drop its old name or queue."""
        row = super().from_db(db, field_names, values, **kwargs)
        row._loaded = rows.place_of(row) if {"name", "queue", "group"} <= set(field_names) else None
        return row

    def clean(self) -> None:
        """Refuse what the Pump could not schedule: bad cron, time zone, job or interval."""
        validate(self)


class RecurrenceMarker(models.Model):
    """One row whose version moves on every write to recurrences; Pumps re-sync when it moves."""

    version = models.BigIntegerField(default=0)
    changed = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"recurrences version {self.version}"


def row_sync() -> RowSync:
    """A Pump's link to these rows: the commands that start a Pump (``emq_pump``, ``emq_worker``,
    ``emq.testing``) hand it in, so the layers below the models never look one up."""
    return RowSync(Recurrence.objects)


def bump() -> None:
    """Move the change marker (inside the writer's transaction)."""
    if not RecurrenceMarker.objects.filter(pk=1).update(version=F("version") + 1):
        RecurrenceMarker.objects.get_or_create(pk=1, defaults={"version": 1})


def changed(before: list[rows.Place], written: Any) -> None:
    """Bump the marker now; push the rows' new state (and drop their old places) after commit."""
    bump()
    transaction.on_commit(lambda: rows.push(before, list(written)))


def on_save(sender: Any, instance: Recurrence, **kwargs: Any) -> None:
    """post_save of a recurrence (connected in ``EmqConfig.ready``)."""
    before = [instance._loaded] if getattr(instance, "_loaded", None) else []
    instance._loaded = rows.place_of(instance)
    changed(before, [instance])


def on_delete(sender: Any, instance: Recurrence, **kwargs: Any) -> None:
    """post_delete of a recurrence (connected in ``EmqConfig.ready``)."""
    bump()
    transaction.on_commit(lambda: rows.push([rows.place_of(instance)], []))


class Dashboard(models.Model):
    """No table: gives the job dashboard an admin entry and its view/change permissions."""

    class Meta:
        managed = False
        verbose_name = "job dashboard"
        verbose_name_plural = "job dashboard"
        default_permissions = ("view", "change")
