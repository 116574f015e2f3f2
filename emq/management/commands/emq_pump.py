"""``manage.py emq_pump``: promote due jobs, reclaim expired leases, mint recurrences."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emq.core.limits import apply_group_limits
from emq.core.rates import apply_rate_limits
from emq.errors import EmqError
from emq.jobs import autodiscover
from emq.management import options as check


class Command(BaseCommand):
    help = (
        "Run the Pump for some queues: it promotes jobs when they fall due, reclaims the leases "
        "of workers that died, and mints recurrences. Any number may run; one leads each queue. "
        "An unreachable server at start is waited for, saying so once (EMQ_STARTUP_WAIT bounds the wait)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default=None, help="comma-separated queues (default: EMQ_DEFAULT_QUEUE)")

    def handle(self, *args, **options) -> None:
        from emq.models import row_sync
        from emq.runtime import logs, startup
        from emq.runtime.pump import run_forever

        names = check.queue_names(options["queues"])
        try:
            logs.setup()
            startup.stacks_on_signal()  # kill -USR1: every thread's stack
            if not startup.wait_for_server():
                return
            apply_group_limits(names)
            apply_rate_limits(names)
            autodiscover()
            startup.freeze_heap()
            # It says it runs through the "emq.pump" logger (JSON with EMQ_LOG_FORMAT=json).
            run_forever(names, rows=row_sync())
        except EmqError as exc:
            raise CommandError(str(exc)) from None
