"""``manage.py emq_pump``: promote due jobs, reclaim expired leases, mint recurrences."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emq import conf
from emq.api import apply_group_limits
from emq.apps import autodiscover
from emq.errors import EmqError


class Command(BaseCommand):
    help = (
        "Run the Pump for some queues: it promotes jobs when they fall due, reclaims the leases "
        "of workers that died, and mints recurrences. Any number may run; one leads each queue."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default=None, help="comma-separated queues (default: EMQ_DEFAULT_QUEUE)")

    def handle(self, *args, **options) -> None:
        from emq.pump import run_forever

        names = [q.strip() for q in (options["queues"] or conf.get("EMQ_DEFAULT_QUEUE")).split(",") if q.strip()]
        try:
            apply_group_limits(names)
            autodiscover()
            run_forever(names, announce=self.stdout.write)
        except EmqError as exc:
            raise CommandError(str(exc)) from None
