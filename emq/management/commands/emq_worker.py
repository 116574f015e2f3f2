"""``manage.py emq_worker``: run jobs from one or more queues."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emq import conf
from emq.apps import autodiscover
from emq.errors import EmqError


class Command(BaseCommand):
    help = (
        "Run emq jobs: claim them in batches from the given queues, run them on a thread pool, "
        "and finish them in batches. SIGTERM/SIGINT stop claiming and let running jobs finish "
        "within the grace period (a second signal cuts it short)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default=None, help="comma-separated queues (default: EMQ_DEFAULT_QUEUE)")
        parser.add_argument("--concurrency", type=int, default=10, help="jobs run at once (threads); default 10")
        parser.add_argument("--batch", type=int, default=None, help="most jobs claimed per round trip")
        parser.add_argument("--burst", action="store_true", help="drain the queues, then exit 0")
        parser.add_argument("--no-pump", action="store_true", help="do not run a Pump thread in this worker")
        parser.add_argument("--grace", type=float, default=None, help="seconds running jobs get on stop")
        parser.add_argument(
            "--processes", type=int, default=1,
            help="worker processes, each with its own thread pool, under one supervisor that restarts them",
        )

    def handle(self, *args, **options) -> None:
        from emq.worker import Worker

        queues = [q.strip() for q in (options["queues"] or conf.get("EMQ_DEFAULT_QUEUE")).split(",") if q.strip()]
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1")
        if options["processes"] < 1:
            raise CommandError("--processes must be at least 1")

        def work() -> int:
            worker = Worker(
                queues,
                concurrency=options["concurrency"],
                batch=options["batch"],
                burst=options["burst"],
                pump=not options["no_pump"],
                grace=options["grace"],
            )
            return worker.run()

        try:
            autodiscover()
            if options["processes"] == 1:
                work()
            else:
                from emq.supervisor import Supervisor

                Supervisor(work, options["processes"]).run()
        except EmqError as exc:
            raise CommandError(str(exc)) from None
